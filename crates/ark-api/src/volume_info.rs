//! What a backup kept of each volume, and the asynchronous operations it waited for: Velero's
//! `<backup>-volumeinfo.json.gz` (`internal/volume`) and `<backup>-itemoperations.json.gz`
//! (`pkg/itemoperation`), key for key, so that either tool reads the other's.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

/// How a volume's data was kept.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackupMethod {
    NativeSnapshot,
    PodVolumeBackup,
    #[serde(rename = "CSISnapshot")]
    CsiSnapshot,
}

/// One volume of a backup. Velero writes the three booleans always, the rest when set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupVolumeInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pvc_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pvc_namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pv_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_method: Option<BackupMethod>,
    #[serde(default)]
    pub snapshot_data_moved: bool,
    #[serde(default)]
    pub preserve_local_snapshot: bool,
    #[serde(default)]
    pub skipped: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub skipped_reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    /// `succeeded` or `failed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_snapshot_info: Option<CsiSnapshotInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pv_info: Option<PvInfo>,
    /// Where the CSI snapshot's data was moved (Velero's `--snapshot-move-data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_data_movement_info: Option<SnapshotDataMovementInfo>,
    /// The other methods' details (native snapshots, pod volume backups), kept as they came.
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

pub const VOLUME_SUCCEEDED: &str = "succeeded";
pub const VOLUME_FAILED: &str = "failed";

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CsiSnapshotInfo {
    #[serde(rename = "snapshotHandle", default)]
    pub snapshot_handle: String,
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub driver: String,
    #[serde(rename = "vscName", default)]
    pub vsc_name: String,
    #[serde(rename = "operationID", default)]
    pub operation_id: String,
    /// Velero's field has no json tag: its key is the Go name.
    #[serde(
        rename = "ReadyToUse",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ready_to_use: Option<bool>,
    /// ark's: the VolumeSnapshotClass it was cut with (Velero ignores the key).
    #[serde(
        rename = "volumeSnapshotClass",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub volume_snapshot_class: String,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// A CSI snapshot's data moved into the location's kopia repository by a data mover.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotDataMovementInfo {
    /// Empty for Velero's own, as `velero`.
    #[serde(default)]
    pub data_mover: String,
    #[serde(default)]
    pub uploader_type: String,
    /// The VolumeSnapshot the data was read from (removed once moved).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub retained_snapshot: String,
    /// The kopia snapshot's ID.
    #[serde(default)]
    pub snapshot_handle: String,
    #[serde(rename = "operationID", default)]
    pub operation_id: String,
    /// The bytes moved.
    #[serde(default)]
    pub size: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub incremental_size: i64,
    /// The DataUpload's phase; Velero's field has no json tag.
    #[serde(rename = "Phase", default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<crate::PodVolumePhase>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PvInfo {
    #[serde(default)]
    pub reclaim_policy: String,
    /// Velero writes `null` for a volume without labels (a Go map left nil).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub labels: BTreeMap<String, String>,
}

fn null_as_empty<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(Option::deserialize(deserializer)?.unwrap_or_default())
}

/// An item named in an operation. Velero's `ResourceIdentifier` embeds a `GroupResource` and has
/// no json tags: every key is the Go name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResourceIdentifier {
    #[serde(rename = "Group", default)]
    pub group: String,
    #[serde(rename = "Resource", default)]
    pub resource: String,
    #[serde(rename = "Namespace", default)]
    pub namespace: String,
    #[serde(rename = "Name", default)]
    pub name: String,
}

/// An asynchronous operation a backup item action started, which the backup waits for before it
/// is finalized.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct BackupOperation {
    pub spec: BackupOperationSpec,
    pub status: OperationStatus,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupOperationSpec {
    pub backup_name: String,
    #[serde(rename = "backupUID")]
    pub backup_uid: String,
    /// The action that started it (`velero.io/csi-volumesnapshot-backupper`).
    pub backup_item_action: String,
    pub resource_identifier: ResourceIdentifier,
    #[serde(rename = "operationID")]
    pub operation_id: String,
    /// The items written again, as they are once the operation has ended, when the backup is
    /// finalized.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_operation_items: Vec<ResourceIdentifier>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OperationPhase {
    #[default]
    New,
    InProgress,
    Completed,
    Failed,
    Canceled,
}

impl OperationPhase {
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OperationStatus {
    #[serde(default)]
    pub phase: OperationPhase,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_completed: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_total: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operation_units: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<Time>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn volume_info_keys_are_velero_s() {
        let info = BackupVolumeInfo {
            pvc_name: "data".into(),
            pvc_namespace: "shop".into(),
            pv_name: "pvc-1".into(),
            backup_method: Some(BackupMethod::CsiSnapshot),
            preserve_local_snapshot: true,
            result: VOLUME_SUCCEEDED.into(),
            csi_snapshot_info: Some(CsiSnapshotInfo {
                snapshot_handle: "h".into(),
                size: 1024,
                driver: "d".into(),
                vsc_name: "snapcontent-1".into(),
                operation_id: "shop/velero-data-x/2026-12-03T00:00:00Z".into(),
                ready_to_use: Some(true),
                ..Default::default()
            }),
            pv_info: Some(PvInfo {
                reclaim_policy: "Delete".into(),
                labels: BTreeMap::new(),
            }),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            json!({
                "pvcName": "data", "pvcNamespace": "shop", "pvName": "pvc-1",
                "backupMethod": "CSISnapshot", "snapshotDataMoved": false,
                "preserveLocalSnapshot": true, "skipped": false, "result": "succeeded",
                "csiSnapshotInfo": { "snapshotHandle": "h", "size": 1024, "driver": "d",
                    "vscName": "snapcontent-1", "operationID": "shop/velero-data-x/2026-12-03T00:00:00Z",
                    "ReadyToUse": true },
                "pvInfo": { "reclaimPolicy": "Delete", "labels": {} },
            })
        );
    }

    /// Velero's record of a CSI snapshot whose data was moved (its `Phase` key, without a json
    /// tag, kept as it came).
    #[test]
    fn a_moved_snapshot_s_keys_are_velero_s() {
        let written = json!({
            "pvcName": "data", "pvcNamespace": "shop", "backupMethod": "CSISnapshot",
            "snapshotDataMoved": true, "preserveLocalSnapshot": false, "skipped": false,
            "result": "succeeded",
            "snapshotDataMovementInfo": { "dataMover": "velero", "uploaderType": "kopia",
                "snapshotHandle": "k1", "operationID": "du-1.2", "size": 1048576,
                "Phase": "Completed" },
        });
        let info: BackupVolumeInfo = serde_json::from_value(written.clone()).unwrap();
        let moved = info.snapshot_data_movement_info.as_ref().unwrap();
        assert_eq!(
            (moved.snapshot_handle.as_str(), moved.size),
            ("k1", 1048576)
        );
        assert_eq!(serde_json::to_value(&info).unwrap(), written);
    }

    /// The regression: Velero's volume information for a volume without labels (`"labels": null`)
    /// could not be read, so its backup's volumes were unknown to ark.
    #[test]
    fn velero_s_volume_without_labels_is_read() {
        let written_by_velero = r#"{"pvcName":"skip","pvcNamespace":"app","pvName":"pvc-1",
            "snapshotDataMoved":false,"preserveLocalSnapshot":false,"skipped":true,
            "skippedReason":"matched action is 'skip' in chosen resource policies",
            "pvInfo":{"reclaimPolicy":"Delete","labels":null}}"#;
        let info: BackupVolumeInfo = serde_json::from_str(written_by_velero).unwrap();
        assert!(info.skipped);
        assert_eq!(info.pv_info.unwrap().labels, BTreeMap::new());
    }

    #[test]
    fn operation_keys_are_velero_s() {
        let operation = BackupOperation {
            spec: BackupOperationSpec {
                backup_name: "b".into(),
                backup_uid: "u".into(),
                backup_item_action: "velero.io/csi-volumesnapshot-backupper".into(),
                resource_identifier: ResourceIdentifier {
                    group: "snapshot.storage.k8s.io".into(),
                    resource: "volumesnapshots".into(),
                    namespace: "shop".into(),
                    name: "velero-data-x".into(),
                },
                operation_id: "op".into(),
                post_operation_items: vec![],
            },
            status: OperationStatus {
                phase: OperationPhase::InProgress,
                ..Default::default()
            },
        };
        assert_eq!(
            serde_json::to_value(&operation).unwrap(),
            json!({
                "spec": { "backupName": "b", "backupUID": "u",
                    "backupItemAction": "velero.io/csi-volumesnapshot-backupper",
                    "resourceIdentifier": { "Group": "snapshot.storage.k8s.io",
                        "Resource": "volumesnapshots", "Namespace": "shop", "Name": "velero-data-x" },
                    "operationID": "op" },
                "status": { "phase": "InProgress" },
            })
        );
    }
}
