use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, TypedLocalObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Puts (part of) a backup back into the cluster.
/// The finalizer Velero's server (and ark's) puts on every Restore, and removes once a deleted
/// one's files are gone from the bucket.
pub const RESTORE_FINALIZER: &str = "restores.velero.io/external-resources-finalizer";

/// Velero's `restoreStatus`: which resources' status is restored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreStatusSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Restore",
    namespaced,
    status = "RestoreStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct RestoreSpec {
    #[serde(default)]
    pub backup_name: String,
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
    #[schemars(schema_with = "crate::schema::string_map")]
    pub namespace_mapping: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Items matching any of these selectors (Velero refuses it beside `labelSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub or_label_selectors: Option<Vec<LabelSelector>>,
    /// `none` (keep what exists, warn) or `update` (patch it to the backed-up state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existing_resource_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<RestoreHooks>,
    /// Services keep their node ports (Velero's default: they do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_node_ports: Option<bool>,
    /// Whether claims backed up as snapshots come back with their data (Velero's default: yes);
    /// with `false` they come back empty.
    #[serde(
        default,
        rename = "restorePVs",
        skip_serializing_if = "Option::is_none"
    )]
    pub restore_pvs: Option<bool>,
    /// Resource modifier rules (a ConfigMap in the restore's namespace, Velero's format) applied to
    /// the restored items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_modifier: Option<TypedLocalObjectReference>,
    /// How long asynchronous item operations may take; zero or absent is the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_operation_timeout: Option<String>,
    /// The resources whose backed-up status is put back on the objects the restore creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_status: Option<RestoreStatusSpec>,
    /// How the node agent writes the restore's pod volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploader_config: Option<crate::uploader::UploaderConfigForRestore>,
    /// Velero's fields that ark does not model, kept as they came.
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// `spec.hooks` of a Restore, and the whole content of a `--hooks-file`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreHooks {
    #[serde(default)]
    pub resources: Vec<RestoreResourceHookSpec>,
}

/// Which pods a list of hooks applies to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreResourceHookSpec {
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
    pub post_hooks: Option<Vec<RestoreResourceHook>>,
}

/// Exactly one of `init` and `exec` is set; validation rejects anything else.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreResourceHook {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecRestoreHook>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitRestoreHook>,
}

/// A command run in a restored pod's container once it runs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecRestoreHook {
    /// Defaults to the pod's first container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<HookErrorMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for_ready: Option<bool>,
}

/// Containers injected as init containers of a restored pod, before its own.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitRestoreHook {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::opaque_object_list")]
    pub init_containers: Vec<Container>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum HookErrorMode {
    Continue,
    Fail,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestorePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warnings: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<RestoreProgress>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_status: Option<HookStatus>,
    /// Asynchronous item operations (a claim's moved data written back), as Velero counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_item_operations_attempted: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_item_operations_completed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_item_operations_failed: Option<i64>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_items: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_restored: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks_attempted: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks_failed: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RestorePhase {
    New,
    FailedValidation,
    InProgress,
    WaitingForPluginOperations,
    WaitingForPluginOperationsPartiallyFailed,
    Completed,
    PartiallyFailed,
    Failed,
    Finalizing,
    FinalizingPartiallyFailed,
}

impl RestorePhase {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::PartiallyFailed | Self::Failed | Self::FailedValidation
        )
    }
}

impl Restore {
    pub fn phase(&self) -> RestorePhase {
        self.status
            .as_ref()
            .and_then(|s| s.phase)
            .unwrap_or(RestorePhase::New)
    }
}
