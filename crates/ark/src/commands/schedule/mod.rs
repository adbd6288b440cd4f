//! `ark schedule`: one module per verb, each beside its arguments.

mod create;
mod delete;
mod describe;
mod get;
mod pause;

use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::args::{DescribeArgs, GetArgs, GlobalArgs};

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create a schedule: backups of a template, made by the server on a cron schedule
    Create(Box<create::ScheduleCreateArgs>),
    /// List schedules
    Get(GetArgs),
    /// Show a schedule's template, its next runs, its last backup and the runs it missed
    Describe(DescribeArgs),
    /// Delete schedules (never their backups or data)
    Delete(delete::ScheduleDeleteArgs),
    /// Pause schedules: no backup is made from them until they are unpaused
    Pause(pause::PauseArgs),
    /// Unpause schedules
    Unpause(pause::PauseArgs),
}

/// The schedules named, each missing or unreadable one reported on stderr.
async fn named(
    client: &kube::Client,
    global: &GlobalArgs,
    names: &[String],
) -> anyhow::Result<crate::commands::lookup::Found<ark_api::Schedule>> {
    crate::commands::lookup::get_named_or_listed(client, &global.namespace, names, None, "schedule")
        .await
}

pub async fn run(global: &GlobalArgs, command: ScheduleCommand) -> anyhow::Result<ExitCode> {
    match command {
        ScheduleCommand::Create(args) => create::run(global, *args).await,
        ScheduleCommand::Get(args) => get::run(global, args).await,
        ScheduleCommand::Describe(args) => describe::run(global, args).await,
        ScheduleCommand::Delete(args) => delete::run(global, args).await,
        ScheduleCommand::Pause(args) => pause::run(global, args, true).await,
        ScheduleCommand::Unpause(args) => pause::run(global, args, false).await,
    }
}
