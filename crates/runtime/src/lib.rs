//! The Runnel runtime: runs the streamlets of a blueprint.
//!
//! A [`Registry`] holds the app's streamlet types; [`plan`] combines it with a checked
//! blueprint and the [`LocalConfig`] values into a [`Plan`], finding every configuration
//! problem before anything starts; [`run`] provisions topics and runs each instance under a
//! supervisor that restarts it with backoff after failures, tracks when bounded inputs end,
//! samples a [`StatusBoard`] for the live view, and drains on shutdown. The same code runs
//! the whole graph in one process (`app run`) or a single instance (`app run-streamlet`).
//!
//! ```no_run
//! # async fn demo(plan: runnel_runtime::Plan, backend: std::sync::Arc<dyn runnel_backend::Backend>) -> Result<(), runnel_runtime::RunError> {
//! use runnel_runtime::{Console, RunOptions, run, stop_on_signals};
//! use tokio_util::sync::CancellationToken;
//!
//! let console = Console::stdout(true);
//! let shutdown = CancellationToken::new();
//! stop_on_signals(shutdown.clone(), console.clone());
//! let report = run(plan, backend, RunOptions::default(), console, shutdown).await?;
//! println!("{} instances ran", report.outcomes.len());
//! # Ok(()) }
//! ```
//!
//! Where to begin: `runner.rs` for the order of events, `supervisor.rs` for restarts,
//! `end_of_input.rs` for bounded runs, `status.rs` and `view.rs` for what users see.
#![warn(missing_docs)]

mod console;
mod end_of_input;
mod error;
mod health;
mod instance_status;
mod local_config;
mod metrics;
mod plan;
mod registry;
mod runner;
mod shutdown;
mod state_query;
mod status;
mod supervisor;
mod topic_keeper;
mod view;

pub use console::{Console, ConsoleLine};
pub use error::RunError;
pub use instance_status::{InstanceStatus, PortBinding};
pub use local_config::{ConfigError, LocalConfig};
pub use metrics::{Metric, render_prometheus};
pub use plan::{InletPlan, InstancePlan, OutletPlan, Plan, PlanError, TopicPlan, plan};
pub use registry::{Factory, Registry};
pub use runnel_status::{
    History, InletSnapshot, InstanceSnapshot, InstanceState, KeyedStateSnapshot, OutletSnapshot,
    PartitionSnapshot, Problem, Snapshot, TopicSnapshot, render_table,
};
pub use runnel_streamlet::state::{KeyState, PendingTimer, QueryError, StateEntry};
pub use runner::{RunOptions, RunReport, Running, provision, run, start};
pub use shutdown::{INTERRUPTED_EXIT_CODE, stop_on_signals};
pub use state_query::{STATE_QUERY_TIMEOUT, StateQueryError};
pub use status::{STUCK_WITHOUT_PARTITIONS, StatusBoard, TopicBinding};
pub use supervisor::{Outcome, RestartPolicy};
pub use view::{ViewMode, render_lines};
