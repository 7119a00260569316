//! Rows of [`Value`]s in [postcard](https://postcard.jamesmunns.com/), written and read by
//! hand: the bytes serde writes for a `Vec<Value>` (its count of values, then each value's
//! variant index and contents), without serde's calls per value and without a `Value` made
//! per cell. A join keeps its rows so (`KeyRows` in `join.rs`) and writes them to its
//! changelog with one copy; serde reads them back.

use crate::value::{Cells, Value};

/// The variant indexes `#[derive(Serialize)]` gives `Value`'s variants, in their order.
const NULL: u64 = 0;
const BOOLEAN: u64 = 1;
const INTEGER: u64 = 2;
const FLOAT: u64 = 3;
const TEXT: u64 = 4;
const BYTES: u64 = 5;

/// Appends `value` as a LEB128 varint, as postcard writes lengths, variant indexes and
/// (zigzagged) integers.
pub(crate) fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a varint written by [`write_varint`], or `None` where the bytes end or it runs
/// past 64 bits.
fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// Postcard's zigzag: small negative numbers stay short.
fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

fn write_text(out: &mut Vec<u8>, variant: u64, bytes: &[u8]) {
    write_varint(out, variant);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a row of values: its count of values, then each value, as [`write_row`] writes
/// a row of cells.
pub(crate) fn write_values(row: &[Value], out: &mut Vec<u8>) {
    write_varint(out, row.len() as u64);
    for value in row {
        write_value(value, out);
    }
}

/// Appends `value`'s postcard bytes.
pub(crate) fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => write_varint(out, NULL),
        Value::Boolean(value) => write_boolean(out, *value),
        Value::Integer(value) => write_integer(out, *value),
        Value::Float(value) => write_float(out, *value),
        Value::Text(text) => write_text(out, TEXT, text.as_bytes()),
        Value::Bytes(bytes) => write_text(out, BYTES, bytes),
    }
}

fn write_boolean(out: &mut Vec<u8>, value: bool) {
    write_varint(out, BOOLEAN);
    out.push(u8::from(value));
}

fn write_integer(out: &mut Vec<u8>, value: i64) {
    write_varint(out, INTEGER);
    write_varint(out, zigzag(value));
}

fn write_float(out: &mut Vec<u8>, value: f64) {
    write_varint(out, FLOAT);
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends the postcard bytes of the value [`Cells::get`] gives for `row`, without making
/// it.
pub(crate) fn write_cell(cells: &Cells<'_>, row: usize, out: &mut Vec<u8>) {
    macro_rules! cell {
        ($array:expr, $write:expr) => {
            if $array.is_null(row) {
                write_varint(out, NULL)
            } else {
                $write(out, $array.value(row))
            }
        };
    }
    use datafusion_common::arrow::array::Array;
    match cells {
        Cells::Null => write_varint(out, NULL),
        Cells::Boolean(array) => cell!(array, write_boolean),
        Cells::Int32(array) => cell!(array, |out, value: i32| write_integer(out, value.into())),
        Cells::Int64(array) => cell!(array, write_integer),
        Cells::UInt64(array) => cell!(array, |out, value: u64| write_integer(out, value as i64)),
        Cells::Float32(array) => cell!(array, |out, value: f32| write_float(out, value.into())),
        Cells::Float64(array) => cell!(array, write_float),
        Cells::Text(array) => cell!(array, |out, value: &str| write_text(
            out,
            TEXT,
            value.as_bytes()
        )),
        Cells::Bytes(array) => cell!(array, |out, value: &[u8]| write_text(out, BYTES, value)),
    }
}

/// Appends a row of cells: its count of values, then each cell of `row`.
pub(crate) fn write_row(cells: &[Cells<'_>], row: usize, out: &mut Vec<u8>) {
    write_varint(out, cells.len() as u64);
    for column in cells {
        write_cell(column, row, out);
    }
}

/// Reads a value written by [`write_value`], or `None` where the bytes are not one.
fn read_value(bytes: &mut &[u8]) -> Option<Value> {
    let contents = |bytes: &mut &[u8]| -> Option<Vec<u8>> {
        let length = usize::try_from(read_varint(bytes)?).ok()?;
        let (contents, rest) = bytes.split_at_checked(length)?;
        *bytes = rest;
        Some(contents.to_vec())
    };
    Some(match read_varint(bytes)? {
        NULL => Value::Null,
        BOOLEAN => {
            let (&byte, rest) = bytes.split_first()?;
            *bytes = rest;
            match byte {
                0 => Value::Boolean(false),
                1 => Value::Boolean(true),
                _ => return None,
            }
        }
        INTEGER => Value::Integer(unzigzag(read_varint(bytes)?)),
        FLOAT => {
            let (float, rest) = bytes.split_first_chunk::<8>()?;
            *bytes = rest;
            Value::Float(f64::from_le_bytes(*float))
        }
        TEXT => Value::Text(String::from_utf8(contents(bytes)?).ok()?),
        BYTES => Value::Bytes(contents(bytes)?),
        _ => return None,
    })
}

/// Reads a row written by [`write_row`] (or serde).
pub(crate) fn read_row(bytes: &mut &[u8]) -> Option<Vec<Value>> {
    let mut row = Vec::new();
    read_row_into(bytes, &mut row)?;
    Some(row)
}

/// Reads a row written by [`write_row`] (or serde), appending its values to `out`.
pub(crate) fn read_row_into(bytes: &mut &[u8], out: &mut Vec<Value>) -> Option<()> {
    let width = usize::try_from(read_varint(bytes)?).ok()?;
    out.reserve(width);
    for _ in 0..width {
        out.push(read_value(bytes)?);
    }
    Some(())
}

/// Skips a row, returning the integer in its `column` (`None` inside if that value is not
/// an integer), or `None` where the bytes are not a row.
pub(crate) fn skip_row(bytes: &mut &[u8], column: usize) -> Option<Option<i64>> {
    let width = read_varint(bytes)?;
    let mut integer = None;
    for at in 0..width {
        let variant = read_varint(bytes)?;
        let skip = match variant {
            NULL => 0,
            BOOLEAN => 1,
            INTEGER => {
                let value = unzigzag(read_varint(bytes)?);
                if at as usize == column {
                    integer = Some(value);
                }
                0
            }
            FLOAT => 8,
            TEXT | BYTES => usize::try_from(read_varint(bytes)?).ok()?,
            _ => return None,
        };
        *bytes = bytes.get(skip..)?;
    }
    Some(integer)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion_common::arrow::array::{
        ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array,
        StringArray, UInt64Array,
    };

    use super::*;

    fn every_kind() -> Vec<Value> {
        vec![
            Value::Null,
            Value::Boolean(true),
            Value::Boolean(false),
            Value::Integer(0),
            Value::Integer(-1),
            Value::Integer(200),
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Float(-1.5),
            Value::Text(String::new()),
            Value::Text("é".repeat(200)),
            Value::Bytes(vec![0, 255]),
        ]
    }

    #[test]
    fn values_written_by_hand_are_the_postcard_serde_writes_and_read_back() {
        let row = every_kind();
        let mut by_hand = Vec::new();
        write_values(&row, &mut by_hand);
        assert_eq!(by_hand, postcard::to_allocvec(&row).unwrap());
        let mut bytes = by_hand.as_slice();
        let back = read_row(&mut bytes).unwrap();
        assert!(bytes.is_empty());
        assert_eq!(format!("{back:?}"), format!("{row:?}"));
    }

    #[test]
    fn cells_are_written_as_their_values_are() {
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(BooleanArray::from(vec![Some(true), None])),
            Arc::new(Int32Array::from(vec![Some(-7), None])),
            Arc::new(Int64Array::from(vec![Some(i64::MIN), None])),
            Arc::new(UInt64Array::from(vec![Some(u64::MAX), None])),
            Arc::new(Float32Array::from(vec![Some(0.25), None])),
            Arc::new(Float64Array::from(vec![Some(-3.5), None])),
            Arc::new(StringArray::from(vec![Some("text"), None])),
            Arc::new(BinaryArray::from(vec![Some(&b"\x00\x01"[..]), None])),
        ];
        let cells: Vec<Cells<'_>> = arrays.iter().map(Cells::of).collect();
        for row in 0..2 {
            let mut from_cells = Vec::new();
            write_row(&cells, row, &mut from_cells);
            let values: Vec<Value> = cells.iter().map(|cells| cells.get(row)).collect();
            assert_eq!(
                from_cells,
                postcard::to_allocvec(&values).unwrap(),
                "row {row}"
            );
        }
    }

    #[test]
    fn skipping_a_row_finds_the_integer_in_a_column() {
        let mut bytes = Vec::new();
        for row in [
            every_kind(),
            vec![Value::Text("a".into()), Value::Integer(42)],
        ] {
            write_values(&row, &mut bytes);
        }
        let mut rest = bytes.as_slice();
        assert_eq!(skip_row(&mut rest, 5), Some(Some(200)));
        assert_eq!(skip_row(&mut rest, 0), Some(None));
        assert!(rest.is_empty());
        let mut rest = bytes.as_slice();
        assert_eq!(skip_row(&mut rest, 99), Some(None));
        assert_eq!(skip_row(&mut rest, 1), Some(Some(42)));
        let mut cut = &bytes[bytes.len() - 1..];
        assert_eq!(skip_row(&mut cut, 0), None);
    }
}
