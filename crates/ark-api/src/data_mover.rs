//! Snapshot data movement (`velero.io/v2alpha1`): a DataUpload asks a node agent to copy a CSI
//! snapshot's data into the location's kopia repository, so that the backup outlives the snapshot;
//! a DataDownload asks one to write that data into a new volume for a restored claim. Field for
//! field Velero's; a backup that moved data holds its DataUploads, as they ended, in its tarball.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{PodVolumePhase, PodVolumeProgress};

/// The finalizer Velero's node agent keeps on a DataUpload or DataDownload until it is final (and
/// cancels one deleted before that); ark's agent lets go of it once the request has ended.
pub const DATA_MOVER_FINALIZER: &str = "velero.io/data-upload-download-finalizer";

/// The data movers whose uploads go into Velero's kopia repository: Velero's own (empty or
/// `velero`); another names a third party's, whose data ark does not know.
pub fn is_built_in_data_mover(datamover: Option<&str>) -> bool {
    matches!(datamover, None | Some("") | Some("velero"))
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v2alpha1",
    kind = "DataUpload",
    namespaced,
    status = "DataUploadStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct DataUploadSpec {
    /// `CSI`: the snapshot is a CSI VolumeSnapshot.
    pub snapshot_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_snapshot: Option<CsiSnapshotSpec>,
    /// The claim the snapshot was cut from.
    #[serde(rename = "sourcePVC")]
    pub source_pvc: String,
    /// The claim's namespace: the repository the data goes into.
    pub source_namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datamover: Option<String>,
    pub backup_storage_location: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_mover_config: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// A Go duration.
    pub operation_timeout: String,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CsiSnapshotSpec {
    pub volume_snapshot: String,
    pub storage_class: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// A DataUpload's status; its phases are a pod volume request's.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataUploadStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PodVolumePhase>,
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
    pub data_mover_result: Option<std::collections::BTreeMap<String, String>>,
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
    pub incremental_bytes: Option<i64>,
    /// The node whose agent moved the data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, rename = "nodeOS", skip_serializing_if = "Option::is_none")]
    pub node_os: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_by_node: Option<String>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v2alpha1",
    kind = "DataDownload",
    namespaced,
    status = "DataDownloadStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct DataDownloadSpec {
    /// The restored claim the data goes into.
    pub target_volume: TargetVolumeSpec,
    pub backup_storage_location: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datamover: Option<String>,
    /// The kopia snapshot the DataUpload made.
    #[serde(rename = "snapshotID")]
    pub snapshot_id: String,
    /// The namespace the data was backed up from: the repository it is read from.
    pub source_namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_mover_config: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// A Go duration.
    pub operation_timeout: String,
    #[serde(default, rename = "nodeOS", skip_serializing_if = "Option::is_none")]
    pub node_os: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_size: Option<i64>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetVolumeSpec {
    pub pvc: String,
    /// Empty: the volume is provisioned for the claim.
    #[serde(default)]
    pub pv: String,
    pub namespace: String,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// A DataDownload's status; its phases are a pod volume request's.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataDownloadStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PodVolumePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<PodVolumeProgress>,
    /// The node whose agent wrote the data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_by_node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_timestamp: Option<Time>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}
