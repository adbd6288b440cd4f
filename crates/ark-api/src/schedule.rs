use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Backup, BackupSpec};

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

/// Why a schedule of this name can make no backup, if it cannot: each of its backups carries the
/// name, whole as Velero writes it, as its `velero.io/schedule-name` label, and the API server
/// refuses a label value longer than 63 characters.
pub fn schedule_name_error(name: &str) -> Option<String> {
    (name.len() > crate::labels::MAX_LABEL_VALUE).then(|| {
        format!(
            "the schedule's name is {} characters long: its backups carry it as the label {}, \
             whose value holds at most {}",
            name.len(),
            crate::labels::SCHEDULE_NAME,
            crate::labels::MAX_LABEL_VALUE,
        )
    })
}

impl Schedule {
    pub fn phase(&self) -> SchedulePhase {
        self.status
            .as_ref()
            .and_then(|s| s.phase)
            .unwrap_or(SchedulePhase::New)
    }

    /// What its next slot follows, as Velero's `getNextRunTime` reckons it: its last backup, or
    /// its creation (`now` if it has none yet), or its last skip if that is later.
    pub fn runs_from(&self, now: jiff::Timestamp) -> jiff::Timestamp {
        let status = self.status.as_ref();
        let created = self.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let base = status
            .and_then(|s| s.last_backup.as_ref())
            .map(|t| t.0)
            .or(created)
            .unwrap_or(now);
        let skipped = status.and_then(|s| s.last_skipped.as_ref()).map(|t| t.0);
        skipped.filter(|skipped| *skipped > base).unwrap_or(base)
    }
}

impl Backup {
    /// A backup of `schedule`'s template, made at `at`, as Velero's `FromSchedule` builds it: named
    /// `<schedule>-<yyyyMMddHHmmss>` (UTC); the template's labels, or the schedule's if it has
    /// none, and `velero.io/schedule-name`; the schedule's annotations; and the schedule as its
    /// owner when `useOwnerReferencesInBackup` says so.
    pub fn from_schedule(schedule: &Schedule, at: jiff::Timestamp) -> Backup {
        let name = schedule.metadata.name.clone().unwrap_or_default();
        let stamp = at.strftime("%Y%m%d%H%M%S");
        let mut backup = Backup::new(&format!("{name}-{stamp}"), schedule.spec.template.clone());
        backup.metadata.namespace = schedule.metadata.namespace.clone();
        // Velero's template is a BackupSpec with a `metadata.labels` of its own.
        let template_labels = schedule
            .spec
            .template
            .unmodelled
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .filter(|l| !l.is_null())
            .and_then(|l| serde_json::from_value(l.clone()).ok());
        let mut labels: std::collections::BTreeMap<String, String> = template_labels
            .or_else(|| schedule.metadata.labels.clone())
            .unwrap_or_default();
        labels.insert(crate::labels::SCHEDULE_NAME.into(), name.clone());
        backup.metadata.labels = Some(labels);
        backup.metadata.annotations = schedule.metadata.annotations.clone();
        if schedule.spec.use_owner_references_in_backup == Some(true) {
            backup.metadata.owner_references = Some(vec![
                k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "velero.io/v1".into(),
                    kind: "Schedule".into(),
                    name,
                    uid: schedule.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    ..Default::default()
                },
            ]);
        }
        backup
    }
}
