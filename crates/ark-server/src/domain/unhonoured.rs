//! Velero's spec fields that ark does not honour yet, found among a spec's unmodelled fields. None
//! passes in silence: each is a warning in the results. (A filter ark could not apply would have
//! to refuse the operation, since going on would take what its author left out; ark applies every
//! filter of Velero's.)

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

/// Backup fields ark does not act on yet: the backup runs without them, with a warning each.
pub const BACKUP_BEHAVIOURS: &[Field] = &[
    field(
        "snapshotMoveData",
        "moves CSI snapshots' data into the backup location",
    ),
    field("datamover", "moves snapshot data with this data mover"),
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
fn found(unmodelled: &Unmodelled, fields: &[Field], consequence: &str) -> Vec<String> {
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
    }
}
