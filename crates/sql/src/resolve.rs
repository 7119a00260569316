//! Records written with an older (or newer) schema than the table's: [`Resolution`] turns a
//! batch decoded with the writer's schema into one of the table's columns, by field name,
//! as Avro's schema resolution does: a field both have is taken (promoted where the types
//! differ: int to long, float or double; long to float or double; float to double; string
//! and bytes either way), a field only the table has takes its default, and a field only
//! the writer has is dropped.

use datafusion_common::ScalarValue;
use datafusion_common::arrow::array::{ArrayRef, RecordBatch, new_null_array};
use datafusion_common::arrow::compute::cast;
use serde_json::Value;

use crate::Error;
use crate::table::{Column, ColumnType, Table};

/// Where each column of the table comes from in a writer's batch.
#[derive(Debug)]
enum Source {
    /// The writer's column at this position, cast to the table's type where they differ.
    Field(usize),
    /// The table's default: the same value in every row.
    Default(ScalarValue),
}

/// How batches of one writer's schema become batches of the table's.
#[derive(Debug)]
pub(crate) struct Resolution {
    sources: Vec<Source>,
    table: Table,
}

impl Resolution {
    /// The resolution of records written with `writer` into `table`.
    ///
    /// # Errors
    ///
    /// A field of the table the writer lacks and that has no default, or a field both have
    /// whose types do not promote: every record of that writer is then rejected with it.
    pub(crate) fn new(writer: &Table, table: &Table) -> Result<Resolution, Error> {
        let refuse = |message: String| Error::Decode {
            table: table.name().to_owned(),
            message,
        };
        let mut sources = Vec::with_capacity(table.columns().len());
        for column in table.columns() {
            let written = writer
                .columns()
                .iter()
                .position(|candidate| candidate.name == column.name);
            sources.push(match written {
                Some(position) => {
                    let from = &writer.columns()[position];
                    if !promotes(&from.column_type, &column.column_type) {
                        return Err(refuse(format!(
                            "field '{}' was written as {:?}, which does not resolve to the table's {:?}",
                            column.name, from.column_type, column.column_type
                        )));
                    }
                    Source::Field(position)
                }
                None => Source::Default(default_of(column).ok_or_else(|| {
                    refuse(format!(
                        "the record was written with a schema without field '{}', which has no default in the table's schema",
                        column.name
                    ))
                })?),
            });
        }
        Ok(Resolution {
            sources,
            table: table.clone(),
        })
    }

    /// `batch`, of the writer's columns, as a batch of the table's.
    pub(crate) fn resolve(&self, batch: &RecordBatch) -> Result<RecordBatch, Error> {
        let rows = batch.num_rows();
        let columns = self
            .sources
            .iter()
            .zip(self.table.columns())
            .map(|(source, column)| -> Result<ArrayRef, Error> {
                let data_type = column.column_type.data_type();
                match source {
                    Source::Field(position) => {
                        let array = batch.column(*position);
                        if array.data_type() == &data_type {
                            Ok(array.clone())
                        } else {
                            cast(array, &data_type)
                                .map_err(|error| Error::Evaluate(error.to_string()))
                        }
                    }
                    Source::Default(ScalarValue::Null) => Ok(new_null_array(&data_type, rows)),
                    Source::Default(value) => value
                        .to_array_of_size(rows)
                        .map_err(|error| Error::Evaluate(error.to_string())),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(self.table.arrow_schema(), columns)
            .map_err(|error| Error::Evaluate(error.to_string()))
    }
}

/// Whether Avro resolves values of `writer` type to `reader` type.
fn promotes(writer: &ColumnType, reader: &ColumnType) -> bool {
    use ColumnType::*;
    matches!(
        (writer, reader),
        (Int, Long | Float | Double)
            | (Long, Float | Double)
            | (Float, Double)
            | (String, Bytes)
            | (Bytes, String)
            | (Enum(_), Enum(_))
    ) || writer == reader
}

/// The default of a column as a value of its Arrow type: `null` for a union that starts
/// with null, else the schema's default; `None` when there is none.
fn default_of(column: &Column) -> Option<ScalarValue> {
    let default = column.default.as_ref()?;
    if default.is_null() {
        return column.null_branch.map(|_| ScalarValue::Null);
    }
    let value = match (&column.column_type, default) {
        (ColumnType::Boolean, Value::Bool(value)) => ScalarValue::Boolean(Some(*value)),
        (ColumnType::Int, Value::Number(n)) => {
            ScalarValue::Int32(Some(i32::try_from(n.as_i64()?).ok()?))
        }
        (ColumnType::Long, Value::Number(n)) => ScalarValue::Int64(Some(n.as_i64()?)),
        (ColumnType::Float, Value::Number(n)) => ScalarValue::Float32(Some(n.as_f64()? as f32)),
        (ColumnType::Double, Value::Number(n)) => ScalarValue::Float64(Some(n.as_f64()?)),
        (ColumnType::String | ColumnType::Enum(_), Value::String(text)) => {
            ScalarValue::Utf8(Some(text.clone()))
        }
        // Avro writes a bytes default as a string of code points 0 to 255.
        (ColumnType::Bytes, Value::String(text)) => ScalarValue::Binary(Some(
            text.chars()
                .map(|c| u8::try_from(c as u32))
                .collect::<Result<_, _>>()
                .ok()?,
        )),
        _ => return None,
    };
    // The type is the column's, so the array is too.
    debug_assert_eq!(value.data_type(), column.column_type.data_type());
    Some(value)
}
