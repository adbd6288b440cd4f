//! A node agent's DataUploads: a CSI snapshot's data moved into the location's kopia repository,
//! as Velero's data upload controller and CSI snapshot exposer move it (`pkg/controller/
//! data_upload_controller.go`, `pkg/exposer/csi_snapshot.go`), in Velero's phases:
//!
//! - New: the first agent to claim it (Accepted, `acceptedByNode`) exposes the snapshot: the
//!   VolumeSnapshot and its content are taken over into ark's namespace under the DataUpload's
//!   name (the storage snapshot kept), a claim is made from it there, and a pod mounts that claim
//!   on a node the node agent runs on (the DaemonSet's node selection and tolerations);
//! - Accepted: once that pod runs, the upload is Prepared for the pod's node;
//! - Prepared: that node's agent takes it (InProgress) and snapshots the volume where the kubelet
//!   mounts it, under Velero's source (`snapshot-data-upload-download/kopia/<ns>/<claim>`),
//!   incrementally against the claim's last upload;
//! - then everything the exposure made is removed (the storage snapshot goes with it) and the
//!   upload ends Completed with the kopia snapshot's ID, or Failed or Canceled with the reason.
//!
//! Velero's agent starts a data mover process in the pod; ark's pod only holds the volume mounted
//! (`ark hold-volumes`) and the agent reads it as it reads a pod volume.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{DataUpload, DataUploadStatus, PodVolumePhase, labels, uploader};
use ark_kopia::velero::{self, Requester};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt as _};
use serde_json::{Value, json};

use super::upload::{Upload, Uploaded, is_empty};
use super::{Ctx, DAEMON_SET, progress, volume_path};
use crate::domain::csi::{self, ContentStatus, SnapshotStatus, text};
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Phase, Readable};
use crate::runtime::patch;

/// How long an accepted upload may wait for its pod to run (Velero's
/// `--data-mover-prepare-timeout` default).
const PREPARE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long the exposure waits for the snapshot when the DataUpload sets no `operationTimeout`.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How often an exposure is looked at while it is awaited.
const POLL: Duration = Duration::from_secs(1);
/// Velero's label on the pods that expose snapshots.
const EXPOSER_GROUP: (&str, &str) = ("velero.io/exposer-pod-group", "snapshot-exposer");
/// What the exposing pod runs (`ark hold-volumes`).
const HOLD_VOLUMES: &str = "hold-volumes";
/// Velero's message for an upload of an empty volume.
const EMPTY_VOLUME: &str = "volume was empty so no data was upload";

pub async fn run(ctx: Arc<Ctx>) {
    let concurrency = ctx.concurrency;
    controller::run::<DataUpload, _, _, _>(ctx, "data upload", concurrency, reconcile).await;
}

async fn reconcile(
    cached: Arc<Readable<DataUpload>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let upload = match &cached.read {
        Ok(upload) => upload,
        Err(unfit) => {
            tracing::warn!("data upload {}: {unfit}", cached.name());
            return Ok(Action::await_change());
        }
    };
    // Another data mover's: not ours to move.
    if !ark_api::is_built_in_data_mover(upload.spec.datamover.as_deref()) {
        return Ok(Action::await_change());
    }
    let status = upload.status.clone().unwrap_or_default();
    let here = |node: &Option<String>| node.as_deref() == Some(ctx.node.as_str());
    let work = Work {
        name: cached.name(),
        api: objects::api::<DataUpload>(&ctx.kube.client, &ctx.kube.namespace),
        upload,
        ctx: &ctx,
    };
    match cached.phase::<PodVolumePhase>() {
        Phase::Absent | Phase::Known(PodVolumePhase::New) => {
            work.accept(cached.stored.metadata.resource_version.as_deref())
                .await
        }
        Phase::Known(PodVolumePhase::Accepted) if here(&status.accepted_by_node) => {
            work.await_exposed(&status).await
        }
        Phase::Known(PodVolumePhase::Prepared) if here(&status.node) => {
            work.take(cached.stored.metadata.resource_version.as_deref())
                .await
        }
        _ => Ok(Action::await_change()),
    }
}

/// One DataUpload, as this agent acts on it.
struct Work<'a> {
    name: String,
    api: Api<DynamicObject>,
    upload: &'a DataUpload,
    ctx: &'a Ctx,
}

impl Work<'_> {
    /// New: claimed by this agent, which exposes the snapshot; Canceled if asked before.
    async fn accept(&self, resource_version: Option<&str>) -> Result<Action, ReconcileError> {
        let now = patch::now();
        let accepted = if self.upload.spec.cancel == Some(true) {
            ended(PodVolumePhase::Canceled, "canceled before it was accepted")
        } else {
            DataUploadStatus {
                phase: Some(PodVolumePhase::Accepted),
                accepted_by_node: Some(self.ctx.node.clone()),
                accepted_timestamp: Some(now),
                ..Default::default()
            }
        };
        let claim = patch::claim(
            &self.api,
            &self.name,
            resource_version,
            json!({ "status": accepted }),
        )
        .await?;
        if claim == patch::Claim::Lost || accepted.phase != Some(PodVolumePhase::Accepted) {
            return Ok(Action::await_change());
        }
        tracing::info!("data upload {}: accepted; exposing its snapshot", self.name);
        match self.expose().await {
            Ok(()) => Ok(Action::requeue(POLL)),
            Err(reason) => {
                self.fail(
                    PodVolumePhase::Accepted,
                    format!("exposing the snapshot: {reason}"),
                )
                .await;
                Ok(Action::await_change())
            }
        }
    }

    /// Accepted by this agent: Prepared for the node its pod runs on, once it runs; failed when
    /// the pod cannot run or takes too long, canceled when asked.
    async fn await_exposed(&self, status: &DataUploadStatus) -> Result<Action, ReconcileError> {
        let accepted = PodVolumePhase::Accepted;
        if self.upload.spec.cancel == Some(true) {
            self.end(
                accepted,
                ended(PodVolumePhase::Canceled, "canceled before it was prepared"),
            )
            .await;
            return Ok(Action::await_change());
        }
        let pods = Api::<Pod>::namespaced(self.ctx.kube.client.clone(), &self.ctx.kube.namespace);
        let Some(pod) = pods.get_opt(&self.name).await? else {
            self.fail(accepted, format!("its pod {} is gone", self.name))
                .await;
            return Ok(Action::await_change());
        };
        let pod_status = pod.status.clone().unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if pod_status.phase.as_deref() == Some("Running")
            && let Some(node) = node
        {
            let prepared = DataUploadStatus {
                phase: Some(PodVolumePhase::Prepared),
                node: Some(node.clone()),
                ..Default::default()
            };
            let _ = patch::status_in_phase(&self.api, &self.name, accepted, &prepared).await?;
            tracing::info!("data upload {}: prepared on node {node}", self.name);
            return Ok(Action::await_change());
        }
        if let Some(reason) = cannot_run(&pod) {
            self.fail(
                accepted,
                format!("its pod {} cannot run: {reason}", self.name),
            )
            .await;
            return Ok(Action::await_change());
        }
        let since = status.accepted_timestamp.as_ref().map(|t| t.0);
        let timeout = SignedDuration::try_from(PREPARE_TIMEOUT).unwrap_or(SignedDuration::MAX);
        if since.is_some_and(|since| Timestamp::now() > since + timeout) {
            let waiting = pod_status.phase.unwrap_or_default();
            self.fail(
                accepted,
                format!(
                    "its pod {} did not run within {} (it is {waiting})",
                    self.name,
                    ark_api::duration::format(PREPARE_TIMEOUT)
                ),
            )
            .await;
            return Ok(Action::await_change());
        }
        Ok(Action::requeue(POLL))
    }

    /// Prepared for this node: claimed InProgress, the data moved, what was exposed removed,
    /// and the upload ended.
    async fn take(&self, resource_version: Option<&str>) -> Result<Action, ReconcileError> {
        let prepared = PodVolumePhase::Prepared;
        if self.upload.spec.cancel == Some(true) {
            self.end(
                prepared,
                ended(PodVolumePhase::Canceled, "canceled before it started"),
            )
            .await;
            return Ok(Action::await_change());
        }
        let started = DataUploadStatus {
            phase: Some(PodVolumePhase::InProgress),
            start_timestamp: Some(patch::now()),
            ..Default::default()
        };
        let claim = patch::claim(
            &self.api,
            &self.name,
            resource_version,
            json!({ "status": started }),
        )
        .await?;
        if claim == patch::Claim::Lost {
            return Ok(Action::await_change());
        }
        let status = match self.move_data().await {
            Ok(status) => status,
            Err(reason) => {
                tracing::warn!("data upload {} failed: {reason}", self.name);
                ended(PodVolumePhase::Failed, &reason)
            }
        };
        self.end(PodVolumePhase::InProgress, status).await;
        Ok(Action::await_change())
    }

    /// Ends the upload in `phase` with `status`, once everything its exposure made is removed.
    async fn end(&self, phase: PodVolumePhase, status: DataUploadStatus) {
        clean_up(&self.ctx.kube.client, &self.ctx.kube.namespace, self.upload).await;
        let _ = patch::final_status_in_phase(&self.api, "data upload", &self.name, phase, &status)
            .await;
    }

    async fn fail(&self, phase: PodVolumePhase, reason: String) {
        tracing::warn!("data upload {} failed: {reason}", self.name);
        self.end(phase, ended(PodVolumePhase::Failed, &reason))
            .await;
    }

    /// The snapshot taken over into ark's namespace, a claim made from it, and a pod mounting the
    /// claim on a node the node agent runs on (Velero's `Expose`).
    async fn expose(&self) -> Result<(), String> {
        let found = self.ready_snapshot().await?;
        self.take_over(&found).await?;
        let owner = json!([{
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload", "name": self.name,
            "uid": self.upload.metadata.uid, "controller": true,
        }]);
        self.make_claim(&found, owner.clone()).await?;
        let client = &self.ctx.kube.client;
        let namespace = &self.ctx.kube.namespace;
        let agents = Api::<DaemonSet>::namespaced(client.clone(), namespace)
            .get(DAEMON_SET)
            .await
            .map_err(failed(format!(
                "reading the node agent's DaemonSet {DAEMON_SET}"
            )))?;
        let pod = exposing_pod(&self.name, self.upload, namespace, &agents, owner)?;
        Api::<Pod>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &pod)
            .await
            .map_err(failed(format!("creating pod {namespace}/{}", self.name)))?;
        Ok(())
    }

    /// The claim's snapshot, once ready to use, and its content.
    async fn ready_snapshot(&self) -> Result<Found, String> {
        let client = &self.ctx.kube.client;
        let spec = &self.upload.spec;
        if spec.snapshot_type != "CSI" {
            return Err(format!("snapshot type {:?} is not CSI", spec.snapshot_type));
        }
        let source = (spec.csi_snapshot.as_ref()).ok_or("it names no CSI snapshot")?;
        let shown_claim = format!("claim {}/{}", spec.source_namespace, spec.source_pvc);
        let claim =
            Api::<PersistentVolumeClaim>::namespaced(client.clone(), &spec.source_namespace)
                .get(&spec.source_pvc)
                .await
                .map_err(failed(format!("reading {shown_claim}")))?;
        let claim_spec = claim.spec.unwrap_or_default();
        if claim_spec.volume_mode.as_deref() == Some("Block") {
            return Err(format!(
                "{shown_claim} is a block volume: ark's data mover moves file systems only"
            ));
        }
        let timeout = ark_api::duration::parse_or_default(
            Some(spec.operation_timeout.as_str()),
            OPERATION_TIMEOUT,
        )
        .unwrap_or(OPERATION_TIMEOUT);
        let snapshots = csi::volume_snapshots(client, &spec.source_namespace);
        let shown_snapshot = format!(
            "VolumeSnapshot {}/{}",
            spec.source_namespace, source.volume_snapshot
        );
        let snapshot = ready(&snapshots, &source.volume_snapshot, timeout)
            .await
            .map_err(|e| format!("{shown_snapshot}: {e}"))?;
        let content_name = (SnapshotStatus::of(&snapshot.data).bound_content)
            .ok_or_else(|| format!("{shown_snapshot} has no content"))?
            .to_string();
        let content = csi::volume_snapshot_contents(client)
            .get(&content_name)
            .await
            .map_err(failed(format!(
                "reading VolumeSnapshotContent {content_name}"
            )))?;
        // As large as the snapshot, or as the claim asks when the snapshot does not say.
        let size = (ContentStatus::of(&content.data).restore_size)
            .filter(|s| *s > 0)
            .map(|s| s.to_string())
            .or_else(|| {
                let claim_spec = serde_json::to_value(&claim_spec).unwrap_or_default();
                text(&claim_spec, "/resources/requests/storage").map(str::to_string)
            })
            .ok_or_else(|| {
                format!("{shown_claim} asks for no storage and the snapshot has no size")
            })?;
        Ok(Found {
            shown_snapshot,
            snapshot,
            content,
            size,
            timeout,
        })
    }

    /// A snapshot and content of ark's own, in its namespace, bound to the same storage snapshot
    /// (deleted with it once the data is moved); the original content retained while the original
    /// snapshot and content are removed from the claim's namespace.
    async fn take_over(&self, found: &Found) -> Result<(), String> {
        let client = &self.ctx.kube.client;
        let namespace = &self.ctx.kube.namespace;
        let (snapshot, content) = (&found.snapshot, &found.content);
        let own_snapshot: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": { "name": self.name, "namespace": namespace,
                "annotations": snapshot.metadata.annotations },
            "spec": {
                "source": { "volumeSnapshotContentName": self.name },
                "volumeSnapshotClassName": snapshot.data.pointer("/spec/volumeSnapshotClassName"),
            },
        }))
        .map_err(|e| e.to_string())?;
        let made = csi::volume_snapshots(client, namespace)
            .create(&PostParams::default(), &own_snapshot)
            .await
            .map_err(failed(format!(
                "creating VolumeSnapshot {namespace}/{}",
                self.name
            )))?;
        let content_status = ContentStatus::of(&content.data);
        let handle = (content_status.snapshot_handle).ok_or_else(|| {
            format!(
                "VolumeSnapshotContent {} has no snapshot handle",
                content.name_any()
            )
        })?;
        // The snapshotter of a distributed driver manages only the contents of its node.
        let managed_by = "snapshot.storage.kubernetes.io/managed-by";
        let own_labels: std::collections::BTreeMap<&str, &String> =
            (content.labels().get(managed_by).map(|m| (managed_by, m)))
                .into_iter()
                .collect();
        let own_content: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
            "metadata": { "name": self.name, "annotations": content.metadata.annotations,
                "labels": own_labels },
            "spec": {
                "volumeSnapshotRef": { "name": self.name, "namespace": namespace,
                    "uid": made.metadata.uid, "resourceVersion": made.metadata.resource_version },
                "source": { "snapshotHandle": handle },
                "deletionPolicy": "Delete",
                "driver": content_status.driver,
                "volumeSnapshotClassName": content.data.pointer("/spec/volumeSnapshotClassName"),
            },
        }))
        .map_err(|e| e.to_string())?;
        let contents = csi::volume_snapshot_contents(client);
        contents
            .create(&PostParams::default(), &own_content)
            .await
            .map_err(failed(format!(
                "creating VolumeSnapshotContent {}",
                self.name
            )))?;
        let content_name = content.name_any();
        let retain = json!({ "spec": { "deletionPolicy": "Retain" } });
        contents
            .patch(
                &content_name,
                &PatchParams::default(),
                &Patch::Merge(&retain),
            )
            .await
            .map_err(failed(format!(
                "retaining VolumeSnapshotContent {content_name}"
            )))?;
        let source_namespace = &self.upload.spec.source_namespace;
        delete_and_wait(
            &csi::volume_snapshots(client, source_namespace),
            &snapshot.name_any(),
            found.timeout,
        )
        .await
        .map_err(|e| format!("removing {}: {e}", found.shown_snapshot))?;
        delete_and_wait(&contents, &content_name, found.timeout)
            .await
            .map_err(|e| format!("removing VolumeSnapshotContent {content_name}: {e}"))
    }

    /// The claim made from ark's snapshot, in ark's namespace, owned by the upload.
    async fn make_claim(&self, found: &Found, owner: Value) -> Result<(), String> {
        let namespace = &self.ctx.kube.namespace;
        let storage_class = (self.upload.spec.csi_snapshot.as_ref())
            .map(|s| s.storage_class.clone())
            .unwrap_or_default();
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": { "name": self.name, "namespace": namespace, "ownerReferences": owner },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "volumeMode": "Filesystem",
                "dataSource": { "apiGroup": csi::GROUP, "kind": "VolumeSnapshot", "name": self.name },
                "resources": { "requests": { "storage": found.size } },
            },
        }))
        .map_err(|e| e.to_string())?;
        Api::<PersistentVolumeClaim>::namespaced(self.ctx.kube.client.clone(), namespace)
            .create(&PostParams::default(), &claim)
            .await
            .map_err(failed(format!("creating claim {namespace}/{}", self.name)))?;
        Ok(())
    }

    /// Where the exposed volume is on this node: the pod's volume directory, under the kubelet's.
    async fn exposed_volume(&self) -> Result<std::path::PathBuf, String> {
        let ctx = self.ctx;
        let namespace = &ctx.kube.namespace;
        let pod_name = format!("{namespace}/{}", self.name);
        let pod = Api::<Pod>::namespaced(ctx.kube.client.clone(), namespace)
            .get(&self.name)
            .await
            .map_err(failed(format!("reading pod {pod_name}")))?;
        let volume = self.upload.uid().unwrap_or_default();
        let dir = volume_path::volume_directory(&ctx.kube.client, &pod, &volume)
            .await
            .map_err(|e| e.to_string())?;
        let pod_uid = pod.uid().unwrap_or_default();
        volume_path::host_path(&ctx.host_pods, &pod_name, &pod_uid, &volume, &dir)
            .map_err(|e| e.to_string())
    }

    /// Snapshots the exposed volume into the repository of the claim's namespace: the final
    /// status, or why it failed.
    async fn move_data(&self) -> Result<DataUploadStatus, String> {
        let ctx = self.ctx;
        let spec = &self.upload.spec;
        let path = self.exposed_volume().await?;
        let shown_path = path.display().to_string();
        if is_empty(&path)? {
            return Ok(DataUploadStatus {
                path: Some(shown_path),
                ..ended(PodVolumePhase::Completed, EMPTY_VOLUME)
            });
        }
        let files_at_once = uploader::files_at_once(
            spec.data_mover_config
                .as_ref()
                .unwrap_or(&Default::default()),
            uploader::PARALLEL_FILES_UPLOAD,
        )?;
        let operation_id =
            (self.upload.labels().get(labels::ASYNC_OPERATION_ID)).map_or("", String::as_str);
        let upload = Upload {
            location: &spec.backup_storage_location,
            namespace: &spec.source_namespace,
            path: &path,
            source: velero::data_mover_source(&spec.source_namespace, &spec.source_pvc),
            requester: Requester::DataMover { operation_id },
            files_at_once,
        };
        let Some(uploaded) = upload
            .run(ctx, &self.api, &self.name, self.canceled())
            .await?
        else {
            return Ok(ended(
                PodVolumePhase::Canceled,
                "canceled while its data was moved",
            ));
        };
        let Uploaded {
            snapshot_id,
            total,
            done,
            added,
        } = uploaded;
        tracing::info!(
            "data upload {}: claim {}/{} is snapshot {snapshot_id} ({done} bytes, {added} added)",
            self.name,
            spec.source_namespace,
            spec.source_pvc,
        );
        Ok(DataUploadStatus {
            path: Some(shown_path),
            snapshot_id: Some(snapshot_id),
            progress: Some(progress(total, done)),
            incremental_bytes: Some(added as i64),
            node: Some(ctx.node.clone()),
            ..ended(PodVolumePhase::Completed, "")
        })
    }

    /// Ends once the upload is asked to cancel (read every few seconds).
    async fn canceled(&self) {
        let uploads =
            Api::<DataUpload>::namespaced(self.ctx.kube.client.clone(), &self.ctx.kube.namespace);
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            if let Ok(upload) = uploads.get(&self.name).await
                && upload.spec.cancel == Some(true)
            {
                return;
            }
        }
    }
}

/// The claim's snapshot, ready to use, and what exposing it needs.
struct Found {
    shown_snapshot: String,
    snapshot: DynamicObject,
    content: DynamicObject,
    /// The size of the claim made from it.
    size: String,
    /// How long each step of the exposure may wait.
    timeout: Duration,
}

/// The message of a request that failed, naming what it did.
fn failed(what: String) -> impl FnOnce(kube::Error) -> String {
    move |error| format!("{what}: {}", objects::reason(&error))
}

fn ended(phase: PodVolumePhase, message: &str) -> DataUploadStatus {
    DataUploadStatus {
        phase: Some(phase),
        message: Some(message.to_string()).filter(|m| !m.is_empty()),
        completion_timestamp: Some(patch::now()),
        ..Default::default()
    }
}

/// The pod that holds the claim made from the snapshot mounted: the node agent's image and
/// placement (so that it runs where an agent reads it), nothing else of the agent's: no token,
/// no root, no capability.
fn exposing_pod(
    name: &str,
    upload: &DataUpload,
    namespace: &str,
    agents: &DaemonSet,
    owner: Value,
) -> Result<Pod, String> {
    let template = (agents.spec.as_ref())
        .and_then(|s| s.template.spec.clone())
        .ok_or_else(|| format!("the node agent's DaemonSet {DAEMON_SET} has no pod template"))?;
    let agent = template
        .containers
        .first()
        .ok_or_else(|| format!("the node agent's DaemonSet {DAEMON_SET} has no container"))?;
    let volume = upload.uid().unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": namespace, "ownerReferences": owner,
            "labels": { labels::DATA_UPLOAD: name, EXPOSER_GROUP.0: EXPOSER_GROUP.1 },
        },
        "spec": {
            "nodeSelector": template.node_selector,
            "affinity": template.affinity,
            "tolerations": template.tolerations,
            "automountServiceAccountToken": false,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "securityContext": {
                "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                "seccompProfile": { "type": "RuntimeDefault" },
            },
            "containers": [{
                "name": "hold",
                "image": agent.image,
                "imagePullPolicy": agent.image_pull_policy,
                "command": agent.command,
                "args": [HOLD_VOLUMES],
                "resources": {
                    "requests": { "cpu": "10m", "memory": "16Mi" },
                    "limits": { "memory": "64Mi" },
                },
                "securityContext": {
                    "readOnlyRootFilesystem": true,
                    "allowPrivilegeEscalation": false,
                    "capabilities": { "drop": ["ALL"] },
                },
                "volumeMounts": [{ "name": volume, "mountPath": format!("/{volume}") }],
            }],
            "volumes": [{ "name": volume, "persistentVolumeClaim": { "claimName": name } }],
        },
    }))
    .map_err(|e| e.to_string())
}

/// Why a pod will never run: it failed, or its image cannot be pulled.
fn cannot_run(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() == Some("Failed") {
        return Some(status.message.clone().unwrap_or_else(|| "it failed".into()));
    }
    (status.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .find(|w| {
            matches!(
                w.reason.as_deref(),
                Some(
                    "ErrImagePull"
                        | "ImagePullBackOff"
                        | "InvalidImageName"
                        | "CreateContainerConfigError"
                )
            )
        })
        .map(|w| {
            format!(
                "{}: {}",
                w.reason.clone().unwrap_or_default(),
                w.message.clone().unwrap_or_default()
            )
        })
}

/// The VolumeSnapshot once ready to use, within `timeout`.
async fn ready(
    snapshots: &Api<DynamicObject>,
    name: &str,
    timeout: Duration,
) -> Result<DynamicObject, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::from("not ready to use");
    loop {
        match snapshots.get_opt(name).await {
            Ok(None) => return Err("it is gone".into()),
            Ok(Some(snapshot)) => {
                let status = SnapshotStatus::of(&snapshot.data);
                if status.ready_to_use {
                    return Ok(snapshot);
                }
                if let Some(error) = status.error {
                    last = format!("the snapshot controller said: {error}");
                }
            }
            Err(error) => last = format!("reading it: {}", objects::reason(&error)),
        }
        if tokio::time::Instant::now() + POLL > deadline {
            return Err(format!(
                "not ready to use within {}: {last}",
                ark_api::duration::format(timeout)
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Deletes an object and waits until it is gone, within `timeout`.
async fn delete_and_wait(
    api: &Api<DynamicObject>,
    name: &str,
    timeout: Duration,
) -> Result<(), String> {
    patch::ignore_not_found(api.delete(name, &DeleteParams::default()).await)
        .map_err(|e| objects::reason(&e))?;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match api.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) | Err(_) if tokio::time::Instant::now() + POLL > deadline => {
                return Err(format!(
                    "still there after {}",
                    ark_api::duration::format(timeout)
                ));
            }
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

/// Removes what exposing the upload's snapshot made, whatever became of it (Velero's
/// `CleanUp`): the pod, the claim and its volume, ark's snapshot (its content and the storage
/// snapshot go with it) and the original snapshot if it is still there. Best effort: what cannot
/// be removed is logged.
pub async fn clean_up(client: &kube::Client, namespace: &str, upload: &DataUpload) {
    let name = upload.name_any();
    let warn = |what: &str, error: kube::Error| {
        if !matches!(&error, kube::Error::Api(s) if s.code == 404) {
            tracing::warn!(
                "data upload {name}: removing {what}: {}",
                objects::reason(&error)
            );
        }
    };
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    if let Err(error) = Api::<Pod>::namespaced(client.clone(), namespace)
        .delete(&name, &now)
        .await
    {
        warn("its pod", error);
    }
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    // Its volume goes with it, whatever the class's reclaim policy.
    if let Ok(Some(claim)) = claims.get_opt(&name).await
        && let Some(volume) = claim.spec.and_then(|s| s.volume_name)
    {
        let delete = json!({ "spec": { "persistentVolumeReclaimPolicy": "Delete" } });
        if let Err(error) = Api::<PersistentVolume>::all(client.clone())
            .patch(&volume, &PatchParams::default(), &Patch::Merge(&delete))
            .await
        {
            warn("its volume's reclaim policy", error);
        }
    }
    if let Err(error) = claims.delete(&name, &DeleteParams::default()).await {
        warn("its claim", error);
    }
    if let Err(error) = csi::volume_snapshots(client, namespace)
        .delete(&name, &DeleteParams::default())
        .await
    {
        warn("its VolumeSnapshot", error);
    }
    if let Some(source) = &upload.spec.csi_snapshot
        && let Err(error) = csi::volume_snapshots(client, &upload.spec.source_namespace)
            .delete(&source.volume_snapshot, &DeleteParams::default())
            .await
    {
        warn("the claim's VolumeSnapshot", error);
    }
}
