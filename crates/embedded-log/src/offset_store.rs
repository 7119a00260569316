//! Committed offsets of consumer groups, one file per group under `groups/`.
//!
//! A commit rewrites the group's whole file crash-safely (temporary file, `fsync`, rename,
//! `fsync` of the directory), so after a crash the file holds either the previous or the new
//! offsets. The file is text, one `topic partition offset` line per partition, ending with a
//! CRC-32C of the lines above it, so damage is reported instead of resuming from a wrong place:
//!
//! ```text
//! # runnel committed offsets, format 1
//! readings 0 1042
//! readings 1 977
//! checksum 8c0f6a1e
//! ```
//!
//! The file name is the group name with every byte other than `[A-Za-z0-9_-]` written as
//! `%XX`, plus `.offsets`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::files;
use crate::partition::lock;

const EXTENSION: &str = "offsets";
const HEADER: &str = "# runnel committed offsets, format 1\n";

/// A topic name and a partition number.
type TopicPartitionKey = (String, u32);

/// The committed offsets of every group, in memory and on disk.
#[derive(Debug)]
pub(crate) struct OffsetStore {
    directory: PathBuf,
    groups: Mutex<HashMap<String, Arc<GroupOffsets>>>,
}

#[derive(Debug, Default)]
struct GroupOffsets {
    /// Held while a commit writes the file, so commits of one group apply in order.
    writing: Mutex<()>,
    /// What the file holds.
    committed: Mutex<BTreeMap<TopicPartitionKey, u64>>,
}

impl OffsetStore {
    /// Loads every group's file from `directory`, creating the directory if needed.
    pub(crate) fn open(directory: PathBuf) -> Result<Self> {
        files::create_directory(&directory)?;
        files::remove_temporary_files(&directory)?;
        let mut groups = HashMap::new();
        for path in files::list_directory(&directory)? {
            if path
                .extension()
                .is_none_or(|extension| extension != EXTENSION)
            {
                continue;
            }
            let stem = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or_default();
            let group = decode_name(stem).ok_or_else(|| Error::CorruptMetadata {
                path: path.clone(),
                problem: "the file name is not an encoded group name".to_owned(),
            })?;
            let committed = parse(&path)?;
            groups.insert(
                group,
                Arc::new(GroupOffsets {
                    writing: Mutex::new(()),
                    committed: Mutex::new(committed),
                }),
            );
        }
        Ok(OffsetStore {
            directory,
            groups: Mutex::new(groups),
        })
    }

    /// The offset `group` committed for a partition.
    pub(crate) fn committed(&self, group: &str, topic: &str, partition: u32) -> Option<u64> {
        let offsets = lock(&self.groups).get(group).cloned()?;
        lock(&offsets.committed)
            .get(&(topic.to_owned(), partition))
            .copied()
    }

    /// Stores offsets for `group` durably. Blocks on disk I/O.
    pub(crate) fn commit(&self, group: &str, offsets: &[(String, u32, u64)]) -> Result<()> {
        let path = self.path_of(group)?;
        let entry = lock(&self.groups)
            .entry(group.to_owned())
            .or_default()
            .clone();
        let _writing = lock(&entry.writing);
        let mut next = lock(&entry.committed).clone();
        for (topic, partition, offset) in offsets {
            next.insert((topic.clone(), *partition), *offset);
        }
        files::replace_file(&path, render(&next).as_bytes())?;
        *lock(&entry.committed) = next;
        Ok(())
    }

    fn path_of(&self, group: &str) -> Result<PathBuf> {
        let name = encode_name(group);
        if name.len() + EXTENSION.len() + 1 + files::TEMPORARY_SUFFIX.len() > 255 {
            return Err(Error::GroupNameTooLong {
                length: group.len(),
            });
        }
        Ok(self.directory.join(format!("{name}.{EXTENSION}")))
    }
}

fn render(committed: &BTreeMap<TopicPartitionKey, u64>) -> String {
    let mut text = String::from(HEADER);
    for ((topic, partition), offset) in committed {
        text.push_str(&format!("{topic} {partition} {offset}\n"));
    }
    let checksum = crc32c::crc32c(text.as_bytes());
    text.push_str(&format!("checksum {checksum:08x}\n"));
    text
}

/// Reads a group's offsets file.
pub(crate) fn parse(path: &Path) -> Result<BTreeMap<TopicPartitionKey, u64>> {
    let corrupt = |problem: String| Error::CorruptMetadata {
        path: path.to_owned(),
        problem,
    };
    let bytes = files::read_if_exists(path)?.unwrap_or_default();
    let text = String::from_utf8(bytes).map_err(|_| corrupt("the file is not UTF-8".to_owned()))?;
    let body_len = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map_or(0, |at| at + 1);
    let (body, last) = text.split_at(body_len);
    let stored = last
        .trim()
        .strip_prefix("checksum ")
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or_else(|| corrupt("the checksum line is missing".to_owned()))?;
    if stored != crc32c::crc32c(body.as_bytes()) {
        return Err(corrupt(
            "the checksum does not match the contents".to_owned(),
        ));
    }
    let mut committed = BTreeMap::new();
    for (number, line) in body.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let parsed = match fields[..] {
            [topic, partition, offset] => partition
                .parse()
                .ok()
                .zip(offset.parse().ok())
                .map(|(partition, offset)| ((topic.to_owned(), partition), offset)),
            _ => None,
        };
        let (key, offset) = parsed.ok_or_else(|| {
            corrupt(format!(
                "line {} is not 'topic partition offset'",
                number + 1
            ))
        })?;
        committed.insert(key, offset);
    }
    Ok(committed)
}

/// The file holding `group`'s offsets, in the groups directory.
pub(crate) fn file_name(group: &str) -> String {
    format!("{}.{EXTENSION}", encode_name(group))
}

/// The group whose offsets `path` holds, if it is an offsets file.
pub(crate) fn group_of(path: &Path) -> Option<String> {
    if path.extension()? != EXTENSION {
        return None;
    }
    decode_name(path.file_stem()?.to_str()?)
}

/// The group name with bytes outside `[A-Za-z0-9_-]` as `%XX`.
pub(crate) fn encode_name(group: &str) -> String {
    let mut name = String::with_capacity(group.len());
    for byte in group.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-' {
            name.push(byte as char);
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name
}

pub(crate) fn decode_name(name: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(name.len());
    let mut rest = name.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        if first == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(first);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_survive_reopening_and_names_are_encoded() {
        let directory = tempfile::tempdir().unwrap();
        let store = OffsetStore::open(directory.path().to_owned()).unwrap();
        let group = "billing/../readers é";
        store
            .commit(group, &[("t".into(), 0, 5), ("t".into(), 1, 7)])
            .unwrap();
        store.commit(group, &[("t".into(), 0, 6)]).unwrap();
        assert_eq!(decode_name(&encode_name(group)).unwrap(), group);
        let reopened = OffsetStore::open(directory.path().to_owned()).unwrap();
        assert_eq!(reopened.committed(group, "t", 0), Some(6));
        assert_eq!(reopened.committed(group, "t", 1), Some(7));
        assert_eq!(reopened.committed("other", "t", 0), None);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let directory = tempfile::tempdir().unwrap();
        let store = OffsetStore::open(directory.path().to_owned()).unwrap();
        store.commit("g", &[("t".into(), 0, 5)]).unwrap();
        let path = directory.path().join("g.offsets");
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("t 0 5", "t 0 6");
        std::fs::write(&path, text).unwrap();
        let error = OffsetStore::open(directory.path().to_owned())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("g.offsets") && error.contains("checksum"),
            "{error}"
        );
    }
}
