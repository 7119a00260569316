//! The arrow form's conversions: an inlet's Avro records into one Arrow record batch (an IPC
//! stream pyarrow reads without copying), and the Arrow tables a streamlet emits back into
//! Avro datums of the outlet's schema, with their keys.
//!
//! Avro maps onto Arrow as pyarrow's `Table.from_pylist` would type the same values:
//! `boolean`, `int` (Int32), `long` (Int64), `float`, `double`, `string` (Utf8), `bytes` and
//! `fixed` (Binary), an `enum` (Utf8, its symbol), `timestamp-millis` (Timestamp(ms, UTC)),
//! `date` (Date32), a union with `null` (the other branch, nullable), a record (a struct),
//! an `array` (a list). Maps and other unions have no Arrow form here: [`ArrowInlet::new`]
//! refuses them. Going back, an integer or floating column of any width fills a numeric
//! field it fits, and a timestamp of any unit a `timestamp-millis` one.

use std::collections::HashMap;
use std::sync::Arc;

use apache_avro::Schema as AvroSchema;
use apache_avro::schema::{RecordField, UnionSchema};
use apache_avro::types::Value;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Float32Array, Float64Array,
    Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
    TimestampMillisecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use bytes::Bytes;

/// What cannot be converted, and where.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ArrowError(String);

fn error(message: impl Into<String>) -> ArrowError {
    ArrowError(message.into())
}

/// An inlet's records as Arrow: its Avro schema and the Arrow schema of its batches.
#[derive(Debug)]
pub struct ArrowInlet {
    avro: AvroSchema,
    fields: Vec<RecordField>,
    schema: Arc<Schema>,
}

impl ArrowInlet {
    /// The Arrow form of records of the Avro record schema `definition`.
    ///
    /// # Errors
    ///
    /// When it is not a record, or has a field Arrow cannot hold here (a map, a union of
    /// several types): the error names the field.
    pub fn new(definition: &serde_json::Value) -> Result<Self, ArrowError> {
        let (avro, fields) = record_schema(definition)?;
        let schema = Arc::new(Schema::new(arrow_fields(&fields)?));
        Ok(ArrowInlet {
            avro,
            fields,
            schema,
        })
    }

    /// The inlet's own Avro schema, to resolve records against.
    pub fn avro(&self) -> &AvroSchema {
        &self.avro
    }

    /// `records` (each an Avro record of the inlet's schema) as one Arrow IPC stream.
    ///
    /// # Errors
    ///
    /// When a record does not fit the schema.
    pub fn stream(&self, records: &[Value]) -> Result<Vec<u8>, ArrowError> {
        let rows: Vec<Option<&[(String, Value)]>> = records
            .iter()
            .map(|record| match record {
                Value::Record(fields) => Ok(Some(fields.as_slice())),
                other => Err(error(format!("a record is {other:?}"))),
            })
            .collect::<Result<_, _>>()?;
        let columns = self
            .fields
            .iter()
            .enumerate()
            .map(|(at, field)| {
                let values: Vec<Option<&Value>> = rows
                    .iter()
                    .map(|row| row.map(|fields| &fields[at].1))
                    .collect();
                column(&field.schema, &values)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let batch =
            RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| error(e.to_string()))?;
        let mut stream = Vec::new();
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut stream, &self.schema)
            .map_err(|e| error(e.to_string()))?;
        writer.write(&batch).map_err(|e| error(e.to_string()))?;
        writer.finish().map_err(|e| error(e.to_string()))?;
        drop(writer);
        Ok(stream)
    }
}

/// An outlet's Avro schema, to encode the tables emitted on it.
#[derive(Debug)]
pub struct ArrowOutlet {
    fields: Vec<RecordField>,
}

impl ArrowOutlet {
    /// Encodes tables into records of the Avro record schema `definition`.
    ///
    /// # Errors
    ///
    /// As [`ArrowInlet::new`]: a field Arrow cannot hold here is refused before any table
    /// comes.
    pub fn new(definition: &serde_json::Value) -> Result<Self, ArrowError> {
        let (_, fields) = record_schema(definition)?;
        arrow_fields(&fields)?;
        Ok(ArrowOutlet { fields })
    }

    /// Each row of the Arrow IPC stream `stream` as an Avro datum of the outlet's schema,
    /// with its key from column `key_column` when given.
    ///
    /// # Errors
    ///
    /// When the stream does not read, lacks a field's column, or a value does not fit its
    /// field: the error names the field and the row.
    pub fn rows(
        &self,
        stream: &[u8],
        key_column: Option<&str>,
    ) -> Result<Vec<(Option<Bytes>, Bytes)>, ArrowError> {
        let reader = arrow_ipc::reader::StreamReader::try_new(stream, None)
            .map_err(|e| error(format!("the table does not read as an Arrow stream: {e}")))?;
        let mut rows = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| error(format!("the table does not read: {e}")))?;
            let columns = self
                .fields
                .iter()
                .map(|field| {
                    batch.column_by_name(&field.name).ok_or_else(|| {
                        error(format!(
                            "the table has no column '{}' (its columns: {})",
                            field.name,
                            column_names(&batch)
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let keys = key_column
                .map(|name| {
                    batch.column_by_name(name).ok_or_else(|| {
                        error(format!(
                            "the table has no key column '{name}' (its columns: {})",
                            column_names(&batch)
                        ))
                    })
                })
                .transpose()?;
            for row in 0..batch.num_rows() {
                let mut datum = Vec::with_capacity(64);
                for (field, column) in self.fields.iter().zip(&columns) {
                    encode(column, row, &field.schema, &mut datum).map_err(|reason| {
                        error(format!("row {row}, field '{}': {reason}", field.name))
                    })?;
                }
                let key = keys
                    .map(|keys| key_at(keys, row))
                    .transpose()
                    .map_err(|reason| error(format!("row {row}'s key: {reason}")))?
                    .flatten();
                rows.push((key, Bytes::from(datum)));
            }
        }
        Ok(rows)
    }
}

/// The Avro record schema `definition` and its fields.
fn record_schema(
    definition: &serde_json::Value,
) -> Result<(AvroSchema, Vec<RecordField>), ArrowError> {
    let avro = AvroSchema::parse(definition).map_err(|e| error(e.to_string()))?;
    let AvroSchema::Record(record) = &avro else {
        return Err(error("the arrow form carries records"));
    };
    let fields = record.fields.clone();
    Ok((avro, fields))
}

fn column_names(batch: &RecordBatch) -> String {
    batch
        .schema()
        .fields()
        .iter()
        .map(|field| field.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn arrow_fields(fields: &[RecordField]) -> Result<Vec<Field>, ArrowError> {
    fields
        .iter()
        .map(|field| {
            let (data_type, nullable) = data_type(&field.schema)
                .map_err(|reason| error(format!("field '{}': {reason}", field.name)))?;
            Ok(Field::new(&field.name, data_type, nullable))
        })
        .collect()
}

/// The non-null branch of a union with `null`.
fn nullable(union: &UnionSchema) -> Option<&AvroSchema> {
    match union.variants() {
        [AvroSchema::Null, other] | [other, AvroSchema::Null] => Some(other),
        _ => None,
    }
}

/// The Arrow type of values of `schema`, and whether they may be null.
fn data_type(schema: &AvroSchema) -> Result<(DataType, bool), String> {
    Ok(match schema {
        AvroSchema::Boolean => (DataType::Boolean, false),
        AvroSchema::Int => (DataType::Int32, false),
        AvroSchema::Long => (DataType::Int64, false),
        AvroSchema::Float => (DataType::Float32, false),
        AvroSchema::Double => (DataType::Float64, false),
        AvroSchema::String | AvroSchema::Uuid | AvroSchema::Enum(_) => (DataType::Utf8, false),
        AvroSchema::Bytes | AvroSchema::Fixed(_) => (DataType::Binary, false),
        AvroSchema::TimestampMillis => (
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
        AvroSchema::Date => (DataType::Date32, false),
        AvroSchema::Union(union) => match nullable(union) {
            Some(inner) => (data_type(inner)?.0, true),
            None => return Err("a union of several types has no Arrow form here".into()),
        },
        AvroSchema::Record(record) => (
            DataType::Struct(Fields::from(arrow_fields(&record.fields).map_err(|e| e.0)?)),
            false,
        ),
        AvroSchema::Array(array) => {
            let (item, nullable) = data_type(&array.items)?;
            (
                DataType::List(Arc::new(Field::new("item", item, nullable))),
                false,
            )
        }
        other => {
            return Err(format!(
                "{other:?} has no Arrow form here (maps, and logical types but timestamp-millis and date)"
            ));
        }
    })
}

/// Looks through a union's branch to its value; `None` for null.
fn present(value: &Value) -> Option<&Value> {
    match value {
        Value::Null => None,
        Value::Union(_, inner) => present(inner),
        other => Some(other),
    }
}

/// The Arrow column of `values` (`None`: null) of Avro `schema`.
fn column(schema: &AvroSchema, values: &[Option<&Value>]) -> Result<ArrayRef, ArrowError> {
    let values: Vec<Option<&Value>> = values.iter().map(|v| v.and_then(present)).collect();
    let mismatch = |value: &Value| error(format!("{value:?} is not of schema {schema:?}"));
    macro_rules! primitive {
        ($array:ty, $pattern:pat => $out:expr) => {{
            let mut out = Vec::with_capacity(values.len());
            for value in &values {
                out.push(match value {
                    None => None,
                    Some($pattern) => Some($out),
                    Some(other) => return Err(mismatch(other)),
                });
            }
            Arc::new(<$array>::from(out)) as ArrayRef
        }};
    }
    Ok(match schema {
        AvroSchema::Boolean => primitive!(BooleanArray, Value::Boolean(b) => *b),
        AvroSchema::Int => primitive!(Int32Array, Value::Int(n) => *n),
        AvroSchema::Long => primitive!(Int64Array, Value::Long(n) => *n),
        AvroSchema::Float => primitive!(Float32Array, Value::Float(n) => *n),
        AvroSchema::Double => primitive!(Float64Array, Value::Double(n) => *n),
        AvroSchema::String | AvroSchema::Uuid | AvroSchema::Enum(_) => {
            let mut out: Vec<Option<String>> = Vec::with_capacity(values.len());
            for value in &values {
                out.push(match value {
                    None => None,
                    Some(Value::String(text) | Value::Enum(_, text)) => Some(text.clone()),
                    Some(Value::Uuid(uuid)) => Some(uuid.to_string()),
                    Some(other) => return Err(mismatch(other)),
                });
            }
            Arc::new(StringArray::from(out))
        }
        AvroSchema::Bytes | AvroSchema::Fixed(_) => {
            let mut out: Vec<Option<&[u8]>> = Vec::with_capacity(values.len());
            for value in &values {
                out.push(match value {
                    None => None,
                    Some(Value::Bytes(bytes) | Value::Fixed(_, bytes)) => Some(bytes.as_slice()),
                    Some(other) => return Err(mismatch(other)),
                });
            }
            Arc::new(BinaryArray::from(out))
        }
        AvroSchema::TimestampMillis => {
            let mut out = Vec::with_capacity(values.len());
            for value in &values {
                out.push(match value {
                    None => None,
                    Some(Value::TimestampMillis(n)) => Some(*n),
                    Some(other) => return Err(mismatch(other)),
                });
            }
            Arc::new(TimestampMillisecondArray::from(out).with_timezone("UTC"))
        }
        AvroSchema::Date => primitive!(Date32Array, Value::Date(n) => *n),
        AvroSchema::Union(union) => {
            let inner = nullable(union).ok_or_else(|| error("a union of several types"))?;
            column(inner, &values)?
        }
        AvroSchema::Record(record) => {
            let mut rows = Vec::with_capacity(values.len());
            for value in &values {
                rows.push(match value {
                    None => None,
                    Some(Value::Record(fields)) => Some(fields.as_slice()),
                    Some(other) => return Err(mismatch(other)),
                });
            }
            let children = record
                .fields
                .iter()
                .enumerate()
                .map(|(at, field)| {
                    let values: Vec<Option<&Value>> = rows
                        .iter()
                        .map(|row| row.map(|fields| &fields[at].1))
                        .collect();
                    column(&field.schema, &values)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let fields = Fields::from(arrow_fields(&record.fields)?);
            let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
            let nulls = (nulls.null_count() > 0).then_some(nulls);
            Arc::new(
                StructArray::try_new_with_length(fields, children, nulls, values.len())
                    .map_err(|e| error(e.to_string()))?,
            )
        }
        AvroSchema::Array(array) => {
            let mut lengths = Vec::with_capacity(values.len());
            let mut items = Vec::new();
            let mut valid = Vec::with_capacity(values.len());
            for value in &values {
                match value {
                    None => {
                        lengths.push(0);
                        valid.push(false);
                    }
                    Some(Value::Array(elements)) => {
                        lengths.push(elements.len());
                        items.extend(elements.iter().map(Some));
                        valid.push(true);
                    }
                    Some(other) => return Err(mismatch(other)),
                }
            }
            let items = column(&array.items, &items)?;
            let (item_type, item_nullable) = data_type(&array.items).map_err(error)?;
            let field = Arc::new(Field::new("item", item_type, item_nullable));
            let nulls = NullBuffer::from(valid);
            let nulls = (nulls.null_count() > 0).then_some(nulls);
            Arc::new(
                ListArray::try_new(field, OffsetBuffer::from_lengths(lengths), items, nulls)
                    .map_err(|e| error(e.to_string()))?,
            )
        }
        other => return Err(error(format!("{other:?} has no Arrow form here"))),
    })
}

/// Writes row `row` of `column` as Avro binary of `schema` (the outlet's field) to `out`.
fn encode(
    column: &ArrayRef,
    row: usize,
    schema: &AvroSchema,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if let AvroSchema::Union(union) = schema {
        let inner = nullable(union).ok_or("a union of several types has no Arrow form here")?;
        let null_branch = i64::from(!matches!(union.variants()[0], AvroSchema::Null));
        if column.is_null(row) {
            write_long(null_branch, out);
            return Ok(());
        }
        write_long(1 - null_branch, out);
        return encode(column, row, inner, out);
    }
    if column.is_null(row) {
        return Err("null, and the field is not optional".into());
    }
    let wrong = || {
        format!(
            "a column of {} cannot fill a field of {schema:?}",
            column.data_type()
        )
    };
    match schema {
        AvroSchema::Boolean => {
            out.push(u8::from(
                column.as_boolean_opt().ok_or_else(wrong)?.value(row),
            ));
        }
        AvroSchema::Int => {
            let value = integer(column, row).ok_or_else(wrong)?;
            i32::try_from(value).map_err(|_| "out of the range of an int".to_owned())?;
            write_long(value, out);
        }
        AvroSchema::Long => write_long(integer(column, row).ok_or_else(wrong)?, out),
        #[allow(clippy::cast_possible_truncation)] // a float field holds what fits
        AvroSchema::Float => {
            let value = floating(column, row).ok_or_else(wrong)? as f32;
            out.extend_from_slice(&value.to_le_bytes());
        }
        AvroSchema::Double => {
            out.extend_from_slice(&floating(column, row).ok_or_else(wrong)?.to_le_bytes());
        }
        AvroSchema::String | AvroSchema::Uuid => {
            write_bytes(text(column, row).ok_or_else(wrong)?.as_bytes(), out);
        }
        AvroSchema::Enum(enumeration) => {
            let symbol = text(column, row).ok_or_else(wrong)?;
            let index = enumeration
                .symbols
                .iter()
                .position(|known| known == symbol)
                .ok_or_else(|| format!("'{symbol}' is not a symbol of the enum"))?;
            write_long(i64::try_from(index).expect("few symbols"), out);
        }
        AvroSchema::Bytes => write_bytes(binary(column, row).ok_or_else(wrong)?, out),
        AvroSchema::Fixed(fixed) => {
            let bytes = binary(column, row).ok_or_else(wrong)?;
            if bytes.len() != fixed.size {
                return Err(format!(
                    "{} bytes for a fixed field of {}",
                    bytes.len(),
                    fixed.size
                ));
            }
            out.extend_from_slice(bytes);
        }
        AvroSchema::TimestampMillis => write_long(millis(column, row).ok_or_else(wrong)?, out),
        AvroSchema::Date => write_long(
            i64::from(
                column
                    .as_primitive_opt::<Date32Type>()
                    .ok_or_else(wrong)?
                    .value(row),
            ),
            out,
        ),
        AvroSchema::Record(record) => {
            let fields = column.as_struct_opt().ok_or_else(wrong)?;
            for field in &record.fields {
                let child = fields
                    .column_by_name(&field.name)
                    .ok_or_else(|| format!("the struct has no field '{}'", field.name))?;
                encode(child, row, &field.schema, out)
                    .map_err(|reason| format!("field '{}': {reason}", field.name))?;
            }
        }
        AvroSchema::Array(array) => {
            let items = match column.data_type() {
                DataType::List(_) => column.as_list::<i32>().value(row),
                DataType::LargeList(_) => column.as_list::<i64>().value(row),
                _ => return Err(wrong()),
            };
            // One block of all the items, then the empty block that ends an array.
            if !items.is_empty() {
                write_long(i64::try_from(items.len()).expect("a list under 2^63"), out);
                for at in 0..items.len() {
                    encode(&items, at, &array.items, out)?;
                }
            }
            write_long(0, out);
        }
        other => return Err(format!("{other:?} has no Arrow form here")),
    }
    Ok(())
}

/// Avro's long: zigzag, then a base-128 varint.
fn write_long(value: i64, out: &mut Vec<u8>) {
    #[allow(clippy::cast_sign_loss)] // zigzag maps the sign into the low bit
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        #[allow(clippy::cast_possible_truncation)] // the low seven bits
        out.push((zigzag as u8) | 0x80);
        zigzag >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)] // under 0x80
    out.push(zigzag as u8);
}

/// Avro's bytes and string: the length as a long, then the bytes.
fn write_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    write_long(i64::try_from(bytes.len()).expect("under 2^63 bytes"), out);
    out.extend_from_slice(bytes);
}

fn integer(column: &ArrayRef, row: usize) -> Option<i64> {
    Some(match column.data_type() {
        DataType::Int8 => i64::from(column.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => i64::from(column.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => i64::from(column.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => column.as_primitive::<Int64Type>().value(row),
        DataType::UInt8 => i64::from(column.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => i64::from(column.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => i64::from(column.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => i64::try_from(column.as_primitive::<UInt64Type>().value(row)).ok()?,
        _ => return None,
    })
}

#[allow(clippy::cast_precision_loss)] // an integer column filling a floating field
fn floating(column: &ArrayRef, row: usize) -> Option<f64> {
    Some(match column.data_type() {
        DataType::Float32 => f64::from(column.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => column.as_primitive::<Float64Type>().value(row),
        _ => integer(column, row)? as f64,
    })
}

fn text(column: &ArrayRef, row: usize) -> Option<&str> {
    Some(match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().value(row),
        DataType::LargeUtf8 => column.as_string::<i64>().value(row),
        DataType::Utf8View => column.as_string_view().value(row),
        _ => return None,
    })
}

fn binary(column: &ArrayRef, row: usize) -> Option<&[u8]> {
    Some(match column.data_type() {
        DataType::Binary => column.as_binary::<i32>().value(row),
        DataType::LargeBinary => column.as_binary::<i64>().value(row),
        DataType::BinaryView => column.as_binary_view().value(row),
        _ => return None,
    })
}

fn millis(column: &ArrayRef, row: usize) -> Option<i64> {
    Some(match column.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => column
            .as_primitive::<TimestampSecondType>()
            .value(row)
            .checked_mul(1000)?,
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            column.as_primitive::<TimestampMillisecondType>().value(row)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            column.as_primitive::<TimestampMicrosecondType>().value(row) / 1000
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            column.as_primitive::<TimestampNanosecondType>().value(row) / 1_000_000
        }
        _ => integer(column, row)?,
    })
}

/// A row's key: the text or bytes of the key column (`None` where it is null).
fn key_at(column: &ArrayRef, row: usize) -> Result<Option<Bytes>, String> {
    if column.is_null(row) {
        return Ok(None);
    }
    if let Some(text) = text(column, row) {
        return Ok(Some(Bytes::copy_from_slice(text.as_bytes())));
    }
    if let Some(bytes) = binary(column, row) {
        return Ok(Some(Bytes::copy_from_slice(bytes)));
    }
    if let Some(number) = integer(column, row) {
        return Ok(Some(Bytes::from(number.to_string())));
    }
    Err(format!(
        "a key column of {} (keys are text, bytes or integers)",
        column.data_type()
    ))
}

/// The parsed Avro schemas of the writers an inlet's records name, by fingerprint.
#[derive(Debug, Default)]
pub struct WriterSchemas(HashMap<Bytes, AvroSchema>);

impl WriterSchemas {
    /// The parsed schema of writer `fingerprint`, parsing `definition` the first time.
    ///
    /// # Errors
    ///
    /// When the definition is not an Avro schema.
    pub fn get_or_parse(
        &mut self,
        fingerprint: &Bytes,
        definition: impl FnOnce() -> Option<serde_json::Value>,
    ) -> Result<Option<&AvroSchema>, ArrowError> {
        if !self.0.contains_key(fingerprint) {
            let Some(definition) = definition() else {
                return Ok(None);
            };
            let schema = AvroSchema::parse(&definition).map_err(|e| error(e.to_string()))?;
            self.0.insert(fingerprint.clone(), schema);
        }
        Ok(self.0.get(fingerprint))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> serde_json::Value {
        json!({
            "type": "record", "name": "Reading", "namespace": "demo",
            "fields": [
                {"name": "sensor", "type": "string"},
                {"name": "celsius", "type": "double"},
                {"name": "note", "type": ["null", "string"], "default": null},
                {"name": "place", "type": {"type": "record", "name": "Place", "fields": [
                    {"name": "x", "type": "int"}]}},
                {"name": "tags", "type": {"type": "array", "items": "string"}}
            ]
        })
    }

    fn reading(sensor: &str, celsius: f64, note: Option<&str>, x: i32, tags: &[&str]) -> Value {
        Value::Record(vec![
            ("sensor".into(), Value::String(sensor.into())),
            ("celsius".into(), Value::Double(celsius)),
            (
                "note".into(),
                match note {
                    None => Value::Union(0, Box::new(Value::Null)),
                    Some(note) => Value::Union(1, Box::new(Value::String(note.into()))),
                },
            ),
            (
                "place".into(),
                Value::Record(vec![("x".into(), Value::Int(x))]),
            ),
            (
                "tags".into(),
                Value::Array(tags.iter().map(|t| Value::String((*t).into())).collect()),
            ),
        ])
    }

    #[test]
    fn records_go_to_arrow_and_come_back_the_same_with_their_keys() {
        let inlet = ArrowInlet::new(&schema()).unwrap();
        let records = [
            reading("a", 21.5, None, 1, &["x", "y"]),
            reading("b", -3.0, Some("cold"), 2, &[]),
        ];
        let stream = inlet.stream(&records).unwrap();
        let outlet = ArrowOutlet::new(&schema()).unwrap();
        let rows = outlet.rows(&stream, Some("sensor")).unwrap();
        let avro = AvroSchema::parse(&schema()).unwrap();
        let expected: Vec<(Option<Bytes>, Bytes)> = records
            .iter()
            .zip(["a", "b"])
            .map(|(record, key)| {
                let datum = apache_avro::to_avro_datum(&avro, record.clone()).unwrap();
                (Some(Bytes::from_static(key.as_bytes())), Bytes::from(datum))
            })
            .collect();
        assert_eq!(rows, expected);
    }

    #[test]
    fn a_missing_column_and_a_map_are_named() {
        let narrower = json!({"type": "record", "name": "R", "fields": [
            {"name": "sensor", "type": "string"}]});
        let stream = ArrowInlet::new(&narrower)
            .unwrap()
            .stream(&[Value::Record(vec![(
                "sensor".into(),
                Value::String("a".into()),
            )])])
            .unwrap();
        let error = ArrowOutlet::new(&schema())
            .unwrap()
            .rows(&stream, None)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the table has no column 'celsius' (its columns: sensor)"
        );
        let with_map = json!({"type": "record", "name": "R", "fields": [
            {"name": "labels", "type": {"type": "map", "values": "string"}}]});
        let error = ArrowInlet::new(&with_map).unwrap_err();
        assert!(
            error.to_string().starts_with("field 'labels': Map("),
            "{error}"
        );
    }
}
