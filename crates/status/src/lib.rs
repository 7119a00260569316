//! The status of a running Runnel process, as data and as text, and the client that reads
//! it over the process's admin endpoint.
//!
//! A process that runs streamlets samples its state every second into a [`Snapshot`]: per
//! streamlet instance its life-cycle [`InstanceState`], throughput, lag, failures and the
//! [`Problem`]s that keep it from making progress (an unreachable backplane, a missing
//! topic, no partitions assigned, a restart loop); per topic its offsets. `/api/status`
//! serves it as JSON; `runnel status` and every app's `status` command read it with
//! [`fetch_status`] and print it with [`format_status`]. `runnel state get` and every
//! app's `state get` read the keyed state of one key of a running streamlet from
//! `/api/state/{instance}` with [`StateGetArgs`], asking each process given until the one
//! holding the key's partition answers.
//!
//! This crate is deliberately small (serde and an HTTP client), so command-line tools can
//! show a status without linking the runtime.
//!
//! ```
//! use runnel_status::{Snapshot, StatusFormat, format_status};
//! let snapshot = Snapshot { app: "demo".into(), ..Snapshot::default() };
//! assert!(format_status(&snapshot, StatusFormat::Table)?.starts_with("app demo"));
//! # Ok::<(), runnel_status::StatusError>(())
//! ```
//!
//! Where to begin: [`Snapshot`], then [`Problem`] for what health means.
#![deny(missing_docs)]

mod client;
mod history;
mod problem;
mod snapshot;
mod state;
mod table;

pub use client::{
    AdminRecord, DEFAULT_ADMIN_ADDRESS, StatusArgs, StatusError, admin_record_path, fetch_status,
    record_admin_address, recorded_admin_address, show_status, status_url,
};
pub use history::{History, HistoryPoint, StreamletPoint};
pub use problem::Problem;
pub use snapshot::{
    InletSnapshot, InstanceSnapshot, InstanceState, KeyedStateSnapshot, OutletSnapshot,
    PartitionSnapshot, Snapshot, TopicSnapshot,
};
pub use state::{
    StateCommand, StateError, StateGetArgs, fetch_state, no_owner, state_answer, state_path,
    state_url,
};
pub use table::{StatusFormat, format_status, grouped, render_table};
