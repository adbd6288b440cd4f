use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::args::{Feature, GlobalArgs, parse_duration};

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Where tarballs are assembled and unpacked
    #[arg(long, value_name = "DIR", env = "ARK_SCRATCH_DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// How often each location's bucket is synced into Backup objects
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub backup_sync_period: std::time::Duration,
    /// How often each location is checked
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub store_validation_frequency: std::time::Duration,
    /// TTL of backups that set none (or 0s, as Velero's CLI does without --ttl)
    #[arg(long, value_name = "DURATION", default_value = "720h", value_parser = parse_duration)]
    pub default_backup_ttl: std::time::Duration,
    /// itemOperationTimeout of backups and restores that set none (or 0s, as Velero's CLI does)
    #[arg(long, value_name = "DURATION", default_value = "4h", value_parser = parse_duration)]
    pub default_item_operation_timeout: std::time::Duration,
    /// Backups and restores run at once (each delegated namespace's run beside them, one at a time)
    #[arg(long, default_value_t = 2)]
    pub workers: u16,
    /// This replica's identity in the leader-election Lease (default: <$POD_NAME or hostname>-<pid>)
    #[arg(long, value_name = "NAME")]
    pub id: Option<String>,
    /// Backup deletions run at once
    #[arg(long, default_value_t = 16)]
    pub deletion_workers: u16,
    /// How long a processed DeleteBackupRequest is kept
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    pub deletion_request_ttl: std::time::Duration,
    /// How often the CSI snapshots of a backup waiting for them are checked
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub item_operation_sync_frequency: std::time::Duration,
    /// How often expired backups are looked for
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub garbage_collection_frequency: std::time::Duration,
    /// How long a restore waits, at most, for the exec hooks of its pods
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub restore_hooks_timeout: std::time::Duration,
    /// Pods whose backup hooks one backup runs at once (the hooks of one pod run in order)
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub backup_hook_pods_at_once: u16,
    /// The longest timeout one backup hook gets: a pod's annotation or a backup's spec asking
    /// for more gets this much, and the backup a warning
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub max_backup_hook_timeout: std::time::Duration,
    /// Exec hook commands one restore runs at once (waiting for a free one never counts against a
    /// hook's execTimeout)
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub restore_hook_execs_at_once: u16,
    /// Items of one resource a restore creates at once (resources stay one after another, in
    /// Velero's order)
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..))]
    pub restore_items_at_once: u16,
    /// The order resources are restored in, Velero's form: those before `-` first, in order,
    /// those after it last, the rest by name between (default: Velero v1.18's order)
    #[arg(long, value_name = "RESOURCES")]
    pub restore_resource_priorities: Option<ark_server::RestorePriorities>,
    /// Back up every pod volume with the node agent in backups that do not say (Velero's flag of
    /// that name)
    #[arg(long)]
    pub default_volumes_to_fs_backup: bool,
    /// Move CSI snapshots' data into the backup location in backups that do not say (Velero's
    /// flag of that name)
    #[arg(long)]
    pub default_snapshot_move_data: bool,
    /// How long a backup or a restore waits, at most, for its pod volume backups or restores
    #[arg(long, value_name = "DURATION", default_value = "4h", value_parser = parse_duration)]
    pub fs_backup_timeout: std::time::Duration,
    /// The image of the `restore-wait` init container that restored pods wait for their volumes'
    /// data in: ark's own (`ark install` sets it); without one, no volume data is restored
    #[arg(long, value_name = "IMAGE")]
    pub restore_helper_image: Option<String>,
    /// Schedules that do not set skipImmediately skip the slot due when they are created or
    /// unpaused, as Velero's flag of that name
    #[arg(long)]
    pub schedule_skip_immediately: bool,
    /// Read back and verify each backup that ends Completed or PartiallyFailed, one at a time, as
    /// `ark backup verify` does (sampled) or with every byte of its volume data (data); the
    /// outcome is recorded on the Backup and counted in ark_backup_verification_* metrics
    #[arg(long, value_enum, value_name = "DEPTH", default_value = "off")]
    pub verify_new_backups: crate::cli::args::VerifyNewBackups,
    /// Velero's feature flags, comma-separated: EnableAPIGroupVersions backs up every version the
    /// cluster serves and restores the one Velero's priorities choose (EnableCSI is accepted: ark
    /// always takes CSI snapshots)
    #[arg(long, value_delimiter = ',', value_name = "FEATURES")]
    pub features: Vec<Feature>,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:8085)
    #[arg(long, value_name = "ADDRESS")]
    pub metrics_address: Option<std::net::SocketAddr>,
    /// At start-up, how long to wait for a Velero server to answer a ServerStatusRequest before
    /// concluding that none runs in the namespace (ark refuses to start beside one)
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub velero_answer_timeout: std::time::Duration,
    /// On SIGTERM, how long running backups, restores and deletions may take to finish before the
    /// server stops anyway (the next leader fails what is left); keep it below the pod's
    /// termination grace period
    #[arg(long, value_name = "DURATION", default_value = "25s", value_parser = parse_duration)]
    pub shutdown_grace: std::time::Duration,
}

/// Logs of a long-running process (the server, the node agent) to stderr, `info` unless
/// `RUST_LOG` says otherwise.
pub(crate) fn log_to_stderr() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
}

pub async fn run(global: &GlobalArgs, args: ServerArgs) -> anyhow::Result<ExitCode> {
    log_to_stderr();
    let every_api_version = args.features.contains(&Feature::EnableApiGroupVersions);
    let restore = restore_config(&args);
    let client = crate::context::client(global).await?;
    let options = ark_server::ServerOptions {
        namespace: global.namespace.clone(),
        scratch_dir: args
            .scratch_dir
            .unwrap_or_else(|| std::env::temp_dir().join("ark-server")),
        identity: args.id.unwrap_or_else(default_identity),
        metrics_address: args.metrics_address,
        velero_answer_timeout: args.velero_answer_timeout,
        shutdown_grace: args.shutdown_grace,
        backup: ark_server::BackupConfig {
            workers: args.workers,
            default_ttl: args.default_backup_ttl,
            default_item_operation_timeout: args.default_item_operation_timeout,
            hook_pods_at_once: args.backup_hook_pods_at_once,
            max_hook_timeout: args.max_backup_hook_timeout,
            default_volumes_to_fs_backup: args.default_volumes_to_fs_backup,
            default_snapshot_move_data: args.default_snapshot_move_data,
            pod_volume_timeout: args.fs_backup_timeout,
            every_api_version,
        },
        restore,
        deletion: ark_server::DeletionConfig {
            workers: args.deletion_workers,
            request_ttl: args.deletion_request_ttl,
        },
        volume_snapshotter: None,
        gc_frequency: args.garbage_collection_frequency,
        item_operation_sync_frequency: args.item_operation_sync_frequency,
        sync_period: args.backup_sync_period,
        validation_period: args.store_validation_frequency,
        schedule_skip_immediately: args.schedule_skip_immediately,
        verify_new_backups: args.verify_new_backups.into(),
    };
    ark_server::run(client, options).await?;
    Ok(ExitCode::SUCCESS)
}

/// The restore controller's settings, as the server's command line makes them.
pub(crate) fn restore_config(args: &ServerArgs) -> ark_server::RestoreConfig {
    ark_server::RestoreConfig {
        workers: args.workers,
        default_item_operation_timeout: args.default_item_operation_timeout,
        hooks_timeout: args.restore_hooks_timeout,
        hook_execs_at_once: args.restore_hook_execs_at_once,
        items_at_once: args.restore_items_at_once,
        helper_image: args.restore_helper_image.clone(),
        pod_volume_timeout: args.fs_backup_timeout,
        priorities: args.restore_resource_priorities.clone().unwrap_or_default(),
        every_api_version: args.features.contains(&Feature::EnableApiGroupVersions),
    }
}

/// `<pod or host name>-<pid>`: unique among replicas, recognisable in the Lease. The Deployment
/// gives each replica its pod's name (`POD_NAME`): a pod on the host's network has the host's
/// name, and every container's process is pid 1.
fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "ark".to_string());
    format!("{host}-{}", std::process::id())
}
