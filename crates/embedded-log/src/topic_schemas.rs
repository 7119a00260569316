//! The schemas written to a topic: `schemas/` in the topic's directory, one file per schema,
//! `<sequence>-<fingerprint>.json` holding its definition, in the order they were registered
//! (so the first is the topic's base schema; see [`TopicSchema`]).
//!
//! A schema is registered before any record written with it is appended, and its file is
//! written whole (a temporary file, synced, renamed, the directory synced), so after a crash
//! every record that names a schema finds it, and a half-written file is never read.

use std::path::{Path, PathBuf};

use runnel_backend::TopicSchema;

use crate::error::{Error, Result};
use crate::files;

/// The directory of a topic's schemas, inside the topic's directory.
const SCHEMAS_DIRECTORY: &str = "schemas";
/// The suffix of a schema's file.
const SUFFIX: &str = ".json";

/// The schemas of the topic whose directory is `topic`, oldest first.
///
/// # Errors
///
/// When the directory or a schema file cannot be read, or a file's name is not a schema's.
pub(crate) fn read(topic: &Path) -> Result<Vec<TopicSchema>> {
    let directory = topic.join(SCHEMAS_DIRECTORY);
    if !directory.is_dir() {
        return Ok(Vec::new());
    }
    let mut schemas = Vec::new();
    for path in files::list_directory(&directory)? {
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        // Leftovers of an interrupted write: the schema was not registered.
        if name.ends_with(files::TEMPORARY_SUFFIX) {
            continue;
        }
        let (sequence, fingerprint) = parse_name(name).ok_or_else(|| Error::CorruptMetadata {
            path: path.clone(),
            problem: "not a schema file (<sequence>-<fingerprint>.json)".to_owned(),
        })?;
        let definition = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            position: 0,
            source,
        })?;
        schemas.push((sequence, TopicSchema::new(fingerprint, definition)));
    }
    schemas.sort_by_key(|(sequence, _)| *sequence);
    Ok(schemas.into_iter().map(|(_, schema)| schema).collect())
}

/// Registers `schema` for the topic whose directory is `topic` unless it is registered
/// already; returns every schema of the topic afterwards. The caller serializes
/// registrations of one topic.
///
/// # Errors
///
/// When the schemas cannot be read or the new one cannot be written durably.
pub(crate) fn register(topic: &Path, schema: &TopicSchema) -> Result<Vec<TopicSchema>> {
    let mut schemas = read(topic)?;
    if schemas
        .iter()
        .any(|known| known.fingerprint == schema.fingerprint)
    {
        return Ok(schemas);
    }
    let directory = topic.join(SCHEMAS_DIRECTORY);
    files::create_directory(&directory)?;
    let path = file_of(&directory, schemas.len(), &schema.fingerprint);
    files::replace_file(&path, schema.definition.as_bytes())?;
    schemas.push(schema.clone());
    Ok(schemas)
}

fn file_of(directory: &Path, sequence: usize, fingerprint: &str) -> PathBuf {
    directory.join(format!("{sequence:06}-{fingerprint}{SUFFIX}"))
}

/// `000001-a1b2...json` as (1, "a1b2...").
fn parse_name(name: &str) -> Option<(u64, String)> {
    let stem = name.strip_suffix(SUFFIX)?;
    let (sequence, fingerprint) = stem.split_once('-')?;
    let valid = !fingerprint.is_empty() && fingerprint.bytes().all(|b| b.is_ascii_alphanumeric());
    Some((sequence.parse().ok()?, fingerprint.to_owned())).filter(|_| valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_kept_in_the_order_they_were_first_registered() {
        let topic = tempfile::tempdir().unwrap();
        assert!(read(topic.path()).unwrap().is_empty());
        let first = TopicSchema::new("aa11", r#"{"type": "string"}"#);
        let second = TopicSchema::new("bb22", r#"{"type": "long"}"#);
        assert_eq!(
            register(topic.path(), &first).unwrap(),
            std::slice::from_ref(&first)
        );
        assert_eq!(
            register(topic.path(), &second).unwrap(),
            [first.clone(), second.clone()]
        );
        // Again: nothing changes.
        assert_eq!(
            register(topic.path(), &first).unwrap(),
            [first.clone(), second.clone()]
        );
        // A leftover of a write a crash interrupted is not a schema.
        let directory = topic.path().join(SCHEMAS_DIRECTORY);
        std::fs::write(directory.join("000002-cc33.json.tmp"), "{").unwrap();
        assert_eq!(read(topic.path()).unwrap(), [first, second]);
    }

    #[test]
    fn a_stray_file_is_an_error_naming_it() {
        let topic = tempfile::tempdir().unwrap();
        let directory = topic.path().join(SCHEMAS_DIRECTORY);
        std::fs::create_dir_all(&directory).unwrap();
        std::fs::write(directory.join("notes.txt"), "hello").unwrap();
        let error = read(topic.path()).unwrap_err().to_string();
        assert!(error.contains("notes.txt"), "{error}");
    }
}
