//! The leader-elected server process: its settings, its errors, and each term of leadership with
//! every controller over a context built here.

mod leader;
mod scratch;
mod velero_server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::controllers::backup::Config as BackupConfig;
use crate::controllers::deletion::Config as DeletionConfig;
use crate::controllers::restore::Config as RestoreConfig;
use crate::controllers::verification::NewBackups;
use crate::controllers::{
    backup, backup_operations, deletion, download_requests, gc, location_validation,
    repository_maintenance, restore, restore_finalizer, restore_tests, schedule, server_status,
    sync, tenants, verification,
};
use crate::domain::snapshots::VolumeSnapshotter;
use crate::runtime::context::Kube;
use crate::runtime::metrics::Metrics;
use crate::runtime::process::{Process, ServingFailed, Term, TermEnd};

/// How the server is run: the process's settings, then each controller's.
#[derive(Clone)]
pub struct ServerOptions {
    /// The namespace whose ark objects this server acts on.
    pub namespace: String,
    /// Where tarballs are assembled and unpacked; never the object store.
    pub scratch_dir: PathBuf,
    /// This replica's name in the leader-election Lease.
    pub identity: String,
    /// Where `/metrics` is served, if anywhere.
    pub metrics_address: Option<SocketAddr>,
    /// How long a ServerStatusRequest may go unanswered before ark concludes, at start-up, that no
    /// Velero server runs in the namespace.
    pub velero_answer_timeout: Duration,
    /// On SIGTERM, how long running backups, restores and deletions may take to finish before the
    /// server stops anyway (the next leader fails what is left).
    pub shutdown_grace: Duration,
    pub backup: BackupConfig,
    pub restore: RestoreConfig,
    pub deletion: DeletionConfig,
    /// Deletes provider volume snapshots; without one, backups that have any cannot be deleted.
    pub volume_snapshotter: Option<Arc<dyn VolumeSnapshotter>>,
    /// How often expired backups are looked for.
    pub gc_frequency: Duration,
    /// How often the item operations (CSI snapshots becoming ready) of a waiting backup are
    /// checked.
    pub item_operation_sync_frequency: Duration,
    /// How often each location's bucket is read for backups without a Backup object.
    pub sync_period: Duration,
    /// How often each location is checked for availability.
    pub validation_period: Duration,
    /// Whether a schedule that does not set `skipImmediately` skips the slot due when it is
    /// created or unpaused (Velero's `--schedule-skip-immediately`).
    pub schedule_skip_immediately: bool,
    /// Which new backups the server reads back and verifies on its own.
    pub verify_new_backups: NewBackups,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("scratch directory {0}: {1}")]
    Scratch(PathBuf, std::io::Error),
    #[error(transparent)]
    Serving(#[from] ServingFailed),
    #[error(transparent)]
    VeleroServerActive(#[from] velero_server::VeleroServerActive),
}

/// Runs the controllers while this replica leads, until the process is told to stop. A replica
/// that loses the lease (the API server gone for longer than the renew deadline, or another
/// replica holding it) stops its work at once, since another may take over, and goes back to
/// standing by: it campaigns again and leads again once it may. The process never ends for it.
pub async fn run(client: kube::Client, options: ServerOptions) -> Result<(), ServerError> {
    let scratch = scratch::Scratch::create(&options.scratch_dir)
        .map_err(|e| ServerError::Scratch(options.scratch_dir.clone(), e))?;
    velero_server::ensure_absent(&client, &options.namespace, options.velero_answer_timeout)
        .await?;
    tracing::info!(
        "ark server {} starting in namespace {}",
        options.identity,
        options.namespace
    );
    let mut process = Process::start(options.metrics_address);
    loop {
        let election = leader::Election::new(options.identity.clone());
        let acquired = process
            .stand_by(leader::acquire(&client, &options.namespace, election))
            .await?;
        let Some(mut leadership) = acquired else {
            return Ok(());
        };
        process.metrics.set_leading(true);
        let term = server_term(&client, &options, scratch.path(), &process.metrics);
        let end = process
            .run_term(term, leadership.hold(), options.shutdown_grace)
            .await;
        process.metrics.set_leading(false);
        match end {
            TermEnd::CutOff => tracing::warn!(
                "lost the leader lease {}/{}: this replica's work is stopped (another may take \
                 over); standing by to lead again",
                options.namespace,
                leader::LEASE_NAME
            ),
            TermEnd::Stopped => {
                leadership.release().await;
                return Ok(());
            }
            TermEnd::CutOffWhileStopping => return Ok(()),
            TermEnd::Ended(result) => return Ok(result?),
        }
    }
}

/// One term of leadership: every controller of the server, each over a context of its own, built
/// here and nowhere else. Nothing a cut-off term left half-done (the backups it was running, the
/// deletions it held) carries over into the next.
fn server_term(
    client: &kube::Client,
    options: &ServerOptions,
    scratch: PathBuf,
    metrics: &Arc<Metrics>,
) -> Term {
    let (kube, stop) = Kube::new(
        client.clone(),
        options.namespace.clone(),
        &options.identity,
        metrics.clone(),
    );
    let running_backups = Arc::new(backup::RunningBackups::default());
    let backup = Arc::new(backup::Ctx {
        kube: kube.clone(),
        config: options.backup.clone(),
        scratch: scratch.clone(),
        running: running_backups.clone(),
    });
    let backup_operations = Arc::new(backup_operations::Ctx {
        kube: kube.clone(),
        scratch: scratch.clone(),
        frequency: options.item_operation_sync_frequency,
    });
    let restore = Arc::new(restore::Ctx {
        kube: kube.clone(),
        config: options.restore.clone(),
        scratch: scratch.clone(),
    });
    let verification = Arc::new(verification::Ctx {
        kube: kube.clone(),
        data: options.verify_new_backups == NewBackups::Data,
        scratch: scratch.clone(),
        one_at_a_time: tokio::sync::Semaphore::new(1),
    });
    let (deletion, restores) = deletion::Ctx::new(
        kube.clone(),
        options.deletion.clone(),
        scratch,
        options.volume_snapshotter.clone(),
        running_backups.clone(),
    );
    let schedule = Arc::new(schedule::Ctx {
        kube: kube.clone(),
        skip_immediately: options.schedule_skip_immediately,
    });
    let mut controllers: Vec<(&'static str, BoxFuture<'static, ()>)> = vec![
        ("backup", backup::run(backup).boxed()),
        (
            "backup operations",
            backup_operations::run(backup_operations).boxed(),
        ),
        ("restore", restore::run(restore).boxed()),
        (
            "deletion",
            deletion::run(Arc::new(deletion), restores).boxed(),
        ),
        ("schedule", schedule::run(schedule).boxed()),
    ];
    controllers.extend(request_controllers(&kube));
    controllers.extend(periodic_controllers(&kube, options));
    if options.verify_new_backups != NewBackups::Off {
        let work = verification::run(verification);
        let kube = kube.clone();
        let periodic = async move { kube.until_stopping(work).await }.boxed();
        controllers.push(("verification", periodic));
    }
    Term {
        start_up: backup::remove_legacy_finalizer(kube.clone()).boxed(),
        controllers,
        left_behind: Box::new(move || format!("backups: {}", running_backups.names().join(", "))),
        stop,
    }
}

/// The controllers that answer requests and follow objects with nothing but the term's `Kube`.
fn request_controllers(kube: &Kube) -> Vec<(&'static str, BoxFuture<'static, ()>)> {
    let plain = Arc::new(kube.clone());
    vec![
        (
            "download request",
            download_requests::run(plain.clone()).boxed(),
        ),
        (
            "restore finalizer",
            restore_finalizer::run(plain.clone()).boxed(),
        ),
        ("server status request", server_status::run(plain).boxed()),
        ("tenant requests", tenants::run(kube.clone()).boxed()),
    ]
}

/// The periodic controllers, each over its context. Periodic work holds nothing between rounds:
/// it is dropped when the term is told to stop.
fn periodic_controllers(
    kube: &Kube,
    options: &ServerOptions,
) -> Vec<(&'static str, BoxFuture<'static, ()>)> {
    let periodic = |work: BoxFuture<'static, ()>| {
        let kube = kube.clone();
        async move { kube.until_stopping(work).await }.boxed()
    };
    let gc = Arc::new(gc::Ctx {
        kube: kube.clone(),
        frequency: options.gc_frequency,
    });
    let sync = Arc::new(sync::Ctx {
        kube: kube.clone(),
        period: options.sync_period,
        deletion_backoff: options.gc_frequency,
        missing: Default::default(),
    });
    let validation = Arc::new(location_validation::Ctx {
        kube: kube.clone(),
        period: options.validation_period,
    });
    let plain = Arc::new(kube.clone());
    vec![
        ("garbage collection", periodic(gc::run(gc).boxed())),
        (
            "location validation",
            periodic(location_validation::run(validation).boxed()),
        ),
        ("sync", periodic(sync::run(sync).boxed())),
        // A test cut off by the stop leaves its namespaces to the next leader, which removes them.
        (
            "restore tests",
            periodic(restore_tests::run(Arc::new(restore_tests::Ctx::new(kube.clone()))).boxed()),
        ),
        (
            "repository maintenance",
            periodic(repository_maintenance::run(plain).boxed()),
        ),
    ]
}
