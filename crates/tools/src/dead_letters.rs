//! `dead-letters`: the app's dead-letter topic, each record with why it was rejected and
//! where it came from, its value decoded with its origin topic's schema where it can be.

use std::io::Write;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::args::DeadLetterArgs;
use crate::context::Tools;
use crate::error::{Result, ToolError};
use crate::render;

/// Writes the dead letters as JSON lines to `out`; returns how many.
///
/// # Errors
///
/// When the dead-letter topic cannot be read or `out` cannot be written.
pub async fn dead_letters(
    tools: &Tools,
    args: &DeadLetterArgs,
    out: &mut dyn Write,
) -> Result<usize> {
    let topic = tools.dead_letter_topic();
    tools.store.topic(&topic).await?;
    let limit = args.count.unwrap_or(usize::MAX);
    let mut position = 0;
    let mut written = 0;
    loop {
        let records = tools
            .store
            .read(
                &topic,
                0,
                position,
                1000.min(limit - written),
                Duration::from_millis(200),
            )
            .await?;
        tools
            .learn_schemas(records.iter().map(|consumed| &consumed.record))
            .await?;
        for record in &records {
            let line = letter(tools, record);
            writeln!(out, "{line}").map_err(|source| ToolError::Io {
                what: "writing the dead letters".to_owned(),
                source,
            })?;
        }
        written += records.len();
        if let Some(last) = records.last() {
            position = last.offset + 1;
        }
        if written >= limit || (records.is_empty() && !args.follow) {
            let _ = out.flush();
            return Ok(written);
        }
        if records.is_empty() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// One dead letter: its position, the reason, the origin, and the rejected record.
fn letter(tools: &Tools, consumed: &runnel_backend::ConsumedRecord) -> Value {
    let headers = &consumed.record.headers;
    let header = |name: &str| headers.get_str(&format!("runnel.dead-letter.{name}"));
    let number = |name: &str| header(name).and_then(|text| text.parse::<u64>().ok());
    let origin_topic = header("topic").unwrap_or_default();
    let mut origin = Map::new();
    origin.insert("topic".into(), json!(origin_topic));
    origin.insert("partition".into(), json!(number("partition")));
    origin.insert("offset".into(), json!(number("offset")));
    origin.insert("streamlet".into(), json!(header("streamlet")));
    origin.insert("inlet".into(), json!(header("inlet")));
    let mut object = Map::new();
    object.insert("offset".into(), json!(consumed.offset));
    object.insert("error".into(), json!(header("error")));
    object.insert("origin".into(), Value::Object(origin));
    if let Some(size) = number("truncated") {
        object.insert("truncated_from".into(), json!(size));
    }
    object.insert("timestamp".into(), json!(consumed.record.timestamp));
    object.insert(
        "key".into(),
        consumed
            .record
            .key
            .as_deref()
            .map_or(Value::Null, render::bytes),
    );
    let own: runnel_backend::Headers = headers
        .iter()
        .filter(|header| !header.key.starts_with("runnel.dead-letter."))
        .cloned()
        .collect();
    if !own.is_empty() {
        object.insert("headers".into(), render::headers(&own));
    }
    let (value, undecoded) = render::value(&tools.schemas, origin_topic, &consumed.record);
    object.insert("value".into(), value);
    if let Some(reason) = undecoded {
        object.insert("undecoded".into(), json!(reason));
    }
    Value::Object(object)
}
