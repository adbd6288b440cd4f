//! `ark backup-location`: one module per verb, each beside its arguments.

mod create;
mod get;

use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::args::{GetArgs, GlobalArgs};

#[derive(Debug, Subcommand)]
pub enum BackupLocationCommand {
    /// Create a backup storage location
    Create(create::LocationCreateArgs),
    /// List backup storage locations
    Get(GetArgs),
}

pub async fn run(global: &GlobalArgs, command: BackupLocationCommand) -> anyhow::Result<ExitCode> {
    match command {
        BackupLocationCommand::Get(args) => get::run(global, args).await,
        BackupLocationCommand::Create(args) => create::run(global, args).await,
    }
}
