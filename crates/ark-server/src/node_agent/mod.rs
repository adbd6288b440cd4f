//! `ark node-agent`: one on each node (a DaemonSet), no lease. It carries out the file-system
//! backups and restores of the pods on its own node, reading and writing their volumes where the
//! kubelet mounts them (`<kubelet root>/pods`, mounted into the agent), as Velero's node agent
//! does, and takes only the requests whose node is its own.
//!
//! Velero's agent starts a pod per request to read the volume; ark's reads it itself, through the
//! kubelet's directory it mounts anyway, so that a request costs no pod start and the agent keeps
//! each repository open between requests.

mod backup;
pub mod block_device;
mod data_download;
mod data_movement;
mod data_upload;
mod exposing_pods;
mod open_repositories;
mod restore;
mod upload;
pub mod volume_path;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{DataDownload, DataUpload, PodVolumeBackup, PodVolumePhase, PodVolumeRestore};
use futures::FutureExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt as _;
use serde_json::json;

use crate::runtime::context::Kube;
use crate::runtime::controller::ReconcileError;
use crate::runtime::objects::{self, Phase, Summary};
use crate::runtime::patch;
use crate::runtime::process::{Process, ServingFailed, Term, TermEnd};
use open_repositories::OpenRepositories;

pub use backup::EMPTY_VOLUME;

/// The node agent's DaemonSet (and ServiceAccount) in ark's namespace.
pub const DAEMON_SET: &str = "node-agent";

/// Lets go of `finalizer` on request `cached` once it has ended; whether it had. Velero's agent
/// holds the requests it works on until they end (`velero.io/pod-volume-finalizer`,
/// `velero.io/data-upload-download-finalizer`) and lets go of them then: one it held when ark
/// took over would otherwise keep itself, and its namespace, from being deleted.
async fn let_go_once_ended(
    api: &kube::Api<kube::api::DynamicObject>,
    meta: &ObjectMeta,
    phase: Phase<PodVolumePhase>,
    finalizer: &str,
) -> Result<bool, ReconcileError> {
    let ended = matches!(phase, Phase::Known(p) if p.is_final());
    if ended && patch::holds_finalizer(meta, finalizer) {
        let _ = patch::release_finalizer(api, meta, finalizer).await?;
    }
    Ok(ended)
}

/// Whether a pod volume request is New (an agent's to take).
fn is_new(phase: Phase<PodVolumePhase>) -> bool {
    matches!(phase, Phase::Absent | Phase::Known(PodVolumePhase::New))
}

/// A New pod volume request as the API server has it now, stored and typed, read because its
/// summary says New (the cache keeps each request's summary: every agent watches every node's
/// requests, of every backup kept). None when there is nothing to take: one that ended is let go
/// of, one that ark's type cannot read is logged.
async fn new_request<K>(
    kube: &Kube,
    summary: &Summary<K>,
    what: &str,
) -> Result<Option<(kube::api::DynamicObject, K)>, ReconcileError>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let api = objects::api::<K>(&kube.client, &kube.namespace);
    let finalizer = ark_api::POD_VOLUME_FINALIZER;
    let ended = let_go_once_ended(&api, &summary.meta, summary.phase(), finalizer).await?;
    if ended || !is_new(summary.phase()) {
        return Ok(None);
    }
    let Some(fresh) = summary.read(&kube.client).await? else {
        return Ok(None);
    };
    let new = is_new(fresh.phase());
    Ok(match fresh.read {
        Ok(typed) if new => Some((fresh.stored, typed)),
        Ok(_) => None,
        Err(unfit) => {
            tracing::warn!("{what} {}: {unfit}", fresh.stored.name_any());
            None
        }
    })
}

/// How often a request's status shows the bytes done.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Writes a request's bytes done (of `total`) into its status every [`PROGRESS_EVERY`] while its
/// work runs. Shown on a best-effort basis: a missed write is made up by the next one.
struct ProgressReport(tokio::task::JoinHandle<()>);

impl ProgressReport {
    fn start(
        api: kube::Api<kube::api::DynamicObject>,
        name: String,
        total: u64,
        done: impl Fn() -> u64 + Send + 'static,
    ) -> Self {
        ProgressReport(tokio::spawn(async move {
            let mut shown = None;
            loop {
                let now = done();
                if shown != Some(now) {
                    let status = json!({ "progress": progress(total, now) });
                    if patch::object_status(&api, &name, &status).await.is_ok() {
                        shown = Some(now);
                    }
                }
                tokio::time::sleep(PROGRESS_EVERY).await;
            }
        }))
    }

    /// Stops it before the final status, which no late progress write may follow.
    async fn stop(self) {
        self.0.abort();
        let _ = self.0.await;
    }
}

/// The progress a status shows: `done` of `total` bytes (never less than done).
fn progress(total: u64, done: u64) -> ark_api::PodVolumeProgress {
    ark_api::PodVolumeProgress {
        total_bytes: Some(total.max(done) as i64),
        bytes_done: Some(done as i64),
    }
}

#[derive(Clone)]
pub struct NodeAgentOptions {
    /// The namespace of the requests (the server's).
    pub namespace: String,
    /// This node's name: the agent takes only requests for it.
    pub node: String,
    /// Where the kubelet's pod directory (`<kubelet root>/pods`) is mounted.
    pub host_pods: PathBuf,
    /// Requests carried out at once.
    pub concurrency: u16,
    pub metrics_address: Option<SocketAddr>,
    /// On SIGTERM, how long running requests may take to finish before the agent stops anyway
    /// (what is left is failed when an agent starts on this node again).
    pub shutdown_grace: Duration,
    /// Velero's node agent settings (`--node-agent-configmap`).
    pub configs: ark_api::NodeAgentConfigs,
    /// How long a volume exposed for data movement may take to be ready
    /// (`--data-mover-prepare-timeout`).
    pub prepare_timeout: Duration,
}

/// The agent's context, built once for its life.
pub struct Ctx {
    pub kube: Kube,
    pub node: String,
    pub host_pods: PathBuf,
    /// Requests of each kind looked at once: as many as may move data at once.
    pub concurrency: u16,
    /// The volumes this node moves data of at once, of every kind of request together, as in
    /// Velero's data path manager.
    pub data_paths: tokio::sync::Semaphore,
    pub repositories: OpenRepositories,
    pub configs: ark_api::NodeAgentConfigs,
    /// What the settings say of the pods that expose volumes.
    pub exposing_pods: exposing_pods::ExposingPods,
    /// How long an exposing pod may take to run, and a restored claim to be consumed.
    pub prepare_timeout: Duration,
}

/// How soon a request that found every data path of its node taken is looked at again.
const DATA_PATH_WAIT: Duration = Duration::from_secs(1);

impl Ctx {
    /// A data path of this node, held while a volume's data moves; None when all are taken (the
    /// request waits in its phase, and is looked at again after [`DATA_PATH_WAIT`]).
    fn data_path(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.data_paths.try_acquire().ok()
    }
}

/// How many volumes this node moves at once: `--concurrency`, unless Velero's `loadConcurrency`
/// says otherwise for this node (its rules select nodes by their labels; a node whose labels
/// cannot be read gets the global number, as under Velero).
async fn data_paths(client: &kube::Client, options: &NodeAgentOptions) -> usize {
    let default = usize::from(options.concurrency.max(1));
    if options.configs.load_concurrency.is_none() {
        return default;
    }
    let nodes = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
    let labels = match nodes.get(&options.node).await {
        Ok(node) => node.metadata.labels.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(
                "reading node {}'s labels for loadConcurrency's rules: {error}; the global \
                 number applies",
                options.node
            );
            Default::default()
        }
    };
    let paths = options.configs.data_paths(&labels, default);
    for reason in &paths.passed_over {
        tracing::warn!("loadConcurrency: rule passed over: {reason}");
    }
    tracing::info!(
        "node {} moves the data of {} volume(s) at once",
        options.node,
        paths.number
    );
    paths.number
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

/// Runs the agent until it is told to stop.
pub async fn run(client: kube::Client, options: NodeAgentOptions) -> Result<(), ServingFailed> {
    tracing::info!(
        "ark node agent starting on node {} for namespace {}, volumes under {}",
        options.node,
        options.namespace,
        options.host_pods.display()
    );
    // An upload a failed bucket call ends cannot be resumed, and nobody waits at a prompt for it:
    // the agent rides out a bucket gone for a minute or two rather than fail the backup.
    ark_storage::set_patience(ark_storage::Patience::Background);
    let mut process = Process::start(options.metrics_address);
    let identity = format!("node-agent-{}", options.node);
    let (kube, stop) = Kube::new(
        client.clone(),
        options.namespace.clone(),
        &identity,
        process.metrics.clone(),
    );
    let data_paths = data_paths(&client, &options).await;
    let exposing_pods = exposing_pods::ExposingPods::read(&client, &options.configs).await;
    let ctx = Arc::new(Ctx {
        repositories: OpenRepositories::new(client, options.namespace.clone()),
        kube: kube.clone(),
        node: options.node.clone(),
        host_pods: options.host_pods.clone(),
        concurrency: u16::try_from(data_paths).unwrap_or(u16::MAX),
        data_paths: tokio::sync::Semaphore::new(data_paths),
        configs: options.configs.clone(),
        exposing_pods,
        prepare_timeout: options.prepare_timeout,
    });
    let term = Term {
        start_up: fail_interrupted(ctx.clone()).boxed(),
        controllers: vec![
            ("pod volume backup", backup::run(ctx.clone()).boxed()),
            ("pod volume restore", restore::run(ctx.clone()).boxed()),
            (
                "data upload",
                data_movement::run::<DataUpload>(ctx.clone()).boxed(),
            ),
            (
                "data download",
                data_movement::run::<DataDownload>(ctx).boxed(),
            ),
        ],
        left_behind: Box::new(String::new),
        stop,
    };
    // No lease: the term lasts the process's life.
    match process
        .run_term(term, std::future::pending(), options.shutdown_grace)
        .await
    {
        TermEnd::Ended(result) => result,
        TermEnd::CutOff | TermEnd::Stopped | TermEnd::CutOffWhileStopping => Ok(()),
    }
}

/// Requests of this node left InProgress by an agent that stopped: nobody carries them on, so
/// they end Failed before this agent takes new ones (the backup or restore waiting on them ends
/// at once instead of at its timeout, and the next backup of the volume is whole).
async fn fail_interrupted(ctx: Arc<Ctx>) {
    let (kube, node) = (&ctx.kube, &ctx.node);
    // A backup names its node in its spec, a restore in its status once an agent took it.
    fail_interrupted_of::<PodVolumeBackup>(kube, node, "/spec/node", "backed up").await;
    fail_interrupted_of::<PodVolumeRestore>(kube, node, "/status/node", "restored").await;
    data_movement::end_interrupted::<DataUpload>(&ctx).await;
    data_movement::end_interrupted::<DataDownload>(&ctx).await;
}

async fn fail_interrupted_of<K: kube::Resource<DynamicType = ()>>(
    kube: &Kube,
    node: &str,
    node_field: &str,
    done: &str,
) {
    let api = objects::api::<K>(&kube.client, &kube.namespace);
    let kind = K::kind(&());
    let listed = match api.list(&Default::default()).await {
        Ok(listed) => listed.items,
        Err(error) => {
            tracing::warn!("listing {kind}s left in progress: {error}");
            return;
        }
    };
    for request in listed {
        let on_this_node = request.data.pointer(node_field).and_then(|n| n.as_str()) == Some(node);
        let Phase::Known(
            phase @ (PodVolumePhase::Accepted
            | PodVolumePhase::Prepared
            | PodVolumePhase::InProgress),
        ) = objects::phase::<PodVolumePhase>(&request)
        else {
            continue;
        };
        if !on_this_node {
            continue;
        }
        let name = request.name_any();
        let failed = json!({
            "phase": PodVolumePhase::Failed,
            "message": format!("the node agent on {node} stopped while the volume was {done}"),
            "completionTimestamp": patch::now(),
        });
        match patch::status_in_phase(&api, &name, phase, &failed).await {
            Ok(_) => tracing::warn!("{kind} {name} was left {phase:?}: failed"),
            Err(error) => tracing::warn!("failing {kind} {name}: {error}"),
        }
    }
}
