//! The streamlet author API of Runnel.
//!
//! A streamlet is a unit of business logic with typed [`Inlet`]s and [`Outlet`]s, declared
//! once as constants. The common shapes are closures ([`Processor`], [`Egress`],
//! [`Splitter`], [`Merge`], [`AsyncMap`]); anything else implements [`Streamlet`]: a
//! [`Shape`] and an async `run` over a [`Context`]. Values are plain serde types with a
//! derived Avro schema ([`Data`]).
//!
//! ```
//! use runnel_streamlet::prelude::*;
//!
//! /// A temperature reading.
//! #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
//! pub struct Reading {
//!     pub sensor: String,
//!     pub celsius: f64,
//! }
//!
//! pub const IN: Inlet<Reading> = Inlet::new("in");
//! pub const OUT: Outlet<Reading> = Outlet::new("out").keyed_by(|r| r.sensor.clone());
//!
//! /// Drops readings outside -50..=150 °C.
//! pub fn plausible() -> impl Streamlet {
//!     Processor::new(IN, OUT, |r: Reading| (-50.0..=150.0).contains(&r.celsius).then_some(r))
//! }
//! # let _ = plausible();
//! ```
//!
//! Delivery is at-least-once: an input is committed only after every output sent before its
//! commit is acknowledged by the log. Test a streamlet with the test kit's `TestRun`
//! (`runnel::testkit`, or `runnel_host::testkit`, with the `testkit` feature, for
//! `[dev-dependencies]`): it runs the streamlet on the production host over an in-memory
//! backplane.
//!
//! Event time: [`WindowedAggregate`] aggregates per key in event-time windows with
//! watermarks, triggers, allowed lateness and checkpointed state; [`window`] and
//! [`watermark`] hold the engine, [`checkpoint`] the state mechanism (guide:
//! `docs/event-time.md`).
//!
//! Where to start: [`Streamlet`] for the trait, [`helpers`] for the closures, [`state`] and
//! [`window`] for state and event time.
//!
//! This crate is what a streamlet depends on, and nothing that runs one: the host that
//! connects an instance to a backplane, commits its offsets and writes its checkpoints
//! (`run_instance`, the committer, the test kit) is `runnel-host`, which meets this crate
//! through a small hidden `runtime` module.
#![deny(missing_docs)]

mod acknowledgement;
pub mod checkpoint;
mod clock;
mod config;
mod context;
pub mod dead_letter;
mod details;
mod error;
mod gate;
pub mod helpers;
mod histogram;
mod inlet;
mod message;
mod metrics;
mod model_metrics;
mod outlet;
mod parameter;
mod port;
mod rejection;
#[doc(hidden)] // the host's seam; not part of the author API
pub mod runtime;
mod shape;
pub mod state;
mod streamlet;
mod throttled_warning;
mod turns;
pub use runnel_event_time::watermark;
pub use runnel_event_time::window;

pub use checkpoint::{Checkpoints, checkpoint_topic};
pub use clock::{Clock, SystemClock};
pub use config::{ParameterError, resolve_parameters};
pub use context::Context;
pub use details::StatusDetails;
pub use error::{BoxError, Error, ErrorKind, Result};
pub use helpers::{AsyncMap, Egress, Either, Merge, Processor, Splitter, WindowedAggregate};
pub use histogram::{BUCKET_BOUNDS, Histogram};
pub use inlet::InletStream;
pub use message::{CommitToken, Message};
pub use metrics::{InstanceMetrics, PortMetrics};
pub use model_metrics::ModelMetrics;
pub use outlet::{Outgoing, OutletSender};
pub use parameter::{MemorySize, Parameter, ParameterType};
pub use port::{Inlet, KeyFunction, Outlet};
pub use rejection::{FailedAttempts, RejectedRecord};
pub use runnel_codec::{AvroDatum, CodecError, Data, SCHEMA_HEADER, avro_schema_descriptor};
pub use shape::Shape;
pub use streamlet::{DynStreamlet, Streamlet};
pub use throttled_warning::{ThrottledWarning, WARNING_INTERVAL_MILLIS};

/// Everything a streamlet file needs, in one import.
///
/// # Deriving `Serialize` and `Deserialize`
///
/// The derives come from `serde`, whose generated code names the crate `serde`. A crate
/// that lists `serde` among its dependencies (`cargo add serde --features derive`) needs
/// nothing more. A crate that does not points the derives at this re-export instead, with
/// one attribute per type (through the `runnel` facade: `"runnel::prelude::serde"`):
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// #[serde(crate = "runnel_streamlet::prelude::serde")]
/// pub struct Reading {
///     pub sensor: String,
///     pub celsius: f64,
/// }
/// # let _ = Reading { sensor: "a".into(), celsius: 1.0 };
/// ```
///
/// Without either, the derive fails with `can't find crate for serde` (error E0463).
/// `AvroSchema` needs nothing: its generated code finds `apache_avro` through this
/// module, and `serde_json` too, which it calls for a field's `#[avro(default = "...")]`.
/// `crates/streamlet/tests/it/serde_prelude.rs` builds a crate both ways.
pub mod prelude {
    pub use crate::{
        AsyncMap, Context, Data, Egress, Either, Error, Inlet, Merge, Message, Outgoing, Outlet,
        Parameter, Processor, Result, Shape, Splitter, Streamlet, WindowedAggregate,
    };
    pub use apache_avro::{self, AvroSchema};
    pub use runnel_blueprint::descriptor::{AccessMode, BadDataPolicy};
    pub use serde::{self, Deserialize, Serialize};
    pub use serde_json;
}
