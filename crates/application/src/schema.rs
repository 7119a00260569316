//! Schemas schemars cannot derive for the CRD.

use schemars::{Schema, SchemaGenerator, json_schema};

/// An object whose fields the API server keeps as they are (`x-kubernetes-preserve-unknown-fields`):
/// the app descriptor, whose format `docs/descriptor.md` documents, and the copy of a spec
/// that ran kept in the status (the spec's own schema checked it when it was applied, and
/// repeating that schema would double the CRD).
pub(crate) fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}
