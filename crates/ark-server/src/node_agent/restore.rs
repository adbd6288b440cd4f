//! A node agent's PodVolumeRestores: once the restored pod runs on this node and its
//! `restore-wait` init container runs (so the volume is mounted, and nothing but the helper sees
//! it yet), the snapshot is written into the volume, then `.velero/<restore uid>`, which lets the
//! helper end and the pod's own containers start: as Velero's node agent does it.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ark_api::{PodVolumePhase, PodVolumeRestore, PodVolumeRestoreStatus, labels, uploader};
use ark_kopia::beneath::{self, Dir};
use ark_kopia::repository::RestoreSettings;
use ark_kopia::snapshot::RestoreCounts;
use k8s_openapi::api::core::v1::Pod;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt as _};
use serde_json::json;

use super::upload::Volume;
use super::volume_path;
use super::{Ctx, DATA_PATH_WAIT, ProgressReport, progress};
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Summary};
use crate::runtime::patch;

/// Velero's restore helper's init container, which the agent waits to run.
const RESTORE_WAIT: &str = "restore-wait";
/// How often a request whose pod is not ready for its data yet is looked at again.
const NOT_YET: Duration = Duration::from_secs(2);

pub async fn run(ctx: Arc<Ctx>) {
    let concurrency = ctx.concurrency;
    let woken = controller::Woken::Never;
    controller::run_summarized::<PodVolumeRestore, _, _, _>(
        ctx,
        "pod volume restore",
        concurrency,
        woken,
        reconcile,
    )
    .await;
}

async fn reconcile(
    summary: Arc<Summary<PodVolumeRestore>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let Some((stored, pvr)) = super::new_request(&ctx.kube, &summary, "pod volume restore").await?
    else {
        return Ok(Action::await_change());
    };
    let api = objects::api::<PodVolumeRestore>(&ctx.kube.client, &ctx.kube.namespace);
    let spec = &pvr.spec;
    let pod = match Api::<Pod>::namespaced(ctx.kube.client.clone(), &spec.pod.namespace)
        .get_opt(&spec.pod.name)
        .await?
    {
        Some(pod) if pod.metadata.uid.as_deref() == Some(spec.pod.uid.as_str()) => pod,
        // Not there (yet, or any more): whichever agent the pod lands with takes it then.
        _ => return Ok(Action::requeue(NOT_YET)),
    };
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    if node != Some(ctx.node.as_str()) {
        return Ok(match node {
            None => Action::requeue(NOT_YET),
            Some(_) => Action::await_change(),
        });
    }
    if !restore_wait_runs(&pod) {
        return Ok(Action::requeue(NOT_YET));
    }
    // Held until the restore has ended.
    let Some(_data_path) = ctx.data_path() else {
        return Ok(Action::requeue(DATA_PATH_WAIT));
    };
    let name = stored.name_any();
    let now = patch::now();
    let claim = patch::claim(
        &api,
        &name,
        stored.metadata.resource_version.as_deref(),
        json!({ "status": PodVolumeRestoreStatus {
            phase: Some(PodVolumePhase::InProgress),
            accepted_timestamp: Some(now.clone()),
            start_timestamp: Some(now),
            node: Some(ctx.node.clone()),
            ..Default::default()
        } }),
    )
    .await?;
    if claim == patch::Claim::Lost {
        return Ok(Action::await_change());
    }
    let status = match restore(&pvr, &pod, &name, &api, &ctx).await {
        Ok(status) => status,
        Err(reason) => {
            tracing::warn!("pod volume restore {name} failed: {reason}");
            ended(PodVolumePhase::Failed, reason)
        }
    };
    // The work is done (a snapshot taken, a volume written): its end is written however long the
    // API server is gone, or whoever waits on it would wait for nothing.
    let _ = patch::final_status_in_phase(
        &api,
        "pod volume restore",
        &name,
        PodVolumePhase::InProgress,
        &status,
    )
    .await;
    Ok(Action::await_change())
}

fn restore_wait_runs(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.name == RESTORE_WAIT && c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

fn ended(phase: PodVolumePhase, message: String) -> PodVolumeRestoreStatus {
    PodVolumeRestoreStatus {
        phase: Some(phase),
        message: Some(message),
        completion_timestamp: Some(patch::now()),
        ..Default::default()
    }
}

async fn restore(
    pvr: &PodVolumeRestore,
    pod: &Pod,
    name: &str,
    api: &Api<DynamicObject>,
    ctx: &Ctx,
) -> Result<PodVolumeRestoreStatus, String> {
    let spec = &pvr.spec;
    let pod_name = format!("{}/{}", spec.pod.namespace, spec.pod.name);
    let restore_uid = pvr
        .labels()
        .get(labels::RESTORE_UID)
        .cloned()
        .filter(|uid| !uid.is_empty() && !uid.contains('/') && uid != "." && uid != "..")
        .ok_or_else(|| format!("it has no valid label {}", labels::RESTORE_UID))?;
    let settings = restore_settings(&spec.uploader_settings)?;
    let dir = volume_path::volume_directory(&ctx.kube.client, pod, &spec.volume)
        .await
        .map_err(|e| e.to_string())?;
    let path = volume_path::host_path(&ctx.host_pods, &pod_name, &spec.pod.uid, &spec.volume, &dir)
        .map_err(|e| e.to_string())?;
    let stored = Stored {
        location: &spec.backup_storage_location,
        namespace: &spec.source_namespace,
        snapshot_id: &spec.snapshot_id,
    };
    let volume = Volume::Mounted(path.clone());
    let (total, done) = stored.write(ctx, api, name, &volume, settings).await?;
    done_mark(&path, &restore_uid, helper_owner(pod))?;
    tracing::info!(
        "pod volume restore {name}: snapshot {} is in {pod_name} volume {} ({done} bytes)",
        spec.snapshot_id,
        spec.volume
    );
    Ok(PodVolumeRestoreStatus {
        progress: Some(progress(total, done)),
        ..ended(PodVolumePhase::Completed, String::new())
    })
}

/// How a request's uploader settings say to write: sparse files or not, files at once.
pub fn restore_settings(
    settings: &std::collections::BTreeMap<String, String>,
) -> Result<RestoreSettings, String> {
    Ok(RestoreSettings {
        sparse: uploader::write_sparse_files(settings)?,
        files_at_once: uploader::files_at_once(settings, uploader::PARALLEL_FILES_DOWNLOAD)?,
    })
}

/// A kopia snapshot in the repository of a namespace, in a location.
pub struct Stored<'a> {
    pub location: &'a str,
    pub namespace: &'a str,
    pub snapshot_id: &'a str,
}

impl Stored<'_> {
    /// Writes the snapshot's files into the volume (a block device: its one file from the
    /// device's first byte), the bytes done shown in the status of request `name` (through
    /// `api`) as they go: the snapshot's bytes and those written. The repository is discarded
    /// (opened again next time) when the snapshot cannot be read.
    pub async fn write(
        &self,
        ctx: &Ctx,
        api: &Api<DynamicObject>,
        name: &str,
        volume: &Volume,
        settings: RestoreSettings,
    ) -> Result<(u64, u64), String> {
        let id = self.snapshot_id;
        let repository = (ctx.repositories.get(self.location, self.namespace).await)
            .map_err(|e| e.to_string())?;
        let snapshot = match repository.snapshot(id).await {
            Ok(snapshot) => snapshot,
            Err(error) => {
                repository.discard();
                return Err(format!("snapshot {id}: {error}"));
            }
        };
        let Some(root) = snapshot.manifest.root_entry.clone() else {
            return Err(format!("snapshot {id} has no root"));
        };
        let total = (root.summary.as_ref()).map_or(0, |s| s.total_file_size.max(0) as u64);
        let counts = Arc::new(RestoreCounts::default());
        let reporter = {
            let counts = counts.clone();
            ProgressReport::start(api.clone(), name.to_string(), total, move || {
                counts.bytes.load(Ordering::Relaxed)
            })
        };
        let restored = match volume {
            Volume::Mounted(path) => {
                repository
                    .restore_with(&root, path, &counts, settings)
                    .await
            }
            Volume::Device { device, .. } => {
                (repository.restore_device(&root, device, &counts).await).map(|_| ())
            }
        };
        reporter.stop().await;
        restored.map_err(|e| format!("writing snapshot {id} into {}: {e}", volume.shown()))?;
        Ok((total, counts.bytes.load(Ordering::Relaxed)))
    }
}

/// The user and group the `restore-wait` helper runs as, when the pod says.
fn helper_owner(pod: &Pod) -> Option<(u32, u32)> {
    let spec = pod.spec.as_ref()?;
    let helper = spec
        .init_containers
        .iter()
        .flatten()
        .find(|c| c.name == RESTORE_WAIT)?
        .security_context
        .as_ref();
    let pod_level = spec.security_context.as_ref();
    let user = helper
        .and_then(|s| s.run_as_user)
        .or_else(|| pod_level.and_then(|s| s.run_as_user))?;
    let group = helper
        .and_then(|s| s.run_as_group)
        .or_else(|| pod_level.and_then(|s| s.run_as_group))
        .unwrap_or(user);
    Some((u32::try_from(user).ok()?, u32::try_from(group).ok()?))
}

/// `.velero/<restore uid>` in the volume, as Velero's `writeCompletionMark` writes it: what the
/// `restore-wait` helper waits for. Both are given to the helper's user, so that it can remove
/// them once the volumes are restored (Velero's stay behind when the helper runs as another user
/// than the agent's root).
fn done_mark(volume: &Path, restore_uid: &str, owner: Option<(u32, u32)>) -> Result<(), String> {
    let marks = OsStr::new(".velero");
    let shown = volume.join(marks);
    // Through handles beneath the volume: a pod that swaps `.velero` for a symlink meanwhile
    // makes this fail, never write elsewhere.
    let written = Dir::root(volume).and_then(|root| {
        root.remove_all(marks)?;
        let dir = root.make_dir(marks, 0o755)?;
        let mark = dir.create_file(OsStr::new(restore_uid), 0o644)?;
        if let Some(owner) = owner {
            dir.set_owner(owner)?;
            beneath::set_owner(&mark, &dir.shown(OsStr::new(restore_uid)), owner)?;
        }
        Ok(())
    });
    written.map_err(|e| format!("writing the done mark in {}: {e}", shown.display()))
}
