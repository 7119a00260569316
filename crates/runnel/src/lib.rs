//! Runnel: build streaming applications from small, typed streamlets wired by a blueprint.
//!
//! Write streamlets with the [`prelude`] (typed [`Inlet`]s and [`Outlet`]s, closures for
//! the common shapes, the [`Streamlet`] trait for the rest), register them in an [`App`], and
//! the binary can `describe` itself, `verify` a blueprint and `run` the whole graph on this
//! machine on a durable embedded log, with at-least-once delivery, a live view and graceful
//! shutdown. Test streamlets with the test kit's `TestRun` (the `testkit` feature, enabled in
//! `[dev-dependencies]`: `runnel = { ..., features = ["testkit"] }`).
//!
//! An app depends on this crate alone. Its features add the rest: `kafka` (the Kafka
//! backplane), `http` (`runnel::http`: HTTP ingress and egress streamlets), `onnx`
//! (`runnel::onnx`: model serving), `sql` (SQL streamlets declared in the blueprint,
//! `runnel::sql`), `python-arrow` (Python streamlets that take pyarrow tables; Python
//! streamlets declared in the blueprint run without it), `testkit` (`runnel::testkit`, for
//! tests). Keyed state is
//! in [`state`], event time in [`window`] and [`watermark`], and [`tracing`] is re-exported
//! for logging.
//!
//! ```no_run
//! use runnel::prelude::*;
//!
//! /// A temperature reading.
//! #[record]
//! #[derive(Debug, Clone, PartialEq)]
//! pub struct Reading { pub sensor: String, pub celsius: f64 }
//!
//! pub const IN: Inlet<Reading> = Inlet::new("in");
//! pub const OUT: Outlet<Reading> = Outlet::new("out").keyed_by(|r| r.sensor.clone());
//!
//! fn main() -> std::process::ExitCode {
//!     runnel::App::new("thermometers")
//!         .streamlet("plausible", || Processor::new(IN, OUT, |r: Reading| (r.celsius < 150.0).then_some(r)))
//!         .main()
//! }
//! ```
//!
//! Record types take `#[record]` (serde's `Serialize` and `Deserialize` and the Avro schema,
//! derived through this crate's re-exports), other saved types `#[serializable]`, and async
//! tests `#[runnel::test]` (tokio's test attribute), so an app's `[dependencies]` hold
//! `runnel` alone:
//!
//! ```
//! use runnel::prelude::*;
//!
//! /// An order, as it travels on a port.
//! #[record]
//! #[derive(Debug, Clone, PartialEq)]
//! pub struct Order { pub id: String, pub cents: i64 }
//!
//! /// What a streamlet keeps in its checkpoint.
//! #[serializable]
//! #[derive(Debug, Default)]
//! pub struct Totals { pub per_customer: std::collections::HashMap<String, u64> }
//!
//! #[runnel::test]
//! async fn waits_on_the_runtime_streamlets_run_on() {
//!     runnel::tokio::time::sleep(std::time::Duration::from_millis(1)).await;
//! }
//! # let order = Order { id: "o-1".into(), cents: 250 };
//! # assert_eq!(serde_json::to_string(&order).unwrap(), r#"{"id":"o-1","cents":250}"#);
//! # assert_eq!(Order::get_schema().canonical_form(), r#"{"name":"Order","type":"record","fields":[{"name":"id","type":"string"},{"name":"cents","type":"long"}]}"#);
//! ```
//!
//! Where to begin: the sensor-data example (`examples/sensor-data`), then
//! [`prelude`] and [`App`].
#![deny(missing_docs)]

mod adhoc;
mod app;
mod backplane;
mod build;
mod cli;
mod commands;
mod declared;
mod error;
mod output;
mod python_image;

pub use app::App;
pub use error::AppError;
/// The partition a record key goes to among `partitions`, as keyed outlets (and Kafka's
/// default partitioner, murmur2) choose it.
pub use runnel_backend::partition_for_key;
/// The test kit (with the `testkit` feature, for tests): see
/// [`TestRun`](runnel_host::testkit::TestRun).
#[cfg(feature = "testkit")]
pub use runnel_host::testkit;
/// HTTP streamlets (with the `http` feature): an ingress that writes each accepted JSON
/// request to an outlet and answers once the log has it, and an egress that POSTs records.
#[cfg(feature = "http")]
pub use runnel_http as http;
pub use runnel_macros::{record, serializable, test};
/// Model serving (with the `onnx` feature): a streamlet that scores records with ONNX
/// models, swapped live from a model topic.
#[cfg(feature = "onnx")]
pub use runnel_onnx as onnx;
/// SQL streamlets (with the `sql` feature): declared by a query in the blueprint, planned
/// by Apache DataFusion; [`App::sql_functions`] adds the app's own functions.
#[cfg(feature = "sql")]
pub use runnel_sql as sql;
/// Avro schemas and values; [`record`] derives a type's schema through it.
pub use runnel_streamlet::prelude::apache_avro;
/// Serialization: what [`record`] and [`serializable`] derive through, so an app needs no
/// serde dependency of its own.
pub use runnel_streamlet::prelude::serde;
/// JSON values, for JSON ports and checkpoints.
pub use runnel_streamlet::prelude::serde_json;
/// Keyed state: values, maps and timers per key, checkpointed with the input offsets.
pub use runnel_streamlet::state;
pub use runnel_streamlet::{
    AsyncMap, Checkpoints, Clock, CommitToken, Context, Data, Egress, Either, Error, ErrorKind,
    Inlet, InletStream, Merge, Message, Outgoing, Outlet, OutletSender, Parameter, Processor,
    RejectedRecord, Result, Shape, Splitter, StatusDetails, Streamlet, SystemClock,
    WindowedAggregate, checkpoint, dead_letter, watermark, window,
};
/// The async runtime streamlets run on, for timers, `select!` and the like
/// (`runnel::tokio::time::sleep`), so an app needs no tokio dependency of its own.
pub use tokio;
/// Logging, as streamlets and the runtime use it (`runnel::tracing::info!`).
pub use tracing;

/// Everything a streamlet file needs, in one import.
pub mod prelude {
    pub use runnel_macros::{record, serializable};
    pub use runnel_streamlet::prelude::*;
}

/// The event-time guide (`docs/event-time.md`), whose examples run as doc tests (with the
/// test kit, so with the `testkit` feature, as `cargo test --all-features` has it).
#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../../../docs/event-time.md")]
mod event_time_guide {}

/// The state guide (`docs/state.md`), whose examples run as doc tests (with the `testkit`
/// feature).
#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../../../docs/state.md")]
mod state_guide {}
