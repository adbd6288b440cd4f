//! What a backed-up item becomes before it is created: server-owned fields stripped, namespace
//! mapped, labelled with its backup and restore. Pure functions on JSON.

use std::collections::BTreeMap;

use ark_api::labels;
use serde_json::{Map, Value};

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

pub struct Transform<'a> {
    pub backup_name: &'a str,
    pub restore_name: &'a str,
    pub namespace_mapping: &'a BTreeMap<String, String>,
}

impl Transform<'_> {
    pub fn target_namespace<'n>(&'n self, namespace: &'n str) -> &'n str {
        self.namespace_mapping
            .get(namespace)
            .map_or(namespace, String::as_str)
    }

    /// The object to create for an item of `group_resource`.
    pub fn apply(&self, group_resource: &str, mut item: Value) -> Value {
        let Some(object) = item.as_object_mut() else {
            return item;
        };
        object.remove("status");
        let metadata = object
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(metadata) = metadata.as_object_mut() {
            for field in SERVER_METADATA {
                metadata.remove(*field);
            }
            if let Some(Value::String(ns)) = metadata.get("namespace") {
                let mapped = self.target_namespace(ns).to_string();
                metadata.insert("namespace".into(), Value::String(mapped));
            }
            if group_resource == "namespaces"
                && let Some(Value::String(name)) = metadata.get("name")
            {
                let mapped = self.target_namespace(name).to_string();
                metadata.insert("name".into(), Value::String(mapped));
            }
            let item_labels = metadata
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(item_labels) = item_labels.as_object_mut() {
                item_labels.insert(
                    labels::BACKUP_NAME.into(),
                    labels::valid_label_value(self.backup_name).into(),
                );
                item_labels.insert(
                    labels::RESTORE_NAME.into(),
                    labels::valid_label_value(self.restore_name).into(),
                );
            }
        }
        match group_resource {
            "pods" => pod(object),
            "services" => service(object),
            "persistentvolumeclaims" => {
                if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("volumeName");
                }
            }
            "jobs.batch" => job(object),
            _ => {}
        }
        item
    }
}

/// A restored pod is scheduled anew and gets a fresh service-account token volume.
fn pod(object: &mut Map<String, Value>) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.remove("nodeName");
    if spec.contains_key("priorityClassName") {
        spec.remove("priority");
    }
    let is_token_volume = |name: &str| name.starts_with("kube-api-access-");
    let mut token_volumes = Vec::new();
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        volumes.retain(|v| {
            let name = v["name"].as_str().unwrap_or_default();
            let token = is_token_volume(name);
            if token {
                token_volumes.push(name.to_string());
            }
            !token
        });
    }
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(key) {
            for container in containers {
                if let Some(Value::Array(mounts)) = container.get_mut("volumeMounts") {
                    mounts.retain(|m| !token_volumes.iter().any(|t| m["name"] == t.as_str()));
                }
            }
        }
    }
}

/// Cluster IPs and node ports belong to the cluster that assigned them.
fn service(object: &mut Map<String, Value>) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    if !headless {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    spec.remove("healthCheckNodePort");
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            port.remove("nodePort");
        }
    }
}

/// A job's selector and controller-uid labels name the old job's uid.
fn job(object: &mut Map<String, Value>) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.remove("selector");
    if let Some(Value::Object(template_labels)) = spec
        .get_mut("template")
        .and_then(|t| t.pointer_mut("/metadata/labels"))
    {
        template_labels.remove("controller-uid");
        template_labels.remove("batch.kubernetes.io/controller-uid");
        template_labels.remove("job-name");
        template_labels.remove("batch.kubernetes.io/job-name");
    }
}

/// Whether the object in the cluster differs from the one the restore would create, in what users
/// care about (labels other than ark's, annotations, spec, data); server fields are ignored.
pub fn differs(existing: &Value, candidate: &Value) -> bool {
    let relevant = |v: &Value| {
        let mut labels = v
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(map) = labels.as_object_mut() {
            map.remove(labels::BACKUP_NAME);
            map.remove(labels::RESTORE_NAME);
            if map.is_empty() {
                labels = Value::Null;
            }
        }
        let annotations = v
            .pointer("/metadata/annotations")
            .cloned()
            .unwrap_or(Value::Null);
        let body: Vec<Value> = [
            "spec",
            "data",
            "binaryData",
            "stringData",
            "rules",
            "subjects",
            "roleRef",
        ]
        .iter()
        .map(|k| v.get(*k).cloned().unwrap_or(Value::Null))
        .collect();
        (labels, annotations, body)
    };
    let (l1, a1, b1) = relevant(existing);
    let (l2, a2, b2) = relevant(candidate);
    // The API server fills defaults into specs; compare only what the backup sets.
    l1 != l2
        || a1 != a2
        || b1
            .iter()
            .zip(&b2)
            .any(|(e, c)| !c.is_null() && !contains(e, c))
}

/// Whether every field set in `wanted` has the same value in `actual` (defaults in `actual` allowed).
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

    fn transform(mapping: &[(&str, &str)]) -> (BTreeMap<String, String>, &'static str) {
        (
            mapping
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            "",
        )
    }

    #[test]
    fn server_fields_go_and_labels_and_namespace_mapping_come() {
        let (mapping, _) = transform(&[("shop", "shop-copy")]);
        let t = Transform {
            backup_name: "nightly",
            restore_name: "r1",
            namespace_mapping: &mapping,
        };
        let item = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "c", "namespace": "shop", "uid": "u", "resourceVersion": "1",
                          "managedFields": [], "ownerReferences": [{}], "labels": { "app": "web" } },
            "data": { "k": "v" },
        });
        assert_eq!(
            t.apply("configmaps", item),
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "c", "namespace": "shop-copy",
                              "labels": { "app": "web", "velero.io/backup-name": "nightly", "velero.io/restore-name": "r1" } },
                "data": { "k": "v" },
            })
        );
        let ns = t.apply(
            "namespaces",
            json!({ "metadata": { "name": "shop" }, "status": { "phase": "Active" } }),
        );
        assert_eq!(ns["metadata"]["name"], "shop-copy");
        assert!(ns.get("status").is_none());
    }

    #[test]
    fn pods_are_rescheduled_without_their_old_token_volume() {
        let mapping = BTreeMap::new();
        let t = Transform {
            backup_name: "b",
            restore_name: "r",
            namespace_mapping: &mapping,
        };
        let pod = t.apply("pods", json!({
            "metadata": { "name": "p" },
            "spec": {
                "nodeName": "node-1",
                "volumes": [{ "name": "kube-api-access-x1" }, { "name": "data" }],
                "containers": [{ "name": "c", "volumeMounts": [{ "name": "kube-api-access-x1" }, { "name": "data" }] }],
            },
            "status": { "phase": "Running" },
        }));
        assert_eq!(
            pod["spec"],
            json!({
                "volumes": [{ "name": "data" }],
                "containers": [{ "name": "c", "volumeMounts": [{ "name": "data" }] }],
            })
        );
    }

    #[test]
    fn services_lose_cluster_ips_unless_headless() {
        let mapping = BTreeMap::new();
        let t = Transform {
            backup_name: "b",
            restore_name: "r",
            namespace_mapping: &mapping,
        };
        let svc = t.apply("services", json!({ "metadata": {}, "spec": {
            "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ports": [{ "port": 80, "nodePort": 30001 }] } }));
        assert_eq!(svc["spec"], json!({ "ports": [{ "port": 80 }] }));
        let headless = t.apply(
            "services",
            json!({ "metadata": {}, "spec": { "clusterIP": "None" } }),
        );
        assert_eq!(headless["spec"]["clusterIP"], "None");
    }

    #[test]
    fn differences_ignore_server_defaults_and_ark_labels() {
        let existing = json!({ "metadata": { "uid": "x", "labels": { "app": "web" } },
                               "spec": { "replicas": 1, "revisionHistoryLimit": 10 } });
        let same = json!({ "metadata": { "labels": { "app": "web", "velero.io/restore-name": "r" } },
                           "spec": { "replicas": 1 } });
        let other =
            json!({ "metadata": { "labels": { "app": "web" } }, "spec": { "replicas": 3 } });
        assert!(!differs(&existing, &same));
        assert!(differs(&existing, &other));
    }
}
