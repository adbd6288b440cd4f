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
    serde_path_to_error::deserialize(value).map_err(|e| Unfit {
        field: e.path().to_string(),
        reason: e.inner().to_string(),
    })
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
}
