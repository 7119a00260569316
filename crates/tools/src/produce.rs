//! `produce`: records from JSON lines (encoded with the topic's schema) or raw files.
//!
//! A null value (a tombstone) is written from an envelope whose `"value"` is `null`, or
//! from an empty raw file with `-Z` (as kcat's `-Z` sends empty messages as null).

use std::io::BufRead;

use bytes::Bytes;
use runnel_backend::{Headers, Record};
use serde_json::Value;

use crate::args::ProduceArgs;
use crate::context::Tools;
use crate::error::{Result, ToolError};
use crate::store::EncodedWith;

/// Appends the records `args` describes, read from `input` unless raw files are given;
/// returns (partition, offset) of each, once acknowledged. A topic of the blueprint that
/// does not exist yet (the app never ran) is created first, as the app's run would.
///
/// # Errors
///
/// When a line is not JSON or does not fit the topic's schema (nothing is written then),
/// the topic does not exist and is not in the blueprint, or the log refuses a record.
pub async fn produce(
    tools: &Tools,
    args: &ProduceArgs,
    input: &mut dyn BufRead,
) -> Result<Vec<(u32, u64)>> {
    let key = args.key.clone().map(Bytes::from);
    let mut encoded_with = None;
    let records = if args.raw.is_empty() {
        let (records, named) = json_records(tools, args, input, key)?;
        encoded_with = tools
            .schemas
            .writer_schema(&args.topic)
            .map(|schema| EncodedWith { schema, named });
        records
    } else {
        let mut records = Vec::new();
        for path in &args.raw {
            let bytes = std::fs::read(path).map_err(|source| ToolError::Io {
                what: format!("reading {}", path.display()),
                source,
            })?;
            let value = (!(bytes.is_empty() && args.empty_as_null)).then(|| Bytes::from(bytes));
            records.push(Record {
                key: key.clone(),
                value,
                headers: Headers::new(),
                timestamp: now(),
            });
        }
        records
    };
    let declared = tools.declared_topic(&args.topic);
    tools
        .store
        .produce(
            &args.topic,
            args.partition,
            records,
            declared.as_ref(),
            encoded_with.as_ref(),
        )
        .await
}

/// Every line of `input` as a record, all checked before any is written, and whether the
/// records must name their schema where the backplane keeps none (the topic has several
/// writer schemas).
fn json_records(
    tools: &Tools,
    args: &ProduceArgs,
    input: &mut dyn BufRead,
    key: Option<Bytes>,
) -> Result<(Vec<Record>, bool)> {
    let mut named = false;
    if !tools.schemas.knows(&args.topic) {
        return Err(ToolError::Usage(format!(
            "no schema is known for topic '{}' (it is not in the blueprint, or the descriptor is missing); give raw files with --raw",
            args.topic
        )));
    }
    let mut records = Vec::new();
    for (number, line) in input.lines().enumerate() {
        let line = line.map_err(|source| ToolError::Io {
            what: "reading standard input".to_owned(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let encode_error = |reason: String| ToolError::Encode {
            line: number + 1,
            reason,
        };
        let parsed: Value = serde_json::from_str(&line)
            .map_err(|error| encode_error(format!("not JSON: {error}")))?;
        let mut record = Record {
            key: key.clone(),
            value: None,
            headers: Headers::new(),
            timestamp: now(),
        };
        let value = if args.envelope {
            envelope(&parsed, &mut record).map_err(encode_error)?
        } else {
            &parsed
        };
        if args.envelope && value.is_null() {
            // `"value": null` in an envelope is a null value (a tombstone), as the topic
            // tools print one: nothing to encode and no schema header.
            records.push(record);
            continue;
        }
        let (bytes, tag) = tools
            .schemas
            .encode(&args.topic, value)
            .map_err(encode_error)?;
        record.value = Some(Bytes::from(bytes));
        named |= tag.is_some();
        records.push(record);
    }
    Ok((records, named))
}

/// Takes key, headers and timestamp from an envelope into `record`; returns its value.
fn envelope<'a>(parsed: &'a Value, record: &mut Record) -> Result<&'a Value, String> {
    let object = parsed
        .as_object()
        .ok_or_else(|| "an envelope must be a JSON object with a \"value\"".to_owned())?;
    for name in object.keys() {
        if !["key", "value", "headers", "timestamp"].contains(&name.as_str()) {
            return Err(format!(
                "unknown envelope field '{name}' (use key, value, headers, timestamp)"
            ));
        }
    }
    match object.get("key") {
        None => {}
        Some(Value::Null) => record.key = None,
        Some(Value::String(key)) => record.key = Some(Bytes::from(key.clone())),
        Some(_) => return Err("the envelope's \"key\" must be a string or null".to_owned()),
    }
    if let Some(headers) = object.get("headers") {
        let headers = headers
            .as_object()
            .ok_or_else(|| "the envelope's \"headers\" must be an object".to_owned())?;
        for (name, value) in headers {
            let value = value
                .as_str()
                .ok_or_else(|| format!("header '{name}' must be a string"))?;
            record.headers.push(name.clone(), value.to_owned());
        }
    }
    if let Some(timestamp) = object.get("timestamp") {
        record.timestamp = timestamp.as_i64().ok_or_else(|| {
            "the envelope's \"timestamp\" must be milliseconds since the epoch".to_owned()
        })?;
    }
    object
        .get("value")
        .ok_or_else(|| "the envelope has no \"value\"".to_owned())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}
