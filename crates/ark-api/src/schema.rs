//! Schema overrides where Velero's CRDs say less than the Rust type would, so that objects written by
//! either tool are accepted by the other's CRDs.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Velero keeps init containers as opaque objects (`x-kubernetes-preserve-unknown-fields`), so the
/// API server does not prune fields of newer Kubernetes versions.
pub fn opaque_object_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A free-form string map (`config`, `namespaceMapping`).
pub fn string_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": { "type": "string" },
    })
}

/// Bytes, base64-encoded in JSON (`format: byte`).
pub fn bytes(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "byte" })
}
