//! Every command and flag of `ark`, defined once: the binary parses them, and `cargo xtask generate`
//! derives the shell completions and man pages from the same definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

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

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The namespace ark's objects live in
    #[arg(short = 'n', long, global = true, env = "ARK_NAMESPACE", default_value = ark_api::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Work with backups
    #[command(subcommand)]
    Backup(BackupCommand),
    /// Work with restores
    #[command(subcommand)]
    Restore(RestoreCommand),
    /// Work with backup storage locations
    #[command(subcommand, name = "backup-location")]
    BackupLocation(BackupLocationCommand),
    /// Run the ark server (the controllers that carry out backups, restores and deletions)
    Server(ServerArgs),
    /// Print a shell completion script
    Completion(CompletionArgs),
    /// Print ark's version and the cluster's
    Version(VersionArgs),
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Create a backup
    Create(NotImplementedArgs),
    /// List backups
    Get(GetArgs),
    /// Show a backup's details
    Describe(NotImplementedArgs),
    /// Print a backup's logs
    Logs(NotImplementedArgs),
    /// Delete backups and all their data through DeleteBackupRequests
    Delete(NotImplementedArgs),
}

#[derive(Debug, Subcommand)]
pub enum RestoreCommand {
    /// Restore from a backup
    Create(NotImplementedArgs),
    /// List restores
    Get(GetArgs),
    /// Show a restore's details
    Describe(NotImplementedArgs),
    /// Print a restore's logs
    Logs(NotImplementedArgs),
}

#[derive(Debug, Subcommand)]
pub enum BackupLocationCommand {
    /// Create a backup storage location
    Create(NotImplementedArgs),
    /// List backup storage locations
    Get(GetArgs),
}

/// Arguments of a command whose implementation has not landed yet; it exits non-zero.
#[derive(Debug, Args)]
pub struct NotImplementedArgs {
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// Only these (all when none is given)
    pub names: Vec<String>,
    /// Only those matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct ServerArgs {}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to print the script for
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print only the client's version, without contacting the cluster
    #[arg(long)]
    pub client_only: bool,
}
