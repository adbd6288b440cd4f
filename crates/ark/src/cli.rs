//! The root of `ark`'s command tree: [`Cli`] and the top-level commands. Each command's own
//! arguments live beside its code (`ark backup create`'s in `commands::backup::create`); the
//! global flags and the argument groups and value parsers that several commands share, in
//! [`args`], which the commands build on. Every command and flag is defined once: the binary parses
//! them, and `cargo xtask generate` derives the shell completions and man pages from the same
//! definitions.

pub mod args;

use clap::{Parser, Subcommand};

use self::args::GlobalArgs;

#[derive(Debug, Parser)]
#[command(
    name = "ark",
    version,
    about = "Back up Kubernetes namespaces to object storage, restore them with hooks, delete backups safely",
    long_about = "ark backs up Kubernetes namespaces to object storage and restores them, running hooks \
inside restored pods. It speaks Velero's API (velero.io/v1) and bucket layout: it works against a \
cluster that runs Velero, and Velero reads ark's backups.",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with backups
    #[command(subcommand)]
    Backup(crate::commands::backup::BackupCommand),
    /// Work with restores
    #[command(subcommand)]
    Restore(crate::commands::restore::RestoreCommand),
    /// Work with schedules: backups made on their own, on a cron schedule
    #[command(subcommand)]
    Schedule(crate::commands::schedule::ScheduleCommand),
    /// Work with backup storage locations
    #[command(subcommand, name = "backup-location")]
    BackupLocation(crate::commands::backup_location::BackupLocationCommand),
    /// Work with the kopia repositories holding pods' volume data: list, browse, restore to the
    /// local disk, verify
    #[command(subcommand)]
    Repository(crate::commands::repository::RepositoryCommand),
    /// Install ark in the cluster: CRDs, roles, the default location and the server Deployment
    Install(Box<crate::commands::install::InstallArgs>),
    /// Remove what `ark install` applied (never the bucket's data)
    Uninstall(crate::commands::uninstall::UninstallArgs),
    /// Run the ark server (the controllers that carry out backups, restores and deletions)
    Server(crate::commands::server::ServerArgs),
    /// Run the node agent (one per node: backs up and restores the volumes of the node's pods)
    NodeAgent(crate::commands::node_agent::NodeAgentArgs),
    /// Wait in a restored pod's `restore-wait` init container until the node agent has written
    /// its volumes' data back
    RestoreHelper(crate::commands::restore_helper::RestoreHelperArgs),
    /// Hold a pod's volumes mounted (or hand its block device over) until told to stop: what the
    /// pod runs that a node agent exposes a volume with, to move its data
    HoldVolumes(crate::commands::hold_volumes::HoldVolumesArgs),
    /// Manage ark's own settings (the default namespace)
    #[command(subcommand)]
    Client(crate::commands::client::ClientCommand),
    /// Print a shell completion script
    Completion(crate::commands::completion::CompletionArgs),
    /// Print ark's version and the cluster's
    Version(crate::commands::version::VersionArgs),
    /// Write a support bundle (.tar.gz): ark's objects, the server's and node agents' logs,
    /// Events, describe outputs and each location's listing, every credential left out
    Debug(crate::commands::debug::DebugArgs),
}
