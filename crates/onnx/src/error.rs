//! [`ModelError`]: why a model cannot serve, or a batch could not be scored.

/// Why a model was rejected (the scorer keeps serving the previous one and says this in
/// its [`ModelEvent`](crate::ModelEvent)), or why scoring failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The bytes are not an ONNX model tract can run.
    #[error("the bytes are not an ONNX model the scorer can run: {reason}")]
    Unreadable {
        /// What tract said.
        reason: String,
    },
    /// The record's input shape does not hold the scorer's features per record.
    #[error(
        "the record's input shape {record:?} does not fit the scorer, which feeds {features} features per record ([-1, {features}])"
    )]
    InputShape {
        /// The record's input shape.
        record: Vec<i64>,
        /// The features the scorer feeds per record.
        features: usize,
    },
    /// The record's output shape does not give the values the scorer reads per record.
    #[error(
        "the record's output shape {record:?} does not fit the scorer, which reads {outputs} values per record ([-1, {outputs}])"
    )]
    OutputShape {
        /// The record's output shape.
        record: Vec<i64>,
        /// The values the scorer reads per record.
        outputs: usize,
    },
    /// The model does not take exactly one input.
    #[error("the model takes {inputs} inputs; a scorer feeds one")]
    Inputs {
        /// How many inputs it takes.
        inputs: usize,
    },
    /// The model's own input shape contradicts the record's.
    #[error("the model's input has shape {model}, but the record says {record:?}")]
    DeclaredInput {
        /// The model's input shape (`?` where unknown).
        model: String,
        /// The record's input shape.
        record: Vec<i64>,
    },
    /// No float output of the model has the record's output shape.
    #[error("no float output of the model has shape {wanted:?}; its outputs: {outputs}")]
    NoOutput {
        /// The record's output shape.
        wanted: Vec<i64>,
        /// The model's outputs with their types and shapes.
        outputs: String,
    },
    /// The model failed on the probe input, or gave values that are not finite.
    #[error("the model failed on a probe input: {reason}")]
    Probe {
        /// What went wrong.
        reason: String,
    },
    /// The model is named for another model than the one the scorer serves.
    #[error("the model is named '{name}', but this scorer serves '{serves}'")]
    OtherModel {
        /// The record's model name.
        name: String,
        /// The name the scorer serves.
        serves: String,
    },
    /// The model's version is older than the serving one's, and the scorer refuses older
    /// versions.
    #[error(
        "version {version} is older than {serving}, which serves now, and this scorer refuses older versions"
    )]
    OlderVersion {
        /// The record's version.
        version: String,
        /// The serving model's version.
        serving: String,
    },
    /// A version the scorer cannot order, while it refuses older versions.
    #[error(
        "version '{version}' is not dotted numbers (such as 2 or 1.10.3), so it cannot be ordered, and this scorer refuses older versions"
    )]
    UnorderedVersion {
        /// The record's version.
        version: String,
    },
    /// A batch was not whole records.
    #[error("a record has {got} features left over; the model takes {expected} per record")]
    Features {
        /// Features per record.
        expected: usize,
        /// What was left over.
        got: usize,
    },
    /// Scoring a batch failed.
    #[error("scoring failed: {reason}")]
    Scoring {
        /// What went wrong.
        reason: String,
    },
}
