//! File-system backups of pod volumes: a PodVolumeBackup asks the node agent on a pod's node to
//! copy one volume into the location's kopia repository, a PodVolumeRestore to write a snapshot
//! back into a restored pod's volume, and a BackupRepository records one repository (one per
//! workload namespace and location). Field for field Velero's, so that either tool's node agent
//! runs the other's requests.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The only uploader Velero v1.18 backs up with.
pub const UPLOADER_KOPIA: &str = "kopia";
/// The finalizer Velero's node agent keeps on a request it works on, until the request is final;
/// ark's agent lets go of it once the request has ended.
pub const POD_VOLUME_FINALIZER: &str = "velero.io/pod-volume-finalizer";

/// The pod a request is about, as Velero writes it (a `corev1.ObjectReference`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "PodVolumeBackup",
    namespaced,
    status = "PodVolumeBackupStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeBackupSpec {
    /// The node the pod runs on: only that node's agent takes the request.
    pub node: String,
    pub pod: PodReference,
    /// The volume's name in the pod's spec.
    pub volume: String,
    pub backup_storage_location: String,
    /// restic's repository; empty for kopia.
    #[serde(default)]
    pub repo_identifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploader_type: Option<String>,
    /// Informational: backup, backup-uid, pod, pod-uid, ns, volume, pvc-uid.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::string_map")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::string_map")]
    pub uploader_settings: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PodVolumePhase {
    New,
    Accepted,
    Prepared,
    InProgress,
    Canceling,
    Canceled,
    Completed,
    Failed,
}

impl PodVolumePhase {
    /// Whether the request is over: nothing changes it any more.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_done: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeBackupStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PodVolumePhase>,
    /// The volume's directory on the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The kopia snapshot's manifest ID.
    #[serde(
        default,
        rename = "snapshotID",
        skip_serializing_if = "Option::is_none"
    )]
    pub snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<PodVolumeProgress>,
    /// The bytes this snapshot added to the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incremental_bytes: Option<i64>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "PodVolumeRestore",
    namespaced,
    status = "PodVolumeRestoreStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeRestoreSpec {
    /// The restored pod; the agent on whatever node it is scheduled to takes the request.
    pub pod: PodReference,
    pub volume: String,
    pub backup_storage_location: String,
    #[serde(default)]
    pub repo_identifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploader_type: Option<String>,
    #[serde(rename = "snapshotID")]
    pub snapshot_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_size: Option<i64>,
    /// The namespace the volume was backed up from: its repository.
    pub source_namespace: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::string_map")]
    pub uploader_settings: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeRestoreStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PodVolumePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<PodVolumeProgress>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "BackupRepository",
    namespaced,
    status = "BackupRepositoryStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct BackupRepositorySpec {
    /// The workload namespace whose volumes the repository holds.
    pub volume_namespace: String,
    pub backup_storage_location: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_type: Option<String>,
    #[serde(default)]
    pub restic_identifier: String,
    /// How often maintenance runs, a Go duration (`1h0m0s`).
    pub maintenance_frequency: String,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum BackupRepositoryPhase {
    New,
    Ready,
    NotReady,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupRepositoryStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupRepositoryPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_maintenance_time: Option<Time>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

impl BackupRepository {
    /// Velero's name for the repository of `volume_namespace` in `location`.
    pub fn name_for(volume_namespace: &str, location: &str) -> String {
        format!("{volume_namespace}-{location}-{UPLOADER_KOPIA}")
    }
}
