//! The transaction coordinator's durable state: `transactions.state` in the log directory.
//!
//! It holds, for every transactional id, the producer id the log gave it, its current epoch
//! and its transaction's phase, with the partitions the transaction wrote to (and the start
//! bound of its records in each) and, while it commits, the consumer offsets it commits;
//! and the aborted ranges read-committed readers skip. The file is rewritten crash-safely
//! (temporary file, `fsync`, rename, `fsync` of the directory) at every step of a
//! transaction that recovery must know about: the first record of a transaction in a
//! partition, the decision to commit (the commit point) or to abort, and the end. It is
//! text, one fact per line, every name written as in `offset_store.rs`, ending with a
//! CRC-32C of the lines above it:
//!
//! ```text
//! # runnel transactions, format 1
//! next-producer-id 2
//! producer eos.copy.0 0 3 committing
//! partition 0 out 1 1040
//! offset 0 eos.copy.in in 1 977
//! producer eos.copy.1 1 1 empty
//! aborted out 0 1 17 25
//! checksum 5b1e0c4d
//! ```
//!
//! `producer ID PRODUCER-ID EPOCH PHASE` is followed by the `partition PRODUCER-ID TOPIC
//! PARTITION FIRST` and `offset PRODUCER-ID GROUP TOPIC PARTITION OFFSET` lines of its
//! transaction; `aborted TOPIC PARTITION PRODUCER-ID FIRST MARKER` is an aborted range.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files;
use crate::offset_store::{decode_name, encode_name};
use crate::transaction_index::AbortedRange;

/// The name of the state file in the log directory.
pub(crate) const FILE_NAME: &str = "transactions.state";
const HEADER: &str = "# runnel transactions, format 1\n";

/// Where a transactional id's current transaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No records since the last commit or abort.
    Empty,
    /// Records were written to the partitions listed; nothing is decided.
    Ongoing,
    /// The transaction commits: markers and offsets may still have to be written.
    Committing,
    /// The transaction aborts: markers may still have to be written.
    Aborting,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Empty => "empty",
            Phase::Ongoing => "ongoing",
            Phase::Committing => "committing",
            Phase::Aborting => "aborting",
        }
    }

    fn parse(text: &str) -> Option<Phase> {
        match text {
            "empty" => Some(Phase::Empty),
            "ongoing" => Some(Phase::Ongoing),
            "committing" => Some(Phase::Committing),
            "aborting" => Some(Phase::Aborting),
            _ => None,
        }
    }
}

/// A topic name and a partition number.
pub(crate) type PartitionKey = (String, u32);

/// An offset a transaction commits: group, topic, partition, next offset to read.
pub(crate) type GroupOffset = (String, String, u32, u64);

/// One transactional id's producer and its current transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProducerEntry {
    /// The producer id, fixed for the transactional id.
    pub(crate) producer_id: u64,
    /// Bumped by every new producer with the id; older epochs are fenced.
    pub(crate) epoch: u32,
    pub(crate) phase: Phase,
    /// The partitions the transaction wrote to, with the start bound of its records.
    pub(crate) partitions: BTreeMap<PartitionKey, u64>,
    /// The offsets the transaction commits (while committing).
    pub(crate) offsets: Vec<GroupOffset>,
}

/// The whole state, as in the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TransactionState {
    pub(crate) next_producer_id: u64,
    pub(crate) producers: BTreeMap<String, ProducerEntry>,
    /// Aborted ranges per partition.
    pub(crate) aborted: Vec<(PartitionKey, AbortedRange)>,
}

impl TransactionState {
    /// Reads the state file in `directory`; empty when there is none.
    pub(crate) fn load(directory: &Path) -> Result<TransactionState> {
        let path = directory.join(FILE_NAME);
        match files::read_if_exists(&path)? {
            Some(bytes) => parse(&path, bytes),
            None => Ok(TransactionState::default()),
        }
    }

    /// Replaces the state file in `directory` with this state, durably.
    pub(crate) fn store(&self, directory: &Path) -> Result<()> {
        files::replace_file(&directory.join(FILE_NAME), self.render().as_bytes())
    }

    /// The entry of `id`, created with a fresh producer id (epoch 0) if it has none.
    pub(crate) fn entry(&mut self, id: &str) -> &mut ProducerEntry {
        let next = &mut self.next_producer_id;
        self.producers.entry(id.to_owned()).or_insert_with(|| {
            let producer_id = *next;
            *next += 1;
            ProducerEntry {
                producer_id,
                epoch: 0,
                phase: Phase::Empty,
                partitions: BTreeMap::new(),
                offsets: Vec::new(),
            }
        })
    }

    fn render(&self) -> String {
        let mut text = String::from(HEADER);
        text.push_str(&format!("next-producer-id {}\n", self.next_producer_id));
        for (id, entry) in &self.producers {
            let producer = entry.producer_id;
            text.push_str(&format!(
                "producer {} {producer} {} {}\n",
                encode_name(id),
                entry.epoch,
                entry.phase.as_str()
            ));
            for ((topic, partition), first) in &entry.partitions {
                text.push_str(&format!(
                    "partition {producer} {} {partition} {first}\n",
                    encode_name(topic)
                ));
            }
            for (group, topic, partition, offset) in &entry.offsets {
                text.push_str(&format!(
                    "offset {producer} {} {} {partition} {offset}\n",
                    encode_name(group),
                    encode_name(topic)
                ));
            }
        }
        for ((topic, partition), range) in &self.aborted {
            text.push_str(&format!(
                "aborted {} {partition} {} {} {}\n",
                encode_name(topic),
                range.producer_id,
                range.first,
                range.marker
            ));
        }
        let checksum = crc32c::crc32c(text.as_bytes());
        text.push_str(&format!("checksum {checksum:08x}\n"));
        text
    }
}

fn parse(path: &Path, bytes: Vec<u8>) -> Result<TransactionState> {
    let corrupt = |problem: String| Error::CorruptMetadata {
        path: PathBuf::from(path),
        problem,
    };
    let text = String::from_utf8(bytes).map_err(|_| corrupt("the file is not UTF-8".into()))?;
    let body_len = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map_or(0, |at| at + 1);
    let (body, last) = text.split_at(body_len);
    let stored = last
        .trim()
        .strip_prefix("checksum ")
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or_else(|| corrupt("the checksum line is missing".into()))?;
    if stored != crc32c::crc32c(body.as_bytes()) {
        return Err(corrupt("the checksum does not match the contents".into()));
    }
    let mut state = TransactionState::default();
    // Producer id → transactional id, for the lines that follow a producer line.
    let mut ids: BTreeMap<u64, String> = BTreeMap::new();
    for (number, line) in body.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        let bad = || corrupt(format!("line {} is not understood: '{line}'", number + 1));
        let fields: Vec<&str> = line.split(' ').collect();
        let name = |at: usize| fields.get(at).and_then(|field| decode_name(field));
        let number_at = |at: usize| fields.get(at).and_then(|field| field.parse::<u64>().ok());
        match fields[0] {
            "next-producer-id" => {
                state.next_producer_id = number_at(1).ok_or_else(bad)?;
            }
            "producer" => {
                let id = name(1).ok_or_else(bad)?;
                let producer_id = number_at(2).ok_or_else(bad)?;
                let epoch = number_at(3)
                    .and_then(|epoch| u32::try_from(epoch).ok())
                    .ok_or_else(bad)?;
                let phase = fields.get(4).and_then(|phase| Phase::parse(phase));
                let phase = phase.ok_or_else(bad)?;
                ids.insert(producer_id, id.clone());
                state.producers.insert(
                    id,
                    ProducerEntry {
                        producer_id,
                        epoch,
                        phase,
                        partitions: BTreeMap::new(),
                        offsets: Vec::new(),
                    },
                );
            }
            "partition" => {
                let entry = number_at(1)
                    .and_then(|producer| ids.get(&producer))
                    .and_then(|id| state.producers.get_mut(id))
                    .ok_or_else(bad)?;
                let topic = name(2).ok_or_else(bad)?;
                let partition = number_at(3)
                    .and_then(|partition| u32::try_from(partition).ok())
                    .ok_or_else(bad)?;
                let first = number_at(4).ok_or_else(bad)?;
                entry.partitions.insert((topic, partition), first);
            }
            "offset" => {
                let entry = number_at(1)
                    .and_then(|producer| ids.get(&producer))
                    .and_then(|id| state.producers.get_mut(id))
                    .ok_or_else(bad)?;
                let group = name(2).ok_or_else(bad)?;
                let topic = name(3).ok_or_else(bad)?;
                let partition = number_at(4)
                    .and_then(|partition| u32::try_from(partition).ok())
                    .ok_or_else(bad)?;
                let offset = number_at(5).ok_or_else(bad)?;
                entry.offsets.push((group, topic, partition, offset));
            }
            "aborted" => {
                let topic = name(1).ok_or_else(bad)?;
                let partition = number_at(2)
                    .and_then(|partition| u32::try_from(partition).ok())
                    .ok_or_else(bad)?;
                let range = AbortedRange {
                    producer_id: number_at(3).ok_or_else(bad)?,
                    first: number_at(4).ok_or_else(bad)?,
                    marker: number_at(5).ok_or_else(bad)?,
                };
                state.aborted.push(((topic, partition), range));
            }
            _ => return Err(bad()),
        }
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_round_trips_through_its_file() {
        let directory = tempfile::tempdir().unwrap();
        let mut state = TransactionState::default();
        let entry = state.entry("app copy/0");
        entry.epoch = 3;
        entry.phase = Phase::Committing;
        entry.partitions.insert(("out".into(), 1), 1040);
        entry
            .offsets
            .push(("app.copy in".into(), "in".into(), 1, 977));
        state.entry("other").phase = Phase::Ongoing;
        state.aborted.push((
            ("out".into(), 0),
            AbortedRange {
                producer_id: 1,
                first: 17,
                marker: 25,
            },
        ));
        state.store(directory.path()).unwrap();
        assert_eq!(TransactionState::load(directory.path()).unwrap(), state);
        assert_eq!(state.next_producer_id, 2);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let directory = tempfile::tempdir().unwrap();
        let mut state = TransactionState::default();
        state.entry("t").epoch = 1;
        state.store(directory.path()).unwrap();
        let path = directory.path().join(FILE_NAME);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace(" 1 empty", " 2 empty");
        std::fs::write(&path, text).unwrap();
        let error = TransactionState::load(directory.path())
            .unwrap_err()
            .to_string();
        assert!(error.contains(FILE_NAME), "{error}");
    }
}
