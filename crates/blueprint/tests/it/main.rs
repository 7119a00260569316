//! Integration tests of `runnel-blueprint`, through its public API only, as one binary.

/// The docs list every code and the JSON Schema every key.
mod docs;
/// The golden fixtures: valid blueprints verify clean, each invalid one gives exactly its
/// expected diagnostics.
mod fixtures;
/// Drawing a checked blueprint as text, dot and mermaid.
mod graph;
/// The JSON report against its JSON Schema, `docs/diagnostics.schema.json`.
mod json_schema;
mod messages;
/// Random well-formed blueprints verify cleanly, and a mutated port path is reported.
mod properties;
/// The human (rustc-style) and JSON reports.
mod render;
/// Avro schema resolution as seen through `IncompatibleSchema`.
mod schemas;
/// Shared helpers: fixture paths, descriptors.
mod support;
/// The checked `Blueprint` values `verify` builds.
mod verify;
