//! [`LogInspector`]: reading an embedded log's files without opening the log, so the topic
//! tools can look at the data of an app while it runs.
//!
//! The inspector takes no lock and writes nothing. It reads what is in the files at the time
//! of each call: a batch the writer is still appending (incomplete at the end of a
//! partition's last segment) ends the partition for that call; anything else that does not
//! check out is an error naming the file and the byte position, as in the log itself. It may
//! show a batch that is written but not yet synced (under `--fsync always`, one the writer is
//! about to acknowledge). Records read as a read-committed consumer reads them: those of an
//! aborted transaction never, and none from the first record of a transaction still open.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use runnel_backend::{ConsumedRecord, PartitionOffsets};

use crate::batch::{
    self, BatchProblem, Control, HEADER_LEN, RecordCursor, TRANSACTIONAL_HEADER_LEN,
};
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

    /// The schemas records of `topic` were written with, oldest (the base) first (see
    /// [`TopicSchema`](runnel_backend::TopicSchema)).
    ///
    /// # Errors
    ///
    /// [`Error::TopicNotFound`] for an unknown topic; when a schema file cannot be read.
    pub fn schemas(&self, topic: &str) -> Result<Vec<runnel_backend::TopicSchema>> {
        self.existing(topic)?;
        crate::topic_schemas::read(&self.topic_directory(topic))
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
                let end = scan(&directory, *last, u64::MAX, &mut |_| true)?;
                Ok(PartitionOffsets { start: *first, end })
            })
            .collect()
    }

    /// Up to `max_records` records of one partition from offset `from` on (or from its
    /// first record, if `from` is older), in offset order, as a read-committed consumer
    /// reads them: none of an aborted transaction, none from a transaction still open on.
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
        let mut committed = ReadCommitted::new(max_records);
        let first = bases
            .partition_point(|base| *base <= from)
            .saturating_sub(1);
        for base in &bases[first..] {
            if committed.is_full() {
                break;
            }
            scan(&directory, *base, from, &mut |batch| committed.take(batch))?;
        }
        Ok(committed
            .into_records()
            .into_iter()
            .map(|(offset, record)| ConsumedRecord {
                topic: name.clone(),
                partition,
                offset,
                record,
            })
            .collect())
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
/// What [`scan`] hands over for each batch at or after the offset asked for.
enum Scanned {
    /// The batch's records at or after the offset, and the producer whose transaction they
    /// belong to (`None` for a plain batch).
    Records {
        producer: Option<u64>,
        records: Vec<(u64, runnel_backend::Record)>,
    },
    /// A producer's transaction ended: committed or aborted.
    Marker { producer: u64, committed: bool },
}

/// Reads the batches of one segment from offset `from` and hands each to `found`, until
/// `found` returns `false` or the segment ends (or a batch is still being written); returns
/// the offset after the last batch read.
fn scan(
    directory: &Path,
    base: u64,
    from: u64,
    found: &mut dyn FnMut(Scanned) -> bool,
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
    while position + HEADER_LEN as u64 <= length {
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
        let batch_position = position;
        position += u64::from(header.length);
        next_offset = header.next_offset();
        let scanned = match header.transaction {
            Some(fields) if header.is_control() => Scanned::Marker {
                producer: fields.producer_id,
                committed: fields.control == Control::Commit,
            },
            _ if header.next_offset() <= from => continue,
            transaction => {
                let mut records = Vec::with_capacity(header.record_count as usize);
                let mut cursor = RecordCursor::new(Bytes::from(bytes), &header);
                while let Some((offset, record)) = cursor
                    .next()
                    .map_err(|problem| corrupt(&path, batch_position, problem))?
                {
                    if offset >= from {
                        records.push((offset, record));
                    }
                }
                Scanned::Records {
                    producer: transaction.map(|fields| fields.producer_id),
                    records,
                }
            }
        };
        if !found(scanned) {
            break;
        }
    }
    Ok(next_offset)
}

/// Records in offset order as a read-committed consumer sees them: plain records at once,
/// a transaction's records once its commit marker is read, an aborted transaction's never,
/// and nothing from the first record of a transaction still open on (the last stable
/// offset).
struct ReadCommitted {
    /// Records read in offset order, each with the producer whose marker it still waits
    /// for (`None` once it can be handed out).
    queue: std::collections::VecDeque<(Option<u64>, u64, runnel_backend::Record)>,
    out: Vec<(u64, runnel_backend::Record)>,
    max_records: usize,
}

impl ReadCommitted {
    fn new(max_records: usize) -> Self {
        ReadCommitted {
            queue: std::collections::VecDeque::new(),
            out: Vec::new(),
            max_records,
        }
    }

    fn is_full(&self) -> bool {
        self.out.len() >= self.max_records
    }

    /// Takes one scanned batch; returns whether more are wanted.
    fn take(&mut self, scanned: Scanned) -> bool {
        match scanned {
            Scanned::Records { producer, records } => self.queue.extend(
                records
                    .into_iter()
                    .map(|(offset, record)| (producer, offset, record)),
            ),
            Scanned::Marker {
                producer,
                committed,
            } => {
                if committed {
                    for entry in &mut self.queue {
                        if entry.0 == Some(producer) {
                            entry.0 = None;
                        }
                    }
                } else {
                    self.queue.retain(|entry| entry.0 != Some(producer));
                }
            }
        }
        while !self.is_full() && self.queue.front().is_some_and(|entry| entry.0.is_none()) {
            let (_, offset, record) = self.queue.pop_front().expect("the front entry exists");
            self.out.push((offset, record));
        }
        !self.is_full()
    }

    fn into_records(self) -> Vec<(u64, runnel_backend::Record)> {
        self.out
    }
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
