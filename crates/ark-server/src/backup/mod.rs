//! The backup controller: a New Backup is validated, collected into Velero's file set and uploaded
//! to its storage location; its status says how it went.

pub(crate) mod archive;
mod engine;

use std::sync::Arc;

use ark_api::{Backup, BackupPhase, labels};
use bytes::Bytes;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use crate::Context;
use crate::filter::IncludesExcludes;
use crate::locations::{self, OpenLocation};
use crate::operation::{self, ReconcileError};
use crate::operation_log::{Level, OperationLog};
use crate::patch;
use crate::results::gzip_json;

/// Runs the controller until the process stops.
pub async fn run(ctx: Arc<Context>) {
    operation::run::<Backup, _, _>(ctx, reconcile).await;
}

/// Ark's first servers put a finalizer on Backups; it would block their deletion forever now that
/// deletion goes through DeleteBackupRequests, so it is removed at start-up.
pub async fn remove_legacy_finalizer(ctx: &Context) {
    const LEGACY_FINALIZER: &str = "gc.ark.heptio.com";
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let Ok(list) = api.list(&Default::default()).await else {
        return;
    };
    for backup in list.items {
        let finalizers = backup.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == LEGACY_FINALIZER) {
            let kept: Vec<&String> = finalizers
                .iter()
                .filter(|f| *f != LEGACY_FINALIZER)
                .collect();
            let name = backup.metadata.name.clone().unwrap_or_default();
            let patch = json!({ "metadata": { "finalizers": kept, "resourceVersion": backup.metadata.resource_version } });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => tracing::info!(
                    "removed the legacy finalizer {LEGACY_FINALIZER} from backup {name}"
                ),
                Err(error) => {
                    tracing::warn!("removing the legacy finalizer from backup {name}: {error}")
                }
            }
        }
    }
}

async fn reconcile(cached: Arc<Backup>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let Some(backup) = operation::fresh(&ctx, cached.as_ref()).await? else {
        return Ok(Action::await_change());
    };
    if backup.phase() != BackupPhase::New {
        return Ok(Action::await_change());
    }
    process(&backup, &ctx).await?;
    Ok(Action::await_change())
}

/// Validation errors of a backup's spec, before anything is done.
fn validate(backup: &Backup) -> Vec<String> {
    let spec = &backup.spec;
    let mut errors = IncludesExcludes::new(
        spec.included_namespaces.as_ref(),
        spec.excluded_namespaces.as_ref(),
    )
    .validate("namespace");
    errors.extend(
        IncludesExcludes::new(
            spec.included_resources.as_ref(),
            spec.excluded_resources.as_ref(),
        )
        .validate("resource"),
    );
    if let Some(ttl) = &spec.ttl
        && let Err(error) = ark_api::duration::parse(ttl)
    {
        errors.push(format!("ttl: {error}"));
    }
    if let Some(selector) = &spec.label_selector
        && let Err(error) = kube::core::Selector::try_from(selector.clone())
    {
        errors.push(format!("labelSelector: {error}"));
    }
    errors
}

async fn process(backup: &Backup, ctx: &Context) -> Result<(), kube::Error> {
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = backup.metadata.name.clone().unwrap_or_default();
    let mut errors = validate(backup);
    let location_name = match &backup.spec.storage_location {
        Some(location) if !location.is_empty() => location.clone(),
        _ => match locations::default_name(&ctx.client, &ctx.namespace).await {
            Ok(location) => location,
            Err(error) => {
                errors.push(error.to_string());
                String::new()
            }
        },
    };
    let location = if location_name.is_empty() {
        None
    } else {
        match locations::get(&ctx.client, &ctx.namespace, &location_name).await {
            Ok(location) if location.is_read_only() => {
                errors.push(format!(
                    "backup storage location {location_name:?} is read-only"
                ));
                None
            }
            Ok(location) => Some(location),
            Err(error) => {
                errors.push(error.to_string());
                None
            }
        }
    };
    if !errors.is_empty() {
        patch::object_status(
            &api,
            &name,
            json!({ "phase": "FailedValidation", "validationErrors": errors }),
        )
        .await?;
        return Ok(());
    }
    let location = location.expect("validated");

    let start = patch::now();
    let ttl = backup
        .spec
        .ttl
        .as_deref()
        .map(|t| ark_api::duration::parse(t).expect("validated"))
        .unwrap_or(ctx.default_ttl);
    let expiration = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        start.0 + k8s_openapi::jiff::SignedDuration::try_from(ttl).unwrap_or_default(),
    );
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": { "labels": { labels::STORAGE_LOCATION: labels::valid_label_value(&location_name) } },
            "spec": {
                "storageLocation": location_name,
                "ttl": ark_api::duration::format(ttl),
            },
            "status": {
                "phase": "InProgress",
                "version": 1,
                "formatVersion": ark_storage::tarball::FORMAT_VERSION,
                "startTimestamp": start,
                "expiration": expiration,
            },
        })),
    )
    .await?;

    ctx.running_backups.lock().unwrap().insert(name.clone());
    let outcome = match locations::open(&ctx.client, location).await {
        Ok(open) => back_up(&api, &name, &open, ctx).await,
        Err(error) => Err(error.to_string()),
    };
    ctx.running_backups.lock().unwrap().remove(&name);
    operation::finish(&api, &name, outcome).await
}

/// Collects and uploads; the final status on success, the failure reason otherwise.
async fn back_up(
    api: &Api<Backup>,
    name: &str,
    open: &OpenLocation,
    ctx: &Context,
) -> Result<serde_json::Value, String> {
    let store = &open.store;
    let layout = &store.layout;
    let location = open.name();
    let mut log = OperationLog::create(&ctx.scratch, format!("backup={}/{name}", ctx.namespace))
        .map_err(|e| format!("creating the backup log: {e}"))?;
    log.info(&format!("starting backup to location {location}"));
    let current = api.get(name).await.map_err(|e| e.to_string())?;

    let (progress, receiver) = tokio::sync::watch::channel((0, 0));
    let reporter = tokio::spawn(operation::report_progress(
        api.clone(),
        name.to_string(),
        receiver,
    ));
    let collected = engine::collect(
        &ctx.client,
        &current.spec,
        &ctx.scratch,
        &mut log,
        &progress,
    )
    .await;
    drop(progress);
    let _ = reporter.await;
    let collected = match collected {
        Ok(collected) => collected,
        Err(error) => {
            log.log(Level::Error, &error.to_string());
            return Err(error.to_string());
        }
    };
    let errors = collected.results.errors.count();
    let warnings = collected.results.warnings.count();
    let phase = if errors > 0 {
        "PartiallyFailed"
    } else {
        "Completed"
    };
    let final_status = json!({
        "phase": phase,
        "completionTimestamp": patch::now(),
        "progress": { "itemsBackedUp": collected.items, "totalItems": collected.items },
        "errors": errors,
        "warnings": warnings,
    });
    log.info(&format!(
        "backup {phase} with {} items, {errors} errors, {warnings} warnings",
        collected.items
    ));

    // The backup object as uploaded: the final status in it, as Velero writes velero-backup.json.
    let mut metadata = serde_json::to_value(&current).map_err(|e| e.to_string())?;
    json_merge(&mut metadata["status"], &final_status);
    metadata["metadata"]["managedFields"] = serde_json::Value::Null;

    let upload_error = |what: &str, e: ark_storage::StoreError| {
        format!("backup storage location {location:?}: uploading {what}: {e}")
    };
    let log_file = log
        .finish()
        .map_err(|e| format!("finishing the backup log: {e}"))?;
    // Velero's order: log, metadata, tarball (metadata removed if the tarball fails), extras.
    store
        .upload_file(&layout.backup_log(name), log_file.path())
        .await
        .map_err(|e| upload_error("log", e))?;
    let metadata_bytes =
        Bytes::from(serde_json::to_vec_pretty(&metadata).map_err(|e| e.to_string())?);
    store
        .put(&layout.backup_metadata(name), metadata_bytes)
        .await
        .map_err(|e| upload_error("metadata", e))?;
    if let Err(error) = store
        .upload_file(&layout.backup_contents(name), collected.tarball.path())
        .await
    {
        let _ = store.delete(&layout.backup_metadata(name)).await;
        return Err(upload_error("tarball", error));
    }
    let extras = async {
        store
            .upload_file(
                &layout.backup_resource_list(name),
                collected.resource_list.path(),
            )
            .await?;
        let results = gzip_json(&collected.results).map_err(|e| ark_storage::StoreError::Io {
            key: "results".into(),
            source: e,
        })?;
        store.put(&layout.backup_results(name), results).await?;
        let none: [(); 0] = [];
        let snapshots = gzip_json(&none).map_err(|e| ark_storage::StoreError::Io {
            key: "volumesnapshots".into(),
            source: e,
        })?;
        store
            .put(&layout.backup_volume_snapshots(name), snapshots.clone())
            .await?;
        // No volumes kept: also what tells deletion there is no CSI snapshot in the tarball.
        store.put(&layout.backup_volume_info(name), snapshots).await
    };
    if let Err(error) = extras.await {
        let _ = store.delete(&layout.backup_metadata(name)).await;
        return Err(upload_error("backup files", error));
    }
    Ok(final_status)
}

fn json_merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
    if !target.is_object() {
        *target = json!({});
    }
    for (key, value) in patch.as_object().into_iter().flatten() {
        target[key] = value.clone();
    }
}
