//! A restore's preview (`ark restore create --dry-run`): the restore as the controller would run
//! it (validated, its backup unpacked, its items through the filters, the item actions and the
//! mappings, in restore order), each create and patch the API server's dry run, so that admission
//! webhooks, policies and quotas answer as they would. Nothing is changed: no namespace, item,
//! volume or hook. The preview asks the API server as its caller, not as the server.

use std::path::PathBuf;

use ark_api::Restore;
use kube::Client;
use serde::Serialize;

use super::validate::{self, ValidatedRestore};
use super::{Config, engine, pod_volumes};
use crate::domain::locations;
use crate::records::recorder::Recorder;
use crate::records::resource_list::ResourceListWriter;
use crate::runtime::operation::Rejected;
pub use engine::{Action, PlannedItem};

/// The uid the restore's own names are made with (of the snapshots it creates again, its pods'
/// helper containers): a restore not created has none.
const PREVIEW_UID: &str = "00000000-0000-0000-0000-000000000000";

/// A volume whose data the restore would put back, and from where.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedVolume {
    pub namespace: String,
    /// The pod whose volume the node agent writes, or the claim provisioned or written.
    pub pod: Option<String>,
    pub claim: Option<String>,
    /// The pod's volume, for pod volume data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// `pod volume backup <name> (kopia snapshot <id>)`, `CSI snapshot <name>`, `data upload
    /// <name> (kopia snapshot <id>)`.
    pub from: String,
}

/// A hook the restore would run in a restored pod.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedHook {
    pub namespace: String,
    pub pod: String,
    /// `init` (a container put before the pod's own) or `exec` (in a running container).
    pub kind: &'static str,
    pub container: String,
    pub command: Vec<String>,
    /// `spec hook "<name>"` or `annotations`, for exec hooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A restore's plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Preview {
    pub backup: String,
    pub items: Vec<PlannedItem>,
    pub volumes: Vec<PlannedVolume>,
    pub hooks: Vec<PlannedHook>,
    /// What the restore would record as errors beyond its items (an unreadable item file, a
    /// resource the cluster does not serve).
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

impl Preview {
    /// Whether the restore would fail in part: an item refused, or an error.
    pub fn would_fail(&self) -> bool {
        !self.errors.is_empty() || self.items.iter().any(|i| i.action == Action::Refused)
    }

    /// How many items would come to `action`.
    pub fn count(&self, action: Action) -> usize {
        self.items.iter().filter(|i| i.action == action).count()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// The restore could not run as written: the controller would fail its validation.
    #[error("the restore is invalid: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The backup could not be read from its location.
    #[error("{0}")]
    Backup(String),
    #[error("scratch file: {0}")]
    Scratch(#[from] std::io::Error),
}

/// Previews `restore` (not created: its spec as the CLI would create it) in `namespace`, the
/// server's, as a server with `config` would run it; scratch files go under `scratch`.
pub async fn preview(
    client: &Client,
    namespace: &str,
    restore: &Restore,
    config: &Config,
    scratch: PathBuf,
) -> Result<Preview, PreviewError> {
    let validated = match validate::validate(restore, client, namespace, config).await {
        Ok(validated) => validated,
        Err(Rejected::Invalid(errors)) => return Err(PreviewError::Invalid(errors)),
        Err(Rejected::Unreadable(error)) => return Err(PreviewError::Kube(error)),
    };
    let location = validated.backup.spec.storage_location.clone();
    let open = locations::open_named(client, namespace, &location.unwrap_or_default())
        .await
        .map_err(|e| PreviewError::Backup(e.to_string()))?;
    let unpacked = super::unpack(&open, &restore.spec.backup_name, &scratch)
        .await
        .map_err(PreviewError::Backup)?;
    let volume_data = pod_volumes::VolumeData {
        backed_up: &unpacked.pod_volumes,
        helper_image: config.helper_image.as_deref(),
        restore_uid: PREVIEW_UID,
    };
    let name = restore.metadata.name.as_deref();
    let mut record = Recorder::create(&scratch, format!("restore preview={namespace}"))?;
    let mut resource_list = ResourceListWriter::create(&scratch)?;
    let (progress, _) = tokio::sync::watch::channel((0, 0));
    let restored = engine::restore(engine::RestoreInput {
        client,
        spec: &restore.spec,
        selection: &validated.selection,
        restore_name: name.unwrap_or(&restore.spec.backup_name),
        restore_uid: PREVIEW_UID,
        unpacked: unpacked.extracted.dir.path(),
        resource_list: &mut resource_list,
        record: &mut record,
        progress: &progress,
        items_at_once: config.items_at_once.max(1).into(),
        resource_modifiers: validated.resource_modifiers.as_ref(),
        volume_data: Some(&volume_data),
        dry_run: true,
    })
    .await
    .map_err(|e| PreviewError::Backup(format!("planning: {e}")))?;
    for rejected in &unpacked.extracted.rejected.velero {
        record.general_error(rejected.clone());
    }
    record.omitted_errors(unpacked.extracted.rejected.omitted);
    let (_, results) = record.finish()?;
    Ok(plan_of(&validated, restored, results))
}

/// The plan, from what the dry run restored and recorded.
fn plan_of(
    validated: &ValidatedRestore,
    restored: engine::Restored,
    results: crate::records::results::Results,
) -> Preview {
    let mut volumes = Vec::new();
    for pod in &restored.pods_with_volume_data {
        for backup in &pod.backups {
            let snapshot = backup.status.as_ref().and_then(|s| s.snapshot_id.clone());
            volumes.push(PlannedVolume {
                namespace: pod.namespace.clone(),
                pod: Some(pod.name.clone()),
                claim: None,
                volume: Some(backup.spec.volume.clone()),
                from: format!(
                    "pod volume backup {} (kopia snapshot {})",
                    backup.metadata.name.as_deref().unwrap_or_default(),
                    snapshot.as_deref().unwrap_or("none")
                ),
            });
        }
    }
    for (namespace, claim, snapshot) in &restored.claims_from_snapshots {
        volumes.push(PlannedVolume {
            namespace: namespace.clone(),
            pod: None,
            claim: Some(claim.clone()),
            volume: None,
            from: format!("CSI snapshot {snapshot}"),
        });
    }
    for moved in &restored.claims_with_moved_data {
        let snapshot = moved
            .upload
            .status
            .as_ref()
            .and_then(|s| s.snapshot_id.clone());
        volumes.push(PlannedVolume {
            namespace: moved.namespace.clone(),
            pod: None,
            claim: Some(moved.claim.clone()),
            volume: None,
            from: format!(
                "data upload {} (kopia snapshot {})",
                moved.upload.metadata.name.as_deref().unwrap_or_default(),
                snapshot.as_deref().unwrap_or("none")
            ),
        });
    }
    let mut hooks = Vec::new();
    for pod in &restored.pods_with_hooks {
        let planned =
            |kind, container: &str, command: &[String], source: Option<&str>| PlannedHook {
                namespace: pod.namespace.clone(),
                pod: pod.name.clone(),
                kind,
                container: container.to_string(),
                command: command.to_vec(),
                source: source.map(str::to_string),
            };
        for init in &pod.hooks.init {
            let command = init.command.clone().unwrap_or_default();
            hooks.push(planned("init", &init.name, &command, None));
        }
        for exec in &pod.hooks.exec {
            hooks.push(planned(
                "exec",
                &exec.container,
                &exec.command,
                Some(&exec.source),
            ));
        }
    }
    Preview {
        backup: validated.backup.metadata.name.clone().unwrap_or_default(),
        items: restored.planned,
        volumes,
        hooks,
        errors: results.errors.messages(),
        warnings: results.warnings.messages(),
    }
}
