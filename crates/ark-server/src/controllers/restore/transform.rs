//! What a backed-up item becomes before it is created: server-owned fields stripped, namespace
//! mapped, labelled with its backup and restore. Pure functions on JSON.

use std::collections::{BTreeMap, BTreeSet};

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
    /// The PersistentVolumes of the backup that this restore creates again (see
    /// [`is_restored_volume`]): a claim bound to one of them keeps its `volumeName`, so the pair
    /// binds again; a claim bound to any other volume is provisioned anew.
    pub restored_volumes: &'a BTreeSet<String>,
    /// The restore's `preserveNodePorts`: Services keep their node ports (a port taken in this
    /// cluster then fails that Service, as in Velero).
    pub preserve_node_ports: bool,
}

/// Annotations the PV controller writes when it binds a claim and a volume: a restored pair
/// without them is bound again by the controller, as Velero restores it.
const BIND_ANNOTATIONS: &[&str] = &[
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
];
/// What a claim carries of the old cluster's provisioning (Velero's PVC restore action).
const CLAIM_PROVISIONING_ANNOTATIONS: &[&str] = &[
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",
];

/// Whether a backed-up PersistentVolume is created again at restore. ark takes no volume
/// snapshots, so, as in Velero without a snapshot, a volume whose reclaim policy is Delete is
/// not: its storage went with it, and its claim is provisioned anew.
pub fn is_restored_volume(volume: &Value) -> bool {
    volume
        .pointer("/spec/persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        != Some("Delete")
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
            "services" => service(object, self.preserve_node_ports),
            "persistentvolumes" => self.persistent_volume(object),
            "persistentvolumeclaims" => self.persistent_volume_claim(object),
            "rolebindings.rbac.authorization.k8s.io"
            | "clusterrolebindings.rbac.authorization.k8s.io" => self.binding_subjects(object),
            "jobs.batch" => job(object),
            _ => {}
        }
        item
    }
}

impl Transform<'_> {
    /// A volume keeps the name of its claim, in the claim's mapped namespace, without the old
    /// claim's uid, so that the PV controller binds it to the restored claim.
    fn persistent_volume(&self, object: &mut Map<String, Value>) {
        remove_annotations(object, BIND_ANNOTATIONS);
        if let Some(claim) = object
            .get_mut("spec")
            .and_then(|s| s.get_mut("claimRef"))
            .and_then(Value::as_object_mut)
        {
            claim.remove("uid");
            claim.remove("resourceVersion");
            if let Some(Value::String(ns)) = claim.get("namespace") {
                let mapped = self.target_namespace(ns).to_string();
                claim.insert("namespace".into(), Value::String(mapped));
            }
        }
    }

    fn persistent_volume_claim(&self, object: &mut Map<String, Value>) {
        remove_annotations(object, BIND_ANNOTATIONS);
        remove_annotations(object, CLAIM_PROVISIONING_ANNOTATIONS);
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            let volume = spec
                .get("volumeName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !self.restored_volumes.contains(volume) {
                spec.remove("volumeName");
            }
        }
    }

    /// Subjects in a mapped namespace follow it (Velero's role-binding restore actions).
    fn binding_subjects(&self, object: &mut Map<String, Value>) {
        let subjects = object.get_mut("subjects").and_then(Value::as_array_mut);
        for subject in subjects.into_iter().flatten() {
            if let Some(Value::String(ns)) = subject.get("namespace") {
                let mapped = self.target_namespace(ns).to_string();
                subject["namespace"] = Value::String(mapped);
            }
        }
    }
}

fn remove_annotations(object: &mut Map<String, Value>, names: &[&str]) {
    if let Some(annotations) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        for name in names {
            annotations.remove(*name);
        }
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

/// Cluster IPs and node ports belong to the cluster that assigned them; node ports stay when the
/// restore asks for them.
fn service(object: &mut Map<String, Value>, preserve_node_ports: bool) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    if !headless {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    if preserve_node_ports {
        return;
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
            restored_volumes: &BTreeSet::new(),
            preserve_node_ports: false,
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
    fn a_bound_claim_and_its_retained_volume_are_restored_to_bind_again() {
        let (mapping, _) = transform(&[("shop", "shop-copy")]);
        let restored = BTreeSet::from(["pv-retained".to_string()]);
        let t = Transform {
            backup_name: "b",
            restore_name: "r",
            namespace_mapping: &mapping,
            restored_volumes: &restored,
            preserve_node_ports: false,
        };
        let bind = json!({ "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes", "keep": "me" });
        let volume = json!({
            "metadata": { "name": "pv-retained", "annotations": bind },
            "spec": { "persistentVolumeReclaimPolicy": "Retain",
                      "claimRef": { "kind": "PersistentVolumeClaim", "namespace": "shop", "name": "data", "uid": "u1", "resourceVersion": "7" } },
        });
        assert!(is_restored_volume(&volume));
        let volume = t.apply("persistentvolumes", volume);
        assert_eq!(
            volume["spec"]["claimRef"],
            json!({ "kind": "PersistentVolumeClaim", "namespace": "shop-copy", "name": "data" })
        );
        assert_eq!(volume["metadata"]["annotations"], json!({ "keep": "me" }));
        let claim = |volume_name: &str| {
            json!({
                "metadata": { "name": "data", "namespace": "shop", "annotations": {
                    "pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "n1", "keep": "me" } },
                "spec": { "volumeName": volume_name },
            })
        };
        let kept = t.apply("persistentvolumeclaims", claim("pv-retained"));
        assert_eq!(kept["spec"]["volumeName"], "pv-retained");
        assert_eq!(kept["metadata"]["annotations"], json!({ "keep": "me" }));
        // A claim whose volume is not restored (Delete policy, or not in the backup) is provisioned anew.
        let anew = t.apply("persistentvolumeclaims", claim("pv-deleted"));
        assert_eq!(anew["spec"].get("volumeName"), None);
        assert!(!is_restored_volume(
            &json!({ "spec": { "persistentVolumeReclaimPolicy": "Delete" } })
        ));
    }

    #[test]
    fn binding_subjects_follow_the_namespace_mapping() {
        let (mapping, _) = transform(&[("shop", "shop-copy")]);
        let t = Transform {
            backup_name: "b",
            restore_name: "r",
            namespace_mapping: &mapping,
            restored_volumes: &BTreeSet::new(),
            preserve_node_ports: false,
        };
        for resource in [
            "rolebindings.rbac.authorization.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
        ] {
            let binding = t.apply(resource, json!({
                "metadata": { "name": "b" },
                "roleRef": { "kind": "Role", "name": "reader", "apiGroup": "rbac.authorization.k8s.io" },
                "subjects": [
                    { "kind": "ServiceAccount", "name": "web", "namespace": "shop" },
                    { "kind": "ServiceAccount", "name": "ci", "namespace": "tools" },
                    { "kind": "User", "name": "ann", "apiGroup": "rbac.authorization.k8s.io" },
                ],
            }));
            let namespaces: Vec<_> = binding["subjects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.get("namespace").cloned())
                .collect();
            assert_eq!(
                namespaces,
                [Some(json!("shop-copy")), Some(json!("tools")), None],
                "{resource}"
            );
            assert_eq!(binding["roleRef"]["name"], "reader");
        }
    }

    #[test]
    fn pods_are_rescheduled_without_their_old_token_volume() {
        let mapping = BTreeMap::new();
        let t = Transform {
            backup_name: "b",
            restore_name: "r",
            namespace_mapping: &mapping,
            restored_volumes: &BTreeSet::new(),
            preserve_node_ports: false,
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
            restored_volumes: &BTreeSet::new(),
            preserve_node_ports: false,
        };
        let node_port = json!({ "metadata": {}, "spec": {
            "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ports": [{ "port": 80, "nodePort": 30001 }] } });
        let svc = t.apply("services", node_port.clone());
        assert_eq!(svc["spec"], json!({ "ports": [{ "port": 80 }] }));
        let preserved = Transform {
            preserve_node_ports: true,
            ..t
        };
        let svc = preserved.apply("services", node_port);
        assert_eq!(
            svc["spec"],
            json!({ "ports": [{ "port": 80, "nodePort": 30001 }] })
        );
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
