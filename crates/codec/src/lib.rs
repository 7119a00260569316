//! How Runnel encodes record values: what [`Data`] a port carries, and the [`Codec`] that
//! turns values into bytes and back.
//!
//! Avro is the default: the schema is derived from the Rust type (`#[derive(AvroSchema)]`),
//! values are encoded straight from serde without building an `apache_avro::Value`
//! (`avro_encode`, `avro_decode`), and a record written with another compatible schema is
//! resolved to the reader's own. A record whose writer schema is not its topic's base schema
//! names it in the [`SCHEMA_HEADER`] header; where a schema registry keeps a topic's
//! schemas, every value starts with its schema's registry id instead (the Confluent wire
//! format: [`Codec::with_registry_id`], [`Codec::framed_by_registry`]). JSON is the other
//! format a port can choose.
//!
//! Where to begin: [`Codec::new`], then [`Codec::encode`] and [`Codec::decode`]. Streamlet
//! authors meet only [`Data`] and [`CodecError`] (re-exported by `runnel-streamlet` and
//! `runnel`); the host and the tools use the codec itself.
#![deny(missing_docs)]

mod avro_decode;
mod avro_encode;
mod codec;
mod datum;

pub use codec::{
    Codec, CodecError, Data, REGISTRY_PREFIX, SCHEMA_HEADER, avro_schema_descriptor, registry_id,
    schema_descriptor,
};
pub use datum::AvroDatum;
