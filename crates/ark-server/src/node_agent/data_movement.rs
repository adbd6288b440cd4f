//! Snapshot data movement on a node agent, both ways: a DataUpload moves a CSI snapshot's data
//! into the location's kopia repository, a DataDownload writes it back into a new volume for a
//! restored claim. Both go through Velero's phases (`pkg/controller/data_upload_controller.go`,
//! `data_download_controller.go`), which this module carries out for either kind:
//!
//! - New: the first agent to claim it (Accepted, `acceptedByNode`) exposes a volume: a claim in
//!   ark's namespace and a pod that mounts it on a node an agent runs on;
//! - Accepted: once that pod runs, it is Prepared for the pod's node (failed when the pod cannot
//!   run or does not within `--data-mover-prepare-timeout`, [`Ctx::prepare_timeout`]);
//! - Prepared: that node's agent takes it (InProgress) and moves the data, reading or writing the
//!   volume where the kubelet mounts it;
//! - then what the exposure made is removed and it ends Completed, Failed or Canceled (asked by
//!   `spec.cancel` at any phase);
//! - a request held by a node that is lost (gone, or not Ready for five minutes) is failed by
//!   another agent, and its exposure removed: by any agent while it is Accepted, by the agent
//!   that accepted it once it is Prepared or InProgress elsewhere.
//!
//! What differs, the volume exposed and the data moved, is the kind's [`Mover`]. Velero's agent
//! starts a data mover process in the pod; ark's pod only holds the volume mounted (`ark
//! hold-volumes`) and the agent reads or writes it as it does a pod volume; a block volume's pod
//! holds its device open and hands it to the agent ([`block_device`]).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{PodVolumePhase, labels};
use ark_storage::backoff::Backoff;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Affinity, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::exposing_pods::ExposingPods;
use super::upload::Volume;
use super::{Ctx, DAEMON_SET, DATA_PATH_WAIT, block_device, volume_path};
use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::metrics::MoveEnded;
use crate::runtime::objects::{self, Phase, Readable};
use crate::runtime::patch;

/// How often an exposure is looked at while it is awaited.
pub const POLL: Duration = Duration::from_secs(1);

/// The pauses between looks at something the cluster is about to do (a snapshot ready, a pod or a
/// claim gone, a volume bound): short at first, as most of it is done within a second, then every
/// [`POLL`].
pub fn polls() -> Backoff {
    Backoff::between(Duration::from_millis(100), POLL)
}
/// How often a request another node holds is looked at, in case that node is lost.
const HOLDER_CHECK: Duration = Duration::from_secs(30);
/// How long a node may be not Ready before the requests it holds are given up: the time the
/// node controller gives it before it evicts the node's pods.
const NODE_LOST_AFTER: Duration = Duration::from_secs(5 * 60);
/// What the exposing pod runs (`ark hold-volumes`).
const HOLD_VOLUMES: &str = "hold-volumes";

/// A kind of data movement request: DataUpload or DataDownload.
pub trait Movable:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + DeserializeOwned
    + Serialize
    + Clone
    + Debug
    + Send
    + Sync
    + 'static
{
    /// How the log names one ("data upload").
    const WHAT: &'static str;
    /// Velero's name of the kind in its metrics (`data_upload`).
    const METRIC: &'static str;
    /// Velero's label naming the request on its exposing pod, and the pod's exposer group.
    const POD_LABEL: &'static str;
    const EXPOSER_GROUP: &'static str;
    type Mover<'a>: Mover + Send
    where
        Self: 'a;

    /// What moves the data of `request`, named `name`.
    fn mover<'a>(request: &'a Self, ctx: &'a Ctx, name: &'a str) -> Self::Mover<'a>;
}

/// What one kind does at each step of the state machine.
pub trait Mover: Sync {
    /// Makes the volume and the pod that mounts it, as [`exposing_pod`] makes it.
    fn expose(&self) -> impl Future<Output = Result<(), String>> + Send;
    /// Moves the data between the exposed volume, as this node's agent reaches it, and the
    /// repository: the status fields of a request that ended Completed (a `message` among them
    /// when it has one), or None when `canceled` ended first.
    fn move_data(
        &self,
        volume: Volume,
        canceled: impl Future<Output = ()> + Send,
    ) -> impl Future<Output = Result<Option<Map<String, Value>>, String>> + Send;
    /// Removes what the exposure made, whatever became of it (Velero's `CleanUp`). Best effort:
    /// what cannot be removed is logged.
    fn clean_up(&self) -> impl Future<Output = ()> + Send;
}

/// Runs the agent's controller of kind `K`.
pub async fn run<K: Movable>(ctx: Arc<Ctx>) {
    let concurrency = ctx.concurrency;
    // Woken when its exposing pod runs: Prepared then, not at the next look.
    let woken = controller::Woken::ByPodsLabelled(K::POD_LABEL);
    controller::run_woken::<K, _, _, _>(ctx, K::WHAT, concurrency, woken, reconcile::<K>).await;
}

async fn reconcile<K: Movable>(
    cached: Arc<Readable<K>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let request = match &cached.read {
        Ok(request) => request,
        Err(unfit) => {
            tracing::warn!("{} {}: {unfit}", K::WHAT, cached.name());
            return Ok(Action::await_change());
        }
    };
    let stored = &cached.stored.data;
    // Another data mover's: not ours to move.
    let datamover = stored.pointer("/spec/datamover").and_then(Value::as_str);
    if !ark_api::is_built_in_data_mover(datamover) {
        return Ok(Action::await_change());
    }
    let here = |field: &str| stored.pointer(field).and_then(Value::as_str) == Some(&ctx.node);
    let name = cached.name();
    let api = objects::api::<K>(&ctx.kube.client, &ctx.kube.namespace);
    let (meta, phase) = (&cached.stored.metadata, cached.phase());
    if super::let_go_once_ended(&api, meta, phase, ark_api::DATA_MOVER_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    let metadata = &cached.stored.metadata;
    let step = Step {
        api,
        mover: K::mover(request, &ctx, &name),
        name: &name,
        ctx: &ctx,
        cancel: asked_to_stop(&cached.stored),
        resource_version: metadata.resource_version.as_deref(),
        uid: metadata.uid.as_deref(),
    };
    match cached.phase::<PodVolumePhase>() {
        Phase::Absent | Phase::Known(PodVolumePhase::New) => step.accept::<K>().await,
        Phase::Known(PodVolumePhase::Accepted) if here("/status/acceptedByNode") => {
            let accepted = stored.pointer("/status/acceptedTimestamp").cloned();
            let accepted = accepted.and_then(|t| serde_json::from_value::<Time>(t).ok());
            step.await_exposed::<K>(accepted.map(|t| t.0)).await
        }
        Phase::Known(PodVolumePhase::Prepared) if here("/status/node") => step.take::<K>().await,
        // Held by another node's agent: if that node is lost, nobody else would end it. Any
        // agent looks after one being exposed; the agent that exposed it, after one prepared or
        // moving elsewhere.
        Phase::Known(phase @ PodVolumePhase::Accepted) => {
            step.check_holder::<K>(phase, "/status/acceptedByNode", stored)
                .await
        }
        Phase::Known(phase @ (PodVolumePhase::Prepared | PodVolumePhase::InProgress))
            if here("/status/acceptedByNode") && !here("/status/node") =>
        {
            step.check_holder::<K>(phase, "/status/node", stored).await
        }
        _ => Ok(Action::await_change()),
    }
}

/// One request, as this agent acts on it.
struct Step<'a, M> {
    api: Api<DynamicObject>,
    mover: M,
    name: &'a str,
    ctx: &'a Ctx,
    cancel: bool,
    resource_version: Option<&'a str>,
    uid: Option<&'a str>,
}

impl<M: Mover> Step<'_, M> {
    /// New: claimed by this agent, which exposes the volume; Canceled if asked before. Left New
    /// while the prepare queue is full.
    async fn accept<K: Movable>(&self) -> Result<Action, ReconcileError> {
        let accepted = if self.cancel {
            json!({ "status": ended(PodVolumePhase::Canceled, "canceled before it was accepted") })
        } else {
            if prepare_queue_full(self.ctx).await? {
                return Ok(Action::requeue(QUEUE_WAIT));
            }
            json!({
                "metadata": { "labels": { labels::EXPOSE_ON_GOING: "true" } },
                "status": {
                    "phase": PodVolumePhase::Accepted,
                    "acceptedByNode": self.ctx.node,
                    "acceptedTimestamp": patch::now(),
                },
            })
        };
        let claim = patch::claim(&self.api, self.name, self.resource_version, accepted).await?;
        if claim == patch::Claim::Lost || self.cancel {
            return Ok(Action::await_change());
        }
        tracing::info!("{} {}: accepted; exposing its volume", K::WHAT, self.name);
        match self.mover.expose().await {
            // Deleted meanwhile (with no finalizer): it is never looked at again, and the
            // garbage collector removes only what it owns.
            Ok(()) if self.gone().await => {
                tracing::info!("{} {}: deleted while exposed", K::WHAT, self.name);
                self.mover.clean_up().await;
                Ok(Action::await_change())
            }
            Ok(()) => Ok(Action::requeue(POLL)),
            Err(reason) => {
                let reason = format!("exposing its volume: {reason}");
                self.fail::<K>(PodVolumePhase::Accepted, reason).await;
                Ok(Action::await_change())
            }
        }
    }

    /// Accepted by this agent: Prepared for the node its pod runs on, once it runs; failed when
    /// the pod cannot run or takes too long, canceled when asked.
    async fn await_exposed<K: Movable>(
        &self,
        accepted_at: Option<Timestamp>,
    ) -> Result<Action, ReconcileError> {
        let accepted = PodVolumePhase::Accepted;
        if self.cancel {
            let canceled = ended(PodVolumePhase::Canceled, "canceled before it was prepared");
            self.end::<K>(accepted, canceled).await;
            return Ok(Action::await_change());
        }
        let pods = Api::<Pod>::namespaced(self.ctx.kube.client.clone(), &self.ctx.kube.namespace);
        let Some(pod) = pods.get_opt(self.name).await? else {
            self.fail::<K>(accepted, format!("its pod {} is gone", self.name))
                .await;
            return Ok(Action::await_change());
        };
        let pod_status = pod.status.clone().unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if pod_status.phase.as_deref() == Some("Running")
            && let Some(node) = node
        {
            let prepared = json!({ "phase": PodVolumePhase::Prepared, "node": node });
            let _ = patch::status_in_phase(&self.api, self.name, accepted, &prepared).await?;
            tracing::info!("{} {}: prepared on node {node}", K::WHAT, self.name);
            return Ok(Action::await_change());
        }
        if let Some(reason) = cannot_run(&pod) {
            let reason = format!("its pod {} cannot run: {reason}", self.name);
            self.fail::<K>(accepted, reason).await;
            return Ok(Action::await_change());
        }
        let prepare_timeout = self.ctx.prepare_timeout;
        let timeout = SignedDuration::try_from(prepare_timeout).unwrap_or(SignedDuration::MAX);
        if accepted_at.is_some_and(|since| Timestamp::now() > since + timeout) {
            let reason = format!(
                "its pod {} did not run within {} (it is {})",
                self.name,
                ark_api::duration::format(prepare_timeout),
                waiting(&pod)
            );
            self.fail::<K>(accepted, reason).await;
            return Ok(Action::await_change());
        }
        Ok(Action::requeue(POLL))
    }

    /// Prepared for this node: claimed InProgress, the data moved, what was exposed removed, and
    /// the request ended.
    async fn take<K: Movable>(&self) -> Result<Action, ReconcileError> {
        let prepared = PodVolumePhase::Prepared;
        if self.cancel {
            let canceled = ended(PodVolumePhase::Canceled, "canceled before it started");
            self.end::<K>(prepared, canceled).await;
            return Ok(Action::await_change());
        }
        // Waits Prepared, its volume exposed, while the node moves as many as it may; held until
        // the request has ended.
        let Some(_data_path) = self.ctx.data_path() else {
            return Ok(Action::requeue(DATA_PATH_WAIT));
        };
        // Out of the prepare queue once its data moves, as under Velero.
        let started = json!({
            "metadata": { "labels": { labels::EXPOSE_ON_GOING: null } },
            "status": { "phase": PodVolumePhase::InProgress, "startTimestamp": patch::now() },
        });
        let claim = patch::claim(&self.api, self.name, self.resource_version, started).await?;
        if claim == patch::Claim::Lost {
            return Ok(Action::await_change());
        }
        let moved = match exposed_volume(self.ctx, self.name).await {
            Ok(volume) => self.mover.move_data(volume, self.canceled()).await,
            Err(reason) => Err(reason),
        };
        let status = match moved {
            Ok(Some(result)) => {
                let mut status = ended(PodVolumePhase::Completed, "");
                status.as_object_mut().expect("a status").extend(result);
                status
            }
            Ok(None) => ended(
                PodVolumePhase::Canceled,
                "canceled while its data was moved",
            ),
            Err(reason) => {
                tracing::warn!("{} {} failed: {reason}", K::WHAT, self.name);
                ended(PodVolumePhase::Failed, &reason)
            }
        };
        self.end::<K>(PodVolumePhase::InProgress, status).await;
        Ok(Action::await_change())
    }

    /// A request another node's agent holds in `phase` (that node named at `node_field`): failed,
    /// and what its exposure made removed, once that node is lost (gone, or not Ready for
    /// [`NODE_LOST_AFTER`]); looked at again every [`HOLDER_CHECK`] until then.
    async fn check_holder<K: Movable>(
        &self,
        phase: PodVolumePhase,
        node_field: &str,
        stored: &Value,
    ) -> Result<Action, ReconcileError> {
        let Some(node) = stored.pointer(node_field).and_then(Value::as_str) else {
            return Ok(Action::await_change());
        };
        let nodes = Api::<Node>::all(self.ctx.kube.client.clone());
        let lost = match nodes.get_opt(node).await? {
            None => format!("node {node}, whose agent held it {phase:?}, is gone"),
            Some(held) => match not_ready_for(&held) {
                Some(since) if since >= NODE_LOST_AFTER => format!(
                    "node {node}, whose agent held it {phase:?}, has not been Ready for {}",
                    ark_api::duration::format(since)
                ),
                _ => return Ok(Action::requeue(HOLDER_CHECK)),
            },
        };
        self.fail::<K>(phase, lost).await;
        Ok(Action::await_change())
    }

    /// Ends the request in `phase` with `status`, once everything its exposure made is removed;
    /// counted in the metrics once ended.
    async fn end<K: Movable>(&self, phase: PodVolumePhase, status: Value) {
        self.mover.clean_up().await;
        let ended = patch::final_status_in_phase(&self.api, K::WHAT, self.name, phase, &status);
        if ended.await == patch::Claim::Won {
            leave_prepare_queue(&self.api, K::WHAT, self.name, phase).await;
            let how = match status.get("phase").and_then(|p| p.as_str()) {
                Some("Completed") => MoveEnded::Success,
                Some("Canceled") => MoveEnded::Cancel,
                _ => MoveEnded::Failure,
            };
            (self.ctx.kube.metrics).data_moved(K::METRIC, &self.ctx.node, how);
        }
    }

    async fn fail<K: Movable>(&self, phase: PodVolumePhase, reason: String) {
        tracing::warn!("{} {} failed: {reason}", K::WHAT, self.name);
        self.end::<K>(phase, ended(PodVolumePhase::Failed, &reason))
            .await;
    }

    /// The request as it is now, if it is still this one (a request of the same name made since
    /// is another); Err when it cannot be read.
    async fn now(&self) -> kube::Result<Option<DynamicObject>> {
        let found = self.api.get_opt(self.name).await?;
        Ok(found.filter(|r| r.metadata.uid.as_deref() == self.uid))
    }

    /// Whether the request is gone.
    async fn gone(&self) -> bool {
        matches!(self.now().await, Ok(None))
    }

    /// Ends once the request is asked to stop or is gone (read every few seconds).
    async fn canceled(&self) {
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            match self.now().await {
                Ok(None) => return,
                Ok(Some(request)) if asked_to_stop(&request) => return,
                _ => {}
            }
        }
    }
}

/// Whether a request is asked to stop: canceled (`spec.cancel`), or being deleted, which Velero's
/// agent takes as a cancel too (what its exposure made is removed before it goes).
fn asked_to_stop(request: &DynamicObject) -> bool {
    request.data.pointer("/spec/cancel") == Some(&Value::Bool(true))
        || request.metadata.deletion_timestamp.is_some()
}

/// A final status: `phase`, `message` (unless empty) and the time it ended.
pub fn ended(phase: PodVolumePhase, message: &str) -> Value {
    let mut status = json!({ "phase": phase, "completionTimestamp": patch::now() });
    if !message.is_empty() {
        status["message"] = json!(message);
    }
    status
}

/// How soon a request left New because the prepare queue was full is looked at again (Velero's
/// agent waits as long).
const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// Whether as many requests as `loadConcurrency.prepareQueueLength` allows have a volume being
/// exposed or exposed and waiting (labelled `velero.io/expose-on-going`, counted as Velero's
/// agents count them: data uploads and downloads, pod volume backups and restores, of every node,
/// Velero's agents' among them).
async fn prepare_queue_full(ctx: &Ctx) -> kube::Result<bool> {
    let Some(length) = ctx.configs.prepare_queue_length() else {
        return Ok(false);
    };
    let (client, namespace) = (&ctx.kube.client, &ctx.kube.namespace);
    let on_going = ListParams::default().labels(&format!("{}=true", labels::EXPOSE_ON_GOING));
    let mut queued = 0;
    for api in [
        objects::api::<ark_api::DataUpload>(client, namespace),
        objects::api::<ark_api::DataDownload>(client, namespace),
        objects::api::<ark_api::PodVolumeBackup>(client, namespace),
        objects::api::<ark_api::PodVolumeRestore>(client, namespace),
    ] {
        queued += api.list_metadata(&on_going).await?.items.len();
    }
    Ok(queued >= length)
}

/// Takes a request that ended in `phase` out of the prepare queue (its label off), or the queue
/// would stay full of it; one that ended moving left it when its data began to move. Best effort:
/// what cannot be written is logged.
async fn leave_prepare_queue(
    api: &Api<DynamicObject>,
    what: &str,
    name: &str,
    phase: PodVolumePhase,
) {
    if !matches!(phase, PodVolumePhase::Accepted | PodVolumePhase::Prepared) {
        return;
    }
    let off = json!({ "metadata": { "labels": { labels::EXPOSE_ON_GOING: null } } });
    let patched = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&off))
        .await;
    if let Err(error) = patch::ignore_not_found(patched) {
        tracing::warn!("{what} {name}: taking it out of the prepare queue: {error}");
    }
}

/// Requests of kind `K` this node's agent had taken on when it stopped: nobody carries them on.
/// As Velero's agent does, one whose volume was being exposed or was exposed is canceled, one
/// whose data was being moved fails; what their exposure made is removed.
pub async fn end_interrupted<K: Movable>(ctx: &Ctx) {
    let kube = &ctx.kube;
    let api = objects::api::<K>(&kube.client, &kube.namespace);
    let listed = match api.list(&Default::default()).await {
        Ok(listed) => listed.items,
        Err(error) => {
            tracing::warn!("listing {}s left in progress: {error}", K::WHAT);
            return;
        }
    };
    for stored in listed {
        let mine =
            |field: &str| stored.data.pointer(field).and_then(Value::as_str) == Some(&ctx.node);
        let (phase, ending) = match objects::phase::<PodVolumePhase>(&stored) {
            Phase::Known(phase @ PodVolumePhase::Accepted) if mine("/status/acceptedByNode") => {
                (phase, PodVolumePhase::Canceled)
            }
            Phase::Known(phase @ PodVolumePhase::Prepared) if mine("/status/node") => {
                (phase, PodVolumePhase::Canceled)
            }
            Phase::Known(phase @ PodVolumePhase::InProgress) if mine("/status/node") => {
                (phase, PodVolumePhase::Failed)
            }
            _ => continue,
        };
        let name = stored.name_any();
        let Ok(request) =
            serde_json::from_value::<K>(serde_json::to_value(&stored).unwrap_or_default())
        else {
            continue;
        };
        K::mover(&request, ctx, &name).clean_up().await;
        let message = format!(
            "the node agent on {} stopped while the {} was {phase:?}",
            ctx.node,
            K::WHAT
        );
        match patch::status_in_phase(&api, &name, phase, &ended(ending, &message)).await {
            Ok(_) => {
                leave_prepare_queue(&api, K::WHAT, &name, phase).await;
                tracing::warn!("{} {name} was left {phase:?}: {ending:?}", K::WHAT);
            }
            Err(error) => tracing::warn!("ending {} {name}: {error}", K::WHAT),
        }
    }
}

/// Where an exposing pod may run: where the node agent's DaemonSet runs its agents; on `node`
/// when the volume must be there (a claim bound on first use, its node selected), else on the
/// nodes `affinity` selects when the agents' settings say (Velero's `loadAffinity`).
pub struct Placement<'a> {
    pub agents: &'a DaemonSet,
    pub node: Option<&'a str>,
    pub affinity: Option<&'a LabelSelector>,
}

impl Placement<'_> {
    /// The pod's affinity: the `affinity` selector's as a required node affinity, or the
    /// agents' own.
    fn pod_affinity(&self, agents: Option<&Affinity>) -> Value {
        let Some(selector) = self.affinity.filter(|_| self.node.is_none()) else {
            return json!(agents);
        };
        let labels = (selector.match_labels.iter().flatten())
            .map(|(key, value)| json!({ "key": key, "operator": "In", "values": [value] }));
        let expressions = (selector.match_expressions.iter().flatten())
            .map(|e| json!({ "key": e.key, "operator": e.operator, "values": e.values }));
        let term = json!({ "matchExpressions": labels.chain(expressions).collect::<Vec<_>>() });
        json!({ "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term],
        } } })
    }
}

/// The node agent's DaemonSet, whose pod template places and runs the exposing pods.
pub async fn agents(kube: &Kube) -> Result<DaemonSet, String> {
    Api::<DaemonSet>::namespaced(kube.client.clone(), &kube.namespace)
        .get(DAEMON_SET)
        .await
        .map_err(failed(format!(
            "reading the node agent's DaemonSet {DAEMON_SET}"
        )))
}

/// How an exposing pod gives the agent the claim's volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Mounted (a file system volume), read-only when asked.
    Mounted { read_only: bool },
    /// As a device (a block volume), handed over open, for writing too when asked.
    Device { writable: bool },
}

impl Access {
    /// A claim's volume, given as its volume mode says.
    pub fn of(volume_mode: Option<&str>, writing: bool, read_only: bool) -> Access {
        match volume_mode {
            Some("Block") => Access::Device { writable: writing },
            _ => Access::Mounted { read_only },
        }
    }
}

/// The pod that holds the request's claim (named as the request) under the request's uid, as
/// `access` says: the node agent's image and placement (so that it runs where an agent reads
/// it), nothing else of the agent's: no token, no capability, and no root but for a device,
/// whose node the runtime makes the host's root's.
pub fn exposing_pod<K: Movable>(
    request: &K,
    namespace: &str,
    placement: &Placement<'_>,
    settings: &ExposingPods,
    access: Access,
) -> Result<Pod, String> {
    let name = request.name_any();
    let volume = request.uid().unwrap_or_default();
    let template = (placement.agents.spec.as_ref())
        .and_then(|s| s.template.spec.clone())
        .ok_or_else(|| format!("the node agent's DaemonSet {DAEMON_SET} has no pod template"))?;
    let agent = template
        .containers
        .first()
        .ok_or_else(|| format!("the node agent's DaemonSet {DAEMON_SET} has no container"))?;
    let claim = json!({ "name": volume, "persistentVolumeClaim": { "claimName": name } });
    let at = format!("/{volume}");
    let (user, args, mounts, devices, volumes) = match access {
        Access::Mounted { read_only } => (
            65532,
            json!([HOLD_VOLUMES]),
            json!([{ "name": volume, "mountPath": at, "readOnly": read_only }]),
            json!(null),
            json!([claim]),
        ),
        Access::Device { writable } => {
            let hand_over = format!("/{}", block_device::DIRECTORY);
            let socket = format!("{hand_over}/{}", block_device::SOCKET);
            let mut args = vec![HOLD_VOLUMES, "--device", &at, "--hand-over", &socket];
            if writable {
                args.push("--writable");
            }
            (
                0,
                json!(args),
                json!([{ "name": block_device::DIRECTORY, "mountPath": hand_over }]),
                json!([{ "name": volume, "devicePath": at }]),
                json!([claim, { "name": block_device::DIRECTORY,
                    "emptyDir": { "sizeLimit": "1Mi" } }]),
            )
        }
    };
    // The settings' labels, never over the two the agent finds its pods by.
    let mut labels = settings.labels.clone();
    labels.insert(K::POD_LABEL.into(), name.clone());
    labels.insert(
        "velero.io/exposer-pod-group".into(),
        K::EXPOSER_GROUP.into(),
    );
    let resources = settings.resources.clone().unwrap_or_else(|| {
        json!({ "requests": { "cpu": "10m", "memory": "16Mi" }, "limits": { "memory": "64Mi" } })
    });
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": namespace, "ownerReferences": owned_by(request),
            "labels": labels, "annotations": settings.annotations,
        },
        "spec": {
            "priorityClassName": settings.priority_class_name,
            "nodeName": placement.node,
            "nodeSelector": template.node_selector,
            "affinity": placement.pod_affinity(template.affinity.as_ref()),
            "tolerations": template.tolerations,
            "automountServiceAccountToken": false,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "securityContext": {
                "runAsNonRoot": user != 0, "runAsUser": user, "runAsGroup": user,
                "seccompProfile": { "type": "RuntimeDefault" },
            },
            "containers": [{
                "name": "hold",
                "image": agent.image,
                "imagePullPolicy": agent.image_pull_policy,
                "command": agent.command,
                "args": args,
                "resources": resources,
                "securityContext": {
                    "readOnlyRootFilesystem": true,
                    "allowPrivilegeEscalation": false,
                    "capabilities": { "drop": ["ALL"] },
                },
                "volumeMounts": mounts,
                "volumeDevices": devices,
            }],
            "volumes": volumes,
        },
    }))
    .map_err(|e| e.to_string())
}

/// The owner reference of what a request's exposure makes: removed with it.
pub fn owned_by<K: Movable>(request: &K) -> Value {
    json!([{
        "apiVersion": K::api_version(&()), "kind": K::kind(&()), "name": request.name_any(),
        "uid": request.uid(), "controller": true,
    }])
}

/// The exposed volume of request `name` on this node: its pod's volume directory, under the
/// kubelet's (the pod's volume is named after the request's uid); or the block device the pod
/// hands over, from the socket in its hand-over directory.
async fn exposed_volume(ctx: &Ctx, name: &str) -> Result<Volume, String> {
    let namespace = &ctx.kube.namespace;
    let pod_name = format!("{namespace}/{name}");
    let pod = Api::<Pod>::namespaced(ctx.kube.client.clone(), namespace)
        .get(name)
        .await
        .map_err(failed(format!("reading pod {pod_name}")))?;
    let spec = pod.spec.as_ref();
    let device = (spec.and_then(|s| s.containers.first()?.volume_devices.as_ref()?.first()))
        .map(|d| d.device_path.clone());
    let volume = match &device {
        Some(_) => block_device::DIRECTORY.to_string(),
        None => (spec.and_then(|s| s.volumes.as_ref()?.first()))
            .map(|v| v.name.clone())
            .ok_or_else(|| format!("pod {pod_name} mounts no volume"))?,
    };
    let dir = volume_path::volume_directory(&ctx.kube.client, &pod, &volume)
        .await
        .map_err(|e| e.to_string())?;
    let pod_uid = pod.uid().unwrap_or_default();
    let path = volume_path::host_path(&ctx.host_pods, &pod_name, &pod_uid, &volume, &dir)
        .map_err(|e| e.to_string())?;
    let Some(name) = device else {
        return Ok(Volume::Mounted(path));
    };
    let socket = path.join(block_device::SOCKET);
    let device = tokio::task::spawn_blocking(move || block_device::receive(&socket))
        .await
        .expect("receiving does not panic")?;
    Ok(Volume::Device { device, name })
}

/// The message of a request that failed, naming what it did.
pub fn failed(what: String) -> impl FnOnce(kube::Error) -> String {
    move |error| format!("{what}: {}", objects::reason(&error))
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

/// How long `node` has not been Ready, if it is not.
fn not_ready_for(node: &Node) -> Option<Duration> {
    let conditions = node.status.as_ref()?.conditions.as_ref()?;
    let ready = conditions.iter().find(|c| c.type_ == "Ready")?;
    if ready.status == "True" {
        return None;
    }
    let since = ready.last_transition_time.as_ref()?.0;
    let elapsed = Timestamp::now().duration_since(since);
    Some(Duration::try_from(elapsed).unwrap_or_default())
}

/// What a pod that does not run waits for, in the scheduler's or the kubelet's words: `Pending,
/// not scheduled: 0/3 nodes are available: ...`.
fn waiting(pod: &Pod) -> String {
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.unwrap_or_else(|| "not started".into());
    let conditions = status.conditions.unwrap_or_default();
    let unscheduled = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    let container = (status.container_statuses.iter().flatten())
        .find_map(|c| c.state.as_ref()?.waiting.as_ref());
    match (unscheduled, container) {
        (Some(condition), _) => format!(
            "{phase}, not scheduled: {}",
            condition.message.as_deref().unwrap_or("no reason given")
        ),
        (None, Some(waiting)) => format!(
            "{phase}, its container waiting: {}",
            waiting.reason.as_deref().unwrap_or("no reason given")
        ),
        (None, None) => phase,
    }
}

/// Deletes an object and waits until it is gone, within `timeout`.
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<(), String>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    patch::ignore_not_found(api.delete(name, &DeleteParams::default()).await)
        .map_err(|e| objects::reason(&e))?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut polls = polls();
    loop {
        match api.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) | Err(_) if tokio::time::Instant::now() + polls.pause() > deadline => {
                return Err(format!(
                    "still there after {}",
                    ark_api::duration::format(timeout)
                ));
            }
            _ => polls.wait().await,
        }
    }
}

/// Removes request `name`'s exposing pod at once, and its claim in ark's namespace with the
/// claim's volume, whatever the class's reclaim policy, waiting for the claim to be gone (`what`
/// names the request in the log).
pub async fn remove_pod_and_claim(client: &kube::Client, namespace: &str, name: &str, what: &str) {
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    warn_unless_gone(what, name, "its pod", pods.delete(name, &now).await);
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    if let Ok(Some(claim)) = claims.get_opt(name).await
        && let Some(volume) = claim.spec.and_then(|s| s.volume_name)
    {
        let delete = json!({ "spec": { "persistentVolumeReclaimPolicy": "Delete" } });
        let patched = Api::<PersistentVolume>::all(client.clone())
            .patch(&volume, &PatchParams::default(), &Patch::Merge(&delete))
            .await;
        warn_unless_gone(what, name, "its volume's reclaim policy", patched);
    }
    // Gone before anything it was made from is removed: the snapshot controller holds a
    // VolumeSnapshot a claim was made from, and deleting both at once has left the snapshot
    // behind for minutes.
    if let Err(error) = delete_and_wait(&claims, name, CLAIM_GONE_WITHIN).await {
        tracing::warn!("{what} {name}: removing its claim: {error}");
    }
}

/// How long removing an exposure's claim may wait for it to be gone (its pod goes at once).
const CLAIM_GONE_WITHIN: Duration = Duration::from_secs(120);

/// Logs a removal that failed for another reason than the object being gone.
pub fn warn_unless_gone<T>(what: &str, name: &str, removing: &str, result: kube::Result<T>) {
    if let Err(error) = patch::ignore_not_found(result) {
        tracing::warn!(
            "{what} {name}: removing {removing}: {}",
            objects::reason(&error)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_that_does_not_run_is_described_in_the_scheduler_s_or_the_kubelet_s_words() {
        let pod =
            |status: Value| -> Pod { serde_json::from_value(json!({ "status": status })).unwrap() };
        let unscheduled = pod(
            json!({ "phase": "Pending", "conditions": [{ "type": "PodScheduled",
            "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity." }] }),
        );
        assert_eq!(
            waiting(&unscheduled),
            "Pending, not scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node \
             affinity."
        );
        let pulling = pod(
            json!({ "phase": "Pending", "containerStatuses": [{ "name": "hold",
            "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "waiting": { "reason": "ContainerCreating" } } }] }),
        );
        assert_eq!(
            waiting(&pulling),
            "Pending, its container waiting: ContainerCreating"
        );
        assert_eq!(waiting(&pod(json!({}))), "not started");
    }

    #[test]
    fn a_node_is_not_ready_from_its_ready_condition_s_last_transition() {
        let node = |status: &str, since: Timestamp| -> Node {
            serde_json::from_value(json!({ "status": { "conditions": [{ "type": "Ready",
                "status": status, "lastTransitionTime": since.to_string() }] } }))
            .unwrap()
        };
        let ten_minutes_ago = Timestamp::now() - SignedDuration::from_mins(10);
        assert_eq!(not_ready_for(&node("True", ten_minutes_ago)), None);
        let unknown = not_ready_for(&node("Unknown", ten_minutes_ago)).unwrap();
        assert!(unknown >= Duration::from_secs(599), "{unknown:?}");
        assert!(not_ready_for(&node("False", Timestamp::now())).unwrap() < NODE_LOST_AFTER);
        assert_eq!(
            not_ready_for(&serde_json::from_value(json!({})).unwrap()),
            None
        );
    }

    fn agents() -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": { "name": "node-agent" },
            "spec": { "selector": {}, "template": { "spec": {
                "nodeSelector": { "kubernetes.io/os": "linux" },
                "tolerations": [{ "operator": "Exists" }],
                "containers": [{ "name": "node-agent", "image": "ark.local/ark:1",
                    "command": ["/ark"], "args": ["node-agent"] }],
            } } },
        }))
        .unwrap()
    }

    #[test]
    fn an_exposing_pod_runs_where_agents_run_and_holds_nothing_of_the_agent_s_rights() {
        let agents = agents();
        let anywhere = Placement {
            agents: &agents,
            node: None,
            affinity: None,
        };
        let mut upload = ark_api::DataUpload::new("b-1", Default::default());
        upload.metadata.uid = Some("uid-1".into());
        let mounted = Access::Mounted { read_only: false };
        let pod =
            exposing_pod(&upload, "ark", &anywhere, &ExposingPods::default(), mounted).unwrap();
        let pod = serde_json::to_value(pod).unwrap();
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({ "kubernetes.io/os": "linux" })
        );
        assert_eq!(pod["spec"].get("nodeName"), None);
        assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
        assert_eq!(
            pod["spec"]["containers"][0]["args"],
            json!(["hold-volumes"])
        );
        assert_eq!(
            pod["metadata"]["labels"],
            json!({ "velero.io/data-upload": "b-1", "velero.io/exposer-pod-group": "snapshot-exposer" })
        );
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "DataUpload");
        assert_eq!(
            pod["spec"]["volumes"][0],
            json!({ "name": "uid-1", "persistentVolumeClaim": { "claimName": "b-1" } })
        );
        // A claim bound on first use is written on the node its pod was scheduled to.
        let movers: LabelSelector = serde_json::from_value(json!({
            "matchLabels": { "pool": "movers" },
            "matchExpressions": [{ "key": "zone", "operator": "NotIn", "values": ["z9"] }],
        }))
        .unwrap();
        let there = Placement {
            agents: &agents,
            node: Some("worker-2"),
            affinity: Some(&movers),
        };
        let download = ark_api::DataDownload::new("r-1", Default::default());
        let pod =
            exposing_pod(&download, "ark", &there, &ExposingPods::default(), mounted).unwrap();
        assert_eq!(
            pod.spec.as_ref().unwrap().node_name.as_deref(),
            Some("worker-2")
        );
        assert_eq!(
            pod.labels()
                .get("velero.io/exposer-pod-group")
                .map(String::as_str),
            Some("generic-restore-exposer")
        );
        assert_eq!(
            pod.labels()
                .get("velero.io/data-download")
                .map(String::as_str),
            Some("r-1")
        );
        // Velero's loadAffinity: where the pods run unless a node is selected for the volume;
        // the volume read-only when the settings say.
        assert!(pod.spec.as_ref().unwrap().affinity.is_none());
        let on_movers = Placement {
            node: None,
            ..there
        };
        let read_only = Access::Mounted { read_only: true };
        let pod = exposing_pod(
            &upload,
            "ark",
            &on_movers,
            &ExposingPods::default(),
            read_only,
        )
        .unwrap();
        let pod = serde_json::to_value(pod).unwrap();
        assert_eq!(
            pod["spec"]["affinity"],
            json!({ "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{ "matchExpressions": [
                    { "key": "pool", "operator": "In", "values": ["movers"] },
                    { "key": "zone", "operator": "NotIn", "values": ["z9"] },
                ] }],
            } } })
        );
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["readOnly"],
            true
        );
        assert_eq!(pod["spec"]["securityContext"]["runAsUser"], 65532);
    }

    /// Velero's settings of the exposing pods: their labels (never over the two the agent finds
    /// its pods by), annotations, priority class and resources.
    #[test]
    fn an_exposing_pod_has_the_labels_annotations_priority_and_resources_the_settings_give() {
        let agents = agents();
        let anywhere = Placement {
            agents: &agents,
            node: None,
            affinity: None,
        };
        let settings = ExposingPods {
            resources: Some(json!({ "requests": { "cpu": "1" } })),
            priority_class_name: Some("movers".into()),
            labels: [
                ("team", "storage"),
                ("velero.io/data-upload", "someone-else"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
            annotations: [("note".to_string(), "moved".to_string())].into(),
        };
        let upload = ark_api::DataUpload::new("b-1", Default::default());
        let mounted = Access::Mounted { read_only: false };
        let pod = exposing_pod(&upload, "ark", &anywhere, &settings, mounted).unwrap();
        let pod = serde_json::to_value(pod).unwrap();
        assert_eq!(
            pod["metadata"]["labels"],
            json!({ "team": "storage", "velero.io/data-upload": "b-1",
                "velero.io/exposer-pod-group": "snapshot-exposer" })
        );
        assert_eq!(pod["metadata"]["annotations"], json!({ "note": "moved" }));
        assert_eq!(pod["spec"]["priorityClassName"], "movers");
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({ "requests": { "cpu": "1" } })
        );
    }

    /// A block volume's pod is given the device and a directory to hand it over in, and opens it
    /// as root (the device node is the host root's), with no capability and no token still.
    #[test]
    fn a_block_volume_s_exposing_pod_holds_its_device_and_hands_it_over() {
        let agents = agents();
        let anywhere = Placement {
            agents: &agents,
            node: None,
            affinity: None,
        };
        let mut download = ark_api::DataDownload::new("r-1", Default::default());
        download.metadata.uid = Some("uid-2".into());
        let access = Access::of(Some("Block"), true, false);
        assert_eq!(access, Access::Device { writable: true });
        let pod = exposing_pod(
            &download,
            "ark",
            &anywhere,
            &ExposingPods::default(),
            access,
        )
        .unwrap();
        let pod = serde_json::to_value(pod).unwrap();
        let container = &pod["spec"]["containers"][0];
        assert_eq!(
            container["args"],
            json!([
                "hold-volumes",
                "--device",
                "/uid-2",
                "--hand-over",
                "/hand-over/device.sock",
                "--writable"
            ])
        );
        assert_eq!(
            container["volumeDevices"],
            json!([{ "name": "uid-2", "devicePath": "/uid-2" }])
        );
        assert_eq!(
            container["volumeMounts"],
            json!([{ "name": "hand-over", "mountPath": "/hand-over" }])
        );
        assert_eq!(
            pod["spec"]["volumes"],
            json!([{ "name": "uid-2", "persistentVolumeClaim": { "claimName": "r-1" } },
                { "name": "hand-over", "emptyDir": { "sizeLimit": "1Mi" } }])
        );
        assert_eq!(
            pod["spec"]["securityContext"],
            json!({ "runAsNonRoot": false, "runAsUser": 0, "runAsGroup": 0,
                "seccompProfile": { "type": "RuntimeDefault" } })
        );
        assert_eq!(
            container["securityContext"]["capabilities"],
            json!({ "drop": ["ALL"] })
        );
        assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
        let upload = Access::of(Some("Block"), false, true);
        assert_eq!(upload, Access::Device { writable: false });
        assert_eq!(
            Access::of(Some("Filesystem"), false, true),
            Access::Mounted { read_only: true }
        );
    }
}
