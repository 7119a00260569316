//! [`Value`]: one cell of a grouped row (a key column, an aggregate's argument or result),
//! kept in window state and checkpointed, so a serde type; and how columns of Arrow arrays
//! are read into values ([`Cells`]) and values written back ([`array_of`]).

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion_common::arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryBuilder, BooleanArray, BooleanBuilder, Float32Array,
    Float32Builder, Float64Array, Float64Builder, Int32Array, Int32Builder, Int64Array,
    Int64Builder, StringArray, StringBuilder, UInt64Array, UInt64Builder, new_null_array,
};
use datafusion_common::arrow::datatypes::DataType;
use serde::{Deserialize, Serialize};

/// A cell: SQL's scalar types as SQL streamlets group and aggregate them. Integers of
/// every width are `Integer`, floating-point numbers `Float`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Value {
    /// SQL `NULL`.
    Null,
    /// `BOOLEAN`.
    Boolean(bool),
    /// `INT`, `BIGINT`.
    Integer(i64),
    /// `REAL`, `DOUBLE`.
    Float(f64),
    /// `VARCHAR`.
    Text(String),
    /// `BYTEA`.
    Bytes(Vec<u8>),
}

impl Value {
    /// The rank of each variant, ordering values of different types.
    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Boolean(_) => 1,
            Value::Integer(_) => 2,
            Value::Float(_) => 3,
            Value::Text(_) => 4,
            Value::Bytes(_) => 5,
        }
    }

    /// Whether the value is SQL `NULL`.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// Floats compare by their total order (so `NaN` equals itself and keys stay keys).
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Boolean(a), Value::Boolean(b)) => a.cmp(b),
            (Value::Integer(a), Value::Integer(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Text(a), Value::Text(b)) => a.cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Value::Null => {}
            Value::Boolean(value) => value.hash(state),
            Value::Integer(value) => value.hash(state),
            Value::Float(value) => value.to_bits().hash(state),
            Value::Text(value) => value.hash(state),
            Value::Bytes(value) => value.hash(state),
        }
    }
}

/// Whether SQL streamlets group and aggregate values of `data_type`.
pub(crate) fn is_supported(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Null
            | DataType::Boolean
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
            | DataType::Binary
    )
}

/// An array's cells, read as [`Value`]s, the array downcast once.
pub(crate) enum Cells<'a> {
    Null,
    Boolean(&'a BooleanArray),
    Int32(&'a Int32Array),
    Int64(&'a Int64Array),
    /// As aggregates count in their state (`stddev`'s count); kept as `Integer`.
    UInt64(&'a UInt64Array),
    Float32(&'a Float32Array),
    Float64(&'a Float64Array),
    Text(&'a StringArray),
    Bytes(&'a BinaryArray),
}

impl<'a> Cells<'a> {
    /// The cells of `array`, of a type [`is_supported`] (checked at planning).
    pub(crate) fn of(array: &'a ArrayRef) -> Cells<'a> {
        let any = array.as_any();
        let downcast = "the array has its data type's class";
        match array.data_type() {
            DataType::Null => Cells::Null,
            DataType::Boolean => Cells::Boolean(any.downcast_ref().expect(downcast)),
            DataType::Int32 => Cells::Int32(any.downcast_ref().expect(downcast)),
            DataType::Int64 => Cells::Int64(any.downcast_ref().expect(downcast)),
            DataType::UInt64 => Cells::UInt64(any.downcast_ref().expect(downcast)),
            DataType::Float32 => Cells::Float32(any.downcast_ref().expect(downcast)),
            DataType::Float64 => Cells::Float64(any.downcast_ref().expect(downcast)),
            DataType::Utf8 => Cells::Text(any.downcast_ref().expect(downcast)),
            DataType::Binary => Cells::Bytes(any.downcast_ref().expect(downcast)),
            other => unreachable!("planning refuses grouping or aggregating {other}"),
        }
    }

    /// The cell of `row`.
    pub(crate) fn get(&self, row: usize) -> Value {
        macro_rules! cell {
            ($array:expr, $value:expr) => {
                if $array.is_null(row) {
                    Value::Null
                } else {
                    $value($array.value(row))
                }
            };
        }
        match self {
            Cells::Null => Value::Null,
            Cells::Boolean(array) => cell!(array, Value::Boolean),
            Cells::Int32(array) => cell!(array, |value: i32| Value::Integer(value.into())),
            Cells::Int64(array) => cell!(array, Value::Integer),
            Cells::UInt64(array) => cell!(array, |value: u64| Value::Integer(value as i64)),
            Cells::Float32(array) => cell!(array, |value: f32| Value::Float(value.into())),
            Cells::Float64(array) => cell!(array, Value::Float),
            Cells::Text(array) => cell!(array, |value: &str| Value::Text(value.to_owned())),
            Cells::Bytes(array) => cell!(array, |value: &[u8]| Value::Bytes(value.to_vec())),
        }
    }
}

/// An array of `data_type` holding `values`. A value of another type than the array's
/// (an aggregate's result before its cast) is converted as SQL casts it; `NULL` stays null.
pub(crate) fn array_of<'a>(
    data_type: &DataType,
    values: impl ExactSizeIterator<Item = &'a Value>,
) -> ArrayRef {
    let length = values.len();
    let integer = |value: &Value| match value {
        Value::Integer(value) => Some(*value),
        Value::Float(value) => Some(*value as i64),
        Value::Boolean(value) => Some(i64::from(*value)),
        _ => None,
    };
    let float = |value: &Value| match value {
        Value::Integer(value) => Some(*value as f64),
        Value::Float(value) => Some(*value),
        _ => None,
    };
    match data_type {
        DataType::Boolean => {
            let mut builder = BooleanBuilder::with_capacity(length);
            for value in values {
                builder.append_option(match value {
                    Value::Boolean(value) => Some(*value),
                    _ => None,
                });
            }
            Arc::new(builder.finish())
        }
        DataType::Int32 => {
            let mut builder = Int32Builder::with_capacity(length);
            for value in values {
                builder.append_option(integer(value).and_then(|value| i32::try_from(value).ok()));
            }
            Arc::new(builder.finish())
        }
        DataType::Int64 => {
            let mut builder = Int64Builder::with_capacity(length);
            for value in values {
                builder.append_option(integer(value));
            }
            Arc::new(builder.finish())
        }
        DataType::UInt64 => {
            let mut builder = UInt64Builder::with_capacity(length);
            for value in values {
                builder.append_option(integer(value).map(|value| value as u64));
            }
            Arc::new(builder.finish())
        }
        DataType::Float32 => {
            let mut builder = Float32Builder::with_capacity(length);
            for value in values {
                builder.append_option(float(value).map(|value| value as f32));
            }
            Arc::new(builder.finish())
        }
        DataType::Float64 => {
            let mut builder = Float64Builder::with_capacity(length);
            for value in values {
                builder.append_option(float(value));
            }
            Arc::new(builder.finish())
        }
        DataType::Utf8 => {
            let mut builder = StringBuilder::with_capacity(length, length * 16);
            for value in values {
                match value {
                    Value::Text(text) => builder.append_value(text),
                    _ => builder.append_null(),
                }
            }
            Arc::new(builder.finish())
        }
        DataType::Binary => {
            let mut builder = BinaryBuilder::with_capacity(length, length * 16);
            for value in values {
                match value {
                    Value::Bytes(bytes) => builder.append_value(bytes),
                    _ => builder.append_null(),
                }
            }
            Arc::new(builder.finish())
        }
        other => new_null_array(other, length),
    }
}

/// Appends the JSON serde gives `values` as a sequence (`[{"Integer":7},"Null"]`), the key
/// of a query's state in its changelog, without serde's generic path: a q7 in SQL writes a
/// key for every bid it keeps, and this takes about 2% fewer of its instructions (see
/// docs/benchmarks.md). Changelogs are replayed by key, so the bytes must stay serde's
/// (tested below).
pub(crate) fn write_json(values: &[Value], out: &mut Vec<u8>) {
    /// What serde_json does not escape in a string (control characters, `"` and `\` are).
    fn plain(text: &str) -> bool {
        text.bytes()
            .all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
    }
    fn integer(integer: impl itoa::Integer, out: &mut Vec<u8>) {
        out.extend_from_slice(itoa::Buffer::new().format(integer).as_bytes());
    }
    out.push(b'[');
    for (at, value) in values.iter().enumerate() {
        if at > 0 {
            out.push(b',');
        }
        match value {
            Value::Null => out.extend_from_slice(b"\"Null\""),
            Value::Boolean(true) => out.extend_from_slice(b"{\"Boolean\":true}"),
            Value::Boolean(false) => out.extend_from_slice(b"{\"Boolean\":false}"),
            Value::Integer(value) => {
                out.extend_from_slice(b"{\"Integer\":");
                integer(*value, out);
                out.push(b'}');
            }
            Value::Float(value) => {
                // ryu's digits, and `null` for what is not finite, as serde_json writes them.
                out.extend_from_slice(b"{\"Float\":");
                serde_json::to_writer(&mut *out, value).expect("a vector takes every write");
                out.push(b'}');
            }
            Value::Text(text) => {
                out.extend_from_slice(b"{\"Text\":");
                if plain(text) {
                    out.push(b'"');
                    out.extend_from_slice(text.as_bytes());
                    out.push(b'"');
                } else {
                    serde_json::to_writer(&mut *out, text).expect("a vector takes every write");
                }
                out.push(b'}');
            }
            Value::Bytes(bytes) => {
                out.extend_from_slice(b"{\"Bytes\":[");
                for (at, byte) in bytes.iter().enumerate() {
                    if at > 0 {
                        out.push(b',');
                    }
                    integer(*byte, out);
                }
                out.extend_from_slice(b"]}");
            }
        }
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_as_serde_writes_them() {
        let values = [
            Value::Null,
            Value::Boolean(true),
            Value::Boolean(false),
            Value::Integer(0),
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Float(0.1),
            Value::Float(-0.0),
            Value::Float(1e300),
            Value::Float(f64::NAN),
            Value::Float(f64::NEG_INFINITY),
            Value::Text(String::new()),
            Value::Text("plain, ünïcode ✓".into()),
            Value::Text("\"quoted\"\n\\ \u{1} \u{7f}".into()),
            Value::Bytes(Vec::new()),
            Value::Bytes(vec![0, 7, 255]),
        ];
        let mut keys: Vec<Vec<Value>> = vec![Vec::new()];
        keys.extend(values.iter().map(|value| vec![value.clone()]));
        keys.push(values.to_vec());
        for key in keys {
            let mut written = Vec::new();
            write_json(&key, &mut written);
            let serde = serde_json::to_vec(&key).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&serde)
            );
        }
    }
}
