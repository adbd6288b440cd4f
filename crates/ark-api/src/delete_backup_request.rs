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
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBackupRequestStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DeleteBackupRequestPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// Velero has no Failed phase: a request is Processed, with or without errors.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum DeleteBackupRequestPhase {
    New,
    InProgress,
    Processed,
}

impl DeleteBackupRequest {
    /// A request to delete `backup`: `generateName: <backup>-`, `spec.backupName`, and the labels
    /// that tie it to this backup (name as a valid label value, and uid), as Velero writes them.
    pub fn for_backup(backup: &crate::Backup) -> DeleteBackupRequest {
        let name = backup.metadata.name.clone().unwrap_or_default();
        let mut request = DeleteBackupRequest::new(
            "",
            DeleteBackupRequestSpec {
                backup_name: name.clone(),
                ..Default::default()
            },
        );
        request.metadata.name = None;
        request.metadata.namespace = backup.metadata.namespace.clone();
        request.metadata.generate_name = Some(format!("{name}-"));
        request.metadata.labels = Some(crate::labels::for_backup(
            &name,
            backup.metadata.uid.as_deref().unwrap_or_default(),
        ));
        request
    }

    pub fn phase(&self) -> Option<DeleteBackupRequestPhase> {
        self.status.as_ref().and_then(|s| s.phase)
    }

    pub fn errors(&self) -> &[String] {
        self.status
            .as_ref()
            .and_then(|s| s.errors.as_deref())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backup, BackupSpec};

    #[test]
    fn a_request_names_its_backup_by_label_value_and_uid() {
        let name = "b".repeat(100);
        let mut backup = Backup::new(&name, BackupSpec::default());
        backup.metadata.namespace = Some("velero".into());
        backup.metadata.uid = Some("uid-1".into());
        let request = DeleteBackupRequest::for_backup(&backup);
        assert_eq!(request.metadata.name, None);
        assert_eq!(request.metadata.generate_name, Some(format!("{name}-")));
        assert_eq!(request.spec.backup_name, name);
        let labels = request.metadata.labels.unwrap();
        assert_eq!(
            labels["velero.io/backup-name"],
            crate::labels::valid_label_value(&name)
        );
        assert_eq!(labels["velero.io/backup-name"].len(), 63);
        assert_eq!(labels["velero.io/backup-uid"], "uid-1");
    }
}
