use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::BackupSpec;

/// Backups made from a template on a cron schedule.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Schedule",
    namespaced,
    status = "ScheduleStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    #[serde(default)]
    pub template: BackupSpec,
    /// A cron expression (robfig's: five fields, `@every 1h`, `@daily`, `CRON_TZ=`).
    #[serde(default)]
    pub schedule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_owner_references_in_backup: Option<bool>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_immediately: Option<bool>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<SchedulePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_skipped: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SchedulePhase {
    New,
    Enabled,
    FailedValidation,
}

impl Schedule {
    pub fn phase(&self) -> SchedulePhase {
        self.status
            .as_ref()
            .and_then(|s| s.phase)
            .unwrap_or(SchedulePhase::New)
    }
}
