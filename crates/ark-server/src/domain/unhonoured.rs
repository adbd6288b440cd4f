//! Velero's spec fields that ark does not honour yet, found among a spec's unmodelled fields. None
//! passes in silence: a field that narrows what is taken (a filter) refuses the operation, since
//! going on would take what its author left out; any other is a warning in the results.

use ark_api::Unmodelled;
use serde_json::Value;

/// A spec field and what Velero does with it.
pub struct Field {
    pub name: &'static str,
    pub velero_does: &'static str,
}

const fn field(name: &'static str, velero_does: &'static str) -> Field {
    Field { name, velero_does }
}

/// Backup filters ark cannot apply yet: a backup that sets one fails validation.
pub const BACKUP_FILTERS: &[Field] = &[
    field(
        "orLabelSelectors",
        "backs up items matching any of these selectors",
    ),
    field(
        "includedClusterScopedResources",
        "backs up only these cluster-scoped resources",
    ),
    field(
        "excludedClusterScopedResources",
        "leaves these cluster-scoped resources out",
    ),
    field(
        "includedNamespaceScopedResources",
        "backs up only these namespaced resources",
    ),
    field(
        "excludedNamespaceScopedResources",
        "leaves these namespaced resources out",
    ),
];

/// Backup fields ark does not act on yet: the backup runs without them, with a warning each.
pub const BACKUP_BEHAVIOURS: &[Field] = &[
    field(
        "defaultVolumesToRestic",
        "backs up pod volumes' data with its node agent",
    ),
    field(
        "snapshotMoveData",
        "moves CSI snapshots' data into the backup location",
    ),
    field("datamover", "moves snapshot data with this data mover"),
    field("uploaderConfig", "configures its volume data uploader"),
    field("orderedResources", "backs these items up in this order"),
    field(
        "resourcePolicy",
        "applies this volume policy to the backup's volumes",
    ),
];

/// Restore filters ark cannot apply yet: a restore that sets one fails validation.
pub const RESTORE_FILTERS: &[Field] = &[field(
    "orLabelSelectors",
    "restores items matching any of these selectors",
)];

/// Restore fields ark does not act on yet: the restore runs without them, with a warning each.
pub const RESTORE_BEHAVIOURS: &[Field] = &[
    field("restoreStatus", "restores these resources' status"),
    field("uploaderConfig", "configures its volume data downloader"),
];

/// Whether a value says anything: not null, false, zero, empty, or made only of those (Velero's
/// CLI sends `hooks: {}` for no hooks).
fn is_set(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(set) => *set,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => items.iter().any(is_set),
        Value::Object(fields) => fields.values().any(is_set),
    }
}

/// One message per field of `fields` that the spec sets.
pub fn found(unmodelled: &Unmodelled, fields: &[Field], consequence: &str) -> Vec<String> {
    fields
        .iter()
        .filter(|f| unmodelled.get(f.name).is_some_and(is_set))
        .map(|f| {
            format!(
                "spec.{} is not honoured by ark yet (Velero {}): {consequence}",
                f.name, f.velero_does
            )
        })
        .collect()
}

/// The validation errors for filters ark cannot apply.
pub fn refused(unmodelled: &Unmodelled, filters: &[Field]) -> Vec<String> {
    found(
        unmodelled,
        filters,
        "refused rather than taking what it would leave out",
    )
}

/// The warnings for fields the operation runs without.
pub fn ignored(unmodelled: &Unmodelled, behaviours: &[Field]) -> Vec<String> {
    found(unmodelled, behaviours, "ignored")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> Unmodelled {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_fields_that_say_something_are_reported() {
        // What Velero's CLI sends with no flag: false or zero values.
        let quiet = spec(serde_json::json!({
            "defaultVolumesToFsBackup": false, "orderedResources": {},
            "uploaderConfig": { "parallelFilesUpload": 0 }, "datamover": "",
        }));
        assert_eq!(ignored(&quiet, BACKUP_BEHAVIOURS), Vec::<String>::new());
        let moved = spec(serde_json::json!({ "snapshotMoveData": true }));
        assert_eq!(
            ignored(&moved, BACKUP_BEHAVIOURS),
            [
                "spec.snapshotMoveData is not honoured by ark yet (Velero moves CSI snapshots' \
                 data into the backup location): ignored",
            ]
        );
        let filtered = spec(serde_json::json!({ "excludedNamespaceScopedResources": ["secrets"] }));
        assert_eq!(
            refused(&filtered, BACKUP_FILTERS),
            [
                "spec.excludedNamespaceScopedResources is not honoured by ark yet (Velero leaves \
              these namespaced resources out): refused rather than taking what it would leave out"
            ]
        );
    }
}
