//! Blueprints and app descriptors: parse `blueprint.toml`, verify it against the app's
//! descriptor, and report every problem at once with its file, line and column.
//!
//! An app binary describes the streamlet types it contains in a [`descriptor`] (`app
//! describe` prints it as JSON); a blueprint names streamlet instances and wires their ports
//! through topics. [`verify`] checks one against the other, without compiling or running
//! anything, and returns a [`Verification`]: every [`Diagnostic`] (a stable [`Code`] named
//! after Cloudflow's problems, a message, a [`Location`]) and, when there is no error, the
//! checked [`Blueprint`] the runner starts.
//!
//! ```
//! use std::path::Path;
//! use runnel_blueprint::{descriptor::AppDescriptor, render_human, verify, Code};
//!
//! let descriptor = AppDescriptor::from_json(r#"{
//!   "descriptor-version": 1, "app": "sensor-data",
//!   "streamlets": [
//!     {"type": "generator", "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}]},
//!     {"type": "logger", "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}]}
//!   ]
//! }"#).unwrap();
//! let text = r#"
//! name = "sensor-data"
//! [streamlets]
//! gen = "generator"
//! log = "logger"
//! [topics.numbers]
//! producers = ["gen.out"]
//! consumers = ["log.inn"]
//! "#;
//! let verification = verify(Path::new("blueprint.toml"), text, &descriptor);
//! assert!(verification.has_errors());
//! // One mistake, one diagnostic: `log.in` is not also reported as unconnected.
//! let [problem] = &verification.diagnostics[..] else { panic!() };
//! assert_eq!(problem.code, Code::PortPathNotFound);
//! assert_eq!(problem.location.as_ref().unwrap().to_string(), "blueprint.toml:8:14");
//! assert_eq!(problem.facts.suggestions, ["log.in"]);
//! println!("{}", render_human(&verification.diagnostics, text));
//! ```
//!
//! Where to begin: [`verify`] (in `verify.rs`) runs the rules in order;
//! `parse.rs` turns the text into a spanned `BlueprintFile`; each rule family has its own
//! file under `rules/`; `avro.rs` is the schema resolution behind `IncompatibleSchema`.
//! `docs/blueprint.md` documents the file format and every code; `facts.rs` the structured
//! facts of the JSON report (`docs/diagnostics.schema.json`); `suggest.rs` the "did you
//! mean" search; `units.rs` HOCON durations and memory sizes; `constraint.rs` parameter
//! ranges and allowed values; `connections.rs` the Cloudflow 1.x migration hint.
//!
//! Design decisions:
//!
//! - The crate is pure: text in, diagnostics and values out; callers read the files.
//! - One pass reports everything: the TOML parser recovers from syntax errors, each rule
//!   skips what an earlier one already reported, and diagnostics are sorted by position so
//!   the output is deterministic.
//! - Verification takes time linear in the size of the blueprint and descriptor (hash maps,
//!   one strongly-connected-components pass, bounded suggestion searches); the benchmark is
//!   `benches/verify.rs`.
//! - Problems of the descriptor itself (a bad parameter or port name) are located at the
//!   blueprint text that declares an instance of that streamlet type, and have no location
//!   when no instance uses it.

pub mod descriptor;
pub mod graph;
pub mod parameter;

mod avro;
mod blueprint;
mod code;
mod compatibility;
mod connections;
mod constraint;
mod diagnostic;
mod error;
mod facts;
mod file;
mod files;
mod names;
mod parse;
mod python;
mod render;
mod report;
mod rules;
mod secrets;
mod sql;
mod suggest;
mod units;
mod verify;

pub use blueprint::{Blueprint, PortPath, PythonSource, SqlQuery, StreamletInstance, Topic};
pub use code::{Code, Severity, UnknownCode};
pub use compatibility::{COMPATIBILITY_NAMES, Compatibility, SchemaBreak};
pub use diagnostic::{Diagnostic, Location};
pub use error::{Error, Result};
pub use facts::{Facts, PortKind, Role};
pub use files::{BlueprintFiles, inline_files};
pub use python::python_type_name;
pub use render::{render_human, render_human_with_files, render_json};
pub use secrets::is_secret_setting;
pub use sql::{QueryProblem, sql_type_name};
pub use suggest::{closest, did_you_mean};
pub use verify::{
    KeptSchemas, Verification, kept_schema, parse, parse_with_files, verify, verify_against,
    verify_with_queries,
};
