//! Records as JSON lines.

use runnel_backend::{ConsumedRecord, Headers};
use serde_json::{Map, Value, json};

use crate::schemas::{Schemas, base64_of};

/// The record as one JSON object: where it is, its key, timestamp, headers and value (decoded
/// with its topic's schema when it can be; text or `{"base64": ...}` otherwise, with the
/// reason in `undecoded`; `null` for a null value, a tombstone, and `""` for an empty one
/// that does not decode).
pub(crate) fn record(schemas: &Schemas, consumed: &ConsumedRecord) -> Value {
    let mut object = Map::new();
    object.insert("topic".into(), json!(&*consumed.topic));
    object.insert("partition".into(), json!(consumed.partition));
    object.insert("offset".into(), json!(consumed.offset));
    object.insert("timestamp".into(), json!(consumed.record.timestamp));
    object.insert(
        "key".into(),
        consumed.record.key.as_deref().map_or(Value::Null, bytes),
    );
    if !consumed.record.headers.is_empty() {
        object.insert("headers".into(), headers(&consumed.record.headers));
    }
    let (value, undecoded) = value(schemas, &consumed.topic, &consumed.record);
    object.insert("value".into(), value);
    if let Some(reason) = undecoded {
        object.insert("undecoded".into(), json!(reason));
    }
    Value::Object(object)
}

/// The record's value decoded with `topic`'s schema, else as text or base64 with the reason;
/// JSON `null` for a null value (a tombstone), which has nothing to decode.
pub(crate) fn value(
    schemas: &Schemas,
    topic: &str,
    record: &runnel_backend::Record,
) -> (Value, Option<String>) {
    let Some(present) = &record.value else {
        return (Value::Null, None);
    };
    match schemas.decode(topic, record) {
        Ok(decoded) => (decoded, None),
        Err(reason) => (bytes(present), Some(reason)),
    }
}

/// Bytes as a string when they are UTF-8 text, else `{"base64": ...}`.
pub(crate) fn bytes(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) => json!(text),
        _ => base64_of(bytes),
    }
}

/// Headers as an object (a repeated name keeps its last value).
pub(crate) fn headers(headers: &Headers) -> Value {
    Value::Object(
        headers
            .iter()
            .map(|header| (header.key.clone(), bytes(&header.value)))
            .collect(),
    )
}
