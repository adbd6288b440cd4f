use k8s_openapi::api::core::v1::TypedLocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to back up and where to keep it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Backup",
    namespaced,
    status = "BackupStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_cluster_resources: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Items matching any of these selectors (Velero refuses it beside `labelSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub or_label_selectors: Option<Vec<LabelSelector>>,
    /// The scoped resource filters, which Velero refuses beside `includedResources`,
    /// `excludedResources` and `includeClusterResources`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_cluster_scoped_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_cluster_scoped_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_namespace_scoped_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_namespace_scoped_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_volumes: Option<bool>,
    /// How long the backup is kept, as a Go duration ("720h0m0s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_snapshot_locations: Option<Vec<String>>,
    /// How long CSI snapshots may take to become ready; zero or absent is Velero's 10m.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_snapshot_timeout: Option<String>,
    /// How long asynchronous item operations may take; zero or absent is the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_operation_timeout: Option<String>,
    /// Commands run in pods before and after they are backed up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<BackupHooks>,
    /// Back up every pod volume with the node agent, unless a pod's annotation excludes it
    /// (absent: the server's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_volumes_to_fs_backup: Option<bool>,
    /// The old name of `defaultVolumesToFsBackup`: `true` still means it, as in Velero, whatever
    /// the new field says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_volumes_to_restic: Option<bool>,
    /// The ConfigMap (`kind: configmap`, in the backup's namespace) of the backup's resource
    /// policies: how each volume's data is taken, and scoped resource filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_policy: Option<TypedLocalObjectReference>,
    /// How the node agent uploads the backup's pod volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploader_config: Option<crate::uploader::UploaderConfigForBackup>,
    /// Move each CSI snapshot's data into the location's kopia repository, then remove the
    /// snapshot (absent: the server's default, `--default-snapshot-move-data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_move_data: Option<bool>,
    /// Who moves it: Velero's built-in data mover when empty or `velero`; another name leaves the
    /// DataUploads to that data mover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datamover: Option<String>,
    /// Items backed up first, in this order, by resource (its plural): `pods: ns/a,ns/b`,
    /// `persistentvolumes: pv-1,pv-2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered_resources: Option<std::collections::BTreeMap<String, String>>,
    /// Velero's fields that ark does not model (`volumeGroupSnapshotLabelKey`, ...), kept as they
    /// came.
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_snapshots_attempted: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_snapshots_completed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_volume_snapshots_attempted: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi_volume_snapshots_completed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Asynchronous item operations (a CSI snapshot becoming ready to use), as Velero counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_item_operations_attempted: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_item_operations_completed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_item_operations_failed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<BackupProgress>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_status: Option<crate::HookStatus>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// `spec.hooks` of a Backup.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupHooks {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<BackupResourceHookSpec>,
}

/// Which pods a list of backup hooks applies to, and the hooks run before and after each is
/// backed up.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupResourceHookSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre: Option<Vec<BackupResourceHook>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<Vec<BackupResourceHook>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupResourceHook {
    pub exec: ExecHook,
}

/// A command run in a pod's container, as Velero's `ExecHook`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecHook {
    /// Defaults to the pod's first container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<crate::HookErrorMode>,
    /// A Go duration; zero or absent is Velero's 30s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_items: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_backed_up: Option<i64>,
}

/// Every phase Velero defines, so a Backup written by Velero always parses.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum BackupPhase {
    New,
    Queued,
    ReadyToStart,
    FailedValidation,
    InProgress,
    WaitingForPluginOperations,
    WaitingForPluginOperationsPartiallyFailed,
    Finalizing,
    FinalizingPartiallyFailed,
    Completed,
    PartiallyFailed,
    Failed,
    Deleting,
}

impl BackupPhase {
    /// A backup in a terminal phase no longer changes (except by deletion).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::PartiallyFailed | Self::Failed | Self::FailedValidation
        )
    }

    /// A backup whose items are uploaded and which waits for its item operations (CSI snapshots
    /// becoming ready to use), or for its items to be written again as they ended: not usable yet.
    pub fn is_finishing(self) -> bool {
        matches!(
            self,
            Self::WaitingForPluginOperations
                | Self::WaitingForPluginOperationsPartiallyFailed
                | Self::Finalizing
                | Self::FinalizingPartiallyFailed
        )
    }

    /// Whether the backup already has errors: a partially failed phase.
    pub fn is_partially_failed(self) -> bool {
        matches!(
            self,
            Self::WaitingForPluginOperationsPartiallyFailed
                | Self::FinalizingPartiallyFailed
                | Self::PartiallyFailed
        )
    }
}

impl Backup {
    /// The phase, with "no status yet" read as New as Velero does.
    pub fn phase(&self) -> BackupPhase {
        self.status
            .as_ref()
            .and_then(|s| s.phase)
            .unwrap_or(BackupPhase::New)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regression behind a backup whose `velero-backup.json` lost Velero's fields: every
    /// field, modelled or not, makes the round trip through ark's types.
    #[test]
    fn velero_s_fields_make_the_round_trip_through_ark_s_types() {
        let velero: serde_json::Value = serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": { "name": "b", "namespace": "velero" },
            "spec": {
                "includedNamespaces": ["shop"],
                "ttl": "0s",
                "defaultVolumesToFsBackup": true,
                "datamover": "velero",
                "volumeGroupSnapshotLabelKey": "velero.io/volume-group",
                "csiSnapshotTimeout": "5m0s",
                "itemOperationTimeout": "1h0m0s",
                "uploaderConfig": { "parallelFilesUpload": 4 },
                "orderedResources": { "pods": "shop/db,shop/web" },
                "hooks": { "resources": [{ "name": "dump", "pre": [{ "exec": {
                    "container": "db", "command": ["pg_dump"], "onError": "Fail", "timeout": "1m0s",
                } }] }] },
            },
            "status": {
                "phase": "Completed",
                "backupItemOperationsAttempted": 2,
                "hookStatus": { "hooksAttempted": 1 },
            },
        });
        let backup: Backup = serde_json::from_value(velero.clone()).unwrap();
        assert_eq!(backup.spec.ttl.as_deref(), Some("0s"));
        let hooks = &backup.spec.hooks.as_ref().unwrap().resources[0];
        assert_eq!(
            hooks.pre.as_ref().unwrap()[0].exec.container.as_deref(),
            Some("db")
        );
        assert_eq!(backup.spec.datamover.as_deref(), Some("velero"));
        assert!(
            backup
                .spec
                .unmodelled
                .contains_key("volumeGroupSnapshotLabelKey")
        );
        assert_eq!(serde_json::to_value(&backup).unwrap(), velero);
    }
}
