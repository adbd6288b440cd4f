//! Reading ark's kinds as the API server stores them. Velero's CRDs keep embedded objects (init
//! containers, hooks) free-form, so the API server accepts objects that ark's types cannot read:
//! each is read on its own, and one that does not fit is named with the field and the reason,
//! never failing a whole list.

use kube::core::DynamicObject;
use serde::de::DeserializeOwned;

/// An object that does not fit ark's type for its kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Unfit {
    /// Where, as a path: `spec.hooks.resources[0].postHooks[0].init.initContainers[0].command`.
    pub field: String,
    pub reason: String,
}

/// The object read as `K`, or where and why it does not fit.
pub fn typed<K: DeserializeOwned>(object: &DynamicObject) -> Result<K, Unfit> {
    let value = serde_json::to_value(object).map_err(|e| Unfit {
        field: ".".into(),
        reason: e.to_string(),
    })?;
    // Most objects fit: the path is tracked only to name the field of one that does not.
    K::deserialize(&value).or_else(|_| serde_path_to_error::deserialize(value).map_err(unfit))
}

/// An object's JSON, as a listing's page holds it, read as `K`, or where and why it does not fit.
pub fn typed_json<K: DeserializeOwned>(json: &str) -> Result<K, Unfit> {
    serde_json::from_str(json).or_else(|_| {
        // Read again as a tree, for the same words as [`typed`] (no position in the page).
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| Unfit {
            field: ".".into(),
            reason: e.to_string(),
        })?;
        serde_path_to_error::deserialize(value).map_err(unfit)
    })
}

fn unfit(error: serde_path_to_error::Error<serde_json::Error>) -> Unfit {
    Unfit {
        field: error.path().to_string(),
        reason: error.inner().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Restore;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_object_that_does_not_fit_names_the_field_and_the_reason() {
        let odd = object(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": { "name": "r", "namespace": "velero" },
            "spec": { "backupName": "b", "hooks": { "resources": [{ "name": "h",
                "postHooks": [{ "init": { "initContainers": [{ "name": "c", "command": "restore.sh" }] } }] }] } },
        }));
        let unfit = typed::<Restore>(&odd).unwrap_err();
        assert_eq!(
            unfit.field,
            "spec.hooks.resources[0].postHooks[0].init.initContainers[0].command"
        );
        assert!(
            unfit
                .reason
                .starts_with("invalid type: string \"restore.sh\", expected a sequence"),
            "{unfit}"
        );

        let fine = object(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": { "name": "r" }, "spec": { "backupName": "b" },
            "status": { "phase": "Completed" },
        }));
        assert_eq!(typed::<Restore>(&fine).unwrap().spec.backup_name, "b");
    }

    #[test]
    fn json_that_does_not_fit_names_the_field_as_an_object_does() {
        let odd = r#"{"apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": {"name": "r"}, "spec": {"backupName": "b", "itemOperationTimeout": 4}}"#;
        let unfit = typed_json::<Restore>(odd).unwrap_err();
        assert_eq!(unfit.field, "spec.itemOperationTimeout");
        assert_eq!(
            unfit,
            typed::<Restore>(&serde_json::from_str(odd).unwrap()).unwrap_err()
        );
        let fine = r#"{"apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": {"name": "r"}, "spec": {"backupName": "b"}}"#;
        assert_eq!(typed_json::<Restore>(fine).unwrap().spec.backup_name, "b");
    }
}
