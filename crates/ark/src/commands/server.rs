use std::process::ExitCode;

use crate::cli::{GlobalArgs, ServerArgs};

pub async fn run(global: &GlobalArgs, args: ServerArgs) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let client = crate::context::client(global).await?;
    let options = ark_server::ServerOptions {
        namespace: global.namespace.clone(),
        scratch_dir: args
            .scratch_dir
            .unwrap_or_else(|| std::env::temp_dir().join("ark-server")),
        sync_period: args.backup_sync_period,
        validation_period: args.store_validation_frequency,
        default_ttl: args.default_backup_ttl,
        workers: args.workers,
        identity: args.id.unwrap_or_else(default_identity),
        deletion_workers: args.deletion_workers,
        deletion_request_ttl: args.deletion_request_ttl,
        gc_frequency: args.garbage_collection_frequency,
        metrics_address: args.metrics_address,
        restore_hooks_timeout: args.restore_hooks_timeout,
        restore_hook_execs_at_once: args.restore_hook_execs_at_once,
        volume_snapshotter: None,
        velero_answer_timeout: args.velero_answer_timeout,
        shutdown_grace: args.shutdown_grace,
    };
    ark_server::run(client, options).await?;
    Ok(ExitCode::SUCCESS)
}

/// `<hostname>-<pid>`: unique among replicas, recognisable in the Lease.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "ark".to_string());
    format!("{host}-{}", std::process::id())
}
