//! `ark server`: the controllers that carry out Backups and Restores, check storage locations and
//! sync backups from the bucket. Each reads, decides with pure functions, then writes status.

mod controllers;
#[cfg(test)]
mod fuzz;
mod hooks;
mod shared;

pub use shared::{locations, snapshots};

use std::collections::HashSet;

use futures::FutureExt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use shared::snapshots::VolumeSnapshotter;

/// How the server is run.
#[derive(Clone)]
pub struct ServerOptions {
    /// The namespace whose ark objects this server acts on.
    pub namespace: String,
    /// Where tarballs are assembled and unpacked; never the object store.
    pub scratch_dir: PathBuf,
    /// How often each location's bucket is read for backups without a Backup object.
    pub sync_period: Duration,
    /// How often each location is checked for availability.
    pub validation_period: Duration,
    /// TTL of a backup that sets none.
    pub default_ttl: Duration,
    /// `itemOperationTimeout` of a backup or restore that sets none.
    pub default_item_operation_timeout: Duration,
    /// Backups (and restores) run at once.
    pub workers: u16,
    /// This replica's name in the leader-election Lease.
    pub identity: String,
    /// Deletions of different backups run at once.
    pub deletion_workers: u16,
    /// How long a Processed DeleteBackupRequest is kept.
    pub deletion_request_ttl: Duration,
    /// How often expired backups are looked for.
    pub gc_frequency: Duration,
    /// How long a restore waits, at most, for the exec hooks of its pods.
    pub restore_hooks_timeout: Duration,
    /// Exec hook commands one restore runs at once.
    pub restore_hook_execs_at_once: u16,
    /// Items of one resource a restore creates at once.
    pub restore_items_at_once: u16,
    /// Where `/metrics` is served, if anywhere.
    pub metrics_address: Option<SocketAddr>,
    /// Deletes provider volume snapshots; without one, backups that have any cannot be deleted.
    pub volume_snapshotter: Option<Arc<dyn VolumeSnapshotter>>,
    /// How long a ServerStatusRequest may go unanswered before ark concludes, at start-up, that no
    /// Velero server runs in the namespace.
    pub velero_answer_timeout: Duration,
    /// On SIGTERM, how long running backups, restores and deletions may take to finish before the
    /// server stops anyway (the next leader fails what is left).
    pub shutdown_grace: Duration,
}

/// What every controller shares.
pub(crate) struct Context {
    pub client: kube::Client,
    pub namespace: String,
    pub scratch: PathBuf,
    pub default_ttl: Duration,
    pub default_item_operation_timeout: Duration,
    pub workers: u16,
    pub sync_period: Duration,
    pub validation_period: Duration,
    pub deletion_workers: u16,
    pub deletion_request_ttl: Duration,
    pub gc_frequency: Duration,
    pub hooks_timeout: Duration,
    pub hook_execs_at_once: usize,
    pub restore_items_at_once: usize,
    pub volume_snapshotter: Option<Arc<dyn VolumeSnapshotter>>,
    pub metrics: Arc<shared::metrics::Metrics>,
    pub events: shared::events::Events,
    /// Backups this server is running now: a request to delete one of them is refused.
    pub running_backups: Mutex<HashSet<String>>,
    /// Every Restore of the namespace, kept current by a watch.
    pub restores: kube::runtime::reflector::Store<kube::api::DynamicObject>,
    /// Backups being deleted now: a second request for one waits.
    pub deleting: Mutex<HashSet<String>>,
    /// Deletion requests this server removed a moment ago.
    pub removed_requests: controllers::deletion::RemovedRequests,
    /// Per location, the uids of its backups that sync's previous listing of the bucket lacked.
    pub sync_missing: Mutex<std::collections::BTreeMap<String, std::collections::BTreeSet<String>>>,
    /// Becomes true when the server is told to stop: controllers take no new work.
    pub stopping: tokio::sync::watch::Receiver<bool>,
}

impl Context {
    /// Resolves once the server is told to stop.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stopping = self.stopping.clone();
        async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        }
    }

    /// Runs `work` until the server is told to stop, then drops it: for periodic work, which holds
    /// nothing between rounds.
    pub async fn until_stopping<F: Future>(&self, work: F) {
        tokio::select! {
            _ = work => {}
            () = self.stopped() => {}
        }
    }
}

/// The Restore cache's writer: its reflector runs with the term's controllers.
type RestoreWriter = kube::runtime::reflector::store::Writer<kube::api::DynamicObject>;

impl Context {
    /// The context of one term of leadership, built from the server's options; the sender that
    /// tells its controllers to stop, and the writer of its Restore cache.
    fn new(
        client: &kube::Client,
        options: &ServerOptions,
        scratch: PathBuf,
        metrics: Arc<shared::metrics::Metrics>,
    ) -> (
        Arc<Context>,
        tokio::sync::watch::Sender<bool>,
        RestoreWriter,
    ) {
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let restores = RestoreWriter::new(shared::objects::resource::<ark_api::Restore>());
        let context = Context {
            events: shared::events::Events::new(client.clone(), &options.identity),
            client: client.clone(),
            namespace: options.namespace.clone(),
            scratch,
            default_ttl: options.default_ttl,
            default_item_operation_timeout: options.default_item_operation_timeout,
            workers: options.workers.max(1),
            sync_period: options.sync_period,
            validation_period: options.validation_period,
            deletion_workers: options.deletion_workers.max(1),
            deletion_request_ttl: options.deletion_request_ttl,
            gc_frequency: options.gc_frequency,
            hooks_timeout: options.restore_hooks_timeout,
            hook_execs_at_once: options.restore_hook_execs_at_once.max(1).into(),
            restore_items_at_once: options.restore_items_at_once.max(1).into(),
            volume_snapshotter: options.volume_snapshotter.clone(),
            metrics,
            restores: restores.as_reader(),
            running_backups: Mutex::default(),
            deleting: Mutex::default(),
            removed_requests: Default::default(),
            sync_missing: Mutex::default(),
            stopping,
        };
        (Arc::new(context), stop, restores)
    }
}

#[cfg(test)]
impl Context {
    /// A context over `client` with short test settings, and the sender that tells it to stop.
    pub fn for_tests(client: kube::Client) -> (Context, tokio::sync::watch::Sender<bool>) {
        let options = ServerOptions {
            namespace: "velero".into(),
            scratch_dir: std::env::temp_dir(),
            sync_period: Duration::from_secs(60),
            validation_period: Duration::from_secs(60),
            default_ttl: Duration::from_secs(3600),
            default_item_operation_timeout: Duration::from_secs(4 * 3600),
            workers: 1,
            identity: "test".into(),
            deletion_workers: 1,
            deletion_request_ttl: Duration::from_secs(3600),
            gc_frequency: Duration::from_secs(3600),
            restore_hooks_timeout: Duration::from_secs(60),
            restore_hook_execs_at_once: 1,
            restore_items_at_once: 1,
            metrics_address: None,
            volume_snapshotter: None,
            velero_answer_timeout: Duration::from_secs(2),
            shutdown_grace: Duration::from_secs(5),
        };
        let (context, stop, _) =
            Context::new(&client, &options, std::env::temp_dir(), Arc::default());
        let context = Arc::try_unwrap(context).unwrap_or_else(|_| unreachable!("just made"));
        (context, stop)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("scratch directory {0}: {1}")]
    Scratch(PathBuf, std::io::Error),
    #[error("serving metrics on {0}: {1}")]
    Metrics(SocketAddr, std::io::Error),
    #[error(transparent)]
    VeleroServerActive(#[from] shared::velero_server::VeleroServerActive),
}

/// Runs the controllers while this replica leads, until the process is told to stop. A replica
/// that loses the lease (the API server gone for longer than the renew deadline, or another
/// replica holding it) stops its work at once, since another may take over, and goes back to
/// standing by: it campaigns again and leads again once it may. The process never ends for it.
pub async fn run(client: kube::Client, options: ServerOptions) -> Result<(), ServerError> {
    let scratch = shared::scratch::Scratch::create(&options.scratch_dir)
        .map_err(|e| ServerError::Scratch(options.scratch_dir.clone(), e))?;
    shared::velero_server::ensure_absent(
        &client,
        &options.namespace,
        options.velero_answer_timeout,
    )
    .await?;
    tracing::info!(
        "ark server {} starting in namespace {}",
        options.identity,
        options.namespace
    );
    let metrics = Arc::new(shared::metrics::Metrics::default());
    // Metrics and health are served for the process's whole life, standing by too: its probes
    // must answer.
    let serving = {
        let metrics = metrics.clone();
        async move {
            match options.metrics_address {
                Some(address) => shared::metrics::serve(address, metrics)
                    .await
                    .map_err(|e| ServerError::Metrics(address, e)),
                None => std::future::pending().await,
            }
        }
    };
    let shutdown = shutdown_signal();
    tokio::pin!(serving, shutdown);
    loop {
        let election = shared::leader::Election::new(options.identity.clone());
        let leadership = tokio::select! {
            leadership = shared::leader::acquire(&client, &options.namespace, election) => leadership,
            result = &mut serving => return result,
            () = &mut shutdown => return Ok(()),
        };
        metrics.set_leading(true);
        let term = lead(
            Context::new(&client, &options, scratch.path(), metrics.clone()),
            leadership,
            &options,
            &mut serving,
            &mut shutdown,
        )
        .await;
        metrics.set_leading(false);
        match term {
            Term::Lost => tracing::warn!(
                "lost the leader lease {}/{}: this replica's work is stopped (another may take \
                 over); standing by to lead again",
                options.namespace,
                shared::leader::LEASE_NAME
            ),
            Term::Ended(result) => return result,
        }
    }
}

/// How one term of leadership ended.
enum Term {
    /// The lease was lost: stand by and campaign again.
    Lost,
    /// The process is to end, with this result.
    Ended(Result<(), ServerError>),
}

/// One term of leadership: every controller, over a context of the term's own (nothing a stopped
/// term left half-done, such as the backups it was running, carries over), until the lease is
/// lost or the process is told to stop.
async fn lead(
    (ctx, stop, restores): (
        Arc<Context>,
        tokio::sync::watch::Sender<bool>,
        RestoreWriter,
    ),
    mut leadership: shared::leader::Leadership,
    options: &ServerOptions,
    serving: &mut std::pin::Pin<&mut impl Future<Output = Result<(), ServerError>>>,
    shutdown: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Term {
    let restore_reflector = {
        use futures::StreamExt;
        use kube::runtime::WatchStreamExt;
        let api = shared::objects::api::<ark_api::Restore>(&ctx.client, &ctx.namespace);
        kube::runtime::reflector(restores, kube::runtime::watcher(api, Default::default()))
            .default_backoff()
            .for_each(|_| std::future::ready(()))
    };
    // The controllers that have not ended yet, named if the shutdown grace runs out.
    let running = Mutex::new(std::collections::BTreeSet::new());
    let tracked = |name: &'static str, work| {
        running.lock().unwrap().insert(name);
        let running = &running;
        async move {
            work.await;
            running.lock().unwrap().remove(name);
        }
    };
    // Start-up work runs while the lease is renewed, like the rest.
    let controllers = async {
        controllers::backup::remove_legacy_finalizer(&ctx).await;
        tokio::join!(
            tracked("backup", controllers::backup::run(ctx.clone()).boxed()),
            tracked("restore", controllers::restore::run(ctx.clone()).boxed()),
            tracked("deletion", controllers::deletion::run(ctx.clone()).boxed()),
            tracked(
                "download request",
                controllers::download_requests::run(ctx.clone()).boxed()
            ),
            tracked(
                "server status request",
                controllers::server_status::run(ctx.clone()).boxed()
            ),
            tracked("schedule", controllers::schedule::run(ctx.clone()).boxed()),
            ctx.until_stopping(controllers::gc::run(ctx.clone())),
            ctx.until_stopping(controllers::location_validation::run(ctx.clone())),
            ctx.until_stopping(controllers::sync::run(ctx.clone())),
            ctx.until_stopping(restore_reflector),
        )
    };
    tokio::pin!(controllers);
    // Lost: dropping the controllers (when this returns) stops every piece of work at once.
    tokio::select! {
        _ = &mut controllers => return Term::Ended(Ok(())),
        result = &mut *serving => return Term::Ended(result),
        () = leadership.hold() => return Term::Lost,
        () = &mut *shutdown => {}
    }
    let grace = options.shutdown_grace;
    tracing::info!("stopping: no new work is taken; waiting up to {grace:?} for what runs");
    let _ = stop.send(true);
    let finished = tokio::select! {
        _ = &mut controllers => Some(true),
        () = tokio::time::sleep(grace) => Some(false),
        () = leadership.hold() => None,
    };
    match finished {
        // Another replica may take over now: stop at once, whatever runs.
        None => {
            tracing::warn!("lost the leader lease while stopping: stopped at once");
            return Term::Ended(Ok(()));
        }
        Some(true) => tracing::info!("all work finished"),
        Some(false) => tracing::warn!(
            "work still running after {grace:?} (controllers: {}; backups: {}) is left to the \
             next leader, which fails it",
            Vec::from_iter(running.lock().unwrap().iter().copied()).join(", "),
            Vec::from_iter(ctx.running_backups.lock().unwrap().iter().cloned()).join(", "),
        ),
    }
    leadership.release().await;
    Term::Ended(Ok(()))
}

/// SIGTERM (Kubernetes stopping the pod) or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => terminate,
        Err(error) => {
            tracing::warn!("cannot listen for SIGTERM: {error}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
