//! `ark restore`: one module per verb, each beside its arguments.

mod create;
mod delete;
mod describe;
mod get;
mod logs;
mod preview;

use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::args::{DescribeArgs, GetArgs, GlobalArgs, LogsArgs};

#[derive(Debug, Subcommand)]
pub enum RestoreCommand {
    /// Restore from a backup
    Create(Box<create::RestoreCreateArgs>),
    /// List restores
    Get(GetArgs),
    /// Show a restore's details
    Describe(DescribeArgs),
    /// Print a restore's logs
    Logs(LogsArgs),
    /// Delete restores and their files in the bucket (what they restored stays)
    Delete(delete::RestoreDeleteArgs),
}

pub async fn run(global: &GlobalArgs, command: RestoreCommand) -> anyhow::Result<ExitCode> {
    match command {
        RestoreCommand::Create(args) => create::run(global, *args).await,
        RestoreCommand::Get(args) => get::run(global, args).await,
        RestoreCommand::Describe(args) => describe::run(global, args).await,
        RestoreCommand::Logs(args) => logs::run(global, args).await,
        RestoreCommand::Delete(args) => delete::run(global, args).await,
    }
}
