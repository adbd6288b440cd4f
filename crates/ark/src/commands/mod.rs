//! One module per command, laid out like the CLI tree (`ark backup create` is `backup::create`),
//! each beside its arguments, and `run`, which dispatches a command line to them. What several
//! commands share lives beside them (`lookup`, `wait`, `confirm`, ...), not here: this module
//! names every command through `Cli`, so a command using it would lead back to itself.

pub mod backup;
pub mod backup_location;
mod bucket;
pub mod client;
pub mod completion;
mod confirm;
pub mod debug;
mod download;
pub mod hold_volumes;
pub mod install;
mod lookup;
mod missing;
pub mod node_agent;
pub mod repository;
pub mod restore;
pub mod restore_helper;
pub mod schedule;
pub mod server;
mod spec_file;
pub mod uninstall;
pub mod version;
mod wait;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs one parsed command line; errors are reported by `main`.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let global = &cli.global;
    match cli.command {
        Command::Backup(command) => backup::run(global, command).await,
        Command::Restore(command) => restore::run(global, command).await,
        Command::Schedule(command) => schedule::run(global, command).await,
        Command::BackupLocation(command) => backup_location::run(global, command).await,
        Command::Repository(command) => repository::run(global, command).await,
        Command::Install(args) => install::run(global, *args).await,
        Command::Uninstall(args) => uninstall::run(global, args).await,
        Command::Server(args) => server::run(global, args).await,
        Command::NodeAgent(args) => node_agent::run(global, args).await,
        Command::RestoreHelper(args) => restore_helper::run(args),
        Command::HoldVolumes(args) => hold_volumes::run(args).await,
        Command::Client(command) => client::run(command),
        Command::Completion(args) => completion::run(args),
        Command::Version(args) => version::run(global, args).await,
        Command::Debug(args) => debug::run(global, args).await,
    }
}
