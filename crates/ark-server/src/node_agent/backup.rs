//! A node agent's PodVolumeBackups: each New one of this node's is claimed (InProgress), its
//! volume found on the node and snapshotted into the repository of the pod's namespace, as
//! Velero's node agent snapshots it (source, tags, parent), with progress in its status; it ends
//! Completed with the snapshot's ID, or Failed with the reason.

use std::sync::Arc;

use ark_api::{PodVolumeBackup, PodVolumeBackupStatus, PodVolumePhase};
use ark_kopia::velero::{self, Requester};
use k8s_openapi::api::core::v1::Pod;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::upload::{Upload, Uploaded, Volume, is_empty};
use super::volume_path;
use super::{Ctx, DATA_PATH_WAIT, progress};
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::metrics::PodVolumeOperation;
use crate::runtime::objects::{self, Summary};
use crate::runtime::patch;

/// Velero's message for a volume with nothing in it: no snapshot is taken.
pub const EMPTY_VOLUME: &str = "volume was empty so no snapshot was taken";

pub async fn run(ctx: Arc<Ctx>) {
    let concurrency = ctx.concurrency;
    let woken = controller::Woken::Never;
    controller::run_summarized::<PodVolumeBackup, _, _, _>(
        ctx,
        "pod volume backup",
        concurrency,
        woken,
        reconcile,
    )
    .await;
}

async fn reconcile(
    summary: Arc<Summary<PodVolumeBackup>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let Some((stored, pvb)) = super::new_request(&ctx.kube, &summary, "pod volume backup").await?
    else {
        return Ok(Action::await_change());
    };
    if pvb.spec.node != ctx.node {
        return Ok(Action::await_change());
    }
    let name = stored.name_any();
    let api = objects::api::<PodVolumeBackup>(&ctx.kube.client, &ctx.kube.namespace);
    // One deleted before it started is canceled, as Velero's agent cancels it.
    if pvb.spec.cancel == Some(true) || stored.metadata.deletion_timestamp.is_some() {
        let canceled = ended(
            PodVolumePhase::Canceled,
            "canceled before it started".into(),
        );
        patch::object_status(&api, &name, &canceled).await?;
        return Ok(Action::await_change());
    }
    // Held until the backup has ended.
    let Some(_data_path) = ctx.data_path() else {
        return Ok(Action::requeue(DATA_PATH_WAIT));
    };
    let now = patch::now();
    let claim = patch::claim(
        &api,
        &name,
        stored.metadata.resource_version.as_deref(),
        json!({ "status": PodVolumeBackupStatus {
            phase: Some(PodVolumePhase::InProgress),
            accepted_timestamp: Some(now.clone()),
            start_timestamp: Some(now),
            ..Default::default()
        } }),
    )
    .await?;
    if claim == patch::Claim::Lost {
        return Ok(Action::await_change());
    }
    let started = std::time::Instant::now();
    ctx.kube.metrics.pod_volume_backup_started(&ctx.node);
    let status = match back_up(&pvb, &name, &api, &ctx).await {
        Ok(status) => status,
        Err(reason) => {
            tracing::warn!("pod volume backup {name} failed: {reason}");
            ended(PodVolumePhase::Failed, reason)
        }
    };
    // Ends it only while it is still InProgress as this agent left it.
    // The work is done (a snapshot taken, a volume written): its end is written however long the
    // API server is gone, or whoever waits on it would wait for nothing.
    let ended = patch::final_status_in_phase(
        &api,
        "pod volume backup",
        &name,
        PodVolumePhase::InProgress,
        &status,
    )
    .await;
    if ended == patch::Claim::Won && status.phase == Some(PodVolumePhase::Completed) {
        let operation = operation(&stored, &pvb, &ctx.node);
        (ctx.kube.metrics).pod_volume_backup_completed(operation, started.elapsed());
    }
    Ok(Action::await_change())
}

/// The labels Velero's node agent puts on a completed backup's latency.
fn operation(stored: &DynamicObject, pvb: &PodVolumeBackup, node: &str) -> PodVolumeOperation {
    let name = stored.name_any();
    // The Backup that owns it; Velero reads the first owner.
    let owner = (stored.metadata.owner_references.iter().flatten().next())
        .map(|owner| owner.name.as_str())
        .unwrap_or_default();
    let uploader = pvb.spec.uploader_type.as_deref().unwrap_or_default();
    PodVolumeOperation {
        node: node.to_string(),
        operation: format!(
            "{name}-{}-{}-{uploader}-backup",
            pvb.spec.backup_storage_location, pvb.spec.pod.namespace
        ),
        backupName: format!("{}/{owner}", stored.namespace().unwrap_or_default()),
        pod_volume_backup: name,
    }
}

fn ended(phase: PodVolumePhase, message: String) -> PodVolumeBackupStatus {
    PodVolumeBackupStatus {
        phase: Some(phase),
        message: Some(message),
        completion_timestamp: Some(patch::now()),
        ..Default::default()
    }
}

/// The backed-up pod, still the one the request names (same uid), and its volume's directory on
/// this node.
async fn volume_on_node(
    pvb: &PodVolumeBackup,
    pod_name: &str,
    ctx: &Ctx,
) -> Result<(Pod, std::path::PathBuf), String> {
    let spec = &pvb.spec;
    let pod = Api::<Pod>::namespaced(ctx.kube.client.clone(), &spec.pod.namespace)
        .get(&spec.pod.name)
        .await
        .map_err(|e| format!("reading pod {pod_name}: {}", objects::reason(&e)))?;
    if pod.metadata.uid.as_deref() != Some(spec.pod.uid.as_str()) {
        return Err(format!(
            "pod {pod_name} is not the pod backed up any more (uid {} instead of {})",
            pod.metadata.uid.as_deref().unwrap_or_default(),
            spec.pod.uid
        ));
    }
    let dir = volume_path::volume_directory(&ctx.kube.client, &pod, &spec.volume)
        .await
        .map_err(|e| e.to_string())?;
    let path = volume_path::host_path(&ctx.host_pods, pod_name, &spec.pod.uid, &spec.volume, &dir)
        .map_err(|e| e.to_string())?;
    Ok((pod, path))
}

/// Snapshots the volume; the final status, or why it failed.
async fn back_up(
    pvb: &PodVolumeBackup,
    name: &str,
    api: &Api<DynamicObject>,
    ctx: &Ctx,
) -> Result<PodVolumeBackupStatus, String> {
    let spec = &pvb.spec;
    let pod_name = format!("{}/{}", spec.pod.namespace, spec.pod.name);
    let (pod, path) = volume_on_node(pvb, &pod_name, ctx).await?;
    let shown_path = path.display().to_string();
    let path_status = PodVolumeBackupStatus {
        path: Some(shown_path.clone()),
        ..Default::default()
    };
    patch::object_status(api, name, &path_status)
        .await
        .map_err(|e| format!("writing the volume's path: {}", objects::reason(&e)))?;
    if is_empty(&path)? {
        return Ok(PodVolumeBackupStatus {
            path: Some(shown_path),
            ..ended(PodVolumePhase::Completed, EMPTY_VOLUME.into())
        });
    }

    let files_at_once = ark_api::uploader::files_at_once(
        &spec.uploader_settings,
        ark_api::uploader::PARALLEL_FILES_UPLOAD,
    )?;
    // Velero names the snapshot's source after the claim, or the volume when there is none.
    let source_volume = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == spec.volume))
        .and_then(|v| v.persistent_volume_claim.as_ref())
        .map_or(spec.volume.clone(), |c| c.claim_name.clone());
    let upload = Upload {
        location: &spec.backup_storage_location,
        namespace: &spec.pod.namespace,
        volume: Volume::Mounted(path),
        source: velero::pod_volume_source(&spec.pod.namespace, &spec.pod.name, &source_volume),
        requester: Requester::PodVolume,
        files_at_once,
    };
    let uploaded =
        (upload.run(ctx, api, name, std::future::pending()).await?).ok_or("the upload stopped")?;
    let Uploaded {
        snapshot_id,
        total,
        done,
        added,
    } = uploaded;
    tracing::info!(
        "pod volume backup {name}: {pod_name} volume {} is snapshot {snapshot_id} ({done} bytes, {added} added)",
        spec.volume,
    );
    Ok(PodVolumeBackupStatus {
        path: Some(shown_path),
        snapshot_id: Some(snapshot_id),
        progress: Some(progress(total, done)),
        incremental_bytes: Some(added as i64),
        ..ended(PodVolumePhase::Completed, String::new())
    })
}
