//! Results as people read them: each Avro-encoded result row as JSON values, column by
//! column ([`Query::json_rows`]).

use serde_json::Value as Json;

use crate::value::{Cells, Value};
use crate::{BatchDecoder, Error, Query, Table};

impl Query {
    /// The results, Avro encoded with the [`output_schema`](Query::output_schema), as rows
    /// of JSON values, one per output column ([`output_columns`](Query::output_columns)), in
    /// order. Bytes are written as arrays of numbers; floating-point values that are not
    /// numbers (NaN, infinities) as null.
    ///
    /// ```
    /// use runnel_sql::{Column, ColumnType, Query, Table};
    /// let numbers = Table::new("numbers", vec![Column::new("n", ColumnType::Long)]);
    /// let query = Query::plan("SELECT n, n * 2 AS twice FROM numbers", &[numbers], "Out").unwrap();
    /// let results: Vec<Vec<u8>> = query.process("numbers", &[&[42]]).results.into_iter().map(|(_, r)| r).collect();
    /// assert_eq!(query.output_columns(), ["n", "twice"]);
    /// assert_eq!(query.json_rows(&results).unwrap(), [[21, 42]]);
    /// ```
    ///
    /// # Errors
    ///
    /// A result that is not a value of the output schema.
    pub fn json_rows(&self, results: &[Vec<u8>]) -> Result<Vec<Vec<Json>>, Error> {
        let table = Table::from_avro("results", self.output_schema())?;
        let mut decoder = BatchDecoder::new(&table);
        for result in results {
            decoder.append(result)?;
        }
        let batch = decoder.finish();
        let columns: Vec<Cells<'_>> = batch.columns().iter().map(Cells::of).collect();
        Ok((0..batch.num_rows())
            .map(|row| columns.iter().map(|cells| json(cells.get(row))).collect())
            .collect())
    }

    /// The names of the output columns, in order.
    pub fn output_columns(&self) -> Vec<&str> {
        self.output_schema()["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|field| field["name"].as_str())
            .collect()
    }
}

fn json(value: Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Boolean(value) => Json::Bool(value),
        Value::Integer(value) => Json::from(value),
        Value::Float(value) => serde_json::Number::from_f64(value).map_or(Json::Null, Json::Number),
        Value::Text(text) => Json::String(text),
        Value::Bytes(bytes) => Json::from(bytes),
    }
}
