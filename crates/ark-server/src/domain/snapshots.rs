//! The volume snapshots recorded for a backup, and deleting them. Provider snapshots (Velero's
//! `<backup>-volumesnapshots.json.gz`) go through a [`VolumeSnapshotter`]; CSI snapshots through
//! the cluster's VolumeSnapshotContents, wherever the backup's Velero version recorded them: before
//! v1.15 in `<backup>-csi-volumesnapshotcontents.json.gz` with the content left in the cluster;
//! since v1.15 only as items of the tarball, the content removed after the backup, so deleting the
//! snapshot means recreating a content from its handle for the driver to delete (Velero's
//! `velero.io/csi-volumesnapshotcontent-delete` action).

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use ark_api::labels;
use futures::future::BoxFuture;
use kube::Client;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::domain::csi::{
    ContentStatus, DATA_UPLOADS, VOLUME_SNAPSHOT_CONTENTS, volume_snapshot_contents,
};

/// What deleting one snapshot came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deleted {
    Now,
    AlreadyGone,
    /// The content is gone from the cluster and the backup recorded no snapshot handle: there is
    /// nothing left to ask the driver to delete. Reported, never counted as deleted.
    NoHandle,
    /// The content does not carry this backup's `velero.io/backup-name` label: not this backup's
    /// to delete (Velero's rule too).
    NotThisBackup,
    /// The recreated content was deleted, but the driver's csi-snapshotter had not taken it up
    /// (written its status) within [`DRIVER_PICKUP`]: the snapshot may outlive the backup.
    NotTakenUp {
        content: String,
    },
}

/// Deletes provider snapshots (EBS, persistent disks, ...). ark ships none: a backup with provider
/// snapshots can be deleted only by a server given one.
pub trait VolumeSnapshotter: Send + Sync {
    /// Deletes the snapshot `id` in volume snapshot location `location`.
    fn delete<'a>(
        &'a self,
        location: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Deleted, String>>;
}

/// One entry of `<backup>-volumesnapshots.json.gz`, the fields deletion needs.
#[derive(Clone, Debug, Deserialize)]
pub struct ProviderSnapshot {
    #[serde(default)]
    pub spec: ProviderSnapshotSpec,
    #[serde(default)]
    pub status: ProviderSnapshotStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSnapshotSpec {
    #[serde(default)]
    pub location: String,
    #[serde(default, rename = "persistentVolumeName")]
    pub persistent_volume_name: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ProviderSnapshotStatus {
    #[serde(default, rename = "providerSnapshotID")]
    pub provider_snapshot_id: String,
}

/// A VolumeSnapshotContent as the backup recorded it.
#[derive(Clone, Debug, PartialEq)]
pub struct CsiContent {
    pub name: String,
    /// The storage snapshot (`status.snapshotHandle`), when the content had one.
    pub snapshot_handle: Option<String>,
    object: Value,
}

impl CsiContent {
    /// None for a record without a name, which names no content at all.
    pub fn from_object(object: Value) -> Option<Self> {
        let name = object.pointer("/metadata/name")?.as_str()?.to_string();
        let snapshot_handle = ContentStatus::of(&object)
            .snapshot_handle
            .map(str::to_string);
        Some(Self {
            name,
            snapshot_handle,
            object,
        })
    }

    /// The content as an event's related object.
    pub fn reference(&self) -> k8s_openapi::api::core::v1::ObjectReference {
        k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("snapshot.storage.k8s.io/v1".into()),
            kind: Some("VolumeSnapshotContent".into()),
            name: Some(self.name.clone()),
            ..Default::default()
        }
    }

    fn labels(&self) -> BTreeMap<String, String> {
        label_map(&self.object)
    }

    fn belongs_to(&self, backup_label: &str) -> bool {
        self.labels().get(labels::BACKUP_NAME).map(String::as_str) == Some(backup_label)
    }

    /// The content that makes the driver delete this snapshot: the recorded one with the handle as
    /// its source, `Delete` as its policy, no class, and a reference to a VolumeSnapshot that
    /// cannot exist (as Velero builds it), under a name the API server picks.
    pub fn for_deletion(&self) -> Option<Value> {
        self.recreated("vsc-", "Delete", Some(CONTENT_FINALIZER))
    }

    /// A content that asks the driver whether this snapshot still exists (the csi-snapshotter
    /// looks a pre-provisioned content's handle up, and says ready or not found), and keeps it
    /// when the content goes (`Retain`).
    pub fn probe(&self) -> Option<Value> {
        self.recreated("ark-verify-", "Retain", None)
    }

    /// The recorded content, bound to nothing, with the handle as its source.
    fn recreated(
        &self,
        generate_name: &str,
        policy: &str,
        finalizer: Option<&str>,
    ) -> Option<Value> {
        let handle = self.snapshot_handle.as_ref()?;
        let uid = self
            .object
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or(&self.name);
        let mut spec = self
            .object
            .get("spec")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !spec.is_object() {
            spec = json!({});
        }
        spec["deletionPolicy"] = json!(policy);
        spec["source"] = json!({ "snapshotHandle": handle });
        spec["volumeSnapshotRef"] = json!({
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshot",
            "namespace": format!("ns-{uid}"),
            "name": format!("name-{uid}"),
        });
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("volumeSnapshotClassName");
        }
        let metadata = &self.object["metadata"];
        Some(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshotContent",
            "metadata": {
                "generateName": generate_name,
                "labels": metadata.get("labels").cloned().unwrap_or(Value::Null),
                "annotations": metadata.get("annotations").cloned().unwrap_or(Value::Null),
                // This one only, whatever the backup recorded: no other finalizer may hold it.
                "finalizers": finalizer.into_iter().collect::<Vec<_>>(),
            },
            "spec": spec,
        }))
    }
}

fn label_map(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The snapshots a backup recorded.
#[derive(Debug, Default)]
pub struct Recorded {
    pub provider: Vec<ProviderSnapshot>,
    pub csi: Vec<CsiContent>,
    /// The kopia snapshots its CSI snapshots' data was moved into (its DataUploads').
    pub moved: Vec<MovedSnapshot>,
}

/// A CSI snapshot's data, moved into the kopia repository of its claim's namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedSnapshot {
    /// The location whose repository holds it (the backup's).
    pub location: String,
    pub namespace: String,
    pub snapshot_id: String,
}

impl MovedSnapshot {
    /// The moved snapshot a DataUpload of the backup recorded, as Velero's `DataUploadDeleteAction`
    /// finds it: none for a third party's data mover or an upload that took none.
    fn of(upload: ark_api::DataUpload) -> Option<MovedSnapshot> {
        if !ark_api::is_built_in_data_mover(upload.spec.datamover.as_deref()) {
            return None;
        }
        let snapshot_id = upload.status?.snapshot_id.filter(|id| !id.is_empty())?;
        Some(MovedSnapshot {
            location: upload.spec.backup_storage_location,
            namespace: upload.spec.source_namespace,
            snapshot_id,
        })
    }
}

impl Recorded {
    pub fn is_empty(&self) -> bool {
        self.provider.is_empty() && self.csi.is_empty() && self.moved.is_empty()
    }

    /// Adds contents found elsewhere (the tarball), once each: a backup of Velero before v1.15
    /// records a content both beside the tarball and in it.
    pub fn add_csi(&mut self, contents: Vec<CsiContent>) {
        for content in contents {
            if !self.csi.iter().any(|c| c.name == content.name) {
                self.csi.push(content);
            }
        }
    }
}

pub use crate::records::results::{MAX_LIST_BYTES, gunzip_json};

/// Parses the two gzip'd JSON lists (either may be absent, or `null` as Velero writes "none").
pub fn parse_recorded(provider: Option<&[u8]>, csi: Option<&[u8]>) -> Result<Recorded, String> {
    let provider: Vec<ProviderSnapshot> = match provider {
        Some(bytes) => gunzip_json::<Option<_>>(bytes, "volume snapshots")?.unwrap_or_default(),
        None => Vec::new(),
    };
    let csi: Vec<Value> = match csi {
        Some(bytes) => {
            gunzip_json::<Option<_>>(bytes, "CSI volume snapshot contents")?.unwrap_or_default()
        }
        None => Vec::new(),
    };
    Ok(Recorded {
        provider: provider
            .into_iter()
            .filter(|s| !s.status.provider_snapshot_id.is_empty())
            .collect(),
        csi: csi
            .into_iter()
            .filter_map(CsiContent::from_object)
            .collect(),
        moved: Vec::new(),
    })
}

/// The PodVolumeBackups a backup recorded (`<backup>-podvolumebackups.json.gz`; absent or `null`:
/// none).
pub fn pod_volume_backups(bytes: Option<&[u8]>) -> Result<Vec<ark_api::PodVolumeBackup>, String> {
    match bytes {
        Some(bytes) => {
            Ok(gunzip_json::<Option<_>>(bytes, "pod volume backups")?.unwrap_or_default())
        }
        None => Ok(Vec::new()),
    }
}

/// Whether the tarball may hold VolumeSnapshotContents or DataUploads, from
/// `<backup>-volumeinfo.json.gz`: only when a volume was kept as a CSI snapshot or its data was
/// moved, or when the file is absent (a backup older than Velero v1.13 tells nothing), so that
/// deleting a backup without CSI snapshots never downloads its tarball.
pub fn tarball_may_hold_snapshots(volume_info: Option<&[u8]>) -> Result<bool, String> {
    let Some(bytes) = volume_info else {
        return Ok(true);
    };
    let volumes: Option<Vec<Value>> = gunzip_json(bytes, "volume information")?;
    Ok(volumes.unwrap_or_default().iter().any(|volume| {
        ["csiSnapshotInfo", "snapshotDataMovementInfo"]
            .iter()
            .any(|key| volume.get(key).is_some_and(|info| !info.is_null()))
    }))
}

/// A VolumeSnapshotContent or a DataUpload is a few KiB; a larger entry is not one.
const MAX_CONTENT_BYTES: u64 = 1 << 20;

/// What the tarball holds of VolumeSnapshotContents and DataUploads.
#[derive(Debug, Default)]
pub struct TarballContents {
    pub contents: Vec<CsiContent>,
    pub moved: Vec<MovedSnapshot>,
    /// Entries that could not be read: named, and passed over, so that a damaged tarball never
    /// makes a backup impossible to delete.
    pub unreadable: Vec<String>,
}

impl TarballContents {
    /// Whether a tarball item is one this collects: a VolumeSnapshotContent or a DataUpload.
    pub fn holds(item: &ark_storage::tarball::ItemEntry) -> bool {
        matches!(
            (item.group_resource.as_str(), &item.namespace),
            (VOLUME_SNAPSHOT_CONTENTS, None) | (DATA_UPLOADS, Some(_))
        )
    }

    /// Keeps the item at `path`, read as `object`, if it is one this collects.
    pub fn add(&mut self, path: &str, item: &ark_storage::tarball::ItemEntry, object: Value) {
        if !Self::holds(item) {
            return;
        }
        if item.group_resource == VOLUME_SNAPSHOT_CONTENTS {
            self.contents.extend(CsiContent::from_object(object));
            return;
        }
        match serde_json::from_value::<ark_api::DataUpload>(object) {
            Ok(upload) => self.moved.extend(MovedSnapshot::of(upload)),
            Err(e) => self.unreadable.push(format!("tarball entry {path:?}: {e}")),
        }
    }
}

/// The VolumeSnapshotContents and DataUploads among a backup tarball's items. Streams the tarball:
/// nothing but those items is kept.
pub fn snapshots_in_tarball(tarball: impl Read) -> TarballContents {
    let mut found = TarballContents::default();
    let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(tarball));
    let corrupt = |e: std::io::Error| format!("the backup tarball is not a valid gzip tar: {e}");
    let entries = match archive.entries() {
        Ok(entries) => entries,
        Err(e) => {
            found.unreadable.push(corrupt(e));
            return found;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found.unreadable.push(corrupt(e));
                break;
            }
        };
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(item) = ark_storage::tarball::parse_item_path(&path) else {
            continue;
        };
        if !TarballContents::holds(&item) {
            continue;
        }
        if entry.size() > MAX_CONTENT_BYTES {
            found.unreadable.push(format!(
                "tarball entry {path:?}: {} bytes, more than a {} can be",
                entry.size(),
                if item.group_resource == VOLUME_SNAPSHOT_CONTENTS {
                    "VolumeSnapshotContent"
                } else {
                    "DataUpload"
                }
            ));
            continue;
        }
        match serde_json::from_reader::<_, Value>(entry.take(MAX_CONTENT_BYTES)) {
            Ok(object) => found.add(&path, &item, object),
            Err(e) => found
                .unreadable
                .push(format!("tarball entry {path:?}: {e}")),
        }
    }
    found
}

/// How long a recreated content is given for the driver's csi-snapshotter to take it up (write
/// its status) before it is deleted. The snapshotter deletes the storage snapshot of a content
/// being deleted only if the content has its status, and it sees the deletion only if the content
/// has its finalizer: the content is created with that finalizer (Velero's copy keeps the backed-up
/// content's finalizers; ark first deleted one without, which vanished at once and left the
/// snapshot). Velero waits a fixed 2 s; ark waits for the status, at most this long.
pub const DRIVER_PICKUP: Duration = Duration::from_secs(10);
/// The csi-snapshotter's finalizer on a content: it removes it once the snapshot is deleted.
const CONTENT_FINALIZER: &str =
    "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection";

/// Deletes the CSI snapshot of `content`, recorded by the backup whose `velero.io/backup-name`
/// label value is `backup_label`. A content still in the cluster (Velero before v1.15) is set to
/// `Delete` and deleted; one that is gone is recreated from its handle and deleted.
pub async fn delete_csi(
    client: &Client,
    content: &CsiContent,
    backup_label: &str,
) -> Result<Deleted, String> {
    if !content.belongs_to(backup_label) {
        return Ok(Deleted::NotThisBackup);
    }
    let api = volume_snapshot_contents(client);
    let name = &content.name;
    let failed = |e: kube::Error| format!("VolumeSnapshotContent {name}: {e}");
    let gone = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
    match api.get_opt(name).await {
        Ok(Some(live)) => {
            let live = serde_json::to_value(&live).map_err(|e| e.to_string())?;
            if label_map(&live)
                .get(labels::BACKUP_NAME)
                .map(String::as_str)
                != Some(backup_label)
            {
                return Ok(Deleted::NotThisBackup);
            }
            let policy = json!({ "spec": { "deletionPolicy": "Delete" } });
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(&policy))
                .await
            {
                Ok(_) => {}
                Err(e) if gone(&e) => return Ok(Deleted::AlreadyGone),
                Err(e) => return Err(failed(e)),
            }
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => Ok(Deleted::Now),
                Err(e) if gone(&e) => Ok(Deleted::AlreadyGone),
                Err(e) => Err(failed(e)),
            }
        }
        Ok(None) => {
            let Some(body) = content.for_deletion() else {
                return Ok(Deleted::NoHandle);
            };
            let body: DynamicObject = serde_json::from_value(body).map_err(|e| e.to_string())?;
            let created = api
                .create(&PostParams::default(), &body)
                .await
                .map_err(|e| {
                    format!("recreating VolumeSnapshotContent {name} to delete its snapshot: {e}")
                })?;
            let temp = created.metadata.name.clone().unwrap_or_default();
            let picked_up = |object: Option<&DynamicObject>| {
                object.is_none_or(|o| o.data.pointer("/status/snapshotHandle").is_some())
            };
            let taken_up = tokio::time::timeout(
                DRIVER_PICKUP,
                await_condition(api.clone(), &temp, picked_up),
            )
            .await
            .is_ok_and(|watched| watched.is_ok());
            match api.delete(&temp, &DeleteParams::default()).await {
                Ok(_) if taken_up => Ok(Deleted::Now),
                Ok(_) => Ok(Deleted::NotTakenUp { content: temp }),
                Err(e) if gone(&e) => Ok(Deleted::Now),
                Err(e) => Err(format!(
                    "VolumeSnapshotContent {temp} (recreated from {name}): {e}"
                )),
            }
        }
        Err(e) => Err(failed(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_snapshot_list_that_unpacks_to_too_much_is_refused_not_held() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"[").unwrap();
        gz.write_all(&vec![b' '; (MAX_LIST_BYTES + 10) as usize])
            .unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 1 << 20, "a small file in the bucket");
        assert_eq!(
            parse_recorded(Some(&bomb), None).err().unwrap(),
            format!("volume snapshots: unpacks to more than {MAX_LIST_BYTES} bytes")
        );
    }

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn reads_velero_snapshot_records() {
        let provider = gz(
            r#"[{"spec":{"backupName":"b","location":"aws-default","persistentVolumeName":"pv-1","providerVolumeID":"vol-1"},"status":{"providerSnapshotID":"snap-1","phase":"Completed"}},{"spec":{},"status":{"phase":"Failed"}}]"#,
        );
        let csi = gz(
            r#"[{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"snapcontent-1"}}]"#,
        );
        let recorded = parse_recorded(Some(&provider), Some(&csi)).unwrap();
        assert_eq!(recorded.provider.len(), 1);
        assert_eq!(recorded.provider[0].status.provider_snapshot_id, "snap-1");
        assert_eq!(recorded.provider[0].spec.location, "aws-default");
        let names: Vec<&str> = recorded.csi.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["snapcontent-1"]);
        assert_eq!(recorded.csi[0].snapshot_handle, None);
        assert!(parse_recorded(Some(&gz("null")), None).unwrap().is_empty());
        assert!(parse_recorded(None, None).unwrap().is_empty());
        assert!(parse_recorded(Some(b"not gzip"), None).is_err());
    }

    fn content(name: &str, backup: &str, handle: Option<&str>) -> Value {
        json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
            "metadata": {
                "name": name, "uid": "u-1", "resourceVersion": "7",
                "labels": { "velero.io/backup-name": backup },
                "annotations": { "snapshot.storage.kubernetes.io/deletion-secret-name": "creds" },
                // A finalizer the recreated content must not carry: nothing would remove it.
                "finalizers": ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection", "example.com/hold"],
            },
            "spec": {
                "driver": "hostpath.csi.k8s.io", "deletionPolicy": "Retain",
                "source": { "volumeHandle": "vol-1" },
                "volumeSnapshotClassName": "csi-class",
                "volumeSnapshotRef": { "namespace": "shop", "name": "data" },
            },
            "status": handle.map(|h| json!({ "snapshotHandle": h, "readyToUse": true })),
        })
    }

    fn tarball(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            builder
                .append_data(&mut header, path, bytes.as_slice())
                .unwrap();
        }
        gz_bytes(&builder.into_inner().unwrap())
    }

    fn gz_bytes(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn the_tarball_s_volume_snapshot_contents_are_found_and_damaged_entries_named() {
        let vsc = |name: &str| serde_json::to_vec(&content(name, "b", Some("snap-1"))).unwrap();
        let bytes = tarball(&[
            ("metadata/version", b"1.1.0".to_vec()),
            (
                "resources/volumesnapshotcontents.snapshot.storage.k8s.io/cluster/vsc-a.json",
                vsc("vsc-a"),
            ),
            // The preferred-version copy of the same item is not a second content.
            (
                "resources/volumesnapshotcontents.snapshot.storage.k8s.io/v1-preferredversion/cluster/vsc-a.json",
                vsc("vsc-a"),
            ),
            // A namespaced entry of that resource is not where a content lives.
            (
                "resources/volumesnapshotcontents.snapshot.storage.k8s.io/namespaces/shop/vsc-x.json",
                vsc("vsc-x"),
            ),
            (
                "resources/volumesnapshotcontents.snapshot.storage.k8s.io/cluster/broken.json",
                b"{".to_vec(),
            ),
            (
                "resources/volumesnapshotcontents.snapshot.storage.k8s.io/cluster/huge.json",
                vec![b' '; (MAX_CONTENT_BYTES + 1) as usize],
            ),
            ("resources/pods/namespaces/shop/web.json", b"{}".to_vec()),
        ]);
        let found = snapshots_in_tarball(bytes.as_slice());
        let names: Vec<&str> = found.contents.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["vsc-a"]);
        assert_eq!(found.contents[0].snapshot_handle.as_deref(), Some("snap-1"));
        assert_eq!(found.unreadable.len(), 2, "{:?}", found.unreadable);
        assert!(found.unreadable[0].contains("broken.json"));
        assert!(found.unreadable[1].contains("huge.json"));

        let garbage = snapshots_in_tarball(&b"not a tarball"[..]);
        assert!(garbage.contents.is_empty());
        assert_eq!(garbage.unreadable.len(), 1);
    }

    /// The DataUploads of a backup that moved its snapshots' data, as Velero's finalizer writes
    /// them: each one of Velero's data mover with a snapshot is a moved snapshot to forget.
    #[test]
    fn the_tarball_s_data_uploads_name_the_moved_snapshots() {
        let upload = |datamover: &str, snapshot: Option<&str>| {
            let mut upload = json!({
                "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
                "metadata": { "name": "b-x", "namespace": "velero" },
                "spec": { "snapshotType": "CSI", "sourcePVC": "data", "sourceNamespace": "shop",
                    "backupStorageLocation": "default", "operationTimeout": "10m0s",
                    "datamover": datamover,
                    "csiSnapshot": { "volumeSnapshot": "velero-data-x", "storageClass": "csi" } },
                "status": { "phase": "Completed" },
            });
            if let Some(id) = snapshot {
                upload["status"]["snapshotID"] = json!(id);
            }
            serde_json::to_vec(&upload).unwrap()
        };
        let at =
            |name: &str| format!("resources/datauploads.velero.io/namespaces/velero/{name}.json");
        let bytes = tarball(&[
            (at("moved").as_str(), upload("velero", Some("k1"))),
            (at("default-mover").as_str(), upload("", Some("k2"))),
            (at("third-party").as_str(), upload("acme", Some("k3"))),
            (at("none-taken").as_str(), upload("velero", None)),
            (at("broken").as_str(), b"{\"spec\": 1}".to_vec()),
        ]);
        let found = snapshots_in_tarball(bytes.as_slice());
        let moved = |id: &str| MovedSnapshot {
            location: "default".into(),
            namespace: "shop".into(),
            snapshot_id: id.into(),
        };
        assert_eq!(found.moved, [moved("k1"), moved("k2")]);
        assert_eq!(found.unreadable.len(), 1, "{:?}", found.unreadable);
        assert!(found.unreadable[0].contains("broken.json"));
    }

    #[test]
    fn the_tarball_is_read_only_when_the_volume_info_lists_a_csi_snapshot_or_moved_data_or_is_absent()
     {
        assert!(tarball_may_hold_snapshots(None).unwrap());
        assert!(!tarball_may_hold_snapshots(Some(&gz("[]"))).unwrap());
        assert!(!tarball_may_hold_snapshots(Some(&gz("null"))).unwrap());
        let native = r#"[{"pvName":"pv-1","backupMethod":"NativeSnapshot","nativeSnapshotInfo":{"snapshotHandle":"s"}}]"#;
        assert!(!tarball_may_hold_snapshots(Some(&gz(native))).unwrap());
        let csi = r#"[{"pvName":"pv-1","backupMethod":"CSISnapshot","csiSnapshotInfo":{"snapshotHandle":"s","driver":"d","vscName":"v"}}]"#;
        assert!(tarball_may_hold_snapshots(Some(&gz(csi))).unwrap());
        let moved = r#"[{"pvName":"pv-1","backupMethod":"CSISnapshot","snapshotDataMoved":true,"snapshotDataMovementInfo":{"snapshotHandle":"k1"}}]"#;
        assert!(tarball_may_hold_snapshots(Some(&gz(moved))).unwrap());
        assert!(tarball_may_hold_snapshots(Some(b"not gzip")).is_err());
    }

    #[test]
    fn a_content_is_recreated_as_velero_recreates_it() {
        let recorded = CsiContent::from_object(content("vsc-a", "b", Some("snap-1"))).unwrap();
        assert!(recorded.belongs_to("b"));
        assert!(!recorded.belongs_to("other"));
        let body = recorded.for_deletion().unwrap();
        assert_eq!(
            body,
            json!({
                "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
                "metadata": {
                    "generateName": "vsc-",
                    "labels": { "velero.io/backup-name": "b" },
                    "annotations": { "snapshot.storage.kubernetes.io/deletion-secret-name": "creds" },
                    // The csi-snapshotter's own, so that it sees the content's deletion.
                    "finalizers": ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"],
                },
                "spec": {
                    "driver": "hostpath.csi.k8s.io", "deletionPolicy": "Delete",
                    "source": { "snapshotHandle": "snap-1" },
                    "volumeSnapshotRef": {
                        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                        "namespace": "ns-u-1", "name": "name-u-1",
                    },
                },
            })
        );
        let without_handle = CsiContent::from_object(content("vsc-b", "b", None)).unwrap();
        assert_eq!(without_handle.for_deletion(), None);
        assert_eq!(CsiContent::from_object(json!({ "metadata": {} })), None);
    }

    #[test]
    fn a_content_recorded_twice_is_deleted_once() {
        let a = CsiContent::from_object(content("vsc-a", "b", Some("s"))).unwrap();
        let b = CsiContent::from_object(content("vsc-b", "b", Some("t"))).unwrap();
        let mut recorded = Recorded {
            csi: vec![a.clone()],
            ..Default::default()
        };
        recorded.add_csi(vec![a, b]);
        let names: Vec<&str> = recorded.csi.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["vsc-a", "vsc-b"]);
    }
}
