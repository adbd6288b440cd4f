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
    /// Install ark in the cluster: CRDs, roles, the default location and the server Deployment
    Install(Box<crate::commands::install::InstallArgs>),
    /// Remove what `ark install` applied (never the bucket's data)
    Uninstall(crate::commands::uninstall::UninstallArgs),
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
    Create(BackupCreateArgs),
    /// List backups
    Get(GetArgs),
    /// Show a backup's details
    Describe(DescribeArgs),
    /// Print a backup's logs
    Logs(LogsArgs),
    /// Delete backups and all their data through DeleteBackupRequests
    Delete(BackupDeleteArgs),
}

#[derive(Debug, Subcommand)]
pub enum RestoreCommand {
    /// Restore from a backup
    Create(Box<RestoreCreateArgs>),
    /// List restores
    Get(GetArgs),
    /// Show a restore's details
    Describe(DescribeArgs),
    /// Print a restore's logs
    Logs(LogsArgs),
}

#[derive(Debug, Subcommand)]
pub enum BackupLocationCommand {
    /// Create a backup storage location
    Create(LocationCreateArgs),
    /// List backup storage locations
    Get(GetArgs),
}

/// Exactly one way of choosing what to delete.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["names", "all", "selector"]))]
pub struct BackupDeleteArgs {
    /// The backups to delete
    pub names: Vec<String>,
    /// Delete every backup in the namespace
    #[arg(long)]
    pub all: bool,
    /// Delete the backups matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = parse_selector)]
    pub selector: Option<ark_api::LabelSelector>,
    /// Do not ask for confirmation (required when standard input is not a terminal)
    #[arg(long)]
    pub confirm: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// Namespace and resource filters, shared by `backup create` and `restore create`.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Namespaces to include (comma-separated; `*` for all)
    #[arg(long, value_delimiter = ',', value_name = "NAMESPACES")]
    pub include_namespaces: Vec<String>,
    /// Namespaces to exclude (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "NAMESPACES")]
    pub exclude_namespaces: Vec<String>,
    /// Resources to include (comma-separated: `deployments`, `deployments.apps`, `*`)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub include_resources: Vec<String>,
    /// Resources to exclude (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub exclude_resources: Vec<String>,
    /// Include cluster-scoped resources (default: only when every namespace is included)
    #[arg(long, value_name = "BOOL")]
    pub include_cluster_resources: Option<bool>,
    /// Only objects matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = parse_selector)]
    pub selector: Option<ark_api::LabelSelector>,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Wait until it finishes, showing progress; exit non-zero unless it completed without errors
    #[arg(short = 'w', long)]
    pub wait: bool,
    /// With --wait: give up waiting after this long (Go duration: 10m, 1h), exiting non-zero; the
    /// operation itself goes on
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "wait")]
    pub timeout: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub struct BackupCreateArgs {
    /// The backup's name
    #[arg(value_parser = parse_name)]
    pub name: String,
    #[command(flatten)]
    pub filters: FilterArgs,
    /// How long to keep the backup (Go duration: 720h, 24h30m)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<std::time::Duration>,
    /// Where to store it (default: the default location)
    #[arg(long, value_name = "LOCATION")]
    pub storage_location: Option<String>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

#[derive(Debug, Args)]
pub struct RestoreCreateArgs {
    /// The restore's name (default: <backup>-<timestamp>)
    #[arg(value_parser = parse_name)]
    pub name: Option<String>,
    /// The backup to restore from
    #[arg(long, value_name = "BACKUP")]
    pub from_backup: String,
    #[command(flatten)]
    pub filters: FilterArgs,
    /// Restore namespaces under other names: old:new,old2:new2
    #[arg(long, value_delimiter = ',', value_name = "OLD:NEW", value_parser = parse_mapping)]
    pub namespace_mappings: Vec<(String, String)>,
    /// What to do with objects that already exist
    #[arg(long, value_enum, default_value_t = ExistingResourcePolicy::None)]
    pub existing_resource_policy: ExistingResourcePolicy,
    /// Restore hooks (YAML or JSON: the `spec.hooks` of a Restore; `-` reads standard input),
    /// checked before anything is created
    #[arg(long, value_name = "FILE")]
    pub hooks_file: Option<PathBuf>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExistingResourcePolicy {
    /// Keep the object in the cluster; warn when it differs from the backup
    None,
    /// Patch the object in the cluster to the backed-up state
    Update,
}

#[derive(Debug, Args)]
pub struct LocationCreateArgs {
    /// The location's name
    #[arg(value_parser = parse_name)]
    pub name: String,
    /// Object storage provider
    #[arg(long, value_enum)]
    pub provider: Provider,
    /// Bucket (for `file`: a directory the server can reach)
    #[arg(long)]
    pub bucket: String,
    /// Folder inside the bucket
    #[arg(long)]
    pub prefix: Option<String>,
    /// Provider settings: region=us-east-1,s3Url=http://...,s3ForcePathStyle=true
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub config: Vec<(String, String)>,
    /// Credentials from a Secret in the namespace: SECRET=KEY (default: the server's environment)
    #[arg(long, value_name = "SECRET=KEY", value_parser = parse_key_value)]
    pub credential: Option<(String, String)>,
    /// Make this the default location
    #[arg(long)]
    pub default: bool,
    /// ReadOnly locations are never written: restores only
    #[arg(long, value_enum, default_value_t = AccessModeArg::ReadWrite)]
    pub access_mode: AccessModeArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Provider {
    Aws,
    Gcp,
    Azure,
    File,
}

impl Provider {
    /// The name a BackupStorageLocation's `spec.provider` gives it (Velero's).
    pub fn name(self) -> &'static str {
        match self {
            Provider::Aws => "aws",
            Provider::Gcp => "gcp",
            Provider::Azure => "azure",
            Provider::File => "file",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AccessModeArg {
    #[value(name = "ReadWrite")]
    ReadWrite,
    #[value(name = "ReadOnly")]
    ReadOnly,
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// What to describe
    #[arg(required = true)]
    pub names: Vec<String>,
    /// Also show the resource list and every warning and error (read from the bucket)
    #[arg(long)]
    pub details: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    pub name: String,
}

fn parse_name(text: &str) -> Result<String, String> {
    if ark_api::selector::is_dns_subdomain(text) {
        Ok(text.to_string())
    } else {
        Err("must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253 characters".into())
    }
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    ark_api::duration::parse(text).map_err(|e| e.to_string())
}

fn parse_selector(text: &str) -> Result<ark_api::LabelSelector, String> {
    ark_api::selector::parse(text).map_err(|e| e.reason)
}

fn parse_mapping(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((old, new))
            if ark_api::selector::is_dns_label(old) && ark_api::selector::is_dns_label(new) =>
        {
            Ok((old.to_string(), new.to_string()))
        }
        _ => Err(format!("{text:?} is not OLD:NEW with two namespace names")),
    }
}

pub(crate) fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("{text:?} is not KEY=VALUE")),
    }
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
pub struct ServerArgs {
    /// Where tarballs are assembled and unpacked
    #[arg(long, value_name = "DIR", env = "ARK_SCRATCH_DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// How often each location's bucket is synced into Backup objects
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub backup_sync_period: std::time::Duration,
    /// How often each location is checked
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration)]
    pub store_validation_frequency: std::time::Duration,
    /// TTL of backups that set none
    #[arg(long, value_name = "DURATION", default_value = "720h", value_parser = parse_duration)]
    pub default_backup_ttl: std::time::Duration,
    /// Backups and restores run at once
    #[arg(long, default_value_t = 2)]
    pub workers: u16,
    /// This replica's identity in the leader-election Lease (default: <hostname>-<pid>)
    #[arg(long, value_name = "NAME")]
    pub id: Option<String>,
    /// Backup deletions run at once
    #[arg(long, default_value_t = 4)]
    pub deletion_workers: u16,
    /// How long a processed DeleteBackupRequest is kept
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    pub deletion_request_ttl: std::time::Duration,
    /// How often expired backups are looked for
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub garbage_collection_frequency: std::time::Duration,
    /// How long a restore waits, at most, for the exec hooks of its pods
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub restore_hooks_timeout: std::time::Duration,
    /// Exec hook commands one restore runs at once (waiting for a free one never counts against a
    /// hook's execTimeout)
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub restore_hook_execs_at_once: u16,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:8085)
    #[arg(long, value_name = "ADDRESS")]
    pub metrics_address: Option<std::net::SocketAddr>,
    /// At start-up, how long to wait for a Velero server to answer a ServerStatusRequest before
    /// concluding that none runs in the namespace (ark refuses to start beside one)
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub velero_answer_timeout: std::time::Duration,
    /// On SIGTERM, how long running backups, restores and deletions may take to finish before the
    /// server stops anyway (the next leader fails what is left); keep it below the pod's
    /// termination grace period
    #[arg(long, value_name = "DURATION", default_value = "25s", value_parser = parse_duration)]
    pub shutdown_grace: std::time::Duration,
}

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
