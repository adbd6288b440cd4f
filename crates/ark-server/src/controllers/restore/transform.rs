//! What every backed-up item becomes before it is created, whatever its kind: server-owned fields
//! stripped, namespace mapped, labelled with its backup and restore. Per-kind work is the item
//! actions' (`actions/`). Items are JSON, not k8s-openapi types: a typed round trip would drop the
//! fields the types do not know.

use ark_api::labels;
use serde_json::{Map, Value};

use super::actions::RestoreCx;

/// Metadata the API server owns; a create with them fails or lies.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "managedFields",
    "generation",
    "ownerReferences",
];

/// The item without what its old cluster owned, in its mapped namespace (a Namespace object
/// renamed by the mapping); the status it was backed up with, which an action may read.
pub fn strip_and_map(
    restore: &RestoreCx<'_>,
    group_resource: &str,
    item: &mut Value,
) -> Option<Value> {
    let object = item.as_object_mut()?;
    let status = object.remove("status");
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return status;
    };
    for field in SERVER_METADATA {
        metadata.remove(*field);
    }
    if let Some(Value::String(ns)) = metadata.get("namespace") {
        let mapped = restore.target_namespace(ns).to_string();
        metadata.insert("namespace".into(), Value::String(mapped));
    }
    if group_resource == "namespaces"
        && let Some(Value::String(name)) = metadata.get("name")
    {
        let mapped = restore.target_namespace(name).to_string();
        metadata.insert("name".into(), Value::String(mapped));
    }
    status
}

/// Labels the item with its backup and restore, as Velero does, last: no rule or action removes
/// them.
pub fn label(item: &mut Value, backup_name: &str, restore_name: &str) {
    let Some(metadata) = item.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let item_labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(item_labels) = item_labels.as_object_mut() {
        item_labels.insert(
            labels::BACKUP_NAME.into(),
            labels::valid_label_value(backup_name).into(),
        );
        item_labels.insert(
            labels::RESTORE_NAME.into(),
            labels::valid_label_value(restore_name).into(),
        );
    }
}

/// The fields in which the object in the cluster differs from the one the restore would create,
/// in what users care about (server fields are ignored), as paths (`metadata.labels.app`, `spec.containers[0].image`): labels other than ark's and
/// annotations key by key, and in the body (spec, data, rules...) what the backup sets and the
/// cluster has otherwise (the API server's defaults are not differences).
pub fn differences(existing: &Value, candidate: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for map in ["labels", "annotations"] {
        let keyed = |v: &Value| {
            let mut map = v
                .pointer(&format!("/metadata/{map}"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            map.remove(labels::BACKUP_NAME);
            map.remove(labels::RESTORE_NAME);
            map
        };
        let (e, c) = (keyed(existing), keyed(candidate));
        let keys: std::collections::BTreeSet<&String> = e.keys().chain(c.keys()).collect();
        for key in keys {
            if e.get(key) != c.get(key) {
                found.push(format!("metadata.{map}.{key}"));
            }
        }
    }
    for key in [
        "spec",
        "data",
        "binaryData",
        "stringData",
        "rules",
        "subjects",
        "roleRef",
    ] {
        // The API server fills defaults into specs; compare only what the backup sets.
        if let Some(wanted) = candidate.get(key).filter(|c| !c.is_null()) {
            let actual = existing.get(key).unwrap_or(&Value::Null);
            mismatches(actual, wanted, key.to_string(), &mut found);
        }
    }
    found
}

/// The paths under `path` where `actual` does not contain `wanted` (as [`contains`] decides).
fn mismatches(actual: &Value, wanted: &Value, path: String, found: &mut Vec<String>) {
    match (actual, wanted) {
        (Value::Object(a), Value::Object(w)) => {
            for (key, value) in w {
                let path = format!("{path}.{key}");
                match a.get(key) {
                    Some(actual) => mismatches(actual, value, path, found),
                    None => found.push(path),
                }
            }
        }
        (Value::Array(a), Value::Array(w)) if a.len() == w.len() => {
            for (index, (actual, value)) in a.iter().zip(w).enumerate() {
                mismatches(actual, value, format!("{path}[{index}]"), found);
            }
        }
        _ if contains(actual, wanted) => {}
        _ => found.push(path),
    }
}

/// Whether every field set in `wanted` has the same value in `actual` (defaults in `actual` allowed,
/// inside array elements too, which keep their order and count). Not `patch::holds`, which asks
/// whether a merge patch would change an object: there a null means "absent" and arrays are
/// replaced whole.
fn contains(actual: &Value, wanted: &Value) -> bool {
    match (actual, wanted) {
        (Value::Object(a), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| contains(av, v))),
        (Value::Array(a), Value::Array(w)) => {
            a.len() == w.len() && a.iter().zip(w).all(|(av, wv)| contains(av, wv))
        }
        _ => actual == wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn server_fields_go_and_labels_and_namespace_mapping_come() {
        let mapping = BTreeMap::from([("shop".to_string(), "shop-copy".to_string())]);
        let restore = RestoreCx {
            spec: &Default::default(),
            namespace_mapping: &mapping,
            restored_volumes: &BTreeSet::new(),
            resource_modifiers: None,
            volume_data: None,
            restore_uid: "u",
            snapshot_classes: &[],
            moved_claims: &BTreeMap::new(),
        };
        let mut item = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "c", "namespace": "shop", "uid": "u", "resourceVersion": "1",
                          "managedFields": [], "ownerReferences": [{}], "labels": { "app": "web" } },
            "data": { "k": "v" },
        });
        strip_and_map(&restore, "configmaps", &mut item);
        label(&mut item, "nightly", "r1");
        assert_eq!(
            item,
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "c", "namespace": "shop-copy",
                              "labels": { "app": "web", "velero.io/backup-name": "nightly", "velero.io/restore-name": "r1" } },
                "data": { "k": "v" },
            })
        );
        let mut ns = json!({ "metadata": { "name": "shop" }, "status": { "phase": "Active" } });
        strip_and_map(&restore, "namespaces", &mut ns);
        assert_eq!(ns["metadata"]["name"], "shop-copy");
        assert!(ns.get("status").is_none());
    }

    #[test]
    fn differences_ignore_server_defaults_and_ark_labels() {
        let existing = json!({ "metadata": { "uid": "x", "labels": { "app": "web" } },
                               "spec": { "replicas": 1, "revisionHistoryLimit": 10 } });
        let same = json!({ "metadata": { "labels": { "app": "web", "velero.io/restore-name": "r" } },
                           "spec": { "replicas": 1 } });
        let other =
            json!({ "metadata": { "labels": { "app": "web" } }, "spec": { "replicas": 3 } });
        assert_eq!(differences(&existing, &same), Vec::<String>::new());
        assert_eq!(differences(&existing, &other), ["spec.replicas"]);
    }

    #[test]
    fn differences_name_each_field_that_differs() {
        let existing = json!({
            "metadata": { "labels": { "app": "web", "tier": "front" }, "annotations": { "a": "1" } },
            "spec": { "replicas": 1, "revisionHistoryLimit": 10,
                      "template": { "spec": { "containers": [{ "name": "c", "image": "web:1" }] } } },
            "data": { "k": "v" },
        });
        let candidate = json!({
            "metadata": { "labels": { "app": "shop", "velero.io/restore-name": "r" }, "annotations": { "a": "1" } },
            "spec": { "replicas": 1, "paused": true,
                      "template": { "spec": { "containers": [{ "name": "c", "image": "web:2" }] } } },
            "data": { "k": "v", "extra": "x" },
            "rules": [{ "verbs": ["get"] }],
        });
        assert_eq!(
            differences(&existing, &candidate),
            [
                "metadata.labels.app",
                "metadata.labels.tier",
                "spec.paused",
                "spec.template.spec.containers[0].image",
                "data.extra",
                "rules",
            ]
        );
        assert_eq!(differences(&existing, &existing), Vec::<String>::new());
    }
}
