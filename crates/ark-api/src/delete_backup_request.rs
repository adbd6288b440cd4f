use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A request to delete one backup and everything that belongs to it (snapshots, bucket data,
/// restores). Deleting a Backup object alone never deletes data: this is the only way.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "DeleteBackupRequest",
    namespaced,
    status = "DeleteBackupRequestStatus",
    printcolumn = r#"{"name":"BackupName","type":"string","description":"The name of the backup to be deleted","jsonPath":".spec.backupName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","description":"The status of the deletion request","jsonPath":".status.phase"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBackupRequestSpec {
    pub backup_name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBackupRequestStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DeleteBackupRequestPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
}

/// Velero has no Failed phase: a request is Processed, with or without errors.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum DeleteBackupRequestPhase {
    New,
    InProgress,
    Processed,
}
