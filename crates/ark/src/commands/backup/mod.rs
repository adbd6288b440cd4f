//! `ark backup`: one module per verb, each beside its arguments.

mod create;
mod delete;
mod describe;
mod diff;
mod download;
mod download_volume;
mod get;
mod logs;
mod verify;

use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::args::{DescribeArgs, GetArgs, GlobalArgs, LogsArgs};

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Create a backup
    Create(Box<create::BackupCreateArgs>),
    /// List backups
    Get(GetArgs),
    /// Show a backup's details
    Describe(DescribeArgs),
    /// Print a backup's logs
    Logs(LogsArgs),
    /// Delete backups and all their data through DeleteBackupRequests
    Delete(delete::BackupDeleteArgs),
    /// Write a backup's tarball (its Kubernetes objects, not its volume data) to a local file
    Download(download::BackupDownloadArgs),
    /// Write a pod volume's data in a backup (or one file or directory of it) to the local disk
    DownloadVolume(download_volume::DownloadVolumeArgs),
    /// Read a backup back from its location and check that it is whole
    Verify(verify::BackupVerifyArgs),
    /// Show what changed between two backups, or between a backup and the cluster now: objects
    /// added, removed and changed, with the fields that changed
    Diff(diff::BackupDiffArgs),
}

pub async fn run(global: &GlobalArgs, command: BackupCommand) -> anyhow::Result<ExitCode> {
    match command {
        BackupCommand::Create(args) => create::run(global, *args).await,
        BackupCommand::Get(args) => get::run(global, args).await,
        BackupCommand::Describe(args) => describe::run(global, args).await,
        BackupCommand::Logs(args) => logs::run(global, args).await,
        BackupCommand::Delete(args) => delete::run(global, args).await,
        BackupCommand::Download(args) => download::run(global, args).await,
        BackupCommand::DownloadVolume(args) => download_volume::run(global, args).await,
        BackupCommand::Verify(args) => verify::run(global, args).await,
        BackupCommand::Diff(args) => diff::run(global, args).await,
    }
}
