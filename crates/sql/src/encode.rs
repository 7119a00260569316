//! Arrow batches out as Avro records: [`Output`] is the Avro schema of a query's result,
//! and writes each row of a result batch in Avro's binary encoding.

use datafusion_common::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Float32Array, Float64Array, Int32Array,
    Int64Array,
};
use datafusion_common::arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int32Type, Int64Type, Schema,
};
use serde_json::{Value, json};

use crate::{ColumnType, Error};

/// The column type results of `data_type` are written as, and the Arrow type they are cast
/// to first (Int16 to Int32, say).
fn written_as(data_type: &DataType) -> Option<(ColumnType, DataType)> {
    Some(match data_type {
        DataType::Boolean => (ColumnType::Boolean, DataType::Boolean),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => {
            (ColumnType::Int, DataType::Int32)
        }
        DataType::Int64 | DataType::UInt32 => (ColumnType::Long, DataType::Int64),
        DataType::Float16 | DataType::Float32 => (ColumnType::Float, DataType::Float32),
        DataType::Float64 => (ColumnType::Double, DataType::Float64),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            (ColumnType::String, DataType::Utf8)
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            (ColumnType::Bytes, DataType::Binary)
        }
        _ => return None,
    })
}

/// One column of the output.
#[derive(Clone, Debug)]
struct OutputColumn {
    /// Never an enum.
    kind: ColumnType,
    /// The Arrow type results are cast to before writing (Int16 to Int32, say).
    data_type: DataType,
    nullable: bool,
}

/// The Avro schema of a query's result, and the writer of its rows.
#[derive(Clone, Debug)]
pub(crate) struct Output {
    schema: Value,
    columns: Vec<OutputColumn>,
}

impl Output {
    /// The output of results of `schema`, an Avro record named `record_name`: each column a
    /// field of the same name, nullable columns unions of `null` first (default `null`).
    pub(crate) fn new(schema: &Schema, record_name: &str) -> Result<Output, Error> {
        let mut fields = Vec::with_capacity(schema.fields().len());
        let mut columns = Vec::with_capacity(schema.fields().len());
        for (index, field) in schema.fields().iter().enumerate() {
            let name = field.name();
            if !is_avro_name(name) {
                return Err(Error::Plan {
                    message: format!(
                        "output column {} is '{name}', which is not a field name: name it with AS, as in `{name} AS {}`",
                        index + 1,
                        suggested_name(name)
                    ),
                    position: None,
                });
            }
            let (kind, data_type) = written_as(field.data_type()).ok_or_else(|| Error::Plan {
                message: format!(
                    "output column '{name}' is of type {}, which has no Avro type here: CAST it to BIGINT, DOUBLE or VARCHAR",
                    field.data_type()
                ),
                position: None,
            })?;
            let avro = kind.avro_primitive().expect("results are never enums");
            fields.push(if field.is_nullable() {
                json!({"name": name, "type": ["null", avro], "default": null})
            } else {
                json!({"name": name, "type": avro})
            });
            columns.push(OutputColumn {
                kind,
                data_type,
                nullable: field.is_nullable(),
            });
        }
        Ok(Output {
            schema: json!({"type": "record", "name": record_name, "fields": fields}),
            columns,
        })
    }

    /// The Avro schema.
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// The columns cast to the types written, in order.
    pub(crate) fn cast(&self, arrays: Vec<ArrayRef>) -> Result<Vec<ArrayRef>, Error> {
        arrays
            .into_iter()
            .zip(&self.columns)
            .map(|(array, column)| {
                if array.data_type() == &column.data_type {
                    Ok(array)
                } else {
                    datafusion_common::arrow::compute::cast(&array, &column.data_type)
                        .map_err(|error| Error::Evaluate(error.to_string()))
                }
            })
            .collect()
    }

    /// Appends row `row` of `arrays` (as [`cast`](Output::cast) returns them) to `bytes`.
    pub(crate) fn write_row(&self, arrays: &[ArrayRef], row: usize, bytes: &mut Vec<u8>) {
        for (array, column) in arrays.iter().zip(&self.columns) {
            if column.nullable {
                if array.is_null(row) {
                    bytes.push(0); // branch 0: null
                    continue;
                }
                bytes.push(2); // branch 1, zigzag encoded
            }
            match &column.kind {
                ColumnType::Boolean => {
                    let values: &BooleanArray = array.as_boolean();
                    bytes.push(u8::from(values.value(row)));
                }
                ColumnType::Int => {
                    let values: &Int32Array = array.as_primitive::<Int32Type>();
                    write_long(i64::from(values.value(row)), bytes);
                }
                ColumnType::Long => {
                    let values: &Int64Array = array.as_primitive::<Int64Type>();
                    write_long(values.value(row), bytes);
                }
                ColumnType::Float => {
                    let values: &Float32Array = array.as_primitive::<Float32Type>();
                    bytes.extend_from_slice(&values.value(row).to_le_bytes());
                }
                ColumnType::Double => {
                    let values: &Float64Array = array.as_primitive::<Float64Type>();
                    bytes.extend_from_slice(&values.value(row).to_le_bytes());
                }
                ColumnType::String => {
                    let value = array.as_string::<i32>().value(row);
                    write_long(value.len() as i64, bytes);
                    bytes.extend_from_slice(value.as_bytes());
                }
                ColumnType::Enum(_) => unreachable!("results are never enums"),
                ColumnType::Bytes => {
                    let values: &BinaryArray = array.as_binary::<i32>();
                    let value = values.value(row);
                    write_long(value.len() as i64, bytes);
                    bytes.extend_from_slice(value);
                }
            }
        }
    }
}

/// Appends a zigzag varint.
fn write_long(value: i64, bytes: &mut Vec<u8>) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        bytes.push((zigzag as u8 & 0x7f) | 0x80);
        zigzag >>= 7;
    }
    bytes.push(zigzag as u8);
}

/// Whether `name` is an Avro field name: a letter or `_`, then letters, digits and `_`.
fn is_avro_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A field name made of an expression's letters, digits and underscores.
fn suggested_name(expression: &str) -> String {
    let mut name = String::new();
    for character in expression.chars() {
        if character.is_ascii_alphanumeric() {
            name.push(character.to_ascii_lowercase());
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    let name = name.trim_end_matches('_');
    match name.chars().next() {
        Some(first) if first.is_ascii_alphabetic() => name.to_owned(),
        _ => format!("c_{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_varints_match_avro() {
        for (value, expected) in [
            (0, vec![0]),
            (-1, vec![1]),
            (1, vec![2]),
            (-64, vec![0x7f]),
            (64, vec![0x80, 1]),
        ] {
            let mut bytes = Vec::new();
            write_long(value, &mut bytes);
            assert_eq!(bytes, expected, "{value}");
        }
    }

    #[test]
    fn suggests_a_field_name_for_an_expression() {
        assert_eq!(
            suggested_name("bids.price * Int64(89)"),
            "bids_price_int64_89"
        );
        assert_eq!(suggested_name("1 + 2"), "c_1_2");
    }
}
