//! The CSI snapshot kinds (`snapshot.storage.k8s.io/v1`), read and written as JSON: their CRDs
//! come with the cluster's snapshot controller, not with ark. The names and annotations Velero
//! puts on them, which backup, restore and deletion share.

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub const GROUP: &str = "snapshot.storage.k8s.io";
pub const VOLUME_SNAPSHOTS: &str = "volumesnapshots.snapshot.storage.k8s.io";
pub const VOLUME_SNAPSHOT_CONTENTS: &str = "volumesnapshotcontents.snapshot.storage.k8s.io";
pub const VOLUME_SNAPSHOT_CLASSES: &str = "volumesnapshotclasses.snapshot.storage.k8s.io";

/// On a backed-up claim: the VolumeSnapshot its data is in.
pub const VOLUME_SNAPSHOT_NAME: &str = "velero.io/volume-snapshot-name";
/// On a backed-up claim: the DataUpload that moved its snapshot's data (the snapshot is gone).
pub const DATA_UPLOAD_NAME: &str = "velero.io/data-upload-name";
/// Velero's data mover's requests, which a backup that moved data holds.
pub const DATA_UPLOADS: &str = "datauploads.velero.io";
/// The snapshot controller's finalizer on a claim while a snapshot is cut from it. A claim
/// backed up or restored with it keeps it for ever in the new cluster, where nothing cuts that
/// snapshot: neither the claim nor its namespace could be deleted.
pub const SNAPSHOT_SOURCE_FINALIZER: &str =
    "snapshot.storage.kubernetes.io/pvc-as-source-protection";
/// On a claim: the VolumeSnapshotClass to snapshot it with.
pub const CLAIM_CLASS: &str = "velero.io/csi-volumesnapshot-class";
/// On a backup, followed by a driver's name: that driver's VolumeSnapshotClass.
pub const BACKUP_CLASS_PREFIX: &str = "velero.io/csi-volumesnapshot-class_";
/// On a VolumeSnapshotClass: the class Velero picks for its driver.
pub const CLASS_LABEL: &str = "velero.io/csi-volumesnapshot-class";
/// On a VolumeSnapshotClass: the cluster's default for its driver.
pub const DEFAULT_CLASS: &str = "snapshot.storage.kubernetes.io/is-default-class";

/// What a backed-up VolumeSnapshot says of its storage snapshot, for the restore.
pub const SNAPSHOT_HANDLE: &str = "velero.io/csi-volumesnapshot-handle";
pub const DRIVER_NAME: &str = "velero.io/csi-driver-name";
pub const DELETION_POLICY: &str = "velero.io/csi-vsc-deletion-policy";
pub const RESTORE_SIZE: &str = "velero.io/csi-volumesnapshot-restore-size";

/// The action names Velero records in a backup's item operations.
pub const SNAPSHOT_ACTION: &str = "velero.io/csi-volumesnapshot-backupper";

/// How many of a backup's item operations wait for a CSI snapshot to be ready to use (the others
/// wait for its data to be moved).
pub fn snapshot_operations(operations: &[ark_api::BackupOperation]) -> usize {
    operations
        .iter()
        .filter(|o| o.spec.backup_item_action == SNAPSHOT_ACTION)
        .count()
}

fn resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1", kind))
}

pub fn volume_snapshots(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &resource("VolumeSnapshot"))
}

/// VolumeSnapshots in every namespace.
pub fn all_volume_snapshots(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource("VolumeSnapshot"))
}

/// The snapshot controller's mark on a content whose snapshot is being deleted: the driver's
/// snapshotter deletes the storage snapshot of a content so marked when it is deleted.
pub const BEING_DELETED: &str = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted";

pub fn volume_snapshot_contents(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource("VolumeSnapshotContent"))
}

pub fn volume_snapshot_classes(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource("VolumeSnapshotClass"))
}

/// The name a restore gives the VolumeSnapshot and VolumeSnapshotContent it recreates from a
/// backed-up snapshot (Velero's `GenerateSha256FromRestoreUIDAndVsName`): one per restore and
/// snapshot, so that restoring the same backup twice never collides.
pub fn restored_snapshot_name(restore_uid: &str, snapshot: &str) -> String {
    let digest = Sha256::digest(format!("{restore_uid}/{snapshot}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a backed-up VolumeSnapshot records of its storage snapshot, in its annotations.
pub struct SnapshotRecord<'a> {
    pub deletion_policy: &'a str,
    pub handle: &'a str,
    pub driver: &'a str,
    pub restore_size: Option<i64>,
}

impl SnapshotRecord<'_> {
    /// Puts the record in a VolumeSnapshot's annotations, as Velero's VolumeSnapshot action does.
    pub fn annotate(&self, snapshot: &mut Value) {
        let metadata = &mut snapshot["metadata"];
        if !metadata["annotations"].is_object() {
            metadata["annotations"] = Value::Object(Default::default());
        }
        let annotations = &mut metadata["annotations"];
        annotations[DELETION_POLICY] = Value::from(self.deletion_policy);
        annotations[SNAPSHOT_HANDLE] = Value::from(self.handle);
        annotations[DRIVER_NAME] = Value::from(self.driver);
        if let Some(size) = self.restore_size {
            annotations[RESTORE_SIZE] = Value::from(size.to_string());
        }
    }
}

/// A VolumeSnapshot's status, as the snapshot controller writes it.
pub struct SnapshotStatus<'a> {
    pub ready_to_use: bool,
    /// Its VolumeSnapshotContent, once bound.
    pub bound_content: Option<&'a str>,
    /// The snapshot controller's last error.
    pub error: Option<&'a str>,
}

impl<'a> SnapshotStatus<'a> {
    /// The status of `snapshot`; what it lacks or has of the wrong type is absent.
    pub fn of(snapshot: &'a Value) -> SnapshotStatus<'a> {
        SnapshotStatus {
            ready_to_use: snapshot.pointer("/status/readyToUse") == Some(&Value::Bool(true)),
            bound_content: text(snapshot, "/status/boundVolumeSnapshotContentName"),
            error: text(snapshot, "/status/error/message"),
        }
    }
}

/// What ark reads of a VolumeSnapshotContent: its storage snapshot, and what becomes of it.
pub struct ContentStatus<'a> {
    /// The storage snapshot's handle, once the driver has cut it.
    pub snapshot_handle: Option<&'a str>,
    pub restore_size: Option<i64>,
    /// The driver's last error.
    pub error: Option<&'a str>,
    /// `spec.deletionPolicy`: `Delete` when unset, as the API defaults it.
    pub deletion_policy: &'a str,
    pub driver: Option<&'a str>,
}

impl<'a> ContentStatus<'a> {
    /// The status and the policy of `content`; what it lacks or has of the wrong type is absent.
    pub fn of(content: &'a Value) -> ContentStatus<'a> {
        ContentStatus {
            snapshot_handle: text(content, "/status/snapshotHandle"),
            restore_size: content
                .pointer("/status/restoreSize")
                .and_then(Value::as_i64),
            error: text(content, "/status/error/message"),
            deletion_policy: text(content, "/spec/deletionPolicy").unwrap_or("Delete"),
            driver: text(content, "/spec/driver"),
        }
    }
}

/// A string at `pointer` in `object`, when there is a non-empty one.
pub fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_views_read_what_the_controllers_write_and_nothing_else() {
        let snapshot = serde_json::json!({ "status": {
            "readyToUse": true, "boundVolumeSnapshotContentName": "snapcontent-1",
            "error": { "message": "" } } });
        let status = SnapshotStatus::of(&snapshot);
        assert!(status.ready_to_use);
        assert_eq!(status.bound_content, Some("snapcontent-1"));
        assert_eq!(status.error, None, "an empty message is no error");
        let content = serde_json::json!({
            "spec": { "driver": "hostpath.csi.k8s.io" },
            "status": { "snapshotHandle": "h-1", "restoreSize": 1048576, "error": { "message": "quota" } } });
        let content = ContentStatus::of(&content);
        assert_eq!(content.snapshot_handle, Some("h-1"));
        assert_eq!(content.restore_size, Some(1 << 20));
        assert_eq!(content.error, Some("quota"));
        assert_eq!(content.deletion_policy, "Delete", "the API's default");
        assert_eq!(content.driver, Some("hostpath.csi.k8s.io"));
        // A status of the wrong shape reads as none.
        let odd = serde_json::json!({ "status": { "readyToUse": "yes", "restoreSize": "1Gi" } });
        assert!(!SnapshotStatus::of(&odd).ready_to_use);
        assert_eq!(ContentStatus::of(&odd).restore_size, None);
    }

    #[test]
    fn a_restored_snapshot_is_named_as_velero_names_it() {
        // Go's fmt.Sprintf("%x", sha256.Sum256([]byte("u-1/velero-data-abcde"))).
        assert_eq!(
            restored_snapshot_name("u-1", "velero-data-abcde"),
            "6b4a465984f99cb8bc54fcb0d1a557e0133735807ab00cb8d49064bcb2782ed6"
        );
    }
}
