//! [`LogInspector`]: reading an embedded log's files without opening the log, so the topic
//! tools can look at the data of an app while it runs.
//!
//! The inspector takes no lock and writes nothing. It reads what is in the files at the time
//! of each call: a batch the writer is still appending (incomplete at the end of a
//! partition's last segment) ends the partition for that call; anything else that does not
//! check out is an error naming the file and the byte position, as in the log itself. It may
//! show a batch that is written but not yet synced (under `--fsync always`, one the writer is
//! about to acknowledge).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{ConsumedRecord, PartitionOffsets};

use crate::batch::{self, BatchProblem, HEADER_LEN, RecordCursor, TRANSACTIONAL_HEADER_LEN};
use crate::error::{Error, Result};
use crate::files;
use crate::index;
use crate::offset_store;
use crate::segment::{INDEX_EXTENSION, LOG_EXTENSION, base_offset_of, segment_path};
use crate::topic_settings::TopicMetadata;

/// A topic as the inspector finds it on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicDescription {
    /// The topic name.
    pub name: String,
    /// Its partition count.
    pub partitions: u32,
    /// The settings it was created with (`retention.ms`, `segment.bytes`, ...); the log's
    /// defaults apply to the others.
    pub settings: BTreeMap<String, String>,
}

/// Reads topics, records and committed offsets from an embedded log's directory, whether or
/// not a process has the log open.
///
/// ```
/// use runnel_backend::{Backend, ProducerConfig, Record, TopicSpec};
/// use runnel_embedded_log::{EmbeddedBackend, LogConfig, LogInspector};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let directory = tempfile::tempdir()?;
/// let backend = EmbeddedBackend::open(directory.path(), LogConfig::default())?;
/// backend.create_topic(&TopicSpec::new("greetings", 1)).await?;
/// let producer = backend.producer(&ProducerConfig::default()).await?;
/// producer.send("greetings", 0, Record::new("hello")).await?.await?;
///
/// // While the backend is still open:
/// let inspector = LogInspector::new(directory.path())?;
/// assert_eq!(inspector.topics()?[0].name, "greetings");
/// let records = inspector.read("greetings", 0, 0, 10)?;
/// assert_eq!(records[0].record.value.as_deref(), Some(&b"hello"[..]));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct LogInspector {
    directory: PathBuf,
}

impl LogInspector {
    /// An inspector of the log in `directory`.
    ///
    /// # Errors
    ///
    /// [`Error::NotALog`] when the directory holds no embedded log.
    pub fn new(directory: impl AsRef<Path>) -> Result<Self> {
        let directory = directory.as_ref().to_owned();
        if !directory.join("topics").is_dir() {
            return Err(Error::NotALog { path: directory });
        }
        Ok(LogInspector { directory })
    }

    /// The log's directory.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// Every topic, by name.
    ///
    /// # Errors
    ///
    /// When the directory cannot be read or a topic's settings file is damaged.
    pub fn topics(&self) -> Result<Vec<TopicDescription>> {
        let mut topics = Vec::new();
        for path in files::list_directory(&self.directory.join("topics"))? {
            if !path.is_dir() {
                continue;
            }
            let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
                continue;
            };
            let metadata = TopicMetadata::load(&path)?;
            topics.push(TopicDescription {
                name: name.to_owned(),
                partitions: metadata.partitions,
                settings: metadata.overrides,
            });
        }
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(topics)
    }

    /// The topic called `name`, if it exists.
    ///
    /// # Errors
    ///
    /// When its settings file is damaged.
    pub fn topic(&self, name: &str) -> Result<Option<TopicDescription>> {
        let path = self.topic_directory(name);
        if !path.join(crate::topic_settings::METADATA_FILE).is_file() {
            return Ok(None);
        }
        let metadata = TopicMetadata::load(&path)?;
        Ok(Some(TopicDescription {
            name: name.to_owned(),
            partitions: metadata.partitions,
            settings: metadata.overrides,
        }))
    }

    /// The start and end offsets of every partition of `topic`, indexed by partition.
    ///
    /// # Errors
    ///
    /// [`Error::TopicNotFound`] for an unknown topic; corruption in a segment's last batches.
    pub fn offsets(&self, topic: &str) -> Result<Vec<PartitionOffsets>> {
        let description = self.existing(topic)?;
        (0..description.partitions)
            .map(|partition| {
                let directory = self.partition_directory(topic, partition);
                let bases = segment_bases(&directory)?;
                let (Some(first), Some(last)) = (bases.first(), bases.last()) else {
                    return Ok(PartitionOffsets { start: 0, end: 0 });
                };
                let end = scan(&directory, *last, u64::MAX, usize::MAX, &mut |_| {})?;
                Ok(PartitionOffsets { start: *first, end })
            })
            .collect()
    }

    /// Up to `max_records` records of one partition from offset `from` on (or from its
    /// first record, if `from` is older), in offset order.
    ///
    /// # Errors
    ///
    /// [`Error::TopicNotFound`] for an unknown topic or partition; corruption found on the
    /// way, naming the file and position.
    pub fn read(
        &self,
        topic: &str,
        partition: u32,
        from: u64,
        max_records: usize,
    ) -> Result<Vec<ConsumedRecord>> {
        let description = self.existing(topic)?;
        if partition >= description.partitions {
            return Err(Error::TopicNotFound {
                topic: format!("{topic}/{partition}"),
            });
        }
        let directory = self.partition_directory(topic, partition);
        let bases = segment_bases(&directory)?;
        let name: Arc<str> = Arc::from(topic);
        let mut records = Vec::new();
        let first = bases
            .partition_point(|base| *base <= from)
            .saturating_sub(1);
        for base in &bases[first..] {
            if records.len() >= max_records {
                break;
            }
            scan(&directory, *base, from, max_records, &mut |(
                offset,
                record,
            )| {
                records.push(ConsumedRecord {
                    topic: name.clone(),
                    partition,
                    offset,
                    record,
                });
            })?;
        }
        records.truncate(max_records);
        Ok(records)
    }

    /// The offsets `group` committed for each partition of `topic`, indexed by partition;
    /// `None` where it never committed.
    ///
    /// # Errors
    ///
    /// [`Error::TopicNotFound`] for an unknown topic; a damaged offsets file.
    pub fn committed(&self, group: &str, topic: &str) -> Result<Vec<Option<u64>>> {
        let description = self.existing(topic)?;
        let path = self
            .directory
            .join("groups")
            .join(offset_store::file_name(group));
        let committed = if path.is_file() {
            offset_store::parse(&path)?
        } else {
            BTreeMap::new()
        };
        Ok((0..description.partitions)
            .map(|partition| committed.get(&(topic.to_owned(), partition)).copied())
            .collect())
    }

    /// The consumer groups that committed offsets, by name.
    ///
    /// # Errors
    ///
    /// When the groups directory cannot be read.
    pub fn groups(&self) -> Result<Vec<String>> {
        let directory = self.directory.join("groups");
        if !directory.is_dir() {
            return Ok(Vec::new());
        }
        let mut groups: Vec<String> = files::list_directory(&directory)?
            .iter()
            .filter_map(|path| offset_store::group_of(path))
            .collect();
        groups.sort();
        Ok(groups)
    }

    fn existing(&self, topic: &str) -> Result<TopicDescription> {
        self.topic(topic)?.ok_or_else(|| Error::TopicNotFound {
            topic: topic.to_owned(),
        })
    }

    fn topic_directory(&self, topic: &str) -> PathBuf {
        self.directory.join("topics").join(topic)
    }

    fn partition_directory(&self, topic: &str, partition: u32) -> PathBuf {
        self.topic_directory(topic).join(partition.to_string())
    }
}

/// The base offsets of a partition's segments, in order.
fn segment_bases(directory: &Path) -> Result<Vec<u64>> {
    if !directory.is_dir() {
        return Ok(Vec::new());
    }
    let mut bases: Vec<u64> = files::list_directory(directory)?
        .iter()
        .filter_map(|path| base_offset_of(path))
        .collect();
    bases.sort_unstable();
    Ok(bases)
}

/// Reads the segment with base offset `base` batch by batch, handing `found` every record
/// at or after offset `from` until `max_records` were handed over; returns the offset after
/// the last complete batch. An incomplete batch ends the segment (the writer may be
/// appending it); anything else wrong is an error.
fn scan(
    directory: &Path,
    base: u64,
    from: u64,
    max_records: usize,
    found: &mut dyn FnMut((u64, runnel_backend::Record)),
) -> Result<u64> {
    let path = segment_path(directory, base, LOG_EXTENSION);
    let file = match File::open(&path) {
        Ok(file) => file,
        // Deleted by retention since it was listed.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(base),
        Err(source) => return Err(Error::OpenFile { path, source }),
    };
    let length = file
        .metadata()
        .map_err(|source| Error::OpenFile {
            path: path.clone(),
            source,
        })?
        .len();
    let mut position = start_position(directory, base, from, length);
    let mut next_offset = base;
    let mut handed = 0;
    while position + HEADER_LEN as u64 <= length && handed < max_records {
        // Every batch is at least as long as a transactional header: a plain one holds a
        // record besides its header, a marker is exactly that long.
        let mut head = vec![0; TRANSACTIONAL_HEADER_LEN.min((length - position) as usize)];
        read_at(&file, &path, &mut head, position)?;
        let header = match batch::read_header(&head) {
            Ok(header) => header,
            Err(BatchProblem::Incomplete { .. }) => break,
            Err(BatchProblem::Invalid(problem)) => {
                return Err(corrupt(&path, position, problem));
            }
        };
        if position + u64::from(header.length) > length {
            break; // being written
        }
        let mut bytes = vec![0; header.length as usize];
        read_at(&file, &path, &mut bytes, position)?;
        let header = match batch::check(&bytes) {
            Ok(header) => header,
            Err(BatchProblem::Incomplete { .. }) => break,
            // The last batch of a file may be partly written still; earlier ones may not.
            Err(BatchProblem::Invalid(_)) if position + u64::from(header.length) == length => {
                break;
            }
            Err(BatchProblem::Invalid(problem)) => {
                return Err(corrupt(&path, position, problem));
            }
        };
        if header.next_offset() > from && !header.is_control() {
            let mut cursor = RecordCursor::new(Bytes::from(bytes), &header);
            while let Some((offset, record)) = cursor
                .next()
                .map_err(|problem| corrupt(&path, position, problem))?
            {
                if offset >= from && handed < max_records {
                    found((offset, record));
                    handed += 1;
                }
            }
        }
        next_offset = header.next_offset();
        position += u64::from(header.length);
    }
    Ok(next_offset)
}

/// Where to start reading a segment for offset `from`: the index's entry at or before it,
/// or the start of the file.
fn start_position(directory: &Path, base: u64, from: u64, length: u64) -> u64 {
    let Some(relative) = from.checked_sub(base) else {
        return 0;
    };
    let index_path = segment_path(directory, base, INDEX_EXTENSION);
    let Ok(Some(bytes)) = files::read_if_exists(&index_path) else {
        return 0;
    };
    let Some(entries) = index::parse(&bytes, length) else {
        return 0;
    };
    let relative = u32::try_from(relative).unwrap_or(u32::MAX);
    u64::from(index::lookup(&entries, u64::from(relative)).position)
}

fn read_at(file: &File, path: &Path, buffer: &mut [u8], position: u64) -> Result<()> {
    file.read_exact_at(buffer, position)
        .map_err(|source| Error::Read {
            path: path.to_owned(),
            position,
            source,
        })
}

fn corrupt(path: &Path, position: u64, problem: String) -> Error {
    Error::CorruptBatch {
        path: path.to_owned(),
        position,
        problem,
    }
}
