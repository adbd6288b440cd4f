//! `ark repository`: volume data without a cluster restore. A location's kopia repositories (one
//! per workload namespace, as Velero keeps them) listed, browsed, restored to the local disk,
//! verified and maintained, with the location's credentials and the repositories' password as the server reads
//! them.

mod ls;
mod maintain;
pub(crate) mod restore;
mod snapshots;
mod verify;

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use crate::cli::args::GlobalArgs;

#[derive(Debug, Subcommand)]
pub enum RepositoryCommand {
    /// List the snapshots of a namespace's volumes
    Snapshots(snapshots::SnapshotsArgs),
    /// List a directory of a snapshot
    Ls(ls::LsArgs),
    /// Write a snapshot, or one file or directory of it, to the local disk
    Restore(restore::RestoreArgs),
    /// Read and check every blob a snapshot (or every snapshot) needs
    Verify(verify::VerifyArgs),
    /// Run maintenance now: free the data no snapshot references any more
    Maintain(maintain::MaintainArgs),
}

/// Which repository: a location and the namespace whose pods' volumes it holds.
#[derive(Debug, Args)]
pub struct RepositoryArgs {
    /// The backup storage location holding the repository
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub location: String,
    /// The namespace whose pods' volumes the repository holds (Velero keeps one per namespace)
    #[arg(long, value_name = "NAMESPACE")]
    pub volume_namespace: String,
}

impl RepositoryArgs {
    pub(crate) async fn open(&self, global: &GlobalArgs) -> anyhow::Result<ark_kopia::Repository> {
        let client = crate::context::client(global).await?;
        ark_server::repositories::open(
            &client,
            &global.namespace,
            &self.location,
            &self.volume_namespace,
        )
        .await
        .with_context(|| {
            format!(
                "cannot open the repository of namespace {:?}",
                self.volume_namespace
            )
        })
    }
}

pub async fn run(global: &GlobalArgs, command: RepositoryCommand) -> anyhow::Result<ExitCode> {
    match command {
        RepositoryCommand::Snapshots(args) => snapshots::run(global, args).await,
        RepositoryCommand::Ls(args) => ls::run(global, args).await,
        RepositoryCommand::Restore(args) => restore::run(global, args).await,
        RepositoryCommand::Verify(args) => verify::run(global, args).await,
        RepositoryCommand::Maintain(args) => maintain::run(global, args).await,
    }
}

/// A snapshot time as the other tables print times: UTC, to the second.
fn time(t: ark_kopia::snapshot::Time) -> String {
    t.timestamp().strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}
