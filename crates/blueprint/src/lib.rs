//! Blueprints and app descriptors.
//!
//! An app binary describes the streamlet types it contains in a [`descriptor`]; a blueprint
//! (`blueprint.toml`) names streamlet instances and wires their ports through topics.
#![warn(missing_docs)]

pub mod descriptor;
pub mod parameter;
