//! The restore controller: a New Restore is validated, its backup downloaded and unpacked (safely),
//! its items created in Velero's order; logs and results go to `restores/<name>/`.

mod actions;
mod api_versions;
mod engine;
pub(crate) mod extract;
mod order;
pub use order::Priorities;
mod data_downloads;
mod pod_volumes;
pub mod preview;
mod requests;
mod transform;
mod validate;
mod volume_snapshots;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{
    DataDownload, HookStatus, PodVolumePhase, Restore, RestorePhase, RestoreProgress,
    RestoreStatus, labels,
};
use ark_storage::RestoreFiles;
use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use validate::ValidatedRestore;

use crate::domain::locations::{self, OpenLocation};
use crate::hooks;
use crate::records::recorder::Recorder;
use crate::records::resource_list::ResourceListWriter;
use crate::records::results::{gunzip_json, gzip_json, gzip_json_unless_empty};
use crate::runtime::context::Kube;
use crate::runtime::controller::ReconcileError;
use crate::runtime::objects::Summary;
use crate::runtime::operation::{self, Rejected};
use crate::runtime::{metrics, patch};

/// The restore controller's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Restores run at once.
    pub workers: u16,
    /// `itemOperationTimeout` of a restore that sets none.
    pub default_item_operation_timeout: Duration,
    /// How long a restore waits, at most, for the exec hooks of its pods.
    pub hooks_timeout: Duration,
    /// Exec hook commands one restore runs at once.
    pub hook_execs_at_once: u16,
    /// Items of one resource a restore creates at once.
    pub items_at_once: u16,
    /// The image of the `restore-wait` init container (ark's own); without one, no pod volume
    /// data is restored.
    pub helper_image: Option<String>,
    /// How long a restore waits, at most, for its pod volume restores.
    pub pod_volume_timeout: Duration,
    /// The order resources are restored in (Velero's `--restore-resource-priorities`).
    pub priorities: order::Priorities,
    /// Whether each resource is restored at the version Velero's priorities choose among those a
    /// backup of every version holds (Velero's `--features=EnableAPIGroupVersions`).
    pub every_api_version: bool,
}

pub struct Ctx {
    pub kube: Kube,
    pub config: Config,
    /// Where backups are downloaded and unpacked; never the object store.
    pub scratch: PathBuf,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    for restore in operation::interrupted::<Restore>(&ctx.kube).await {
        operation::fail_interrupted::<Restore>(&ctx.kube, &restore).await;
    }
    let workers = ctx.config.workers;
    operation::run::<Restore, _, _, _>(ctx, workers, reconcile).await;
}

async fn reconcile(cached: Arc<Summary<Restore>>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    let Some(restore) = operation::claimable::<Restore>(&ctx.kube, &cached).await? else {
        return Ok(Action::await_change());
    };
    process(&restore, &ctx).await?;
    Ok(Action::await_change())
}

async fn process(restore: &Restore, ctx: &Ctx) -> Result<(), kube::Error> {
    let kube = &ctx.kube;
    let api = operation::api::<Restore>(kube);
    let name = restore.name_any();
    let resource_version = restore.metadata.resource_version.as_deref();
    // Velero labels a restore's metrics with its `scheduleName`.
    let schedule = restore
        .spec
        .unmodelled
        .get("scheduleName")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let validated = match validate::validate(restore, &kube.client, &kube.namespace, &ctx.config)
        .await
    {
        Ok(validated) => validated,
        Err(Rejected::Invalid(errors)) => {
            let status = <Restore as operation::Operation>::failed_validation(errors);
            let claim =
                patch::claim(&api, &name, resource_version, json!({ "status": status })).await?;
            if claim == patch::Claim::Won {
                kube.metrics.restore_attempted(&schedule);
                kube.metrics.restore_failed_validation(&schedule);
            }
            return Ok(());
        }
        // Still New: validated again when the controller retries.
        Err(Rejected::Unreadable(error)) => return Err(error),
    };
    let claim = patch::claim(
        &api,
        &name,
        resource_version,
        json!({
            "metadata": { "labels": { labels::BACKUP_NAME: labels::valid_label_value(&restore.spec.backup_name) } },
            // Velero's default, written as Velero's restore controller writes it.
            "spec": { "itemOperationTimeout": ark_api::duration::format(validated.item_operation_timeout) },
            "status": RestoreStatus {
                phase: Some(RestorePhase::InProgress),
                start_timestamp: Some(patch::now()),
                ..Default::default()
            },
        }),
    )
    .await?;
    if claim == patch::Claim::Lost {
        return Ok(());
    }
    kube.metrics.restore_attempted(&schedule);
    let location = validated
        .backup
        .spec
        .storage_location
        .clone()
        .unwrap_or_default();
    let outcome = match locations::open_named(&kube.client, &kube.namespace, &location).await {
        Ok(open) => restore_from(&api, restore, &open, &validated, ctx).await,
        Err(error) => Err(error.to_string()),
    };
    let ended = match &outcome {
        Ok(status) => match status.phase {
            Some(RestorePhase::Completed) => metrics::Ended::Success,
            Some(RestorePhase::PartiallyFailed) => metrics::Ended::PartialFailure,
            _ => metrics::Ended::Failure,
        },
        Err(_) => metrics::Ended::Failure,
    };
    if operation::finish::<Restore>(&api, &name, outcome).await? == patch::Claim::Won {
        kube.metrics.restore_ended(&schedule, ended);
    }
    Ok(())
}

/// Downloads and unpacks the backup, restores its items, then what follows them (pod volume data,
/// exec hooks, snapshots becoming ready), and uploads the restore's records; the final status on
/// success, the failure reason otherwise.
async fn restore_from(
    api: &Api<DynamicObject>,
    restore: &Restore,
    open: &OpenLocation,
    validated: &ValidatedRestore,
    ctx: &Ctx,
) -> Result<RestoreStatus, String> {
    let name = restore.name_any();
    let backup_name = &restore.spec.backup_name;
    let mut record = Recorder::create(
        &ctx.scratch,
        format!("restore={}/{name}", ctx.kube.namespace),
    )
    .map_err(|e| format!("creating the restore log: {e}"))?;
    record.info(&format!(
        "starting restore from backup {backup_name} in location {}",
        open.name()
    ));
    let unpacked = unpack(open, backup_name, &ctx.scratch).await?;
    let restore_uid = restore.metadata.uid.clone().unwrap_or_default();
    let volume_data = pod_volumes::VolumeData {
        backed_up: &unpacked.pod_volumes,
        helper_image: ctx.config.helper_image.as_deref(),
        restore_uid: &restore_uid,
    };
    let mut resource_list =
        ResourceListWriter::create(&ctx.scratch).map_err(|e| format!("scratch file: {e}"))?;
    let (progress, reporter) =
        operation::ProgressReporter::start::<Restore>(api.clone(), name.clone());
    let restored = engine::restore(engine::RestoreInput {
        client: &ctx.kube.client,
        spec: &restore.spec,
        selection: &validated.selection,
        restore_name: &name,
        restore_uid: &restore_uid,
        unpacked: unpacked.extracted.dir.path(),
        resource_list: &mut resource_list,
        record: &mut record,
        progress: &progress,
        items_at_once: ctx.config.items_at_once.max(1).into(),
        resource_modifiers: validated.resource_modifiers.as_ref(),
        volume_data: Some(&volume_data),
        dry_run: false,
    })
    .await;
    drop(reporter);
    let restored = restored.map_err(|e| format!("restoring: {e}"))?;
    for rejected in &unpacked.extracted.rejected.velero {
        record.general_error(rejected.clone());
    }
    record.omitted_errors(unpacked.extracted.rejected.omitted);
    let items = restored.items;
    let (hook_results, downloads) =
        after_items(ctx, restore, validated, open, restored, &mut record).await;
    let mut final_status = final_status(items, record.errors(), record.warnings(), &hook_results);
    count_operations(&mut final_status, &downloads);
    let phase = final_status.phase.map(|p| format!("{p:?}"));
    record.info(&format!(
        "restore {}: {items} items, {} errors, {} warnings",
        phase.unwrap_or_default(),
        record.errors(),
        record.warnings()
    ));
    if open.location.is_read_only() {
        // A ReadOnly location is never written, not even with this restore's logs.
        tracing::info!(
            "restore {name}: location {} is read-only: logs and results stay out of the bucket",
            open.name()
        );
        return Ok(final_status);
    }
    upload(open, &name, record, resource_list, &hook_results).await?;
    Ok(final_status)
}

/// A backup as a restore reads it: its tarball unpacked, and its pod volume backups.
struct Unpacked {
    extracted: extract::Extracted,
    pod_volumes: pod_volumes::BackedUp,
}

async fn unpack(
    open: &OpenLocation,
    backup_name: &str,
    scratch: &std::path::Path,
) -> Result<Unpacked, String> {
    Ok(Unpacked {
        extracted: download(open, backup_name, scratch).await?,
        pod_volumes: pod_volumes::BackedUp::new(pod_volume_backups(open, backup_name).await?),
    })
}

/// The backup's tarball, downloaded to scratch and unpacked there (safely: see `extract`).
pub(crate) async fn download(
    open: &OpenLocation,
    backup_name: &str,
    scratch: &std::path::Path,
) -> Result<extract::Extracted, String> {
    let tarball = tempfile::tempfile_in(scratch).map_err(|e| format!("scratch file: {e}"))?;
    open.store
        .download_backup_contents(
            backup_name,
            &tarball,
            crate::records::archive::MAX_TARBALL_BYTES,
        )
        .await
        .map_err(|e| {
            format!(
                "backup storage location {:?}: downloading the backup: {e}",
                open.name()
            )
        })?;
    let scratch = scratch.to_path_buf();
    tokio::task::spawn_blocking(move || {
        extract::extract(tarball, &scratch, extract::Limits::default())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("backup {backup_name}: {e}"))
}

/// The backup's pod volume backups, as it uploaded them (a backup without any has no file).
async fn pod_volume_backups(
    open: &OpenLocation,
    backup_name: &str,
) -> Result<Vec<ark_api::PodVolumeBackup>, String> {
    let store = &open.store;
    match store
        .get(&store.layout.backup_pod_volume_backups(backup_name))
        .await
    {
        // Velero writes `null` for a backup without any.
        Ok(bytes) => Ok(
            gunzip_json::<Option<_>>(&bytes, "the backup's pod volume backups")
                .map_err(|e| format!("backup {backup_name}: {e}"))?
                .unwrap_or_default(),
        ),
        Err(error) if error.is_not_found() => Ok(Vec::new()),
        Err(error) => Err(format!(
            "backup storage location {:?}: reading the backup's pod volume backups: {error}",
            open.name()
        )),
    }
}

/// What follows the items, side by side: the node agents write the pod volumes' data and the
/// moved data back, the exec hooks run (they wait for their containers, which start once the
/// volumes hold their data), and the restored snapshots become ready. Each hook's outcome is
/// returned, and the DataDownloads as they ended.
async fn after_items(
    ctx: &Ctx,
    restore: &Restore,
    validated: &ValidatedRestore,
    open: &OpenLocation,
    restored: engine::Restored,
    record: &mut Recorder,
) -> (Vec<ark_api::hooks::PodHookResults>, Vec<DataDownload>) {
    let location = open.name();
    let volume_restores = pod_volumes::restore(
        &ctx.kube.client,
        &ctx.kube.namespace,
        restore,
        &location,
        restored.pods_with_volume_data,
        ctx.config.pod_volume_timeout,
    );
    let restore_name = restore.name_any();
    let hooks = run_hooks(ctx, &restore_name, restored.pods_with_hooks);
    let snapshots = volume_snapshots::wait_ready(&ctx.kube.client, restored.claims_from_snapshots);
    let downloads = data_downloads::Downloads {
        client: &ctx.kube.client,
        namespace: &ctx.kube.namespace,
        restore,
        backup: &validated.backup,
        timeout: validated.item_operation_timeout,
    };
    let downloads = downloads.run(restored.claims_with_moved_data);
    let (
        (pod_volume_restores, volume_errors),
        hook_results,
        snapshot_errors,
        (downloads, download_errors),
    ) = tokio::join!(volume_restores, hooks, snapshots, downloads);
    for pvr in &pod_volume_restores {
        let phase = pvr.status.as_ref().and_then(|s| s.phase);
        record.info(&format!(
            "pod volume restore {} of pod {}/{} volume {}: {phase:?}",
            pvr.name_any(),
            pvr.spec.pod.namespace,
            pvr.spec.pod.name,
            pvr.spec.volume
        ));
    }
    for download in &downloads {
        let target = &download.spec.target_volume;
        let phase = download.status.as_ref().and_then(|s| s.phase);
        record.info(&format!(
            "data download {} of claim {}/{}: {phase:?}",
            download.name_any(),
            target.namespace,
            target.pvc
        ));
    }
    let errors = volume_errors.into_iter().chain(snapshot_errors);
    for (namespace, error) in errors.chain(download_errors) {
        let namespace = Some(namespace.as_str()).filter(|n| !n.is_empty());
        record.error(namespace, error);
    }
    record.hook_outcomes(&hook_results);
    (hook_results, downloads)
}

/// The restore's item operations (its DataDownloads), counted as Velero counts them: each one
/// attempted, then completed or failed (canceled counts as failed); none shown without any.
fn count_operations(status: &mut RestoreStatus, downloads: &[DataDownload]) {
    if downloads.is_empty() {
        return;
    }
    let phase = |d: &&DataDownload| d.status.as_ref().and_then(|s| s.phase);
    let count = |wanted: &[PodVolumePhase]| {
        let counted = downloads
            .iter()
            .filter(|d| phase(d).is_some_and(|p| wanted.contains(&p)));
        counted.count() as i64
    };
    status.restore_item_operations_attempted = Some(downloads.len() as i64);
    status.restore_item_operations_completed = Some(count(&[PodVolumePhase::Completed]));
    status.restore_item_operations_failed =
        Some(count(&[PodVolumePhase::Failed, PodVolumePhase::Canceled]));
}

/// The restore's final status, from what it did: PartiallyFailed with any error, hooks counted as
/// Velero counts them (zero counts left out, `omitempty`).
fn final_status(
    items: i64,
    errors: i64,
    warnings: i64,
    hook_results: &[ark_api::hooks::PodHookResults],
) -> RestoreStatus {
    let hooks = hook_results.iter().flat_map(|p| &p.hooks);
    let attempted = hooks.clone().count() as i64;
    let failed = hooks.filter(|h| !h.succeeded).count() as i64;
    let phase = if errors > 0 {
        RestorePhase::PartiallyFailed
    } else {
        RestorePhase::Completed
    };
    RestoreStatus {
        phase: Some(phase),
        completion_timestamp: Some(patch::now()),
        progress: Some(RestoreProgress {
            items_restored: Some(items),
            total_items: Some(items),
        }),
        errors: Some(errors),
        warnings: Some(warnings),
        hook_status: (attempted > 0).then(|| HookStatus {
            hooks_attempted: Some(attempted),
            hooks_failed: (failed > 0).then_some(failed),
        }),
        ..Default::default()
    }
}

/// Uploads the restore's log, results, resource list and hook results to `restores/<name>/`.
async fn upload(
    open: &OpenLocation,
    name: &str,
    record: Recorder,
    resource_list: ResourceListWriter,
    hook_results: &[ark_api::hooks::PodHookResults],
) -> Result<(), String> {
    let (log, results) = record
        .finish()
        .map_err(|e| format!("finishing the restore log: {e}"))?;
    let files = RestoreFiles {
        log,
        results: gzip_json(&results).map_err(|e| e.to_string())?,
        resource_list: resource_list.finish().map_err(|e| e.to_string())?,
        hook_results: gzip_json_unless_empty(hook_results).map_err(|e| e.to_string())?,
    };
    open.store
        .put_restore_outputs(name, files)
        .await
        .map_err(|e| format!("backup storage location {:?}: {e}", open.name()))
}

/// Runs the exec hooks of the restored pods, pods in parallel (bounded), all within the server's
/// hooks timeout.
async fn run_hooks(
    ctx: &Ctx,
    restore_name: &str,
    pods: Vec<engine::PodWithHooks>,
) -> Vec<ark_api::hooks::PodHookResults> {
    if pods.is_empty() {
        return Vec::new();
    }
    // Every pod the restore created carries its label.
    let selector = format!(
        "{}={}",
        labels::RESTORE_NAME,
        labels::valid_label_value(restore_name)
    );
    let client = &ctx.kube.client;
    let (restored, watching) = hooks::exec::RestoredPods::watch(client, &selector);
    let shared = &hooks::exec::Shared {
        client,
        restored: &restored,
        execs: &tokio::sync::Semaphore::new(ctx.config.hook_execs_at_once.max(1).into()),
        deadline: tokio::time::Instant::now() + ctx.config.hooks_timeout,
    };
    let running = pods
        .into_iter()
        .map(|pod| async move {
            let hooks = hooks::exec::run_pod(
                shared,
                &pod.namespace,
                &pod.name,
                &pod.hooks.exec,
                pod.created,
            )
            .await;
            ark_api::hooks::PodHookResults {
                init_containers: pod.hooks.init.iter().map(|c| c.name.clone()).collect(),
                namespace: pod.namespace,
                pod: pod.name,
                hooks,
                left_out: None,
            }
        })
        .collect::<futures::stream::FuturesUnordered<_>>()
        .collect::<Vec<_>>();
    let mut done = tokio::select! {
        done = running => done,
        never = watching => match never {},
    };
    done.sort_by(|a, b| (&a.namespace, &a.pod).cmp(&(&b.namespace, &b.pod)));
    done
}
