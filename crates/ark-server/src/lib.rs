//! `ark server`: the controllers that carry out Backups and Restores, check storage locations and
//! sync backups from the bucket. Each reads, decides with pure functions, then writes status.

mod backup;
mod filter;
mod leader;
mod location_validation;
pub mod locations;
mod operation_log;
mod patch;
mod resource_list;
mod restore;
mod results;
mod sync;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How the server is run.
#[derive(Clone, Debug)]
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
    /// Backups (and restores) run at once.
    pub workers: u16,
    /// This replica's name in the leader-election Lease.
    pub identity: String,
}

/// What every controller shares.
pub(crate) struct Context {
    pub client: kube::Client,
    pub namespace: String,
    pub scratch: PathBuf,
    pub default_ttl: Duration,
    pub workers: u16,
    pub sync_period: Duration,
    pub validation_period: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("scratch directory {0}: {1}")]
    Scratch(PathBuf, std::io::Error),
    #[error("lost the leader lease {0}/{1}: stopping so that another replica takes over")]
    LostLeadership(String, &'static str),
}

/// Runs the controllers until the process is told to stop.
pub async fn run(client: kube::Client, options: ServerOptions) -> Result<(), ServerError> {
    std::fs::create_dir_all(&options.scratch_dir)
        .map_err(|e| ServerError::Scratch(options.scratch_dir.clone(), e))?;
    let ctx = Arc::new(Context {
        client,
        namespace: options.namespace,
        scratch: options.scratch_dir,
        default_ttl: options.default_ttl,
        workers: options.workers.max(1),
        sync_period: options.sync_period,
        validation_period: options.validation_period,
    });
    let election = leader::Election {
        identity: options.identity,
        lease_duration: Duration::from_secs(15),
        renew_period: Duration::from_secs(5),
        retry_period: Duration::from_secs(2),
    };
    tracing::info!(
        "ark server {} starting in namespace {}",
        election.identity,
        ctx.namespace
    );
    leader::acquire(&ctx.client, &ctx.namespace, &election).await;
    let controllers = async {
        tokio::join!(
            backup::run(ctx.clone()),
            restore::run(ctx.clone()),
            location_validation::run(ctx.clone()),
            sync::run(ctx.clone()),
        )
    };
    tokio::select! {
        _ = controllers => Ok(()),
        () = leader::hold(&ctx.client, &ctx.namespace, &election) => {
            Err(ServerError::LostLeadership(ctx.namespace.clone(), leader::LEASE_NAME))
        }
    }
}
