//! Flink's JSON functions over `VARCHAR` columns that hold JSON text, with their default
//! behaviors (`NULL ON EMPTY`, `NULL ON ERROR`, `FALSE ON ERROR`):
//!
//! | function | result |
//! |---|---|
//! | `JSON_VALUE(json, path)` | the scalar at `path` as `VARCHAR` (a string's text, a number or boolean as written); null when there is none, or it is an object or array, or `json` is not JSON |
//! | `JSON_QUERY(json, path)` | the object or array at `path`, as JSON text; null otherwise |
//! | `JSON_EXISTS(json, path)` | whether `path` selects a value; false when `json` is not JSON |
//!
//! Paths are SQL/JSON paths: `$`, then `.key`, `."key"`, `['key']` and `[index]` steps,
//! optionally after `lax` or `strict` (which behave the same here). A path that is not one
//! is an error of the query's row, which goes to the dead-letter topic.

use std::sync::Arc;

use datafusion_common::arrow::array::{
    Array, ArrayRef, BooleanBuilder, StringArray, StringBuilder,
};
use datafusion_common::arrow::datatypes::DataType;
use datafusion_common::{DataFusionError, Result};
use datafusion_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use serde_json::Value as Json;

/// `JSON_VALUE`, `JSON_QUERY` and `JSON_EXISTS`.
pub(crate) fn functions() -> Vec<ScalarUDF> {
    vec![
        text_function("json_value", |found| match found {
            Some(Json::String(text)) => Some(text.clone()),
            Some(Json::Number(number)) => Some(number.to_string()),
            Some(Json::Bool(value)) => Some(value.to_string()),
            _ => None,
        }),
        text_function("json_query", |found| match found {
            Some(value @ (Json::Object(_) | Json::Array(_))) => Some(value.to_string()),
            _ => None,
        }),
        create_udf(
            "json_exists",
            vec![DataType::Utf8, DataType::Utf8],
            DataType::Boolean,
            Volatility::Immutable,
            Arc::new(|arguments: &[ColumnarValue]| {
                let (documents, paths, rows) = text_arguments(arguments)?;
                let mut exists = BooleanBuilder::with_capacity(rows);
                for row in 0..rows {
                    let (Some(document), Some(path)) = (text(&documents, row), text(&paths, row))
                    else {
                        exists.append_null();
                        continue;
                    };
                    let path = Path::parse(path)?;
                    let found = serde_json::from_str::<Json>(document)
                        .ok()
                        .is_some_and(|json| path.select(&json).is_some());
                    exists.append_value(found);
                }
                Ok(ColumnarValue::Array(Arc::new(exists.finish())))
            }),
        ),
    ]
}

/// A `(VARCHAR, VARCHAR) -> VARCHAR` function of the value at the path.
fn text_function(name: &str, result: fn(Option<&Json>) -> Option<String>) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8, DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |arguments: &[ColumnarValue]| {
            let (documents, paths, rows) = text_arguments(arguments)?;
            let mut results = StringBuilder::with_capacity(rows, rows * 8);
            for row in 0..rows {
                let (Some(document), Some(path)) = (text(&documents, row), text(&paths, row))
                else {
                    results.append_null();
                    continue;
                };
                let path = Path::parse(path)?;
                let json = serde_json::from_str::<Json>(document).ok();
                results.append_option(json.as_ref().and_then(|json| result(path.select(json))));
            }
            Ok(ColumnarValue::Array(Arc::new(results.finish())))
        }),
    )
}

/// The two text arguments (each an array or a scalar) and the number of rows.
fn text_arguments(arguments: &[ColumnarValue]) -> Result<(ArrayRef, ArrayRef, usize)> {
    let rows = arguments
        .iter()
        .find_map(|argument| match argument {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        })
        .unwrap_or(1);
    let array = |argument: &ColumnarValue| -> Result<ArrayRef> {
        match argument {
            ColumnarValue::Array(array) => Ok(array.clone()),
            ColumnarValue::Scalar(scalar) => scalar.to_array_of_size(rows),
        }
    };
    Ok((array(&arguments[0])?, array(&arguments[1])?, rows))
}

fn text(array: &ArrayRef, row: usize) -> Option<&str> {
    let strings = array.as_any().downcast_ref::<StringArray>()?;
    (!strings.is_null(row)).then(|| strings.value(row))
}

/// One step of a path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A SQL/JSON path: steps from the root.
#[derive(Debug, PartialEq)]
struct Path(Vec<Step>);

impl Path {
    fn parse(written: &str) -> Result<Path> {
        let invalid =
            |why: &str| DataFusionError::Execution(format!("the JSON path '{written}' {why}"));
        let mut rest = written.trim();
        for mode in ["lax ", "strict "] {
            if rest.len() >= mode.len() && rest[..mode.len()].eq_ignore_ascii_case(mode) {
                rest = rest[mode.len()..].trim_start();
            }
        }
        rest = rest
            .strip_prefix('$')
            .ok_or_else(|| invalid("does not start with $"))?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                if let Some(quoted) = after.strip_prefix('"') {
                    let end = quoted
                        .find('"')
                        .ok_or_else(|| invalid("has an unclosed \""))?;
                    steps.push(Step::Key(quoted[..end].to_owned()));
                    rest = &quoted[end + 1..];
                } else {
                    let end = after.find(['.', '[']).unwrap_or(after.len());
                    if end == 0 {
                        return Err(invalid("has an empty key"));
                    }
                    steps.push(Step::Key(after[..end].to_owned()));
                    rest = &after[end..];
                }
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after
                    .find(']')
                    .ok_or_else(|| invalid("has an unclosed ["))?;
                let inside = after[..end].trim();
                let key = inside
                    .strip_prefix('\'')
                    .and_then(|key| key.strip_suffix('\''))
                    .or_else(|| {
                        inside
                            .strip_prefix('"')
                            .and_then(|key| key.strip_suffix('"'))
                    });
                match key {
                    Some(key) => steps.push(Step::Key(key.to_owned())),
                    None => steps.push(Step::Index(
                        inside
                            .parse()
                            .map_err(|_| invalid("has an index that is not a number"))?,
                    )),
                }
                rest = &after[end + 1..];
            } else {
                return Err(invalid("has a step that is not .key or [index]"));
            }
        }
        Ok(Path(steps))
    }

    /// The value at the path in `json`, if there is one.
    fn select<'a>(&self, json: &'a Json) -> Option<&'a Json> {
        self.0.iter().try_fold(json, |value, step| match step {
            Step::Key(key) => value.as_object()?.get(key),
            Step::Index(index) => value.as_array()?.get(*index),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_select_keys_and_indices() {
        let json: Json = serde_json::json!({"a": {"b c": [10, {"d": "x"}]}, "n": null});
        let select = |path: &str| Path::parse(path).unwrap().select(&json).cloned();
        assert_eq!(select("$.a.\"b c\"[0]"), Some(serde_json::json!(10)));
        assert_eq!(select("lax $.a['b c'][1].d"), Some(serde_json::json!("x")));
        assert_eq!(select("$.a.missing"), None);
        assert_eq!(select("$.n"), Some(Json::Null));
        assert_eq!(select("$"), Some(json.clone()));
        for wrong in ["a.b", "$.", "$[x]", "$.a[0", "$ a"] {
            assert!(Path::parse(wrong).is_err(), "{wrong}");
        }
    }
}
