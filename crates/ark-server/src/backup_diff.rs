//! What changed between two backups, or between a backup and the cluster now (`ark backup diff`):
//! objects added, removed and changed, with the fields that changed. Each backup's tarball is
//! unpacked as a restore unpacks it (safely, main copies only); what the API server writes on its
//! own (uid, resourceVersion, generation, timestamps, field managers, status) and ark's and
//! Velero's labels are not changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ark_api::Backup;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::discovery::Scope;
use kube::{Api, Client, ResourceExt as _};
use serde::Serialize;
use serde_json::Value;

use crate::controllers::restore::extract::{child_dirs, json_files};
use crate::domain::locations;

/// One object, as a backup's folders name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Key {
    /// `configmaps`, `deployments.apps`.
    pub resource: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.resource, self.name),
            None => write!(f, "{} {}", self.resource, self.name),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// In the later side only.
    Added,
    /// In the earlier side only.
    Removed,
    Changed,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    #[serde(flatten)]
    pub key: Key,
    pub change: Change,
    /// Of a changed object: the fields that differ, as paths (`spec.replicas`, `data.k`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
}

/// Two sides compared.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Diff {
    /// `backup a`.
    pub from: String,
    /// `backup b`, or `the cluster`.
    pub to: String,
    pub differences: Vec<Difference>,
    /// Objects on both sides, the same.
    pub unchanged: usize,
}

impl Diff {
    pub fn count(&self, change: Change) -> usize {
        (self.differences.iter())
            .filter(|d| d.change == change)
            .count()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("backup {0:?} names no storage location")]
    NoLocation(String),
    #[error(transparent)]
    Location(#[from] locations::LocationError),
    #[error("backup {0}: {1}")]
    Backup(String, String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// A backup's tarball, downloaded from its location (with its credentials) and unpacked into a
/// folder under `scratch` (entries a restore would refuse are left out), gone when dropped.
pub async fn unpack(
    client: &Client,
    namespace: &str,
    backup: &Backup,
    scratch: &Path,
) -> Result<tempfile::TempDir, DiffError> {
    let name = backup.name_any();
    let location = (backup.spec.storage_location.clone())
        .filter(|location| !location.is_empty())
        .ok_or_else(|| DiffError::NoLocation(name.clone()))?;
    let open = locations::open_named(client, namespace, &location).await?;
    let extracted = crate::controllers::restore::download(&open, &name, scratch)
        .await
        .map_err(|error| DiffError::Backup(name, error))?;
    Ok(extracted.dir)
}

/// The item files of an unpacked backup, by object.
pub fn items(unpacked: &Path) -> BTreeMap<Key, PathBuf> {
    let resources = unpacked.join("resources");
    let mut items = BTreeMap::new();
    for resource in child_dirs(&resources) {
        let dir = resources.join(&resource);
        for namespace in child_dirs(&dir.join("namespaces")) {
            for path in json_files(&dir.join("namespaces").join(&namespace)) {
                let key = Key {
                    resource: resource.clone(),
                    namespace: Some(namespace.clone()),
                    name: file_name(&path),
                };
                items.insert(key, path);
            }
        }
        for path in json_files(&dir.join("cluster")) {
            let key = Key {
                resource: resource.clone(),
                namespace: None,
                name: file_name(&path),
            };
            items.insert(key, path);
        }
    }
    items
}

fn file_name(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str());
    stem.unwrap_or_default().to_string()
}

/// An item file's object; an unreadable one is an empty object (every field of the other side
/// then differs).
fn read(path: &Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_else(|| Value::Object(Default::default()))
}

/// Two backups' items compared.
pub fn between(
    from: &str,
    to: &str,
    earlier: &BTreeMap<Key, PathBuf>,
    later: &BTreeMap<Key, PathBuf>,
) -> Diff {
    let mut diff = Diff {
        from: format!("backup {from}"),
        to: format!("backup {to}"),
        ..Default::default()
    };
    let keys: BTreeSet<&Key> = earlier.keys().chain(later.keys()).collect();
    for key in keys {
        let (a, b) = (
            earlier.get(key).map(|p| read(p)),
            later.get(key).map(|p| read(p)),
        );
        diff.add(key, a.as_ref(), b.as_ref());
    }
    diff
}

/// A backup's items compared with the cluster now: each against the object of that name, and, of
/// the resources and namespaces the backup holds, the objects it does not hold are added (for a
/// cluster-scoped resource, only the backup's own objects are looked at: every namespace of the
/// cluster is no addition to a backup of one).
pub async fn with_cluster(
    client: &Client,
    from: &str,
    earlier: &BTreeMap<Key, PathBuf>,
) -> Result<Diff, DiffError> {
    let discovered = crate::domain::discovery::discover(client).await?;
    let served = crate::domain::discovery::by_group_resource(discovered.resources);
    let mut diff = Diff {
        from: format!("backup {from}"),
        to: "the cluster".to_string(),
        ..Default::default()
    };
    let mut groups: BTreeMap<(&str, Option<&str>), Vec<&Key>> = BTreeMap::new();
    for key in earlier.keys() {
        let at = (key.resource.as_str(), key.namespace.as_deref());
        groups.entry(at).or_default().push(key);
    }
    for ((resource, namespace), keys) in groups {
        let live = match served.get(resource) {
            Some((api_resource, caps)) => {
                live_objects(client, api_resource, &caps.scope, namespace).await?
            }
            None => BTreeMap::new(),
        };
        let named: BTreeSet<&str> = keys.iter().map(|k| k.name.as_str()).collect();
        for key in keys {
            let backed_up = read(&earlier[key]);
            diff.add(key, Some(&backed_up), live.get(&key.name));
        }
        if namespace.is_none() {
            continue;
        }
        for (name, object) in &live {
            if !named.contains(name.as_str()) {
                let key = Key {
                    resource: resource.to_string(),
                    namespace: namespace.map(str::to_string),
                    name: name.clone(),
                };
                diff.add(&key, None, Some(object));
            }
        }
    }
    diff.differences.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(diff)
}

/// The objects of `resource` in `namespace` (all of them, when cluster-scoped), by name.
async fn live_objects(
    client: &Client,
    resource: &ApiResource,
    scope: &Scope,
    namespace: Option<&str>,
) -> Result<BTreeMap<String, Value>, DiffError> {
    let api: Api<DynamicObject> = match (scope, namespace) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, resource),
        _ => Api::all_with(client.clone(), resource),
    };
    let mut objects = BTreeMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        for object in page.items {
            let name = object.name_any();
            let mut value = serde_json::to_value(object).unwrap_or_default();
            // A list's items carry no type; the backup's copies do.
            if let Some(map) = value.as_object_mut() {
                map.insert("apiVersion".into(), resource.api_version.clone().into());
                map.insert("kind".into(), resource.kind.clone().into());
            }
            objects.insert(name, value);
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(objects),
        }
    }
}

impl Diff {
    fn add(&mut self, key: &Key, earlier: Option<&Value>, later: Option<&Value>) {
        let (change, fields) = match (earlier, later) {
            (Some(a), Some(b)) => {
                let fields = changed_fields(a, b);
                if fields.is_empty() {
                    self.unchanged += 1;
                    return;
                }
                (Change::Changed, fields)
            }
            (Some(_), None) => (Change::Removed, Vec::new()),
            (None, Some(_)) => (Change::Added, Vec::new()),
            (None, None) => return,
        };
        self.differences.push(Difference {
            key: key.clone(),
            change,
            fields,
        });
    }
}

/// What the API server writes on its own, and what a backup or restore adds: never a change.
const SERVER_METADATA: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

fn normalized(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_METADATA {
            metadata.remove(field);
        }
        if let Some(labels) = metadata.get_mut("labels").and_then(Value::as_object_mut) {
            labels.remove(ark_api::labels::BACKUP_NAME);
            labels.remove(ark_api::labels::RESTORE_NAME);
            if labels.is_empty() {
                metadata.remove("labels");
            }
        }
    }
    object
}

/// The fields in which two versions of an object differ, as paths; the same object gives none.
pub fn changed_fields(earlier: &Value, later: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(
        &normalized(earlier),
        &normalized(later),
        String::new(),
        &mut found,
    );
    found
}

fn walk(a: &Value, b: &Value, path: String, found: &mut Vec<String>) {
    let at = |key: &str| match path.is_empty() {
        true => key.to_string(),
        false => format!("{path}.{key}"),
    };
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(x, y, at(key), found),
                    _ => found.push(at(key)),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                walk(x, y, format!("{path}[{index}]"), found);
            }
        }
        _ if a == b => {}
        _ => found.push(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_fields_leave_out_what_the_server_and_ark_write() {
        let earlier = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "web", "uid": "1", "resourceVersion": "10", "generation": 1,
                          "labels": { "app": "web", "velero.io/backup-name": "a" } },
            "spec": { "replicas": 1, "template": { "spec": { "containers": [{ "image": "web:1" }] } } },
            "status": { "readyReplicas": 1 },
        });
        let later = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "web", "uid": "2", "resourceVersion": "99", "generation": 4,
                          "labels": { "app": "web", "velero.io/restore-name": "r" },
                          "annotations": { "note": "x" } },
            "spec": { "replicas": 3, "template": { "spec": { "containers": [{ "image": "web:2" }] } } },
            "status": { "readyReplicas": 3 },
        });
        assert_eq!(
            changed_fields(&earlier, &later),
            [
                "metadata.annotations",
                "spec.replicas",
                "spec.template.spec.containers[0].image",
            ]
        );
        assert_eq!(changed_fields(&earlier, &earlier), Vec::<String>::new());
    }

    #[test]
    fn two_backups_differ_by_what_was_added_removed_and_changed() {
        let dir = tempfile::tempdir().unwrap();
        let write = |side: &str, path: &str, object: Value| {
            let file = dir.path().join(side).join("resources").join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, object.to_string()).unwrap();
        };
        let config_map = |name: &str, value: &str| {
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name, "namespace": "shop" },
                    "data": { "k": value } })
        };
        write(
            "a",
            "configmaps/namespaces/shop/kept.json",
            config_map("kept", "1"),
        );
        write(
            "a",
            "configmaps/namespaces/shop/gone.json",
            config_map("gone", "1"),
        );
        write(
            "a",
            "configmaps/namespaces/shop/edited.json",
            config_map("edited", "1"),
        );
        write(
            "b",
            "configmaps/namespaces/shop/kept.json",
            config_map("kept", "1"),
        );
        write(
            "b",
            "configmaps/namespaces/shop/edited.json",
            config_map("edited", "2"),
        );
        write(
            "b",
            "configmaps/namespaces/shop/new.json",
            config_map("new", "1"),
        );
        write(
            "b",
            "namespaces/cluster/shop.json",
            json!({ "metadata": { "name": "shop" } }),
        );
        let diff = between(
            "a",
            "b",
            &items(&dir.path().join("a")),
            &items(&dir.path().join("b")),
        );
        let shown: Vec<(String, Change, Vec<String>)> = (diff.differences.iter())
            .map(|d| (d.key.to_string(), d.change, d.fields.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "configmaps shop/edited".into(),
                    Change::Changed,
                    vec!["data.k".into()]
                ),
                ("configmaps shop/gone".into(), Change::Removed, vec![]),
                ("configmaps shop/new".into(), Change::Added, vec![]),
                ("namespaces shop".into(), Change::Added, vec![]),
            ]
        );
        assert_eq!(diff.unchanged, 1);
    }
}
