//! The deletion controller: a DeleteBackupRequest deletes a backup's snapshots, its bucket data,
//! its restores (objects and data) and then the Backup object, in that order, so that a request
//! interrupted at any point is resumed from where it stopped. Deleting a Backup object alone never
//! deletes anything.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{
    Backup, BackupPhase, DeleteBackupRequest, DeleteBackupRequestPhase, Restore, labels,
};
use futures::StreamExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::locations::{self, LocationError};
use crate::snapshots::{self, Deleted, Recorded};
use crate::{Context, patch};

pub async fn run(ctx: Arc<Context>) {
    let api: Api<DeleteBackupRequest> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Controller::new(api, watcher::Config::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(ctx.deletion_workers))
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileError(#[from] kube::Error);

fn error_policy(_: Arc<DeleteBackupRequest>, error: &ReconcileError, _: Arc<Context>) -> Action {
    tracing::warn!("deletion reconcile failed: {error}");
    Action::requeue(Duration::from_secs(5))
}

/// What to do with a request, decided from what was read.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Processed at once with this error; nothing is deleted.
    Reject(String),
    /// The request was InProgress and its backup is gone: an interrupted deletion had deleted the
    /// Backup object (its last step); only the requests remain to be removed.
    AlreadyDone,
    /// Go on and delete.
    Delete,
}

/// Velero's checks, in Velero's order, before anything is touched.
pub fn decide(
    request: &DeleteBackupRequest,
    backup: Option<&Backup>,
    running_here: bool,
) -> Decision {
    let in_progress = request.phase() == Some(DeleteBackupRequestPhase::InProgress);
    let wanted_uid = request
        .labels()
        .get(labels::BACKUP_UID)
        .filter(|u| !u.is_empty());
    let backup = backup.filter(|b| wanted_uid.is_none() || b.metadata.uid.as_ref() == wanted_uid);
    match backup {
        None if in_progress => Decision::AlreadyDone,
        None => Decision::Reject("backup not found".into()),
        Some(_) if running_here => Decision::Reject("backup is still in progress".into()),
        Some(_) => Decision::Delete,
    }
}

/// Holds one backup's deletion lock for as long as it lives.
struct Deleting<'a> {
    ctx: &'a Context,
    backup: String,
}

impl Drop for Deleting<'_> {
    fn drop(&mut self) {
        self.ctx.deleting.lock().unwrap().remove(&self.backup);
    }
}

fn lock<'a>(ctx: &'a Context, backup: &str) -> Option<Deleting<'a>> {
    ctx.deleting
        .lock()
        .unwrap()
        .insert(backup.to_string())
        .then(|| Deleting {
            ctx,
            backup: backup.to_string(),
        })
}

async fn reconcile(
    cached: Arc<DeleteBackupRequest>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let requests: Api<DeleteBackupRequest> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = cached.name_any();
    // Deleting is not idempotent for what it reports (a refused snapshot is asked again): decide
    // on the request as it is now, not as the controller's cache last saw it, which may predate
    // the Processed this server just wrote.
    let Some(request) = requests.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    if request.phase() == Some(DeleteBackupRequestPhase::Processed) {
        return expire(&requests, &request, &ctx).await;
    }
    let backup_name = request.spec.backup_name.clone();
    if backup_name.is_empty() {
        processed(&requests, &name, vec!["spec.backupName is required".into()]).await?;
        ctx.metrics.deletion_failed();
        return Ok(Action::await_change());
    }
    // Two requests for one backup never run at once: the second waits its turn.
    let Some(_lock) = lock(&ctx, &backup_name) else {
        return Ok(Action::requeue(Duration::from_secs(2)));
    };
    ctx.metrics.deletion_attempted();
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let backup = backups.get_opt(&backup_name).await?;
    let running_here = ctx.running_backups.lock().unwrap().contains(&backup_name);
    match decide(&request, backup.as_ref(), running_here) {
        Decision::Reject(error) => {
            processed(&requests, &name, vec![error]).await?;
            ctx.metrics.deletion_failed();
        }
        Decision::AlreadyDone => {
            processed(&requests, &name, vec![]).await?;
            remove_requests(&requests, &request).await?;
            ctx.metrics.deletion_succeeded();
        }
        Decision::Delete => {
            let backup = backup.expect("decided with a backup");
            remove_duplicates(&requests, &request, &backup).await?;
            let errors = delete(&ctx, &requests, &request, &backup).await?;
            let ok = errors.is_empty();
            processed(&requests, &name, errors).await?;
            if ok {
                remove_requests(&requests, &request).await?;
                ctx.metrics.deletion_succeeded();
            } else {
                ctx.metrics.deletion_failed();
            }
        }
    }
    Ok(Action::await_change())
}

async fn processed(
    requests: &Api<DeleteBackupRequest>,
    name: &str,
    errors: Vec<String>,
) -> kube::Result<()> {
    let errors = (!errors.is_empty()).then_some(errors);
    patch::object_status(
        requests,
        name,
        json!({ "phase": "Processed", "errors": errors }),
    )
    .await
    .map(|_| ())
}

/// Processed requests are removed once older than the server's request TTL.
async fn expire(
    requests: &Api<DeleteBackupRequest>,
    request: &DeleteBackupRequest,
    ctx: &Context,
) -> Result<Action, ReconcileError> {
    let Some(created) = request.metadata.creation_timestamp.as_ref() else {
        return Ok(Action::await_change());
    };
    let age = k8s_openapi::jiff::Timestamp::now().duration_since(created.0);
    let ttl =
        k8s_openapi::jiff::SignedDuration::try_from(ctx.deletion_request_ttl).unwrap_or_default();
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

/// Other not-yet-started requests for the same backup would only repeat this one.
async fn remove_duplicates(
    requests: &Api<DeleteBackupRequest>,
    request: &DeleteBackupRequest,
    backup: &Backup,
) -> kube::Result<()> {
    let selector = request_selector(request, backup.metadata.uid.as_deref());
    for other in requests
        .list(&ListParams::default().labels(&selector))
        .await?
    {
        let fresh = matches!(other.phase(), None | Some(DeleteBackupRequestPhase::New));
        if other.name_any() != request.name_any() && fresh {
            let _ = requests
                .delete(&other.name_any(), &DeleteParams::default())
                .await;
        }
    }
    Ok(())
}

/// After a successful deletion every request for that backup (name and uid) goes, this one too.
async fn remove_requests(
    requests: &Api<DeleteBackupRequest>,
    request: &DeleteBackupRequest,
) -> kube::Result<()> {
    let selector = request_selector(request, None);
    for other in requests
        .list(&ListParams::default().labels(&selector))
        .await?
    {
        let _ = requests
            .delete(&other.name_any(), &DeleteParams::default())
            .await;
    }
    let _ = requests
        .delete(&request.name_any(), &DeleteParams::default())
        .await;
    Ok(())
}

/// Deletes everything of the backup; the errors that stopped it (nothing after a failed step is
/// deleted, so the backup stays whole enough to retry).
async fn delete(
    ctx: &Context,
    requests: &Api<DeleteBackupRequest>,
    request: &DeleteBackupRequest,
    backup: &Backup,
) -> kube::Result<Vec<String>> {
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let backup_name = backup.name_any();
    let uid = backup.metadata.uid.clone().unwrap_or_default();

    // The location must exist and be writable before anything changes.
    let location_name = backup.spec.storage_location.clone().unwrap_or_default();
    let open = match locations::get(&ctx.client, &ctx.namespace, &location_name).await {
        Ok(location) if location.is_read_only() => {
            return Ok(vec![format!(
                "cannot delete backup because backup storage location {location_name} is currently in read-only mode"
            )]);
        }
        Ok(location) => locations::open(&ctx.client, location).await,
        Err(error) => Err(error),
    };
    let open = match open {
        Ok(open) => open,
        Err(LocationError::NotFound(_)) => {
            return Ok(vec![format!(
                "backup storage location {location_name} not found"
            )]);
        }
        Err(error) => return Ok(vec![error.to_string()]),
    };

    let request_labels: BTreeMap<String, String> = labels::for_backup(&backup_name, &uid);
    requests
        .patch(
            &request.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": request_labels } })),
        )
        .await?;
    patch::object_status(
        requests,
        &request.name_any(),
        json!({ "phase": "InProgress" }),
    )
    .await?;
    let previous_phase = backup.phase();
    patch::object_status(&backups, &backup_name, json!({ "phase": "Deleting" })).await?;
    let errors = delete_data(ctx, &open.store, request, backup).await;
    if !errors.is_empty() {
        // The backup is still whole (nothing after the failing step ran): it keeps its phase.
        if previous_phase != BackupPhase::Deleting {
            patch::object_status(&backups, &backup_name, json!({ "phase": previous_phase }))
                .await?;
        }
        return Ok(errors);
    }
    let precondition = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    match patch::ignore_not_found(backups.delete(&backup_name, &precondition).await) {
        Ok(()) => Ok(vec![]),
        Err(error) => Ok(vec![format!("deleting Backup {backup_name}: {error}")]),
    }
}

async fn optional(
    store: &ark_storage::BackupStore,
    key: &ark_storage::Path,
) -> Result<Option<bytes::Bytes>, String> {
    match store.get(key).await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.is_not_found() => Ok(None),
        Err(error) => Err(error.to_string()),
    }
}

/// The snapshots the backup recorded, beside its tarball and (Velero since v1.15) in it.
async fn recorded_snapshots(
    ctx: &Context,
    store: &ark_storage::BackupStore,
    request: &DeleteBackupRequest,
    name: &str,
) -> Result<Recorded, String> {
    let layout = &store.layout;
    let provider = optional(store, &layout.backup_volume_snapshots(name)).await?;
    let csi = optional(store, &layout.backup_csi_snapshot_contents(name)).await?;
    let mut recorded = snapshots::parse_recorded(provider.as_deref(), csi.as_deref())?;
    let volume_info = optional(store, &layout.backup_volume_info(name)).await?;
    if !snapshots::tarball_may_hold_csi_contents(volume_info.as_deref())? {
        return Ok(recorded);
    }
    let tarball =
        tempfile::NamedTempFile::new_in(&ctx.scratch).map_err(|e| format!("scratch file: {e}"))?;
    match store
        .download_file(&layout.backup_contents(name), tarball.path())
        .await
    {
        Ok(_) => {}
        Err(error) if error.is_not_found() => return Ok(recorded),
        Err(error) => return Err(format!("downloading the backup tarball: {error}")),
    }
    let found = tokio::task::spawn_blocking(move || {
        std::fs::File::open(tarball.path())
            .map(|file| snapshots::csi_contents_in_tarball(std::io::BufReader::new(file)))
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("reading the downloaded tarball: {e}"))?;
    if let Some(first) = found.unreadable.first() {
        let note = format!(
            "backup {name}: {} tarball entries could not be read (the first: {first}); their snapshots, if any, are not deleted",
            found.unreadable.len()
        );
        ctx.events
            .warn(request, None, "TarballUnreadable", "DeleteSnapshots", note)
            .await;
    }
    recorded.add_csi(found.contents);
    Ok(recorded)
}

/// Snapshots, then bucket data, then restores; stops at the first step with errors.
async fn delete_data(
    ctx: &Context,
    store: &ark_storage::BackupStore,
    request: &DeleteBackupRequest,
    backup: &Backup,
) -> Vec<String> {
    let name = backup.name_any();
    let layout = &store.layout;
    let recorded = match recorded_snapshots(ctx, store, request, &name).await {
        Ok(recorded) => recorded,
        Err(error) => return vec![format!("reading the backup's snapshot records: {error}")],
    };
    if !recorded.provider.is_empty() && ctx.volume_snapshotter.is_none() {
        return vec![format!(
            "unable to delete backup because it includes {} volume snapshots and this server has no volume snapshotter configured; nothing was deleted",
            recorded.provider.len()
        )];
    }
    let mut errors = Vec::new();
    if let Some(snapshotter) = &ctx.volume_snapshotter {
        for snapshot in &recorded.provider {
            let id = &snapshot.status.provider_snapshot_id;
            if let Err(error) = snapshotter.delete(&snapshot.spec.location, id).await {
                errors.push(format!("deleting volume snapshot {id}: {error}"));
            }
        }
    }
    let backup_label = labels::valid_label_value(&name);
    for content in &recorded.csi {
        let note = match snapshots::delete_csi(&ctx.client, content, &backup_label).await {
            Ok(Deleted::Now | Deleted::AlreadyGone) => continue,
            Ok(Deleted::NoHandle) => format!(
                "VolumeSnapshotContent {} of backup {name} is gone and the backup recorded no snapshot handle: no snapshot was deleted for it",
                content.name
            ),
            Ok(Deleted::NotThisBackup) => format!(
                "VolumeSnapshotContent {} is not labelled {}={backup_label}: left alone",
                content.name,
                labels::BACKUP_NAME
            ),
            Err(error) => {
                errors.push(format!("deleting CSI snapshot: {error}"));
                continue;
            }
        };
        ctx.events
            .warn(
                request,
                Some(content.reference()),
                "SnapshotNotDeleted",
                "DeleteSnapshots",
                note,
            )
            .await;
    }
    if !errors.is_empty() {
        return errors;
    }

    // velero-backup.json first: from then on the backup no longer exists for sync.
    if let Err(error) = store.delete(&layout.backup_metadata(&name)).await {
        return vec![format!("deleting backup data: {error}")];
    }
    if let Err(error) = store.delete_under(&layout.backup_dir(&name)).await {
        return vec![format!("deleting backup data: {error}")];
    }

    // From the watched cache: listing every Restore for every deletion would make deleting N
    // backups with N restores cost N² objects from the API server.
    let restores: Api<Restore> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    if ctx.restores.wait_until_ready().await.is_err() {
        return vec!["the cache of restores stopped".to_string()];
    }
    let of_backup: Vec<Arc<Restore>> = ctx
        .restores
        .state()
        .into_iter()
        .filter(|r| r.spec.backup_name == name)
        .collect();
    for restore in of_backup {
        let restore_name = restore.name_any();
        if let Err(error) = store.delete_under(&layout.restore_dir(&restore_name)).await {
            errors.push(format!("deleting data of restore {restore_name}: {error}"));
            continue;
        }
        if let Err(error) = patch::ignore_not_found(
            restores
                .delete(&restore_name, &DeleteParams::default())
                .await,
        ) {
            errors.push(format!("deleting restore {restore_name}: {error}"));
        }
    }
    errors
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
            Decision::Delete
        );
        // A request written without labels (kubectl) is for whichever backup has the name.
        assert_eq!(
            decide(&request(None, None), Some(&current), false),
            Decision::Delete
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
        assert_eq!(
            decide(&in_progress, Some(&backup("uid-2")), false),
            Decision::Delete
        );
    }
}
