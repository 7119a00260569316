//! Schemas schemars cannot derive for the CRD.

use schemars::{Schema, SchemaGenerator, json_schema};

/// An object whose fields the API server keeps as they are (`x-kubernetes-preserve-unknown-fields`),
/// for the app descriptor, whose format `docs/descriptor.md` documents.
pub(crate) fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}
