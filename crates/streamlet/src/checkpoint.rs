//! Checkpoints: the state of a stateful streamlet, stored together with the input offsets
//! it reflects, as one record of the instance's checkpoint topic.
//!
//! A checkpointed streamlet (its [`Shape`](crate::Shape) says
//! [`checkpointed`](crate::Shape::checkpointed)) commits its inputs as usual, but the
//! runtime writes those commits only with a checkpoint: when the streamlet saves its state
//! ([`Checkpoints::save`]), the committer waits until every output sent before is
//! acknowledged, appends one record holding the state and the offsets of every input
//! committed before the save, waits until that record is durable, and only then commits the
//! offsets to the consumer groups. One record is one atomic unit: after a crash the last
//! checkpoint holds a state and exactly the inputs it reflects. On restart the host reads
//! the last checkpoint, positions every inlet at its offsets, and hands the state back
//! ([`Checkpoints::restored`]).
//!
//! The checkpoint topic is `<app>.<instance>.checkpoints`, one partition. A record's value
//! is the state (opaque bytes, the streamlet's own format); its key is the instance name;
//! header `runnel.checkpoint.offsets` holds the offsets as JSON,
//! `[{"inlet": "in", "topic": "scores", "partition": 0, "offset": 42}, ...]` (each the next
//! offset to read), and `runnel.checkpoint.format` is `1`.

use bytes::Bytes;
use runnel_backend::{Backend, ConsumerConfig, Record};
use serde::{Deserialize, Serialize};

use crate::acknowledgement::Acknowledgements;

/// The header holding a checkpoint's input offsets.
pub const OFFSETS_HEADER: &str = "runnel.checkpoint.offsets";
const FORMAT_HEADER: &str = "runnel.checkpoint.format";
const FORMAT: &str = "1";

/// The checkpoint topic of an instance.
///
/// ```
/// assert_eq!(runnel_streamlet::checkpoint_topic("scores", "totals"), "scores.totals.checkpoints");
/// ```
pub fn checkpoint_topic(app: &str, instance: &str) -> String {
    format!("{app}.{instance}.checkpoints")
}

/// The next offset to read on one partition of one inlet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InletOffset {
    pub(crate) inlet: String,
    pub(crate) topic: String,
    pub(crate) partition: u32,
    pub(crate) offset: u64,
}

/// A checkpoint read back.
#[derive(Debug)]
pub(crate) struct Restored {
    pub(crate) state: Bytes,
    pub(crate) offsets: Vec<InletOffset>,
}

/// Why the last checkpoint cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckpointError {
    /// The checkpoint topic could not be read.
    #[error("reading the checkpoint topic '{topic}' failed")]
    Read {
        topic: String,
        #[source]
        source: runnel_backend::Error,
    },
    /// The last record is not a checkpoint this version understands.
    #[error(
        "the last record of checkpoint topic '{topic}' (offset {offset}) is not a checkpoint: {reason}"
    )]
    Invalid {
        topic: String,
        offset: u64,
        reason: String,
    },
}

/// The state of a stateful streamlet: what it restored at start, and how to save more.
///
/// Get it with [`Context::checkpoints`](crate::Context::checkpoints); only streamlets whose
/// shape is [`checkpointed`](crate::Shape::checkpointed) have one.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// const IN: Inlet<i64> = Inlet::new("in");
///
/// /// Keeps a running total across restarts.
/// struct Total;
///
/// impl Streamlet for Total {
///     fn shape(&self) -> Shape {
///         Shape::new().inlet(IN).checkpointed()
///     }
///
///     async fn run(self, mut ctx: Context) -> Result<()> {
///         let checkpoints = ctx.checkpoints().expect("the shape is checkpointed");
///         let mut total: i64 = match checkpoints.restored() {
///             Some(state) => serde_json::from_slice(state)?,
///             None => 0,
///         };
///         let mut input = ctx.inlet(IN);
///         while let Some(message) = input.next().await? {
///             total += message.value();
///             message.commit(); // reflected in `total`; written with the next checkpoint
///             checkpoints.save(serde_json::to_vec(&total)?);
///         }
///         Ok(())
///     }
/// }
/// # let _ = Total;
/// ```
#[derive(Clone, Debug)]
pub struct Checkpoints {
    acknowledgements: Acknowledgements,
    restored: Option<Bytes>,
}

impl Checkpoints {
    pub(crate) fn new(acknowledgements: Acknowledgements, restored: Option<Bytes>) -> Self {
        Checkpoints {
            acknowledgements,
            restored,
        }
    }

    /// The state of the last checkpoint, when the instance resumes from one. The inlets
    /// are already positioned after the inputs it reflects.
    pub fn restored(&self) -> Option<&[u8]> {
        self.restored.as_deref()
    }

    /// Saves `state` as reflecting every input committed before this call. It is written
    /// once every output sent before it is acknowledged; those input offsets are committed
    /// with it, atomically. Returns at once.
    pub fn save(&self, state: impl Into<Bytes>) {
        self.acknowledgements.checkpoint(state.into());
    }
}

/// The record of a checkpoint.
pub(crate) fn record(instance: &str, state: Bytes, offsets: &[InletOffset]) -> Record {
    let offsets = serde_json::to_vec(offsets).expect("offsets serialize");
    Record::new(state)
        .with_key(instance.to_owned())
        .with_header(FORMAT_HEADER, FORMAT)
        .with_header(OFFSETS_HEADER, offsets)
}

/// The last checkpoint in `topic`, if any.
pub(crate) async fn read_last(
    backend: &dyn Backend,
    topic: &str,
) -> Result<Option<Restored>, CheckpointError> {
    let read = |source| CheckpointError::Read {
        topic: topic.to_owned(),
        source,
    };
    let ends = backend.offsets(topic).await.map_err(read)?;
    let Some(partition) = ends.first() else {
        return Ok(None);
    };
    if partition.end == 0 || partition.end <= partition.start {
        return Ok(None);
    }
    let last = partition.end - 1;
    let reader = backend
        .consumer(&ConsumerConfig::new(format!("{topic}.reader"), [topic]))
        .await
        .map_err(read)?;
    reader.seek(topic, 0, last).await.map_err(read)?;
    let records = reader.poll(1).await.map_err(read)?;
    reader.close().await.map_err(read)?;
    let invalid = |reason: String| CheckpointError::Invalid {
        topic: topic.to_owned(),
        offset: last,
        reason,
    };
    let Some(consumed) = records.into_iter().next() else {
        return Err(invalid("it could not be read".to_owned()));
    };
    let headers = &consumed.record.headers;
    if headers.get_str(FORMAT_HEADER) != Some(FORMAT) {
        return Err(invalid(format!("header {FORMAT_HEADER} is not {FORMAT}")));
    }
    let offsets = headers
        .get(OFFSETS_HEADER)
        .ok_or_else(|| invalid(format!("header {OFFSETS_HEADER} is missing")))?;
    let offsets = serde_json::from_slice(offsets).map_err(|error| invalid(error.to_string()))?;
    let state = consumed.record.value.ok_or_else(|| {
        invalid("its value is null, where a checkpoint holds the state".to_owned())
    })?;
    Ok(Some(Restored { state, offsets }))
}
