//! The backup controller: a New Backup is validated, collected into Velero's file set and uploaded
//! to its storage location; its status says how it went.

mod actions;
mod data_movement;
mod engine;
mod pod_volumes;
mod pod_work;
mod tracker;
mod validate;
mod volume_methods;
mod volume_snapshots;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{Backup, BackupPhase, BackupProgress, BackupStatus, HookStatus, labels};
use ark_storage::{BackupFiles, PutBackupError};
use bytes::Bytes;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use engine::Collected;
pub use tracker::RunningBackups;
pub use validate::DEFAULTED_FIELDS;
use validate::{Durations, ValidatedBackup};
pub(crate) use volume_snapshots::remove_cut;

use crate::domain::csi;
use crate::domain::locations::{self, OpenLocation};
use crate::records::recorder::Recorder;
use crate::records::results::{gzip_json, gzip_json_unless_empty};
use crate::runtime::context::Kube;
use crate::runtime::controller::ReconcileError;
use crate::runtime::objects::Summary;
use crate::runtime::operation::{self, Rejected};
use crate::runtime::{metrics, objects, patch};

/// The backup controller's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Backups run at once.
    pub workers: u16,
    /// TTL of a backup that sets none.
    pub default_ttl: Duration,
    /// `itemOperationTimeout` of a backup that sets none.
    pub default_item_operation_timeout: Duration,
    /// Pods whose hooks one backup runs at once.
    pub hook_pods_at_once: u16,
    /// The longest timeout one hook gets, whatever it asks for.
    pub max_hook_timeout: Duration,
    /// Whether backups that do not say back up every pod volume with the node agent (Velero's
    /// `--default-volumes-to-fs-backup`).
    pub default_volumes_to_fs_backup: bool,
    /// Whether backups that do not say move their CSI snapshots' data into the location (Velero's
    /// `--default-snapshot-move-data`).
    pub default_snapshot_move_data: bool,
    /// How long a backup waits, at most, for its pod volume backups (Velero's
    /// `--fs-backup-timeout`; a backup's annotation `velero.io/pod-volume-timeout` overrides it).
    pub pod_volume_timeout: Duration,
    /// Whether backups take every version the cluster serves of each resource (Velero's
    /// `--features=EnableAPIGroupVersions`).
    pub every_api_version: bool,
}

/// A backup's own pod volume timeout, a Go duration.
const POD_VOLUME_TIMEOUT_ANNOTATION: &str = "velero.io/pod-volume-timeout";

pub struct Ctx {
    pub kube: Kube,
    pub config: Config,
    /// Where tarballs are assembled; never the object store.
    pub scratch: PathBuf,
    pub running: Arc<RunningBackups>,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

/// Runs the controller until the process stops.
pub async fn run(ctx: Arc<Ctx>) {
    for backup in operation::interrupted::<Backup>(&ctx.kube).await {
        recover_interrupted(&ctx.kube, &backup).await;
    }
    let workers = ctx.config.workers;
    operation::run::<Backup, _, _, _>(ctx, workers, reconcile).await;
}

/// A backup left InProgress by a server that stopped. Its `velero-backup.json` is written last,
/// so if it is in the bucket the upload had finished and the backup takes the status uploaded
/// with it; otherwise what was uploaded is no backup, its keys are removed and it is Failed.
async fn recover_interrupted(kube: &Kube, backup: &DynamicObject) {
    let name = backup.name_any();
    let api = operation::api::<Backup>(kube);
    let location = backup
        .data
        .pointer("/spec/storageLocation")
        .and_then(|l| l.as_str())
        .unwrap_or_default();
    let open = match locations::open_named(&kube.client, &kube.namespace, location).await {
        Ok(open) => open,
        Err(error) => {
            tracing::warn!("backup {name} was left InProgress; its location: {error}");
            return operation::fail_interrupted::<Backup>(kube, backup).await;
        }
    };
    let store = &open.store;
    match store.get_backup_metadata(&name).await {
        Ok(bytes) => {
            let uploaded: Option<Backup> = serde_json::from_slice(&bytes).ok();
            let same = uploaded.filter(|u| u.metadata.uid == backup.uid());
            if let Some(status) = same.and_then(|u| u.status) {
                tracing::info!("backup {name} was uploaded in full before the server stopped");
                let claim = patch::status_in_phase(&api, &name, BackupPhase::InProgress, &status);
                if let Err(error) = claim.await {
                    tracing::warn!("backup {name}: writing its uploaded status: {error}");
                }
                return;
            }
            // Another backup of that name is in the bucket: this one never wrote anything there.
        }
        Err(error) if error.is_not_found() => match store.remove_incomplete_backup(&name).await {
            Ok(removed) if removed > 0 => tracing::info!(
                "backup {name} was left InProgress: removed the {removed} keys it had uploaded"
            ),
            Ok(_) => {}
            Err(error) => tracing::warn!(
                "backup {name} was left InProgress: removing what it had uploaded: {error}"
            ),
        },
        Err(error) => tracing::warn!("backup {name} was left InProgress: {error}"),
    }
    remove_snapshots_of_failed(kube, &name, &backup.uid().unwrap_or_default()).await;
    operation::fail_interrupted::<Backup>(kube, backup).await;
}

/// A failed backup keeps no snapshot in the cluster: nothing holds it.
async fn remove_snapshots_of_failed(kube: &Kube, name: &str, uid: &str) {
    match volume_snapshots::remove_cut(&kube.client, name, uid).await {
        Ok(0) => {}
        Ok(removed) => {
            tracing::info!("backup {name} failed: removed the {removed} VolumeSnapshots it cut")
        }
        Err(error) => {
            tracing::warn!("backup {name} failed: removing the VolumeSnapshots it cut: {error}")
        }
    }
}

/// Ark's first servers put a finalizer on Backups; it would block their deletion forever now that
/// deletion goes through DeleteBackupRequests, so it is removed at the start of each term, before
/// any controller acts on a Backup that still carries it.
pub async fn remove_legacy_finalizer(kube: Kube) {
    const LEGACY_FINALIZER: &str = "gc.ark.heptio.com";
    let api = operation::api::<Backup>(&kube);
    let holds = |b: &DynamicObject| (b.finalizers().iter()).any(|f| f == LEGACY_FINALIZER);
    let mut holding = Vec::new();
    let all = kube::api::ListParams::default();
    let listed = objects::each_page::<Backup>(&kube.client, &kube.namespace, &all, |page| {
        holding.extend(page.into_iter().filter(holds))
    });
    if listed.await.is_err() {
        return;
    }
    for backup in holding {
        let kept: Vec<&String> = (backup.finalizers().iter())
            .filter(|f| *f != LEGACY_FINALIZER)
            .collect();
        let name = backup.name_any();
        let patch = json!({ "metadata": { "finalizers": kept, "resourceVersion": backup.metadata.resource_version } });
        match api
            .patch(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {
                tracing::info!("removed the legacy finalizer {LEGACY_FINALIZER} from backup {name}")
            }
            Err(error) => {
                tracing::warn!("removing the legacy finalizer from backup {name}: {error}")
            }
        }
    }
}

async fn reconcile(cached: Arc<Summary<Backup>>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let Some(backup) = operation::claimable::<Backup>(&ctx.kube, &cached).await? else {
        return Ok(Action::await_change());
    };
    process(&backup, &ctx).await?;
    Ok(Action::await_change())
}

async fn process(backup: &Backup, ctx: &Ctx) -> Result<(), kube::Error> {
    let kube = &ctx.kube;
    let api = operation::api::<Backup>(kube);
    let resource_version = backup.metadata.resource_version.as_deref();
    let name = backup.metadata.name.clone().unwrap_or_default();
    let schedule = backup
        .labels()
        .get(labels::SCHEDULE_NAME)
        .cloned()
        .unwrap_or_default();
    let validated = match validate::validate(backup, kube, &ctx.config).await {
        Ok(validated) => validated,
        Err(Rejected::Invalid(errors)) => {
            let ttl = Durations::ttl_or_default(&backup.spec, &ctx.config);
            if failed_validation(&api, backup, errors, ttl).await? == patch::Claim::Won {
                kube.metrics.backup_failed_validation(&schedule);
            }
            return Ok(());
        }
        // Still New: validated again when the controller retries.
        Err(Rejected::Unreadable(error)) => return Err(error),
    };

    let start = patch::now();
    let expiration = expiration_after(validated.durations.ttl);
    let claim = patch::claim(
        &api,
        &name,
        resource_version,
        json!({
            "metadata": { "labels": { labels::STORAGE_LOCATION: labels::valid_label_value(&validated.location_name) } },
            "spec": validate::defaulted_spec(&backup.spec, &validated),
            "status": BackupStatus {
                phase: Some(BackupPhase::InProgress),
                version: Some(1),
                format_version: Some(ark_storage::tarball::FORMAT_VERSION.to_string()),
                start_timestamp: Some(start),
                expiration: Some(expiration),
                ..Default::default()
            },
        }),
    )
    .await?;
    if claim == patch::Claim::Lost {
        // Changed since it was read (deleted, claimed elsewhere): decided again on the next event.
        return Ok(());
    }
    kube.metrics.backup_attempted(&schedule);
    let started = std::time::Instant::now();

    let running = ctx.running.start(&name);
    let open = locations::open(&kube.client, validated.location.clone()).await;
    let outcome = match &open {
        Ok(open) => back_up(&api, &name, open, &validated, ctx).await,
        Err(error) => Err(error.to_string()),
    };
    drop(running);
    if outcome.is_err() {
        remove_snapshots_of_failed(kube, &name, &backup.uid().unwrap_or_default()).await;
    }
    let uploaded = outcome.is_ok();
    let csi = outcome.as_ref().map_or((0, 0), csi_counts);
    let (ended, items, item_errors) = match &outcome {
        Ok(status) => (
            match status.phase {
                Some(BackupPhase::Completed) => Some(metrics::Ended::Success),
                Some(BackupPhase::PartiallyFailed) => Some(metrics::Ended::PartialFailure),
                // It ends when its operations do (`operations`).
                Some(phase) if phase.is_finishing() => None,
                _ => Some(metrics::Ended::Failure),
            },
            status
                .progress
                .as_ref()
                .and_then(|p| p.items_backed_up)
                .unwrap_or_default(),
            status.errors.unwrap_or_default(),
        ),
        Err(_) => (Some(metrics::Ended::Failure), 0, 0),
    };
    let claim = operation::finish::<Backup>(&api, &name, outcome).await?;
    if let (patch::Claim::Won, Some(ended)) = (claim, ended) {
        kube.metrics
            .backup_ended(&schedule, ended, started.elapsed(), items, item_errors);
        kube.metrics.csi_snapshots(&schedule, &name, csi.0, csi.1);
    }
    if let (patch::Claim::Lost, true, Ok(open)) = (claim, uploaded, &open) {
        // Ended elsewhere meanwhile (another server marked it Failed): what this server uploaded
        // must not make a backup exist that its object says failed.
        open.store.remove_uploaded_backup(&name).await;
    }
    Ok(())
}

/// A backup's CSI snapshots as its status counts them: attempted, completed.
pub(crate) fn csi_counts(status: &BackupStatus) -> (u64, u64) {
    let count = |n: Option<i64>| u64::try_from(n.unwrap_or_default()).unwrap_or_default();
    (
        count(status.csi_volume_snapshots_attempted),
        count(status.csi_volume_snapshots_completed),
    )
}

/// Ends a New backup FailedValidation, with an expiration as Velero sets one, so that garbage
/// collection removes it in time.
async fn failed_validation(
    api: &Api<DynamicObject>,
    backup: &Backup,
    errors: Vec<String>,
    ttl: Duration,
) -> kube::Result<patch::Claim> {
    patch::claim(
        api,
        &backup.name_any(),
        backup.metadata.resource_version.as_deref(),
        json!({ "status": BackupStatus {
            expiration: Some(expiration_after(ttl)),
            ..<Backup as operation::Operation>::failed_validation(errors)
        } }),
    )
    .await
}

fn expiration_after(ttl: Duration) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        patch::now().0 + k8s_openapi::jiff::SignedDuration::try_from(ttl).unwrap_or_default(),
    )
}

/// Collects and uploads; the final status on success, the failure reason otherwise.
async fn back_up(
    api: &Api<DynamicObject>,
    name: &str,
    open: &OpenLocation,
    validated: &ValidatedBackup,
    ctx: &Ctx,
) -> Result<BackupStatus, String> {
    let mut record = Recorder::create(
        &ctx.scratch,
        format!("backup={}/{name}", ctx.kube.namespace),
    )
    .map_err(|e| format!("creating the backup log: {e}"))?;
    record.info(&format!("starting backup to location {}", open.name()));
    let current: Backup = objects::typed(&api.get(name).await.map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let attempt = Attempt {
        api,
        name,
        open,
        current: &current,
        validated,
        ctx,
    };
    attempt.not_in_bucket().await?;
    let collected = match attempt.collect(&mut record).await {
        Ok(collected) => collected,
        Err(error) => {
            record.failure(&error.to_string());
            return Err(error.to_string());
        }
    };
    if let Some(mover) = (current.spec.datamover.as_deref())
        .filter(|m| validated.move_data && !ark_api::is_built_in_data_mover(Some(m)))
    {
        record.general_warning(format!(
            "the CSI snapshots' data is left to data mover {mover:?}: ark's node agent moves only \
             Velero's built-in data mover's, and the backup waits for that one's DataUploads"
        ));
    }
    let operations = volume_snapshots::operations(&current, &collected.snapshots);
    let final_status = final_status(
        collected.items,
        record.errors(),
        record.warnings(),
        &collected.hook_results,
        &operations,
    );
    record.info(&format!(
        "backup {:?} with {} items, {} errors, {} warnings",
        final_status.phase.unwrap_or(BackupPhase::Completed),
        collected.items,
        record.errors(),
        record.warnings()
    ));
    attempt
        .upload(record, collected, &operations, &final_status)
        .await?;
    Ok(final_status)
}

/// One attempt at a backup, claimed InProgress: what it reads and where it writes.
struct Attempt<'a> {
    api: &'a Api<DynamicObject>,
    name: &'a str,
    open: &'a OpenLocation,
    /// The Backup as claimed.
    current: &'a Backup,
    validated: &'a ValidatedBackup,
    ctx: &'a Ctx,
}

impl Attempt<'_> {
    /// Velero's rule: a backup never replaces another of its name in the bucket (one whose Backup
    /// object was deleted and not yet synced back, or another cluster's on the same prefix).
    async fn not_in_bucket(&self) -> Result<(), String> {
        match self.open.store.backup_exists(self.name).await {
            Ok(false) => Ok(()),
            Ok(true) => Err("backup already exists in object storage".into()),
            Err(error) => Err(format!(
                "backup storage location {:?}: checking whether the backup already exists in object storage: {error}",
                self.open.name()
            )),
        }
    }

    /// The backup's items, pod volumes and snapshots, collected into scratch files, its progress
    /// reported on the way.
    async fn collect(&self, record: &mut Recorder) -> Result<Collected, engine::EngineError> {
        let (ctx, validated, current) = (self.ctx, self.validated, self.current);
        let (progress, _reporter) =
            operation::ProgressReporter::start::<Backup>(self.api.clone(), self.name.to_string());
        let pod_volume_timeout = current
            .annotations()
            .get(POD_VOLUME_TIMEOUT_ANNOTATION)
            .and_then(|t| {
                ark_api::duration::parse_or_default(Some(t), ctx.config.pod_volume_timeout).ok()
            })
            .unwrap_or(ctx.config.pod_volume_timeout);
        let methods = volume_methods::VolumeMethods::new(
            ctx.kube.client.clone(),
            validated.policies.clone(),
            validated.volumes_by_default,
        );
        let pod_volumes = pod_volumes::PodVolumes::new(
            ctx.kube.client.clone(),
            ctx.kube.namespace.clone(),
            current.clone(),
            self.open.name(),
            methods.clone(),
            pod_volume_timeout,
        );
        let snapshots = volume_snapshots::ClaimSnapshots::new(
            ctx.kube.client.clone(),
            current.clone(),
            methods,
            validated.durations.csi_snapshot_timeout,
            validated.move_data,
        );
        let pod_work = pod_work::PodWork::new(
            ctx.kube.client.clone(),
            validated.hooks.clone(),
            pod_volumes,
            snapshots.clone(),
            ctx.config.hook_pods_at_once,
        );
        engine::collect(engine::Collection {
            client: &ctx.kube.client,
            selection: &validated.selection,
            pod_work,
            snapshots,
            scratch: &ctx.scratch,
            record,
            progress: &progress,
        })
        .await
    }

    /// Uploads Velero's file set, the backup's metadata (`velero-backup.json`, with its final
    /// status) last: only while the backup is still this server's.
    async fn upload(
        &self,
        record: Recorder,
        collected: Collected,
        operations: &[ark_api::BackupOperation],
        final_status: &BackupStatus,
    ) -> Result<(), String> {
        let (api, name) = (self.api, self.name);
        let gzip_error = |e: std::io::Error| e.to_string();
        let (log, results) = record
            .finish()
            .map_err(|e| format!("finishing the backup log: {e}"))?;
        let volume_info = volume_snapshots::volume_info(self.current, &collected.snapshots);
        let none: [(); 0] = [];
        let files = BackupFiles {
            log,
            contents: collected.tarball,
            resource_list: collected.resource_list,
            results: gzip_json(&results).map_err(gzip_error)?,
            volume_snapshots: gzip_json(&none).map_err(gzip_error)?,
            // Its CSI entries tell deletion that the tarball holds snapshots to delete.
            volume_info: gzip_json(&volume_info).map_err(gzip_error)?,
            item_operations: gzip_json_unless_empty(operations).map_err(gzip_error)?,
            hook_results: gzip_json_unless_empty(&collected.hook_results).map_err(gzip_error)?,
            pod_volume_backups: gzip_json_unless_empty(&collected.pod_volume_backups)
                .map_err(gzip_error)?,
            metadata: uploaded_metadata(self.current, final_status)?,
        };
        // The metadata is what makes the backup exist: not if another server has ended it
        // meanwhile (this one paused past its lease, say). The end is checked again afterwards.
        let still_ours = async {
            let claim = patch::status_in_phase(
                api,
                name,
                BackupPhase::InProgress,
                &BackupStatus::default(),
            )
            .await
            .map_err(|e| format!("checking that the backup is still InProgress: {e}"))?;
            match claim {
                patch::Claim::Won => Ok(()),
                patch::Claim::Lost => {
                    Err("the backup was ended elsewhere while it was uploaded".to_string())
                }
            }
        };
        self.open
            .store
            .put_backup(name, files, still_ours)
            .await
            .map_err(|error| match error {
                PutBackupError::Upload(error) => {
                    format!("backup storage location {:?}: {error}", self.open.name())
                }
                PutBackupError::Refused(reason) => reason,
            })
    }
}

/// The backup's final status, from what it did. With snapshots not ready to use yet
/// (`operations` of them), the backup is uploaded and waits for them (`backup_operations`); it is
/// finalized once they end. Hooks are counted as Velero counts them: every hook is attempted,
/// those that ran and failed are failed; zero counts are left out (`omitempty`), and the hook
/// status is always there.
fn final_status(
    items: i64,
    errors: i64,
    warnings: i64,
    hook_results: &[ark_api::hooks::PodHookResults],
    operations: &[ark_api::BackupOperation],
) -> BackupStatus {
    let phase = match (errors > 0, operations.is_empty()) {
        (false, true) => BackupPhase::Completed,
        (true, true) => BackupPhase::PartiallyFailed,
        (false, false) => BackupPhase::WaitingForPluginOperations,
        (true, false) => BackupPhase::WaitingForPluginOperationsPartiallyFailed,
    };
    let counted = |n: i64| (n > 0).then_some(n);
    let hooks = hook_results.iter().flat_map(|pod| &pod.hooks);
    let attempted = hooks.clone().count() as i64;
    let failed = hooks.filter(|hook| hook.error.is_some()).count() as i64;
    BackupStatus {
        phase: Some(phase),
        completion_timestamp: phase.is_terminal().then(patch::now),
        // A snapshot whose data is moved is not backed up: Velero counts only the others.
        csi_volume_snapshots_attempted: counted(csi::snapshot_operations(operations) as i64),
        backup_item_operations_attempted: counted(operations.len() as i64),
        progress: Some(BackupProgress {
            items_backed_up: Some(items),
            total_items: Some(items),
        }),
        errors: Some(errors),
        warnings: Some(warnings),
        hook_status: Some(HookStatus {
            hooks_attempted: counted(attempted),
            hooks_failed: counted(failed),
        }),
        ..Default::default()
    }
}

/// The backup object as uploaded (`velero-backup.json`): the final status in it, as Velero
/// writes it.
fn uploaded_metadata(current: &Backup, final_status: &BackupStatus) -> Result<Bytes, String> {
    let mut uploaded = current.clone();
    let status = uploaded.status.get_or_insert_with(Default::default);
    status.phase = final_status.phase;
    status.completion_timestamp = final_status.completion_timestamp.clone();
    status.progress = final_status.progress.clone();
    status.errors = final_status.errors;
    status.warnings = final_status.warnings;
    status.hook_status = final_status.hook_status.clone();
    status.csi_volume_snapshots_attempted = final_status.csi_volume_snapshots_attempted;
    status.backup_item_operations_attempted = final_status.backup_item_operations_attempted;
    uploaded.metadata.managed_fields = None;
    let metadata = serde_json::to_value(&uploaded).map_err(|e| e.to_string())?;
    Ok(Bytes::from(
        serde_json::to_vec_pretty(&metadata).map_err(|e| e.to_string())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::hooks::{HookResult, PodHookResults};

    fn snapshot_operations(n: usize) -> Vec<ark_api::BackupOperation> {
        let mut operation = ark_api::BackupOperation::default();
        operation.spec.backup_item_action = csi::SNAPSHOT_ACTION.into();
        vec![operation; n]
    }

    fn pod_with_hooks(failed: usize, succeeded: usize) -> PodHookResults {
        let hook = |error: Option<&str>| HookResult {
            error: error.map(str::to_string),
            ..Default::default()
        };
        PodHookResults {
            hooks: std::iter::repeat_with(|| hook(Some("exit 1")))
                .take(failed)
                .chain(std::iter::repeat_with(|| hook(None)).take(succeeded))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_backup_ends_by_its_errors_and_its_snapshots_still_to_be_ready() {
        let phase = |errors, n| final_status(3, errors, 0, &[], &snapshot_operations(n)).phase;
        assert_eq!(phase(0, 0), Some(BackupPhase::Completed));
        assert_eq!(phase(1, 0), Some(BackupPhase::PartiallyFailed));
        assert_eq!(phase(0, 2), Some(BackupPhase::WaitingForPluginOperations));
        assert_eq!(
            phase(1, 2),
            Some(BackupPhase::WaitingForPluginOperationsPartiallyFailed)
        );
        // Only an ended backup has its completion time.
        let ended = |n| final_status(3, 0, 0, &[], &snapshot_operations(n)).completion_timestamp;
        assert!(ended(0).is_some());
        assert!(ended(1).is_none());
    }

    #[test]
    fn hooks_and_operations_are_counted_as_velero_counts_them() {
        let mut operations = snapshot_operations(2);
        // A snapshot whose data is moved is an operation, not a backed-up snapshot.
        operations[1].spec.backup_item_action = "velero.io/csi-pvc-backupper".into();
        let hooks = [pod_with_hooks(1, 2), pod_with_hooks(0, 1)];
        let status = final_status(7, 1, 2, &hooks, &operations);
        let hooks = status.hook_status.unwrap();
        assert_eq!(
            (hooks.hooks_attempted, hooks.hooks_failed),
            (Some(4), Some(1))
        );
        assert_eq!(status.csi_volume_snapshots_attempted, Some(1));
        assert_eq!(status.backup_item_operations_attempted, Some(2));
        assert_eq!((status.errors, status.warnings), (Some(1), Some(2)));
        let progress = status.progress.unwrap();
        assert_eq!(
            (progress.items_backed_up, progress.total_items),
            (Some(7), Some(7))
        );
        // Zero counts are left out; the hook status is always there.
        let none = final_status(0, 0, 0, &[], &[]);
        assert_eq!(none.hook_status, Some(HookStatus::default()));
        assert_eq!(none.csi_volume_snapshots_attempted, None);
    }
}
