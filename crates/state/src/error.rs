//! [`StateError`]: what reading, changing or restoring state can fail with.

/// Why reading, changing or restoring state failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A value could not be encoded for the store.
    #[error("encoding state '{state}' for key {key} on input partition {partition} failed")]
    Encode {
        /// The state's name.
        state: String,
        /// The key, as text when it is printable, else in hexadecimal.
        key: String,
        /// The input partition.
        partition: u32,
        /// What the encoder said.
        #[source]
        source: postcard::Error,
    },
    /// A stored value does not decode as the type the streamlet asks for.
    #[error(
        "state '{state}' for key {key} on input partition {partition} does not decode as the type the streamlet asks for (was the type changed without a new state name?)"
    )]
    Decode {
        /// The state's name.
        state: String,
        /// The key, as text when it is printable, else in hexadecimal.
        key: String,
        /// The input partition.
        partition: u32,
        /// What the decoder said.
        #[source]
        source: postcard::Error,
    },
    /// A map entry's stored key is shorter than its prefix.
    #[error("state '{state}' holds a truncated map key")]
    TruncatedMapKey {
        /// The state's name.
        state: String,
    },
    /// An instance with keyed state was set up without a changelog topic.
    #[error("the instance has keyed state but no changelog topic to restore it from")]
    NoChangelog,
    /// The log could not be read.
    #[error("reading partition {partition} of topic '{topic}' failed")]
    Read {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// What the backplane said.
        #[source]
        source: runnel_backend::Error,
    },
    /// Records a checkpoint names were deleted from the changelog.
    #[error(
        "partition {partition} of the changelog topic '{topic}' starts at offset {start}, but the last checkpoint's state needs its records from offset {needed}: they were deleted (by retention set on the topic, or by hand), so the state cannot be restored; delete the checkpoint and changelog topics to start from empty state"
    )]
    Deleted {
        /// The changelog topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The partition's first offset.
        start: u64,
        /// The first offset the state needs.
        needed: u64,
    },
    /// A changelog record does not hold changelog entries.
    #[error(
        "the record at offset {offset} of partition {partition} of the changelog topic '{topic}' is not a changelog entry: {reason}"
    )]
    NotAnEntry {
        /// The changelog topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The record's offset.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The last checkpoint could not be read.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
}

impl StateError {
    /// Whether a system outside the streamlet failed (the log could not be read), rather
    /// than the state itself being wrong.
    ///
    /// ```
    /// use runnel_state::StateError;
    /// assert!(!StateError::NoChangelog.is_external());
    /// ```
    pub fn is_external(&self) -> bool {
        matches!(
            self,
            StateError::Read { .. }
                | StateError::Checkpoint(crate::checkpoint::CheckpointError::Read { .. })
        )
    }
}
