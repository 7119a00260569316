//! Why an app command failed.

use std::path::PathBuf;

/// A failed app command; printed with its causes by [`App::main`](crate::App::main).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// A file could not be read.
    #[error("reading {} failed", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The blueprint has errors (already reported).
    #[error("{0} has errors; nothing was started")]
    InvalidBlueprint(PathBuf),
    /// Verification found problems (already reported).
    #[error("verification failed")]
    VerificationFailed,
    /// The config file or a `--set` is malformed.
    #[error(transparent)]
    Config(#[from] runnel_runtime::ConfigError),
    /// Parameter values are missing or invalid.
    #[error(transparent)]
    Plan(#[from] runnel_runtime::PlanError),
    /// The embedded log could not be opened.
    #[error("opening the embedded log in {} failed", path.display())]
    OpenLog {
        /// The data directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: runnel_embedded_log::Error,
    },
    /// `--kafka` was given to an app built without the `kafka` feature.
    #[error(
        "--kafka needs the Kafka backplane, which this app was built without: enable the `kafka` feature of its `runnel` dependency (runnel = {{ version = \"...\", features = [\"kafka\"] }})"
    )]
    KafkaNotEnabled,
    /// A `--kafka-setting` is not `key=value`.
    #[error("--kafka-setting expects KEY=VALUE, and argument {position} has no '='")]
    KafkaSetting {
        /// Which `--kafka-setting` (1 for the first).
        position: usize,
    },
    /// The Kafka cluster could not be reached or a setting was refused.
    #[cfg(feature = "kafka")]
    #[error(transparent)]
    Kafka(#[from] runnel_kafka::Error),
    /// The run failed.
    #[error(transparent)]
    Run(#[from] runnel_runtime::RunError),
    /// `--admin` is not an address.
    #[error("--admin expects host:port or off, got '{0}'")]
    AdminAddress(String),
    /// The admin endpoint could not start.
    #[error(transparent)]
    Admin(#[from] runnel_web::ServeError),
    /// The status of a running app could not be read.
    #[error(transparent)]
    Status(#[from] runnel_status::StatusError),
    /// The keyed state of a key could not be read.
    #[error(transparent)]
    State(#[from] runnel_status::StateError),
    /// A topic or offset tool failed.
    #[error(transparent)]
    Tool(#[from] runnel_tools::ToolError),
    /// `build`'s configuration has problems, each listed.
    #[error("invalid configuration:\n  {}", .0.join("\n  "))]
    BuildConfiguration(Vec<String>),
    /// The image could not be built or written.
    #[error(transparent)]
    Image(#[from] runnel_image::Error),

    /// What the image of the app's Python streamlets cannot be made of.
    #[error("putting the Python streamlets in the image failed: {0}")]
    PythonImage(String),
    /// A file could not be written.
    #[error("writing {} failed", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `sql` was given to an app built without the `sql` feature.
    #[error(
        "sql needs SQL, which this app was built without: enable the `sql` feature of its `runnel` dependency (runnel = {{ version = \"...\", features = [\"sql\"] }})"
    )]
    SqlNotEnabled,
    /// An ad hoc query cannot run: where, and why.
    #[error("{0}")]
    Query(String),
    /// Printing the descriptor failed.
    #[error("writing the descriptor failed")]
    Describe(#[source] serde_json::Error),
}
