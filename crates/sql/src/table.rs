//! [`Table`]: an input of a query, as its topic's Avro schema describes its records.

use std::sync::Arc;

use datafusion_common::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde_json::Value;

use crate::Error;

/// The type of a column: the Avro types SQL reads, each with its Arrow type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Avro `boolean`: SQL `BOOLEAN`.
    Boolean,
    /// Avro `int`: SQL `INT`.
    Int,
    /// Avro `long`: SQL `BIGINT`.
    Long,
    /// Avro `float`: SQL `REAL`.
    Float,
    /// Avro `double`: SQL `DOUBLE`.
    Double,
    /// Avro `string`: SQL `VARCHAR`.
    String,
    /// Avro `bytes`: SQL `BYTEA`.
    Bytes,
    /// An Avro `enum`: SQL `VARCHAR`, the symbol.
    Enum(Vec<String>),
}

impl ColumnType {
    /// The Avro type of a column of this type that is not an enum (which is a named type).
    pub(crate) fn avro_primitive(&self) -> Option<&'static str> {
        Some(match self {
            ColumnType::Boolean => "boolean",
            ColumnType::Int => "int",
            ColumnType::Long => "long",
            ColumnType::Float => "float",
            ColumnType::Double => "double",
            ColumnType::String => "string",
            ColumnType::Bytes => "bytes",
            ColumnType::Enum(_) => return None,
        })
    }

    /// The Arrow type of the column.
    pub fn data_type(&self) -> DataType {
        match self {
            ColumnType::Boolean => DataType::Boolean,
            ColumnType::Int => DataType::Int32,
            ColumnType::Long => DataType::Int64,
            ColumnType::Float => DataType::Float32,
            ColumnType::Double => DataType::Float64,
            ColumnType::String | ColumnType::Enum(_) => DataType::Utf8,
            ColumnType::Bytes => DataType::Binary,
        }
    }
}

/// A column: a field of the records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The field's name.
    pub name: String,
    /// Its type.
    pub column_type: ColumnType,
    /// Where the field is a union of `null` and its type: the branch index of `null`.
    pub null_branch: Option<u8>,
    /// The field's default in the Avro schema, if it has one: what records written without
    /// the field read as.
    pub default: Option<Value>,
}

impl Column {
    /// A column that is never null.
    pub fn new(name: impl Into<String>, column_type: ColumnType) -> Self {
        Column {
            name: name.into(),
            column_type,
            null_branch: None,
            default: None,
        }
    }

    /// A column that may be null: an Avro union of `null` (first) and its type, default
    /// `null`.
    pub fn nullable(name: impl Into<String>, column_type: ColumnType) -> Self {
        Column {
            null_branch: Some(0),
            default: Some(Value::Null),
            ..Column::new(name, column_type)
        }
    }
}

/// An input of a query: a name (the table in `FROM`, and the streamlet's inlet) and the
/// columns of its records, in the order the Avro schema lists the fields.
///
/// ```
/// use runnel_sql::Table;
/// let schema = serde_json::json!({"type": "record", "name": "Bid", "fields": [
///     {"name": "auction", "type": "long"},
///     {"name": "channel", "type": ["null", "string"], "default": null}]});
/// let bids = Table::from_avro("bids", &schema).unwrap();
/// assert_eq!(bids.columns()[1].name, "channel");
/// assert_eq!(bids.columns()[1].null_branch, Some(0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    name: String,
    columns: Vec<Column>,
    /// The Avro schema of the records, as given (or made from the columns).
    definition: Value,
}

impl Table {
    /// A table of these columns.
    pub fn new(name: impl Into<String>, columns: Vec<Column>) -> Self {
        let name = name.into();
        let definition = definition_of(&name, &columns);
        Table {
            name,
            columns,
            definition,
        }
    }

    /// The table of records of an Avro record schema.
    ///
    /// # Errors
    ///
    /// A schema that is not a record, or a field of a type SQL does not read yet (arrays,
    /// maps, nested records, fixed, unions other than with `null`), named.
    pub fn from_avro(name: impl Into<String>, schema: &Value) -> Result<Table, Error> {
        let name = name.into();
        let refuse = |message: String| Error::Schema {
            table: name.clone(),
            message,
        };
        let fields = match schema {
            Value::Object(record) if record.get("type") == Some(&Value::from("record")) => {
                record.get("fields").and_then(Value::as_array)
            }
            _ => None,
        }
        .ok_or_else(|| {
            refuse(format!(
                "its schema is {schema}, not a record; SQL reads records"
            ))
        })?;
        let mut named_enums = Vec::new();
        let mut columns = Vec::with_capacity(fields.len());
        for field in fields {
            let field_name = field
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| refuse(format!("field {field} has no name")))?;
            let field_type = field.get("type").unwrap_or(&Value::Null);
            let mut column = column(field_name, field_type, &mut named_enums).ok_or_else(|| {
                refuse(format!(
                    "field '{field_name}' is of type {field_type}, which SQL does not read yet \
                     (it reads boolean, int, long, float, double, string, bytes, enums, and \
                     unions of null with one of these)"
                ))
            })?;
            column.default = field.get("default").cloned();
            columns.push(column);
        }
        Ok(Table {
            name,
            columns,
            definition: schema.clone(),
        })
    }

    /// The Avro schema of the records: as given to [`from_avro`](Table::from_avro), or for
    /// a table made of columns, a record named after the table with a field per column.
    pub fn avro_schema(&self) -> &Value {
        &self.definition
    }

    /// The name: the table in `FROM`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The columns, in field order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The Arrow schema of the table's batches.
    pub fn arrow_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|column| {
                    Field::new(
                        &column.name,
                        column.column_type.data_type(),
                        column.null_branch.is_some(),
                    )
                })
                .collect::<Vec<_>>(),
        ))
    }
}

/// The Avro record schema of `columns`, named after the table in upper camel case.
fn definition_of(table: &str, columns: &[Column]) -> Value {
    let fields: Vec<Value> = columns
        .iter()
        .map(|column| {
            let avro = match (&column.column_type, column.column_type.avro_primitive()) {
                (_, Some(primitive)) => Value::from(primitive),
                (ColumnType::Enum(symbols), None) => serde_json::json!({
                    "type": "enum", "name": format!("{}_{}", record_name(table), column.name), "symbols": symbols
                }),
                (_, None) => unreachable!("only enums are named types"),
            };
            match column.null_branch {
                Some(0) => serde_json::json!({"name": column.name, "type": ["null", avro], "default": null}),
                Some(_) => serde_json::json!({"name": column.name, "type": [avro, "null"]}),
                None => serde_json::json!({"name": column.name, "type": avro}),
            }
        })
        .collect();
    serde_json::json!({"type": "record", "name": record_name(table), "fields": fields})
}

/// `top-pages` as an Avro record name: `TopPages`.
///
/// ```
/// assert_eq!(runnel_sql::record_name("top-pages"), "TopPages");
/// assert_eq!(runnel_sql::record_name("q1"), "Q1");
/// ```
pub fn record_name(name: &str) -> String {
    let mut record = String::new();
    for word in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut characters = word.chars();
        if let Some(first) = characters.next() {
            record.extend(first.to_uppercase());
            record.extend(characters);
        }
    }
    if !record.starts_with(|c: char| c.is_ascii_alphabetic()) {
        record.insert(0, 'R');
    }
    record
}

/// The column of a field, or `None` for a type SQL does not read. Enums are remembered by
/// name, for later fields that refer to them.
fn column(
    name: &str,
    field_type: &Value,
    named_enums: &mut Vec<(String, Vec<String>)>,
) -> Option<Column> {
    if let Value::Array(branches) = field_type {
        let [first, second] = branches.as_slice() else {
            return None;
        };
        let (null_branch, other) = match (first, second) {
            (Value::String(null), other) if null == "null" => (0, other),
            (other, Value::String(null)) if null == "null" => (1, other),
            _ => return None,
        };
        let column_type = column_type(other, named_enums)?;
        return Some(Column {
            null_branch: Some(null_branch),
            ..Column::new(name, column_type)
        });
    }
    Some(Column::new(name, column_type(field_type, named_enums)?))
}

fn column_type(
    field_type: &Value,
    named_enums: &mut Vec<(String, Vec<String>)>,
) -> Option<ColumnType> {
    match field_type {
        Value::String(primitive) => Some(match primitive.as_str() {
            "boolean" => ColumnType::Boolean,
            "int" => ColumnType::Int,
            "long" => ColumnType::Long,
            "float" => ColumnType::Float,
            "double" => ColumnType::Double,
            "string" => ColumnType::String,
            "bytes" => ColumnType::Bytes,
            named => {
                let (_, symbols) = named_enums
                    .iter()
                    .find(|(name, _)| name == named || name.rsplit('.').next() == Some(named))?;
                ColumnType::Enum(symbols.clone())
            }
        }),
        Value::Object(complex) => match complex.get("type")?.as_str()? {
            "enum" => {
                let symbols: Vec<String> = complex
                    .get("symbols")?
                    .as_array()?
                    .iter()
                    .map(|symbol| symbol.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?;
                let name = complex.get("name")?.as_str()?;
                let full_name = match complex.get("namespace").and_then(Value::as_str) {
                    Some(namespace) if !name.contains('.') => format!("{namespace}.{name}"),
                    _ => name.to_owned(),
                };
                named_enums.push((full_name, symbols.clone()));
                Some(ColumnType::Enum(symbols))
            }
            // A primitive with a logical type (timestamp-millis on a long, say) is read as
            // its primitive.
            primitive @ ("boolean" | "int" | "long" | "float" | "double" | "string" | "bytes") => {
                column_type(&Value::from(primitive), named_enums)
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_primitive_enum_and_nullable_fields() {
        let schema = json!({"type": "record", "name": "Reading", "fields": [
            {"name": "unit", "type": {"type": "enum", "name": "Unit", "symbols": ["C", "F"]}},
            {"name": "previous_unit", "type": ["Unit", "null"]},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        ]});
        let table = Table::from_avro("readings", &schema).unwrap();
        let unit = ColumnType::Enum(vec!["C".into(), "F".into()]);
        assert_eq!(
            table.columns(),
            [
                Column::new("unit", unit.clone()),
                Column {
                    null_branch: Some(1),
                    ..Column::new("previous_unit", unit)
                },
                Column::new("at", ColumnType::Long),
            ]
        );
    }

    #[test]
    fn names_the_field_it_cannot_read() {
        let schema = json!({"type": "record", "name": "Reading", "fields": [
            {"name": "tags", "type": {"type": "array", "items": "string"}}]});
        let error = Table::from_avro("readings", &schema)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(
                "table 'readings': field 'tags' is of type {\"items\":\"string\",\"type\":\"array\"}, which SQL does not read yet"
            ),
            "{error}"
        );
    }
}
