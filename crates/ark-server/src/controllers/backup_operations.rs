//! Backups whose items are uploaded and whose CSI snapshots are not ready to use yet (Velero's
//! backup operations and backup finalizer controllers). While a backup is
//! WaitingForPluginOperations, each of its item operations is checked until it ends or the
//! backup's `itemOperationTimeout` passes since it was created: every
//! `--item-operation-sync-frequency`, and as soon as a DataUpload it owns ends (Velero waits for
//! its next check). Then the backup is Finalizing:
//! the VolumeSnapshots and contents are written into its tarball again as they ended, removed
//! from the cluster (each storage snapshot kept: `Retain`), and the backup ends Completed or
//! PartiallyFailed. Everything is read back from the bucket and the cluster on each pass, so a
//! new leader takes a backup up where the last one left it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{
    Backup, BackupOperation, BackupPhase, BackupStatus, BackupVolumeInfo, DataUpload,
    OperationPhase, PodVolumePhase, ResourceIdentifier, VOLUME_FAILED, VOLUME_SUCCEEDED,
};
use ark_storage::tarball::{item_path, preferred_version_path};
use ark_storage::{BackupStore, FinalizedFiles};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt as _};
use serde_json::{Value, json};

use crate::domain::csi::{self, ContentStatus, SnapshotStatus, text};
use crate::domain::locations;
use crate::records::archive::TarballWriter;
use crate::records::results::{Results, gunzip_json, gzip_json};
use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Summary};
use crate::runtime::{metrics, operation, patch};

/// Velero's default `itemOperationTimeout`, for a backup whose spec has none.
const ITEM_OPERATION_TIMEOUT: Duration = Duration::from_secs(4 * 3600);

pub struct Ctx {
    pub kube: Kube,
    pub scratch: PathBuf,
    /// How often a waiting backup's operations are checked (Velero's
    /// `--item-operation-sync-frequency`).
    pub frequency: Duration,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    // A backup whose data uploads end is checked then, not at its next check.
    let woken = controller::Woken::ByEndOf(objects::resource::<DataUpload>());
    controller::run_summarized::<Backup, _, _, _>(ctx, "backup operations", 0, woken, reconcile)
        .await;
}

async fn reconcile(cached: Arc<Summary<Backup>>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    if !finishing(cached.phase()) {
        return Ok(Action::await_change());
    }
    // Boxed: every backup is handed here at start-up, and only the finishing ones hold its state.
    Box::pin(reconcile_finishing(cached, ctx)).await
}

fn finishing(phase: objects::Phase<BackupPhase>) -> bool {
    matches!(phase, objects::Phase::Known(phase) if phase.is_finishing())
}

async fn reconcile_finishing(
    cached: Arc<Summary<Backup>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    // Decided on a fresh read: the cache may predate this controller's own last write.
    let Some(fresh) = cached.read(&ctx.kube.client).await? else {
        return Ok(Action::await_change());
    };
    if !finishing(fresh.phase()) {
        return Ok(Action::await_change());
    }
    let Ok(backup) = fresh.read else {
        return Ok(Action::await_change());
    };
    match finish(&backup, &ctx).await {
        Ok(Next::Wait) => Ok(Action::requeue(ctx.frequency)),
        Ok(Next::Done) => Ok(Action::await_change()),
        Err(error) => {
            // The bucket or the API server gone a while: the backup waits where it is.
            tracing::warn!(
                "backup {}: {error}; again in {:?}",
                backup.name_any(),
                ctx.frequency
            );
            Ok(Action::requeue(ctx.frequency))
        }
    }
}

enum Next {
    Wait,
    Done,
}

async fn finish(backup: &Backup, ctx: &Ctx) -> Result<Next, String> {
    let name = backup.name_any();
    let kube = &ctx.kube;
    let phase = backup
        .status
        .as_ref()
        .and_then(|s| s.phase)
        .unwrap_or(BackupPhase::New);
    let location = backup.spec.storage_location.clone().unwrap_or_default();
    let open = locations::open_named(&kube.client, &kube.namespace, &location)
        .await
        .map_err(|e| e.to_string())?;
    let store = &open.store;
    let mut operations: Vec<BackupOperation> = match store
        .get_item_operations(&name)
        .await
        .map_err(|e| format!("reading its item operations: {e}"))?
    {
        Some(bytes) => gunzip_json::<Option<_>>(&bytes, "item operations")?.unwrap_or_default(),
        None => Vec::new(),
    };
    let api = operation::api::<Backup>(kube);
    if matches!(
        phase,
        BackupPhase::WaitingForPluginOperations
            | BackupPhase::WaitingForPluginOperationsPartiallyFailed
    ) {
        let timeout = ark_api::duration::parse_or_default(
            backup.spec.item_operation_timeout.as_deref(),
            ITEM_OPERATION_TIMEOUT,
        )
        .unwrap_or(ITEM_OPERATION_TIMEOUT);
        if progress(&mut operations, kube, timeout).await {
            store
                .put_item_operations(&name, gzip_json(&operations).map_err(|e| e.to_string())?)
                .await
                .map_err(|e| format!("writing its item operations: {e}"))?;
        }
        if operations.iter().any(|o| !o.status.phase.is_final()) {
            return Ok(Next::Wait);
        }
        let finalizing = if phase.is_partially_failed() || failed(&operations) > 0 {
            BackupPhase::FinalizingPartiallyFailed
        } else {
            BackupPhase::Finalizing
        };
        let status = BackupStatus {
            phase: Some(finalizing),
            ..counters(&operations)
        };
        if patch::status_in_phase(&api, &name, phase, &status)
            .await
            .map_err(|e| e.to_string())?
            == patch::Claim::Lost
        {
            return Ok(Next::Done);
        }
        // Finalized on the change this write brings.
        return Ok(Next::Done);
    }
    finalize(backup, phase, &operations, store, ctx).await?;
    Ok(Next::Done)
}

/// Checks each operation not ended yet; whether any changed.
async fn progress(operations: &mut [BackupOperation], kube: &Kube, timeout: Duration) -> bool {
    let mut changed = false;
    for operation in operations.iter_mut().filter(|o| !o.status.phase.is_final()) {
        let progress = match data_upload_of(operation) {
            Some(upload) => data_upload_progress(operation, upload, kube, timeout).await,
            None => snapshot_progress(operation, kube, timeout).await,
        };
        let Some((phase, error)) = progress else {
            continue;
        };
        let status = &mut operation.status;
        if status.phase != phase || status.error != error {
            status.phase = phase;
            status.error = error;
            status.updated = Some(patch::now());
            changed = true;
        }
    }
    changed
}

/// Where one snapshot operation stands (Velero's VolumeSnapshot action's `Progress`): ready to
/// use, failed by the driver or deleted, timed out, or still in progress; None when it could not
/// be read (the API server gone a moment).
async fn snapshot_progress(
    operation: &BackupOperation,
    kube: &Kube,
    timeout: Duration,
) -> Option<(OperationPhase, String)> {
    let item = &operation.spec.resource_identifier;
    let snapshot = csi::volume_snapshots(&kube.client, &item.namespace)
        .get_opt(&item.name)
        .await
        .ok()?;
    let shown = format!("VolumeSnapshot {}/{}", item.namespace, item.name);
    let claim = snapshot
        .as_ref()
        .and_then(|s| text(&s.data, "/spec/source/persistentVolumeClaimName"))
        .map(|c| format!("claim {}/{c}: ", item.namespace))
        .unwrap_or_default();
    let Some(snapshot) = snapshot else {
        return Some((
            OperationPhase::Failed,
            format!("{shown} was deleted before it was ready to use"),
        ));
    };
    let status = SnapshotStatus::of(&snapshot.data);
    if status.ready_to_use {
        return Some((OperationPhase::Completed, String::new()));
    }
    if let Some(error) = status.error {
        return Some((
            OperationPhase::Failed,
            format!("{claim}{shown} failed: {error}"),
        ));
    }
    if timed_out(operation, timeout)? {
        return Some((
            OperationPhase::Failed,
            format!(
                "{claim}{shown} was not ready to use within the backup's itemOperationTimeout of {}",
                ark_api::duration::format(timeout)
            ),
        ));
    }
    Some((OperationPhase::InProgress, String::new()))
}

/// The DataUpload an operation waits for, when it moves a snapshot's data.
fn data_upload_of(operation: &BackupOperation) -> Option<&ResourceIdentifier> {
    (operation.spec.post_operation_items.iter()).find(|i| i.resource == "datauploads")
}

/// Where one data upload stands (Velero's PVC action's `Progress`): its DataUpload ended, or
/// still at work; past the backup's `itemOperationTimeout` it is canceled (its node agent
/// stops and removes what it exposed) and failed. None when it could not be read.
async fn data_upload_progress(
    operation: &BackupOperation,
    upload: &ResourceIdentifier,
    kube: &Kube,
    timeout: Duration,
) -> Option<(OperationPhase, String)> {
    let api = Api::<DataUpload>::namespaced(kube.client.clone(), &upload.namespace);
    let claim = &operation.spec.resource_identifier;
    let shown = format!(
        "claim {}/{}: DataUpload {}",
        claim.namespace, claim.name, upload.name
    );
    let Some(found) = api.get_opt(&upload.name).await.ok()? else {
        return Some((
            OperationPhase::Failed,
            format!("{shown} was deleted before its data was moved"),
        ));
    };
    let status = found.status.unwrap_or_default();
    let message = status.message.unwrap_or_default();
    match status.phase {
        Some(PodVolumePhase::Completed) => return Some((OperationPhase::Completed, String::new())),
        Some(PodVolumePhase::Failed) => {
            return Some((OperationPhase::Failed, format!("{shown} failed: {message}")));
        }
        Some(PodVolumePhase::Canceled) => {
            return Some((
                OperationPhase::Failed,
                format!("{shown} was canceled: {message}"),
            ));
        }
        _ => {}
    }
    if timed_out(operation, timeout)? {
        let cancel = json!({ "spec": { "cancel": true } });
        api.patch(
            &upload.name,
            &PatchParams::default(),
            &Patch::Merge(&cancel),
        )
        .await
        .ok()?;
        return Some((
            OperationPhase::Failed,
            format!(
                "{shown} did not end within the backup's itemOperationTimeout of {}: canceled",
                ark_api::duration::format(timeout)
            ),
        ));
    }
    Some((OperationPhase::InProgress, String::new()))
}

/// Whether `timeout` has passed since the operation was created; None when it has no creation
/// time.
fn timed_out(operation: &BackupOperation, timeout: Duration) -> Option<bool> {
    let created = operation.status.created.as_ref().map(|t| t.0)?;
    let deadline = created + SignedDuration::try_from(timeout).unwrap_or(SignedDuration::MAX);
    Some(Timestamp::now() > deadline)
}

fn failed(operations: &[BackupOperation]) -> i64 {
    operations
        .iter()
        .filter(|o| o.status.phase == OperationPhase::Failed)
        .count() as i64
}

fn counters(operations: &[BackupOperation]) -> BackupStatus {
    let completed: Vec<BackupOperation> = operations
        .iter()
        .filter(|o| o.status.phase == OperationPhase::Completed)
        .cloned()
        .collect();
    let counted = |n: i64| (n > 0).then_some(n);
    BackupStatus {
        backup_item_operations_completed: counted(completed.len() as i64),
        backup_item_operations_failed: counted(failed(operations)),
        csi_volume_snapshots_completed: counted(csi::snapshot_operations(&completed) as i64),
        ..Default::default()
    }
}

/// The backup's items its operations named, written again as they ended; its volume information,
/// results and metadata with the outcome; then the snapshots removed from the cluster.
async fn finalize(
    backup: &Backup,
    phase: BackupPhase,
    operations: &[BackupOperation],
    store: &BackupStore,
    ctx: &Ctx,
) -> Result<(), String> {
    let name = backup.name_any();
    let client = &ctx.kube.client;
    let replaced = items_as_ended(client, operations).await?;
    let uploads = data_uploads_in(&replaced, operations);
    let contents = rewritten_contents(ctx, store, &name, replaced).await?;
    let results = results_with_operation_errors(store, &name, operations).await?;
    let volume_info = volume_info_as_ended(store, &name, operations, &uploads).await?;
    let status = ended_status(phase, results.errors.count(), operations);
    let uploaded = uploaded_metadata(backup, &status);
    let gzip_error = |e: std::io::Error| e.to_string();
    store
        .put_finalized_backup(
            &name,
            FinalizedFiles {
                contents,
                results: gzip_json(&results).map_err(gzip_error)?,
                volume_info: gzip_json(&volume_info).map_err(gzip_error)?,
                item_operations: gzip_json(&operations).map_err(gzip_error)?,
                metadata: serde_json::to_vec_pretty(&uploaded)
                    .map_err(|e| e.to_string())?
                    .into(),
            },
        )
        .await
        .map_err(|e| e.to_string())?;

    for operation in operations.iter().filter(|o| data_upload_of(o).is_none()) {
        remove_snapshot(client, operation).await?;
    }
    // A snapshot whose data was not moved (its upload failed, was canceled or never taken on)
    // is left where it was cut: nothing holds it now.
    super::backup::remove_cut(client, &name, &backup.uid().unwrap_or_default()).await?;
    let api = operation::api::<Backup>(&ctx.kube);
    let claim = patch::status_in_phase(&api, &name, phase, &status)
        .await
        .map_err(|e| e.to_string())?;
    if claim == patch::Claim::Won {
        record_ended(&ctx.kube, backup, &status);
    }
    Ok(())
}

/// The items the operations named, as they ended, by their paths in the tarball (the preferred
/// version's and the plain one).
async fn items_as_ended(
    client: &kube::Client,
    operations: &[BackupOperation],
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut replaced = BTreeMap::new();
    for operation in operations {
        for item in &operation.spec.post_operation_items {
            if let Some(json) = item_as_ended(client, item).await? {
                let (gr, namespace) = (
                    format!("{}.{}", item.resource, item.group),
                    Some(item.namespace.as_str()).filter(|n| !n.is_empty()),
                );
                let version = if item.resource == "datauploads" {
                    "v2alpha1"
                } else {
                    "v1"
                };
                replaced.insert(
                    preferred_version_path(&gr, version, namespace, &item.name),
                    json.clone(),
                );
                replaced.insert(item_path(&gr, namespace, &item.name), json);
            }
        }
    }
    Ok(replaced)
}

/// The backup's tarball downloaded and written again with the `replaced` items; None when
/// nothing is replaced.
async fn rewritten_contents(
    ctx: &Ctx,
    store: &BackupStore,
    name: &str,
    replaced: BTreeMap<String, Vec<u8>>,
) -> Result<Option<std::fs::File>, String> {
    if replaced.is_empty() {
        return Ok(None);
    }
    let source = tempfile::tempfile_in(&ctx.scratch).map_err(|e| e.to_string())?;
    store
        .download_backup_contents(name, &source, crate::records::archive::MAX_TARBALL_BYTES)
        .await
        .map_err(|e| format!("reading its tarball: {e}"))?;
    let scratch = ctx.scratch.clone();
    let rewritten =
        tokio::task::spawn_blocking(move || TarballWriter::rewrite(source, &replaced, &scratch))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("writing its tarball again: {e}"))?;
    Ok(Some(rewritten))
}

/// The backup's results with the error of each failed operation added.
async fn results_with_operation_errors(
    store: &BackupStore,
    name: &str,
    operations: &[BackupOperation],
) -> Result<Results, String> {
    let mut results: Results = match store
        .get_backup_results(name)
        .await
        .map_err(|e| format!("reading its results: {e}"))?
    {
        Some(bytes) => gunzip_json(&bytes, "results")?,
        None => Results::default(),
    };
    for operation in operations.iter().filter(|o| !o.status.error.is_empty()) {
        let namespace = operation.spec.resource_identifier.namespace.as_str();
        let listed = results.errors.namespaces.get(namespace);
        // Once, however many times the backup is finalized.
        if !listed.is_some_and(|l| l.contains(&operation.status.error)) {
            results
                .errors
                .add(Some(namespace), operation.status.error.clone());
        }
    }
    Ok(results)
}

/// The DataUploads the operations named, as they ended (read into the tarball's items).
fn data_uploads_in(
    replaced: &BTreeMap<String, Vec<u8>>,
    operations: &[BackupOperation],
) -> Vec<DataUpload> {
    operations
        .iter()
        .filter_map(data_upload_of)
        .filter_map(|item| {
            let path = item_path(csi::DATA_UPLOADS, Some(&item.namespace), &item.name);
            serde_json::from_slice(replaced.get(&path)?).ok()
        })
        .collect()
}

/// The backup's volume information with each snapshot's outcome; empty when it has none.
async fn volume_info_as_ended(
    store: &BackupStore,
    name: &str,
    operations: &[BackupOperation],
    uploads: &[DataUpload],
) -> Result<Vec<BackupVolumeInfo>, String> {
    let bytes = store
        .get_volume_info(name)
        .await
        .map_err(|e| format!("reading its volume information: {e}"))?;
    Ok(match bytes {
        Some(bytes) => ended_volume_info(
            gunzip_json::<Option<_>>(&bytes, "volume information")?.unwrap_or_default(),
            operations,
            uploads,
        ),
        None => Vec::new(),
    })
}

/// The status the backup ends with: PartiallyFailed when it was already or has `errors`,
/// Completed otherwise, with the operations' counters.
fn ended_status(phase: BackupPhase, errors: i64, operations: &[BackupOperation]) -> BackupStatus {
    let ended = if phase.is_partially_failed() || errors > 0 {
        BackupPhase::PartiallyFailed
    } else {
        BackupPhase::Completed
    };
    BackupStatus {
        phase: Some(ended),
        completion_timestamp: Some(patch::now()),
        errors: Some(errors),
        ..counters(operations)
    }
}

/// The backup's metadata as uploaded to the bucket: the object with the `ended` status fields.
fn uploaded_metadata(backup: &Backup, ended: &BackupStatus) -> Backup {
    let mut uploaded = backup.clone();
    uploaded.metadata.managed_fields = None;
    let current = uploaded.status.get_or_insert_with(Default::default);
    current.phase = ended.phase;
    current.completion_timestamp = ended.completion_timestamp.clone();
    current.errors = ended.errors;
    current.backup_item_operations_completed = ended.backup_item_operations_completed;
    current.backup_item_operations_failed = ended.backup_item_operations_failed;
    current.csi_volume_snapshots_completed = ended.csi_volume_snapshots_completed;
    uploaded
}

/// Counts the backup's end in Velero's metrics: its outcome, how long it took since it started,
/// its items and errors.
fn record_ended(kube: &Kube, backup: &Backup, ended: &BackupStatus) {
    let schedule = backup
        .labels()
        .get(ark_api::labels::SCHEDULE_NAME)
        .cloned()
        .unwrap_or_default();
    let outcome = match ended.phase {
        Some(BackupPhase::Completed) => metrics::Ended::Success,
        _ => metrics::Ended::PartialFailure,
    };
    let took = backup
        .status
        .as_ref()
        .and_then(|s| s.start_timestamp.as_ref())
        .and_then(|start| Duration::try_from(Timestamp::now().duration_since(start.0)).ok())
        .unwrap_or_default();
    let items = backup
        .status
        .as_ref()
        .and_then(|s| s.progress.as_ref())
        .and_then(|p| p.items_backed_up)
        .unwrap_or_default();
    let errors = ended.errors.unwrap_or_default();
    kube.metrics
        .backup_ended(&schedule, outcome, took, items, errors);
    // Attempted in the main pass, completed as the operations ended.
    let attempted = backup
        .status
        .as_ref()
        .map_or(0, |status| super::backup::csi_counts(status).0);
    let (_, completed) = super::backup::csi_counts(ended);
    kube.metrics
        .csi_snapshots(&schedule, &backup.name_any(), attempted, completed);
}

/// An item an operation named, as it is in the cluster now (a VolumeSnapshot with the
/// annotations a restore reads, from its content); None once it is gone.
async fn item_as_ended(
    client: &kube::Client,
    item: &ResourceIdentifier,
) -> Result<Option<Vec<u8>>, String> {
    let reading = |e: kube::Error| {
        format!(
            "reading {} {}: {}",
            item.resource,
            item.name,
            objects::reason(&e)
        )
    };
    let contents = csi::volume_snapshot_contents(client);
    let object = match item.resource.as_str() {
        "volumesnapshots" => csi::volume_snapshots(client, &item.namespace)
            .get_opt(&item.name)
            .await
            .map_err(reading)?,
        "volumesnapshotcontents" => contents.get_opt(&item.name).await.map_err(reading)?,
        "datauploads" => objects::api::<DataUpload>(client, &item.namespace)
            .get_opt(&item.name)
            .await
            .map_err(reading)?,
        _ => None,
    };
    let Some(object) = object else {
        return Ok(None);
    };
    let mut json = serde_json::to_value(&object).map_err(|e| e.to_string())?;
    if let Some(metadata) = json.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    let bound = SnapshotStatus::of(&json).bound_content.map(str::to_string);
    if item.resource == "volumesnapshots"
        && let Some(bound) = bound
        && let Some(content) = contents.get_opt(&bound).await.map_err(reading)?
    {
        let content = ContentStatus::of(&content.data);
        csi::SnapshotRecord {
            deletion_policy: content.deletion_policy,
            handle: content.snapshot_handle.unwrap_or_default(),
            driver: content.driver.unwrap_or_default(),
            restore_size: content.restore_size,
        }
        .annotate(&mut json);
    }
    serde_json::to_vec(&json)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The volume information with each snapshot's outcome, and each moved one's upload as it ended
/// (Velero's `updateVolumeInfos`).
fn ended_volume_info(
    mut volumes: Vec<BackupVolumeInfo>,
    operations: &[BackupOperation],
    uploads: &[DataUpload],
) -> Vec<BackupVolumeInfo> {
    for volume in &mut volumes {
        let Some(moved) = volume.snapshot_data_movement_info.as_mut() else {
            continue;
        };
        let Some(upload) = uploads.iter().find(|u| {
            u.spec.source_pvc == volume.pvc_name && u.spec.source_namespace == volume.pvc_namespace
        }) else {
            continue;
        };
        let status = upload.status.clone().unwrap_or_default();
        if status.completion_timestamp.is_some() {
            volume.completion_timestamp = status.completion_timestamp.clone();
        }
        moved.snapshot_handle = status.snapshot_id.clone().unwrap_or_default();
        moved.retained_snapshot = (upload.spec.csi_snapshot.as_ref())
            .map(|c| c.volume_snapshot.clone())
            .unwrap_or_default();
        moved.size = (status.progress.as_ref())
            .and_then(|p| p.total_bytes)
            .unwrap_or_default();
        moved.incremental_size = status.incremental_bytes.unwrap_or_default();
        moved.phase = status.phase;
        volume.result = if status.phase == Some(PodVolumePhase::Completed) {
            VOLUME_SUCCEEDED
        } else {
            VOLUME_FAILED
        }
        .into();
    }
    for volume in &mut volumes {
        let Some(info) = volume.csi_snapshot_info.as_mut() else {
            continue;
        };
        let Some(operation) = operations
            .iter()
            .find(|o| o.spec.operation_id == info.operation_id)
        else {
            continue;
        };
        let completed = operation.status.phase == OperationPhase::Completed;
        info.ready_to_use = Some(completed);
        volume.result = if completed {
            VOLUME_SUCCEEDED
        } else {
            VOLUME_FAILED
        }
        .into();
        volume.completion_timestamp = operation.status.updated.clone();
    }
    volumes
}

/// Removes an operation's VolumeSnapshot and content from the cluster. A snapshot that is ready
/// keeps its storage snapshot (the content is set to `Retain` first): the backup holds it now,
/// and deleting the backup deletes it. A failed one goes with its content, as its class says.
async fn remove_snapshot(client: &kube::Client, operation: &BackupOperation) -> Result<(), String> {
    let item = &operation.spec.resource_identifier;
    let contents = csi::volume_snapshot_contents(client);
    let failed = |what: &str, e: kube::Error| format!("removing {what}: {}", objects::reason(&e));
    let content = operation
        .spec
        .post_operation_items
        .iter()
        .find(|i| i.resource == "volumesnapshotcontents")
        .map(|i| i.name.clone());
    if let (Some(content), OperationPhase::Completed) = (&content, operation.status.phase) {
        let retain = json!({ "spec": { "deletionPolicy": "Retain" } });
        patch::ignore_not_found(
            contents
                .patch(content, &PatchParams::default(), &Patch::Merge(&retain))
                .await,
        )
        .map_err(|e| failed(content, e))?;
    }
    let snapshots: Api<DynamicObject> = csi::volume_snapshots(client, &item.namespace);
    patch::ignore_not_found(snapshots.delete(&item.name, &DeleteParams::default()).await)
        .map_err(|e| failed(&item.name, e))?;
    if let Some(content) = &content {
        patch::ignore_not_found(contents.delete(content, &DeleteParams::default()).await)
            .map_err(|e| failed(content, e))?;
    }
    Ok(())
}
