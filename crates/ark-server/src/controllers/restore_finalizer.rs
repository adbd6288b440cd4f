//! Velero's server puts a finalizer on every Restore (`restores.velero.io/external-resources-finalizer`)
//! and, once one is deleted (`velero restore delete`, `ark restore delete`, kubectl), removes the
//! restore's files from the bucket (`restores/<name>/`) and then the finalizer. This controller
//! does what Velero's does (`restore_controller.go`: `AddFinalizer`, `deleteExternalResources`),
//! for the Restores Velero ran before ark took over and for ark's own, so that deleting a restore
//! never leaves its files behind.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{Backup, RESTORE_FINALIZER, Restore};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::controller::Action;

use crate::domain::locations;
use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Summary};
use crate::runtime::patch;

/// How soon a deletion whose files cannot be removed yet (the location down) is tried again.
const RETRY: Duration = Duration::from_secs(30);

pub async fn run(ctx: Arc<Kube>) {
    let woken = controller::Woken::Never;
    controller::run_summarized::<Restore, _, _, _>(ctx, "restore finalizer", 0, woken, reconcile)
        .await;
}

async fn reconcile(
    object: Arc<Summary<Restore>>,
    kube: Arc<Kube>,
) -> Result<Action, ReconcileError> {
    let meta = &object.meta;
    let held = patch::holds_finalizer(meta, RESTORE_FINALIZER);
    if meta.deletion_timestamp.is_none() {
        if !held {
            hold(&kube, meta).await?;
        }
        return Ok(Action::await_change());
    }
    if !held {
        return Ok(Action::await_change());
    }
    // Boxed: every restore is handed here at start-up, and only the deleted ones hold its state.
    Box::pin(remove(object, kube)).await
}

/// The deleted Restore's files removed, then its finalizer.
async fn remove(object: Arc<Summary<Restore>>, kube: Arc<Kube>) -> Result<Action, ReconcileError> {
    // Its backup read from the Restore as it is now (the cache keeps no spec).
    let Some(fresh) = object.read(&kube.client).await? else {
        return Ok(Action::await_change());
    };
    let name = fresh.name();
    let backup = (fresh.stored.data.pointer("/spec/backupName"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    match remove_files(&kube, &name, backup).await {
        Ok(removed) => {
            tracing::info!("restore {name} deleted: removed its {removed} files from the bucket");
            release(&kube, &fresh.stored.metadata).await?;
            Ok(Action::await_change())
        }
        Err(reason) => {
            tracing::warn!(
                "restore {name} is deleted but its files cannot be removed yet: {reason}"
            );
            Ok(Action::requeue(RETRY))
        }
    }
}

/// Removes the restore's files from its backup's location, as Velero does: none when the backup
/// is gone (nothing says where they are), an error while the location cannot be reached. A
/// ReadOnly location is never written, so its files stay.
async fn remove_files(kube: &Kube, restore: &str, backup: &str) -> Result<usize, String> {
    if backup.is_empty() {
        return Ok(0);
    }
    let backups = objects::api::<Backup>(&kube.client, &kube.namespace);
    let Some(backup) = backups
        .get_opt(backup)
        .await
        .map_err(|e| format!("reading backup {backup}: {}", objects::reason(&e)))?
    else {
        return Ok(0);
    };
    let stored_in = backup.data.pointer("/spec/storageLocation");
    let location = stored_in
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let open = locations::open_named(&kube.client, &kube.namespace, location)
        .await
        .map_err(|e| e.to_string())?;
    if open.location.is_read_only() {
        return Ok(0);
    }
    open.store
        .delete_restore(restore)
        .await
        .map_err(|e| format!("backup storage location {location:?}: {e}"))
}

/// Adds the finalizer, the others kept, unless the Restore changed meanwhile.
async fn hold(kube: &Kube, meta: &ObjectMeta) -> Result<(), ReconcileError> {
    let api = objects::api::<Restore>(&kube.client, &kube.namespace);
    let push = |f: &mut Vec<String>| f.push(RESTORE_FINALIZER.to_string());
    // Lost: it changed meanwhile, and is looked at again for that change.
    let _ = patch::set_finalizers(&api, meta, push).await?;
    Ok(())
}

/// Removes the finalizer, the others kept, unless the Restore changed meanwhile.
async fn release(kube: &Kube, meta: &ObjectMeta) -> Result<(), ReconcileError> {
    let api = objects::api::<Restore>(&kube.client, &kube.namespace);
    let _ = patch::release_finalizer(&api, meta, RESTORE_FINALIZER).await?;
    Ok(())
}
