//! The restore controller: a New Restore is validated, its backup downloaded and unpacked (safely),
//! its items created in Velero's order; logs and results go to `restores/<name>/`.

mod actions;
mod engine;
pub(crate) mod extract;
mod order;
mod transform;

use std::sync::Arc;

use ark_api::{
    Backup, BackupPhase, HookStatus, Restore, RestorePhase, RestoreProgress, RestoreStatus, labels,
};
use ark_storage::RestoreFiles;
use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::Context;
use crate::hooks;
use crate::shared::controller::ReconcileError;
use crate::shared::filter::IncludesExcludes;
use crate::shared::locations::{self, OpenLocation};
use crate::shared::operation;
use crate::shared::operation_log::{Level, OperationLog};
use crate::shared::resource_list::ResourceListWriter;
use crate::shared::results::gzip_json;
use crate::shared::{metrics, objects, patch, unhonoured};

pub async fn run(ctx: Arc<Context>) {
    for restore in operation::interrupted::<Restore>(&ctx).await {
        operation::fail_interrupted::<Restore>(&ctx, &restore).await;
    }
    operation::run::<Restore, _, _>(ctx, reconcile).await;
}

async fn reconcile(
    cached: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    let Some(restore) = operation::claimable::<Restore>(&ctx, &cached).await? else {
        return Ok(Action::await_change());
    };
    process(&restore, &ctx).await?;
    Ok(Action::await_change())
}

/// Validation of the restore's own spec (the backup is checked against the cluster afterwards):
/// its item operation timeout, Velero's default applied, or every error found.
fn validate(restore: &Restore, ctx: &Context) -> Result<std::time::Duration, Vec<String>> {
    let spec = &restore.spec;
    let mut errors = unhonoured::refused(&spec.unmodelled, unhonoured::RESTORE_FILTERS);
    let item_operation_timeout = ark_api::duration::parse_or_default(
        spec.item_operation_timeout.as_deref(),
        ctx.default_item_operation_timeout,
    )
    .map_err(|e| errors.push(format!("itemOperationTimeout: {e}")));
    if spec.backup_name.is_empty() {
        errors.push("spec.backupName is required".to_string());
    }
    if let Some(hooks) = &spec.hooks {
        errors.extend(
            ark_api::hooks::validate(hooks, ark_api::hooks::Rules::Velero)
                .iter()
                .map(|e| format!("spec.hooks.{e}")),
        );
    }
    errors.extend(
        IncludesExcludes::new(
            spec.included_namespaces.as_ref(),
            spec.excluded_namespaces.as_ref(),
        )
        .validate("namespace"),
    );
    errors.extend(
        IncludesExcludes::new(
            spec.included_resources.as_ref(),
            spec.excluded_resources.as_ref(),
        )
        .validate("resource"),
    );
    match spec.existing_resource_policy.as_deref() {
        None | Some("") | Some("none") | Some("update") => {}
        Some(other) => errors.push(format!(
            "invalid existingResourcePolicy {other:?}: expected none or update"
        )),
    }
    if let Some(selector) = &spec.label_selector
        && let Err(error) = kube::core::Selector::try_from(selector.clone())
    {
        errors.push(format!("labelSelector: {error}"));
    }
    match item_operation_timeout {
        Ok(timeout) if errors.is_empty() => Ok(timeout),
        _ => Err(errors),
    }
}

/// The restore's resource modifiers, read from their ConfigMap in the restore's namespace and
/// checked; the validation error, in Velero's words, when they cannot be used.
async fn read_resource_modifiers(
    restore: &Restore,
    ctx: &Context,
) -> Result<Result<Option<actions::ResourceModifiers>, String>, kube::Error> {
    let Some(reference) = &restore.spec.resource_modifier else {
        return Ok(Ok(None));
    };
    let shown = format!("{}/{}", ctx.namespace, reference.name);
    if !reference.kind.eq_ignore_ascii_case("configmap") {
        return Ok(Err(format!(
            "resourceModifier: kind {:?} is not supported: resource modifiers are read from a ConfigMap",
            reference.kind
        )));
    }
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let config_map = match api.get_opt(&reference.name).await {
        Ok(Some(config_map)) => config_map,
        Ok(None) => {
            return Ok(Err(format!(
                "failed to get resource modifiers configmap {shown}: not found"
            )));
        }
        Err(kube::Error::Api(status)) if status.code == 403 => {
            return Ok(Err(format!(
                "failed to get resource modifiers configmap {shown}: {}",
                status.message
            )));
        }
        Err(error) => return Err(error),
    };
    Ok(
        actions::ResourceModifiers::from_config_map_data(&config_map.data.unwrap_or_default())
            .map(Some)
            .map_err(|e| format!("resource modifiers configmap {shown}: {e}")),
    )
}

async fn process(restore: &Restore, ctx: &Context) -> Result<(), kube::Error> {
    let api = operation::api::<Restore>(ctx);
    let name = restore.name_any();
    let resource_version = restore.metadata.resource_version.as_deref();
    let (item_operation_timeout, mut errors) = match validate(restore, ctx) {
        Ok(timeout) => (Some(timeout), Vec::new()),
        Err(errors) => (None, errors),
    };
    let mut backup = None;
    let mut resource_modifiers = None;
    if item_operation_timeout.is_some() {
        match read_resource_modifiers(restore, ctx).await? {
            Ok(found) => resource_modifiers = found,
            Err(error) => errors.push(error),
        }
        let backup_name = &restore.spec.backup_name;
        match objects::get::<Backup>(&ctx.client, &ctx.namespace, backup_name).await? {
            None => errors.push(format!("backup {backup_name:?} not found")),
            Some(Err(unfit)) => errors.push(format!("backup {backup_name:?} cannot be read: {unfit}")),
            Some(Ok(found)) if !matches!(found.phase(), BackupPhase::Completed | BackupPhase::PartiallyFailed) => {
                errors.push(format!("backup {backup_name:?} is {:?}: only Completed or PartiallyFailed backups can be restored", found.phase()))
            }
            Some(Ok(found)) => backup = Some(found),
        }
    }
    // Velero labels a restore's metrics with its `scheduleName`.
    let schedule = restore
        .spec
        .unmodelled
        .get("scheduleName")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let (Some(backup), Some(item_operation_timeout), true) =
        (backup, item_operation_timeout, errors.is_empty())
    else {
        let status = <Restore as operation::Operation>::failed_validation(errors);
        let claim =
            patch::claim(&api, &name, resource_version, json!({ "status": status })).await?;
        if claim == patch::Claim::Won {
            ctx.metrics.restore_attempted(&schedule);
            ctx.metrics.restore_failed_validation(&schedule);
        }
        return Ok(());
    };
    let claim = patch::claim(
        &api,
        &name,
        resource_version,
        json!({
            "metadata": { "labels": { labels::BACKUP_NAME: labels::valid_label_value(&restore.spec.backup_name) } },
            // Velero's default, written as Velero's restore controller writes it.
            "spec": { "itemOperationTimeout": ark_api::duration::format(item_operation_timeout) },
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
    ctx.metrics.restore_attempted(&schedule);
    let location = backup.spec.storage_location.clone().unwrap_or_default();
    let outcome = match locations::open_named(&ctx.client, &ctx.namespace, &location).await {
        Ok(open) => {
            restore_from(
                &api,
                restore,
                &name,
                &open,
                resource_modifiers.as_ref(),
                ctx,
            )
            .await
        }
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
        ctx.metrics.restore_ended(&schedule, ended);
    }
    Ok(())
}

async fn restore_from(
    api: &Api<DynamicObject>,
    restore: &Restore,
    name: &str,
    open: &OpenLocation,
    resource_modifiers: Option<&actions::ResourceModifiers>,
    ctx: &Context,
) -> Result<RestoreStatus, String> {
    let store = &open.store;
    let backup_name = &restore.spec.backup_name;
    let mut log = OperationLog::create(&ctx.scratch, format!("restore={}/{name}", ctx.namespace))
        .map_err(|e| format!("creating the restore log: {e}"))?;
    log.info(&format!(
        "starting restore from backup {backup_name} in location {}",
        open.name()
    ));

    let tarball = tempfile::tempfile_in(&ctx.scratch).map_err(|e| format!("scratch file: {e}"))?;
    store
        .download_backup_contents(backup_name, &tarball)
        .await
        .map_err(|e| {
            format!(
                "backup storage location {:?}: downloading the backup: {e}",
                open.name()
            )
        })?;
    let scratch = ctx.scratch.clone();
    let extracted = tokio::task::spawn_blocking(move || {
        extract::extract(tarball, &scratch, extract::Limits::default())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("backup {backup_name}: {e}"))?;

    let mut resource_list =
        ResourceListWriter::create(&ctx.scratch).map_err(|e| format!("scratch file: {e}"))?;
    let (progress, reporter) =
        operation::ProgressReporter::start::<Restore>(api.clone(), name.to_string());
    let restored = engine::restore(engine::RestoreInput {
        client: &ctx.client,
        spec: &restore.spec,
        restore_name: name,
        unpacked: extracted.dir.path(),
        resource_list: &mut resource_list,
        log: &mut log,
        progress: &progress,
        items_at_once: ctx.restore_items_at_once,
        resource_modifiers,
    })
    .await;
    drop(reporter);
    let mut restored = restored.map_err(|e| format!("restoring: {e}"))?;
    for rejected in &extracted.rejected.velero {
        log.log(Level::Error, rejected);
        restored.results.errors.add_general(rejected.clone());
    }
    restored.results.errors.omitted += extracted.rejected.omitted;
    for ignored in unhonoured::ignored(&restore.spec.unmodelled, unhonoured::RESTORE_BEHAVIOURS) {
        log.log(Level::Warning, &ignored);
        restored.results.warnings.add_general(ignored);
    }
    let hook_results = run_hooks(
        ctx,
        name,
        std::mem::take(&mut restored.pods_with_hooks),
        &mut restored.results,
        &mut log,
    )
    .await;
    let attempted: usize = hook_results.iter().map(|p| p.hooks.len()).sum();
    let failed: usize = hook_results
        .iter()
        .flat_map(|p| &p.hooks)
        .filter(|h| !h.succeeded)
        .count();
    let errors = restored.results.errors.count();
    let warnings = restored.results.warnings.count();
    let phase = if errors > 0 {
        RestorePhase::PartiallyFailed
    } else {
        RestorePhase::Completed
    };
    log.info(&format!(
        "restore {phase:?}: {} items, {errors} errors, {warnings} warnings",
        restored.items
    ));

    let items = restored.items;
    let final_status = RestoreStatus {
        phase: Some(phase),
        completion_timestamp: Some(patch::now()),
        progress: Some(RestoreProgress {
            items_restored: Some(items),
            total_items: Some(items),
        }),
        errors: Some(errors as i64),
        warnings: Some(warnings as i64),
        // Velero omits zero counts (`omitempty`): a restore without failed hooks has no hooksFailed.
        hook_status: (attempted > 0).then(|| HookStatus {
            hooks_attempted: Some(attempted as i64),
            hooks_failed: (failed > 0).then_some(failed as i64),
        }),
        ..Default::default()
    };
    if open.location.is_read_only() {
        // A ReadOnly location is never written, not even with this restore's logs.
        tracing::info!(
            "restore {name}: location {} is read-only: logs and results stay out of the bucket",
            open.name()
        );
        return Ok(final_status);
    }
    let files = RestoreFiles {
        log: log
            .finish()
            .map_err(|e| format!("finishing the restore log: {e}"))?,
        results: gzip_json(&restored.results).map_err(|e| e.to_string())?,
        resource_list: resource_list.finish().map_err(|e| e.to_string())?,
        hook_results: (!hook_results.is_empty())
            .then(|| gzip_json(&hook_results))
            .transpose()
            .map_err(|e| e.to_string())?,
    };
    store
        .put_restore_outputs(name, files)
        .await
        .map_err(|e| format!("backup storage location {:?}: {e}", open.name()))?;
    Ok(final_status)
}

/// Runs the exec hooks of the restored pods, pods in parallel (bounded), all within the server's
/// hooks timeout; every hook's outcome goes into the log, failures into the restore's errors.
async fn run_hooks(
    ctx: &Context,
    restore_name: &str,
    pods: Vec<engine::PodWithHooks>,
    results: &mut crate::shared::results::Results,
    log: &mut OperationLog,
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
    let (restored, watching) = hooks::exec::RestoredPods::watch(&ctx.client, &selector);
    let shared = &hooks::exec::Shared {
        client: &ctx.client,
        restored: &restored,
        execs: &tokio::sync::Semaphore::new(ctx.hook_execs_at_once),
        deadline: tokio::time::Instant::now() + ctx.hooks_timeout,
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
            }
        })
        .collect::<futures::stream::FuturesUnordered<_>>()
        .collect::<Vec<_>>();
    let mut done = tokio::select! {
        done = running => done,
        never = watching => match never {},
    };
    done.sort_by(|a, b| (&a.namespace, &a.pod).cmp(&(&b.namespace, &b.pod)));
    for pod in &done {
        for hook in &pod.hooks {
            let what = format!(
                "hook {:?} ({}) in container {} of pod {}/{}",
                hook.command.join(" "),
                hook.source,
                hook.container,
                pod.namespace,
                pod.pod
            );
            match &hook.error {
                None => log.info(&format!("{what} succeeded in {}ms", hook.duration_ms)),
                Some(error) => {
                    let message = format!("{what} failed: {error}");
                    log.log(Level::Error, &message);
                    results.errors.add(Some(&pod.namespace), message);
                }
            }
        }
    }
    done
}
