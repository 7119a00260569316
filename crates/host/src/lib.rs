//! The host of Runnel streamlets: what runs one streamlet instance against a backplane.
//!
//! A streamlet is written against `runnel-streamlet` alone; this crate is the runtime
//! machinery behind it, which the local runner, pod mode and the test kit all share:
//!
//! - [`run_instance`] connects every port of the instance as its [`Wiring`] says (a consumer
//!   per inlet, one producer for the outlets and the dead-letter topic, a transactional one
//!   for an exactly-once instance), restores a checkpointed instance from its last
//!   checkpoint, creating its checkpoint and changelog topics, and runs the streamlet until
//!   it returns or is shut down and drains.
//! - The committer (a task per instance) drains the instance's acknowledgement queue and
//!   commits input offsets only after every output sent before them is acknowledged by the
//!   log, writes checkpoints and keyed state's changelog with the offsets they reflect, and
//!   commits exactly-once transactions.
//! - `testkit` (the `testkit` feature, for `[dev-dependencies]`) runs a streamlet on this
//!   host over an in-memory backplane, with processing time and watermarks under the
//!   test's control.
//!
//! The two crates meet in `runnel_streamlet::runtime`, a hidden module with the few
//! constructors the host needs (the acknowledgement queue, the assembly of an instance's
//! ports into its `Context`, checkpoint records), so the author API stays small and
//! `runnel-streamlet` never depends on this crate.
//!
//! Where to start: [`run_instance`] and [`Wiring`]; the runtime crate (`runnel-runtime`)
//! shows them in use, supervising instances with restarts.
//!
//! ```no_run
//! use std::sync::Arc;
//! use runnel_backend::MemoryBackend;
//! use runnel_host::{HostSettings, Wiring, run_instance};
//! use runnel_streamlet::prelude::*;
//! use runnel_streamlet::{InstanceMetrics, SystemClock};
//! use tokio_util::sync::CancellationToken;
//!
//! const IN: Inlet<String> = Inlet::new("in");
//!
//! # async fn example(wiring: Wiring) -> Result<()> {
//! // `wiring` names the topic and consumer group of the inlet, the dead-letter topic, ...
//! let logger = Egress::new(IN, |line: String| async move { println!("{line}"); Ok(()) });
//! run_instance(
//!     Box::new(logger),
//!     Arc::new(MemoryBackend::new()),
//!     wiring,
//!     Arc::new(SystemClock),
//!     Arc::new(InstanceMetrics::default()),
//!     CancellationToken::new(),
//! )
//! .await
//! # }
//! ```
#![deny(missing_docs)]

mod committer;
mod instance;
#[cfg(feature = "testkit")]
pub mod testkit;
mod topic_schemas;
mod wiring;

pub use instance::run_instance;
pub use topic_schemas::{
    IncompatibleSchema, TopicPort, UnreadableSchema, check_readable, check_writable,
};
pub use wiring::{HostSettings, InletWiring, OutletWiring, Wiring};
