//! The deletion controller: a DeleteBackupRequest deletes a backup's snapshots, its bucket data,
//! its restores (objects and data) and then the Backup object, in that order, so that a request
//! interrupted at any point is resumed from where it stopped. Deleting a Backup object alone never
//! deletes anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ark_api::{
    Backup, BackupPhase, BackupStatus, DeleteBackupRequest, DeleteBackupRequestPhase,
    DeleteBackupRequestStatus, PodVolumeBackup, Restore, labels,
};
use ark_storage::BackupListing;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, DynamicObject, ListParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, Store};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use crate::controllers::backup::RunningBackups;
use crate::domain::locations::{self, LocationError};
use crate::domain::repositories;
use crate::domain::snapshots::{self, Deleted, Recorded, VolumeSnapshotter};
use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::Readable;
use crate::runtime::sync::Locked;
use crate::runtime::{objects, patch};

/// How long a deletion waits for the first listing of Restores.
const RESTORE_CACHE_WAIT: Duration = Duration::from_secs(30);

/// The deletion controller's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Deletions of different backups run at once.
    pub workers: u16,
    /// How long a Processed DeleteBackupRequest is kept.
    pub request_ttl: Duration,
}

pub struct Ctx {
    kube: Kube,
    config: Config,
    /// Where a backup's tarball is downloaded to find its CSI snapshots.
    scratch: PathBuf,
    /// Deletes provider volume snapshots; without one, backups that have any cannot be deleted.
    volume_snapshotter: Option<Arc<dyn VolumeSnapshotter>>,
    /// A backup this server is running now is not deleted.
    running_backups: Arc<RunningBackups>,
    /// Every Restore of the namespace, kept current by a watch: a deletion deletes its backup's.
    restores: Store<DynamicObject>,
    /// Backups being deleted now: a second request for one waits.
    deleting: Mutex<BTreeSet<String>>,
    removed_requests: RemovedRequests,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

/// The writer of the deletion controller's Restore cache: it runs beside the controller.
pub struct RestoreCache(reflector::store::Writer<DynamicObject>);

impl Ctx {
    pub fn new(
        kube: Kube,
        config: Config,
        scratch: PathBuf,
        volume_snapshotter: Option<Arc<dyn VolumeSnapshotter>>,
        running_backups: Arc<RunningBackups>,
    ) -> (Ctx, RestoreCache) {
        let writer = reflector::store::Writer::new(objects::resource::<Restore>());
        let ctx = Ctx {
            kube,
            config,
            scratch,
            volume_snapshotter,
            running_backups,
            restores: writer.as_reader(),
            deleting: Mutex::default(),
            removed_requests: RemovedRequests::default(),
        };
        (ctx, RestoreCache(writer))
    }
}

pub async fn run(ctx: Arc<Ctx>, restores: RestoreCache) {
    let restore_reflector = {
        use futures::StreamExt;
        use kube::runtime::WatchStreamExt;
        let api = objects::api::<Restore>(&ctx.kube.client, &ctx.kube.namespace);
        let watch = kube::runtime::watcher(api, Default::default()).modify(backup_restored);
        reflector::reflector(restores.0, watch)
            .default_backoff()
            .for_each(|_| std::future::ready(()))
    };
    let kube = ctx.kube.clone();
    let workers = ctx.config.workers;
    tokio::join!(
        controller::run::<DeleteBackupRequest, _, _, _>(ctx, "deletion", workers, reconcile),
        kube.until_stopping(restore_reflector),
    );
}

/// What the cache of Restores keeps of each: its name and the backup it restores, all that
/// finding a backup's restores reads.
fn backup_restored(restore: &mut DynamicObject) {
    let backup = restore.data.pointer("/spec/backupName").cloned();
    restore.metadata = ObjectMeta {
        name: restore.metadata.name.take(),
        namespace: restore.metadata.namespace.take(),
        ..ObjectMeta::default()
    };
    restore.types = None;
    restore.data = json!({ "spec": { "backupName": backup } });
}

/// What to do with a request, decided from what was read.
#[derive(Debug)]
pub enum Decision<'a> {
    /// Processed at once with this error; nothing is deleted.
    Reject(String),
    /// The request was InProgress and its backup is gone: an interrupted deletion had deleted the
    /// Backup object (its last step); only the requests remain to be removed.
    AlreadyDone,
    /// Go on and delete this backup.
    Delete(&'a Backup),
}

impl PartialEq for Decision<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Reject(a), Self::Reject(b)) => a == b,
            (Self::AlreadyDone, Self::AlreadyDone) => true,
            (Self::Delete(a), Self::Delete(b)) => a.metadata.uid == b.metadata.uid,
            _ => false,
        }
    }
}

/// Velero's checks, in Velero's order, before anything is touched.
pub fn decide<'a>(
    request: &DeleteBackupRequest,
    backup: Option<&'a Backup>,
    running_here: bool,
) -> Decision<'a> {
    let in_progress = request.phase() == Some(DeleteBackupRequestPhase::InProgress);
    let wanted_uid = request
        .labels()
        .get(labels::BACKUP_UID)
        .filter(|u| !u.is_empty());
    let backup = backup.filter(|b| wanted_uid.is_none() || b.metadata.uid.as_ref() == wanted_uid);
    match backup {
        None if in_progress => Decision::AlreadyDone,
        None => Decision::Reject("backup not found".into()),
        Some(b) if running_here || b.phase() == BackupPhase::InProgress => {
            Decision::Reject("backup is still in progress".into())
        }
        Some(b) => Decision::Delete(b),
    }
}

/// Holds one backup's deletion lock for as long as it lives.
struct Deleting<'a> {
    ctx: &'a Ctx,
    backup: String,
}

impl Drop for Deleting<'_> {
    fn drop(&mut self) {
        self.ctx.deleting.locked().remove(&self.backup);
    }
}

fn lock<'a>(ctx: &'a Ctx, backup: &str) -> Option<Deleting<'a>> {
    ctx.deleting
        .locked()
        .insert(backup.to_string())
        .then(|| Deleting {
            ctx,
            backup: backup.to_string(),
        })
}

/// Requests this server removed after their deletion succeeded, by uid, for a few minutes: the
/// controller's cache may still hold one (its removal not yet watched) and run it again.
#[derive(Default)]
struct RemovedRequests(Mutex<BTreeMap<String, Instant>>);

/// Longer than any watch takes to report a removal.
const REMOVED_KEPT_FOR: Duration = Duration::from_secs(300);

impl RemovedRequests {
    fn insert(&self, uid: &str) {
        let now = Instant::now();
        let mut removed = self.0.locked();
        removed.retain(|_, at| now.duration_since(*at) < REMOVED_KEPT_FOR);
        removed.insert(uid.to_string(), now);
    }

    fn contains(&self, uid: &str) -> bool {
        self.0.locked().contains_key(uid)
    }
}

async fn reconcile(
    cached: Arc<Readable<DeleteBackupRequest>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let kube = &ctx.kube;
    let requests = objects::api::<DeleteBackupRequest>(&kube.client, &kube.namespace);
    let name = cached.name();
    if cached
        .stored
        .uid()
        .is_some_and(|uid| ctx.removed_requests.contains(&uid))
    {
        return Ok(Action::await_change());
    }
    if cached.phase() == objects::Phase::Known(DeleteBackupRequestPhase::Processed) {
        return expire(&requests, &cached.stored, &ctx).await;
    }
    // Decided on the request as the controller's cache has it, which may predate a write of this
    // server's (deleting is not idempotent for what it reports: a refused snapshot is asked
    // again). So the first write of every decision names the version decided on, and a request
    // that moved on since is decided again, as it is now.
    let version = cached.stored.resource_version();
    // Velero's deletion metrics are labelled with the backup's schedule, once the backup is read.
    let reject = async |errors: Vec<String>, schedule: &str| -> Result<Action, ReconcileError> {
        let status = json!({ "status": processed_status(errors) });
        Ok(
            match patch::claim(&requests, &name, version.as_deref(), status).await? {
                patch::Claim::Won => {
                    kube.metrics.deletion_failed(schedule);
                    Action::await_change()
                }
                patch::Claim::Lost => Action::requeue(Duration::from_secs(1)),
            },
        )
    };
    let request = match &cached.read {
        Ok(request) => request,
        Err(unfit) => return reject(vec![unfit.to_string()], "").await,
    };
    let backup_name = request.spec.backup_name.clone();
    if backup_name.is_empty() {
        return reject(vec!["spec.backupName is required".into()], "").await;
    }
    // Two requests for one backup never run at once: the second waits its turn.
    let Some(_lock) = lock(&ctx, &backup_name) else {
        return Ok(Action::requeue(Duration::from_secs(2)));
    };
    let backup = match read_backup(kube, &backup_name).await? {
        Some(Err(unfit)) => {
            kube.metrics.deletion_attempted("");
            return reject(
                vec![format!("backup {backup_name} cannot be read: {unfit}")],
                "",
            )
            .await;
        }
        Some(Ok(backup)) => Some(backup),
        None => None,
    };
    let schedule = schedule_of(backup.as_ref());
    kube.metrics.deletion_attempted(&schedule);
    let running_here = ctx.running_backups.contains(&backup_name);
    match decide(request, backup.as_ref(), running_here) {
        Decision::Reject(error) => return reject(vec![error], &schedule).await,
        // A deletion that succeeded removes its requests at once, without marking them Processed
        // first as Velero does: nobody reads a request that is about to go, and a server stopped
        // in between finds it again, the backup gone, and removes it then.
        Decision::AlreadyDone => {
            remove_requests(&ctx, &requests, request, None).await?;
            kube.metrics.deletion_succeeded(&schedule);
        }
        Decision::Delete(backup) => {
            return delete_and_record(&ctx, &requests, request, backup, &schedule).await;
        }
    }
    Ok(Action::await_change())
}

/// Deletes the backup, then removes every request for it when that succeeded, or marks this one
/// Processed with the errors when it failed; counted in the deletion metrics.
async fn delete_and_record(
    ctx: &Ctx,
    requests: &Api<DynamicObject>,
    request: &DeleteBackupRequest,
    backup: &Backup,
    schedule: &str,
) -> Result<Action, ReconcileError> {
    let Some(errors) = delete(ctx, requests, request, backup).await? else {
        // The request or the backup changed since it was read: decide again.
        return Ok(Action::requeue(Duration::from_secs(1)));
    };
    let uid = backup.metadata.uid.as_deref();
    if errors.is_empty() {
        remove_requests(ctx, requests, request, uid).await?;
        ctx.kube.metrics.deletion_succeeded(schedule);
    } else {
        remove_earlier_requests(requests, request, backup).await?;
        let name = request.name_any();
        patch::object_status(requests, &name, &processed_status(errors)).await?;
        ctx.kube.metrics.deletion_failed(schedule);
    }
    Ok(Action::await_change())
}

/// The backup named `backup_name`, as read, if there is one.
async fn read_backup(
    kube: &Kube,
    backup_name: &str,
) -> kube::Result<Option<Result<Backup, objects::Unfit>>> {
    // A name no object can have names no backup (and the API server would refuse the lookup).
    if ark_api::selector::is_dns_subdomain(backup_name) {
        objects::get::<Backup>(&kube.client, &kube.namespace, backup_name).await
    } else {
        Ok(None)
    }
}

/// The schedule that made the backup, which Velero's deletion metrics are labelled with; empty
/// for a backup made by hand or not found.
fn schedule_of(backup: Option<&Backup>) -> String {
    backup
        .and_then(|b| b.labels().get(labels::SCHEDULE_NAME).cloned())
        .unwrap_or_default()
}

fn processed_status(errors: Vec<String>) -> DeleteBackupRequestStatus {
    DeleteBackupRequestStatus {
        phase: Some(DeleteBackupRequestPhase::Processed),
        errors: (!errors.is_empty()).then_some(errors),
        ..Default::default()
    }
}

/// Processed requests are removed once older than the server's request TTL.
async fn expire(
    requests: &Api<DynamicObject>,
    request: &DynamicObject,
    ctx: &Ctx,
) -> Result<Action, ReconcileError> {
    let Some(created) = request.metadata.creation_timestamp.as_ref() else {
        return Ok(Action::await_change());
    };
    let age = k8s_openapi::jiff::Timestamp::now().duration_since(created.0);
    let ttl =
        k8s_openapi::jiff::SignedDuration::try_from(ctx.config.request_ttl).unwrap_or_default();
    if age >= ttl {
        patch::ignore_not_found(
            requests
                .delete(&request.name_any(), &DeleteParams::default())
                .await,
        )?;
        return Ok(Action::await_change());
    }
    let left = Duration::try_from(ttl - age).unwrap_or_default();
    Ok(Action::requeue(left + Duration::from_millis(100)))
}

fn request_selector(request: &DeleteBackupRequest, backup_uid: Option<&str>) -> String {
    let uid = backup_uid
        .or_else(|| request.labels().get(labels::BACKUP_UID).map(String::as_str))
        .unwrap_or_default();
    labels::selector_for_backup(&request.spec.backup_name, uid)
}

/// Every other request for this backup (name and uid) goes when a new one fails, as in Velero
/// (which removes them when it starts; a deletion that succeeds removes them all anyway): a
/// pending one would only repeat this one, a processed one is superseded by it, and a deletion
/// that keeps failing keeps one request, not one per attempt.
async fn remove_earlier_requests(
    requests: &Api<DynamicObject>,
    request: &DeleteBackupRequest,
    backup: &Backup,
) -> kube::Result<()> {
    let selector = request_selector(request, backup.metadata.uid.as_deref());
    remove_each(requests, &selector, Some(&request.name_any())).await
}

/// After a successful deletion every request for that backup (name and uid) goes, this one too
/// (labelled so when it was claimed), in one request.
async fn remove_requests(
    ctx: &Ctx,
    requests: &Api<DynamicObject>,
    request: &DeleteBackupRequest,
    backup_uid: Option<&str>,
) -> kube::Result<()> {
    let selector = request_selector(request, backup_uid);
    let removed = requests
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&selector),
        )
        .await;
    match removed {
        Ok(_) => {}
        // A Role from an install before ark removed requests so (an image upgraded alone) lacks
        // the verb: one by one, as the Role allows.
        Err(kube::Error::Api(status)) if status.code == 403 => {
            remove_each(requests, &selector, None).await?;
        }
        Err(error) => return Err(error),
    }
    if let Some(uid) = request.uid() {
        ctx.removed_requests.insert(&uid);
    }
    Ok(())
}

/// Deletes the requests `selector` matches, but the one named `except`.
async fn remove_each(
    requests: &Api<DynamicObject>,
    selector: &str,
    except: Option<&str>,
) -> kube::Result<()> {
    for other in requests
        .list(&ListParams::default().labels(selector))
        .await?
    {
        if Some(other.name_any().as_str()) != except {
            patch::ignore_not_found(
                requests
                    .delete(&other.name_any(), &DeleteParams::default())
                    .await,
            )?;
        }
    }
    Ok(())
}

/// Deletes everything of the backup; the errors that stopped it (nothing after a failed step is
/// deleted). None when the backup changed since it was read, and nothing was done.
async fn delete(
    ctx: &Ctx,
    requests: &Api<DynamicObject>,
    request: &DeleteBackupRequest,
    backup: &Backup,
) -> kube::Result<Option<Vec<String>>> {
    let kube = &ctx.kube;
    let backups = objects::api::<Backup>(&kube.client, &kube.namespace);
    let backup_name = backup.name_any();
    let uid = backup.metadata.uid.clone().unwrap_or_default();
    let open = match open_location(ctx, backup).await {
        Ok(open) => open,
        Err(error) => return Ok(Some(vec![error])),
    };
    if claim_request(requests, request, &backup_name, &uid).await? == patch::Claim::Lost {
        return Ok(None);
    }
    let previous_phase = backup.phase();
    if previous_phase != BackupPhase::Deleting
        && claim_backup(&backups, backup).await? == patch::Claim::Lost
    {
        return Ok(None);
    }
    let outcome = delete_data(ctx, &open.store, request, backup).await;
    if !outcome.errors.is_empty() {
        // A backup nothing of which was deleted is still whole and keeps its phase; once anything
        // is gone it stays Deleting (restores refuse it) until a request finishes the deletion.
        if !outcome.touched && previous_phase != BackupPhase::Deleting {
            give_back_phase(&backups, &backup_name, previous_phase).await?;
        }
        return Ok(Some(outcome.errors));
    }
    Ok(Some(
        delete_backup_object(&backups, &backup_name, uid).await,
    ))
}

/// Opens the backup's location, which must exist, be writable and not found unusable before
/// anything changes; the error the request ends with otherwise.
async fn open_location(ctx: &Ctx, backup: &Backup) -> Result<locations::OpenLocation, String> {
    let kube = &ctx.kube;
    let location_name = backup.spec.storage_location.clone().unwrap_or_default();
    let open = match locations::get(&kube.client, &kube.namespace, &location_name).await {
        Ok(location) if location.is_read_only() => {
            return Err(format!(
                "cannot delete backup because backup storage location {location_name} is currently in read-only mode"
            ));
        }
        Ok(location) if let Some(reason) = location.unavailable() => {
            return Err(format!(
                "cannot delete backup because backup storage location {location_name} is unavailable: {reason}"
            ));
        }
        Ok(location) => locations::open(&kube.client, location).await,
        Err(error) => Err(error),
    };
    open.map_err(|error| match error {
        LocationError::NotFound(_) => {
            format!("backup storage location {location_name} not found")
        }
        error => error.to_string(),
    })
}

/// Marks the request InProgress and labels it with its backup's name and uid, at the version
/// decided on.
async fn claim_request(
    requests: &Api<DynamicObject>,
    request: &DeleteBackupRequest,
    backup_name: &str,
    uid: &str,
) -> kube::Result<patch::Claim> {
    let request_labels: BTreeMap<String, String> = labels::for_backup(backup_name, uid);
    let in_progress = DeleteBackupRequestStatus {
        phase: Some(DeleteBackupRequestPhase::InProgress),
        errors: None,
        ..Default::default()
    };
    // Velero's DeleteBackupRequest has no status subresource: labels and phase in one write, at
    // the version decided on.
    patch::claim(
        requests,
        &request.name_any(),
        request.metadata.resource_version.as_deref(),
        json!({
            "metadata": { "labels": request_labels },
            "status": in_progress,
        }),
    )
    .await
}

/// Marks the backup Deleting, at the version decided on: a backup the backup controller has
/// claimed since (InProgress) is not deleted under it.
async fn claim_backup(backups: &Api<DynamicObject>, backup: &Backup) -> kube::Result<patch::Claim> {
    patch::claim(
        backups,
        &backup.name_any(),
        backup.metadata.resource_version.as_deref(),
        json!({ "status": BackupStatus {
            phase: Some(BackupPhase::Deleting),
            ..Default::default()
        } }),
    )
    .await
}

/// Puts a backup that is still whole back in the phase it had before it was claimed (if it is
/// still Deleting).
async fn give_back_phase(
    backups: &Api<DynamicObject>,
    backup_name: &str,
    previous_phase: BackupPhase,
) -> kube::Result<()> {
    let status = BackupStatus {
        phase: Some(previous_phase),
        ..Default::default()
    };
    let _ = patch::status_in_phase(backups, backup_name, BackupPhase::Deleting, &status).await?;
    Ok(())
}

/// Deletes the Backup object, the deletion's last step, only if it is still the one of `uid`;
/// the error, if any, as the request reports it.
async fn delete_backup_object(
    backups: &Api<DynamicObject>,
    backup_name: &str,
    uid: String,
) -> Vec<String> {
    let precondition = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    match patch::ignore_not_found(backups.delete(backup_name, &precondition).await) {
        Ok(()) => vec![],
        Err(error) => vec![format!(
            "deleting Backup {backup_name}: {}",
            objects::reason(&error)
        )],
    }
}

/// What deleting a backup's data came to.
#[derive(Debug, Default)]
struct DataOutcome {
    errors: Vec<String>,
    /// Whether anything of the backup was deleted (a snapshot, a key).
    touched: bool,
}

impl DataOutcome {
    fn failed(error: String) -> Self {
        Self {
            errors: vec![error],
            touched: false,
        }
    }
}

/// The snapshots the backup recorded, beside its tarball and (Velero since v1.15) in it, and its
/// pod volume backups. Only the files the listing of the backup's folder has are read.
async fn recorded_snapshots(
    ctx: &Ctx,
    store: &ark_storage::BackupStore,
    listing: &BackupListing,
    request: &DeleteBackupRequest,
    name: &str,
) -> Result<(Recorded, Vec<PodVolumeBackup>), String> {
    let records = store
        .backup_records(listing, snapshots::MAX_LIST_BYTES as usize)
        .await
        .map_err(|e| e.to_string())?;
    let pod_volumes = snapshots::pod_volume_backups(records.pod_volume_backups.as_deref())?;
    let mut recorded = snapshots::parse_recorded(
        records.volume_snapshots.as_deref(),
        records.csi_snapshot_contents.as_deref(),
    )?;
    if !snapshots::tarball_may_hold_snapshots(records.volume_info.as_deref())?
        || !records.contents_listed
    {
        return Ok((recorded, pod_volumes));
    }
    let tarball = tempfile::tempfile_in(&ctx.scratch).map_err(|e| format!("scratch file: {e}"))?;
    match store
        .download_backup_contents(name, &tarball, crate::records::archive::MAX_TARBALL_BYTES)
        .await
    {
        Ok(()) => {}
        Err(error) if error.is_not_found() => return Ok((recorded, pod_volumes)),
        Err(error) => return Err(format!("downloading the backup tarball: {error}")),
    }
    let found = tokio::task::spawn_blocking(move || {
        snapshots::snapshots_in_tarball(std::io::BufReader::new(tarball))
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Some(first) = found.unreadable.first() {
        let note = format!(
            "backup {name}: {} tarball entries could not be read (the first: {first}); their snapshots, if any, are not deleted",
            found.unreadable.len()
        );
        ctx.kube
            .events
            .warn(
                request.object_ref(&()),
                None,
                "TarballUnreadable",
                "DeleteSnapshots",
                note,
            )
            .await;
    }
    recorded.add_csi(found.contents);
    recorded.moved = found.moved;
    Ok((recorded, pod_volumes))
}

/// Forgets the kopia snapshots of the backup's pod volumes and of its moved CSI snapshots,
/// repository by repository, as Velero's `deletePodVolumeSnapshots` and `deleteMovedSnapshots`
/// do; the data goes once maintenance finds nothing references it. A repository that is not there
/// any more has nothing left to forget.
async fn forget_kopia_snapshots(ctx: &Ctx, plan: &DataPlan, outcome: &mut DataOutcome) {
    let mut by_repository: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for pvb in &plan.pod_volumes {
        let Some(id) = pvb.status.as_ref().and_then(|s| s.snapshot_id.clone()) else {
            continue;
        };
        if id.is_empty() {
            continue;
        }
        let key = (
            pvb.spec.backup_storage_location.clone(),
            pvb.spec.pod.namespace.clone(),
        );
        by_repository.entry(key).or_default().push(id);
    }
    for moved in &plan.recorded.moved {
        let key = (moved.location.clone(), moved.namespace.clone());
        by_repository
            .entry(key)
            .or_default()
            .push(moved.snapshot_id.clone());
    }
    for ((location, namespace), ids) in by_repository {
        let kube = &ctx.kube;
        let repository =
            match repositories::open(&kube.client, &kube.namespace, &location, &namespace).await {
                Ok(repository) => repository,
                Err(repositories::RepositoryError::Kopia {
                    error: ark_kopia::Error::MissingBlob(_),
                    ..
                }) => continue,
                Err(error) => {
                    outcome
                        .errors
                        .push(format!("forgetting volume data snapshots: {error}"));
                    continue;
                }
            };
        match repository.forget_all(&ids).await {
            Ok(forgotten) => outcome.touched |= forgotten > 0,
            Err(error) => outcome.errors.push(format!(
                "forgetting volume data snapshots in the repository of namespace {namespace} in \
                 location {location}: {error}"
            )),
        }
    }
}

/// Snapshots, then bucket data (the backup's and its restores'), then the Restores; stops at the
/// first step with errors. Nothing is deleted until everything there is to delete is known.
async fn delete_data(
    ctx: &Ctx,
    store: &ark_storage::BackupStore,
    request: &DeleteBackupRequest,
    backup: &Backup,
) -> DataOutcome {
    let name = backup.name_any();
    let plan = match plan_data(ctx, store, request, &name).await {
        Ok(plan) => plan,
        Err(error) => return DataOutcome::failed(error),
    };
    let mut outcome = DataOutcome::default();
    delete_provider_snapshots(ctx, &plan.recorded, &mut outcome).await;
    delete_csi_snapshots(ctx, request, &name, &plan.recorded, &mut outcome).await;
    if !outcome.errors.is_empty() {
        return outcome;
    }
    forget_kopia_snapshots(ctx, &plan, &mut outcome).await;
    if !outcome.errors.is_empty() {
        return outcome;
    }

    outcome.touched = true;
    let restore_keys = plan
        .restores
        .iter()
        .flat_map(|(_, keys)| keys.iter().cloned())
        .collect();
    if let Err(error) = store.delete_backup(plan.listing, restore_keys).await {
        outcome
            .errors
            .push(format!("deleting backup data: {error}"));
        return outcome;
    }
    delete_restores(ctx, &plan.restores, &mut outcome).await;
    outcome
}

/// Everything of a backup there is to delete, known before anything is.
struct DataPlan {
    /// The backup's folder: which of its records there are to read, and what is deleted.
    listing: BackupListing,
    recorded: Recorded,
    pod_volumes: Vec<PodVolumeBackup>,
    /// The backup's Restores, each with the keys of its data.
    restores: Vec<(String, Vec<ark_storage::Path>)>,
}

/// Lists the backup's folder, reads the snapshots it recorded and finds its restores; the error
/// that keeps anything from being deleted, such as provider snapshots and no snapshotter.
async fn plan_data(
    ctx: &Ctx,
    store: &ark_storage::BackupStore,
    request: &DeleteBackupRequest,
    name: &str,
) -> Result<DataPlan, String> {
    let listing = store
        .list_backup(name)
        .await
        .map_err(|error| format!("listing the backup's data: {error}"))?;
    let (recorded, pod_volumes) = recorded_snapshots(ctx, store, &listing, request, name)
        .await
        .map_err(|error| format!("reading the backup's snapshot records: {error}"))?;
    tracing::info!(
        "deleting backup {name}: {} provider snapshots, {} CSI snapshots, {} moved snapshots and \
         {} pod volume snapshots recorded",
        recorded.provider.len(),
        recorded.csi.len(),
        recorded.moved.len(),
        pod_volumes.len()
    );
    if !recorded.provider.is_empty() && ctx.volume_snapshotter.is_none() {
        return Err(format!(
            "unable to delete backup because it includes {} volume snapshots and this server has no volume snapshotter configured; nothing was deleted",
            recorded.provider.len()
        ));
    }
    let restores = restores_of(ctx, store, name).await?;
    Ok(DataPlan {
        listing,
        recorded,
        pod_volumes,
        restores,
    })
}

/// Deletes the provider volume snapshots the backup recorded, through the server's snapshotter.
async fn delete_provider_snapshots(ctx: &Ctx, recorded: &Recorded, outcome: &mut DataOutcome) {
    let Some(snapshotter) = &ctx.volume_snapshotter else {
        return;
    };
    for snapshot in &recorded.provider {
        let id = &snapshot.status.provider_snapshot_id;
        match snapshotter.delete(&snapshot.spec.location, id).await {
            Ok(deleted) => outcome.touched |= deleted == Deleted::Now,
            Err(error) => outcome
                .errors
                .push(format!("deleting volume snapshot {id}: {error}")),
        }
    }
}

/// Deletes the CSI snapshots the backup recorded; one not deleted for a reason other than an
/// error gets a warning event on the request.
async fn delete_csi_snapshots(
    ctx: &Ctx,
    request: &DeleteBackupRequest,
    name: &str,
    recorded: &Recorded,
    outcome: &mut DataOutcome,
) {
    let backup_label = labels::valid_label_value(name);
    for content in &recorded.csi {
        let Some(note) = delete_csi_snapshot(ctx, name, &backup_label, content, outcome).await
        else {
            continue;
        };
        ctx.kube
            .events
            .warn(
                request.object_ref(&()),
                Some(content.reference()),
                "SnapshotNotDeleted",
                "DeleteSnapshots",
                note,
            )
            .await;
    }
}

/// Deletes one CSI snapshot of backup `name`; why it was not, when that deserves a warning.
async fn delete_csi_snapshot(
    ctx: &Ctx,
    name: &str,
    backup_label: &str,
    content: &snapshots::CsiContent,
    outcome: &mut DataOutcome,
) -> Option<String> {
    match snapshots::delete_csi(&ctx.kube.client, content, backup_label).await {
        Ok(Deleted::Now) => {
            outcome.touched = true;
            None
        }
        Ok(Deleted::AlreadyGone) => None,
        Ok(Deleted::NoHandle) => Some(format!(
            "VolumeSnapshotContent {} of backup {name} is gone and the backup recorded no snapshot handle: no snapshot was deleted for it",
            content.name
        )),
        Ok(Deleted::NotTakenUp { content: temp }) => Some(format!(
            "VolumeSnapshotContent {temp}, recreated from {} to delete its snapshot, was not taken up by its driver's csi-snapshotter within {}s: the snapshot may not be deleted",
            content.name,
            snapshots::DRIVER_PICKUP.as_secs()
        )),
        Ok(Deleted::NotThisBackup) => Some(format!(
            "VolumeSnapshotContent {} is not labelled {}={backup_label}: left alone",
            content.name,
            labels::BACKUP_NAME
        )),
        Err(error) => {
            outcome
                .errors
                .push(format!("deleting CSI snapshot: {error}"));
            None
        }
    }
}

/// Deletes the backup's Restore objects, their data gone with the backup's.
async fn delete_restores(
    ctx: &Ctx,
    restores: &[(String, Vec<ark_storage::Path>)],
    outcome: &mut DataOutcome,
) {
    let api = objects::api::<Restore>(&ctx.kube.client, &ctx.kube.namespace);
    for (restore, _) in restores {
        if let Err(error) =
            patch::ignore_not_found(api.delete(restore, &DeleteParams::default()).await)
        {
            outcome.errors.push(format!(
                "deleting restore {restore}: {}",
                objects::reason(&error)
            ));
        }
    }
}

/// The backup's Restores, each with the keys of its data.
async fn restores_of(
    ctx: &Ctx,
    store: &ark_storage::BackupStore,
    backup: &str,
) -> Result<Vec<(String, Vec<ark_storage::Path>)>, String> {
    // From the watched cache: listing every Restore for every deletion would make deleting N
    // backups with N restores cost N² objects from the API server. The cache holds untyped
    // objects, so a Restore ark's types cannot read never keeps it from syncing.
    if !objects::cache_ready(&ctx.restores, RESTORE_CACHE_WAIT).await {
        return Err(
            "the cache of restores is not ready: the backup's restores cannot be found yet".into(),
        );
    }
    let names = ctx.restores.state().into_iter().filter_map(|r| {
        let of_backup = r.data.pointer("/spec/backupName").and_then(|n| n.as_str()) == Some(backup);
        of_backup.then(|| r.name_any())
    });
    let mut restores = Vec::new();
    for name in names {
        let keys = store
            .restore_keys(&name)
            .await
            .map_err(|error| format!("listing data of restore {name}: {error}"))?;
        restores.push((name, keys));
    }
    Ok(restores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupSpec, DeleteBackupRequestStatus};

    fn backup(uid: &str) -> Backup {
        let mut backup = Backup::new("nightly", BackupSpec::default());
        backup.metadata.uid = Some(uid.into());
        backup
    }

    fn request(uid: Option<&str>, phase: Option<DeleteBackupRequestPhase>) -> DeleteBackupRequest {
        let mut request = DeleteBackupRequest::for_backup(&backup(uid.unwrap_or_default()));
        if uid.is_none() {
            request.metadata.labels = None;
        }
        request.status = phase.map(|phase| DeleteBackupRequestStatus {
            phase: Some(phase),
            errors: None,
            ..Default::default()
        });
        request
    }

    #[test]
    fn decisions_follow_velero() {
        let current = backup("uid-2");
        assert_eq!(
            decide(&request(Some("uid-2"), None), None, false),
            Decision::Reject("backup not found".into())
        );
        assert_eq!(
            decide(&request(Some("uid-2"), None), Some(&current), true),
            Decision::Reject("backup is still in progress".into())
        );
        assert_eq!(
            decide(&request(Some("uid-2"), None), Some(&current), false),
            Decision::Delete(&current)
        );
        // Running on another server (or its status says so): not deleted under it.
        let mut running = backup("uid-2");
        running.status = Some(ark_api::BackupStatus {
            phase: Some(BackupPhase::InProgress),
            ..Default::default()
        });
        assert_eq!(
            decide(&request(Some("uid-2"), None), Some(&running), false),
            Decision::Reject("backup is still in progress".into())
        );
        // A request written without labels (kubectl) is for whichever backup has the name.
        assert_eq!(
            decide(&request(None, None), Some(&current), false),
            Decision::Delete(&current)
        );
        // A request for an earlier backup of the same name does not delete the new one.
        assert_eq!(
            decide(&request(Some("uid-1"), None), Some(&current), false),
            Decision::Reject("backup not found".into())
        );
    }

    #[test]
    fn an_interrupted_deletion_past_its_last_step_is_done() {
        let in_progress = request(Some("uid-2"), Some(DeleteBackupRequestPhase::InProgress));
        assert_eq!(decide(&in_progress, None, false), Decision::AlreadyDone);
        let current = backup("uid-2");
        assert_eq!(
            decide(&in_progress, Some(&current), false),
            Decision::Delete(&current)
        );
    }
}
