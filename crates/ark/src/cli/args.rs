//! The global flags, and the argument groups and value parsers that several commands share: the
//! commands build on these, and the root of the tree (`super::Cli`) on the commands.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The namespace ark's objects live in (default: $ARK_NAMESPACE, then the namespace `ark client
    /// config set` keeps, then velero)
    #[arg(short = 'n', long, global = true, env = "ARK_NAMESPACE", default_value = ark_api::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

/// Which names an argument's value completes, from the cluster (see `crate::complete`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    Backups,
    Restores,
    Locations,
    Schedules,
    /// Those of the command's noun: `ark restore describe <TAB>` completes restores.
    OfTheNoun,
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

/// What a backup takes and keeps, shared by `backup create` and `schedule create` (whose backups
/// are made from it).
#[derive(Debug, Args)]
pub struct BackupTemplateArgs {
    #[command(flatten)]
    pub filters: FilterArgs,
    /// How long to keep the backup (Go duration: 720h, 24h30m)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<std::time::Duration>,
    /// Where to store it (default: the default location)
    #[arg(long, value_name = "LOCATION", add = clap_complete::ArgValueCompleter::new(Names::Locations))]
    pub storage_location: Option<String>,
    /// Back up every pod volume with the node agent, but those a pod's annotation
    /// backup.velero.io/backup-volumes-excludes names (default: the server's setting; otherwise
    /// only the volumes named in a pod's annotation backup.velero.io/backup-volumes)
    #[arg(long, value_name = "BOOL")]
    pub default_volumes_to_fs_backup: Option<bool>,
    /// Snapshot the claims of CSI volumes that no file-system backup takes, with their driver's
    /// VolumeSnapshotClass (default: true)
    #[arg(long, value_name = "BOOL")]
    pub snapshot_volumes: Option<bool>,
}

impl BackupTemplateArgs {
    /// Whether any of its flags was given.
    pub fn is_set(&self) -> bool {
        let f = &self.filters;
        !(f.include_namespaces.is_empty()
            && f.exclude_namespaces.is_empty()
            && f.include_resources.is_empty()
            && f.exclude_resources.is_empty()
            && f.include_cluster_resources.is_none()
            && f.selector.is_none()
            && self.ttl.is_none()
            && self.storage_location.is_none()
            && self.default_volumes_to_fs_backup.is_none()
            && self.snapshot_volumes.is_none())
    }

    pub fn spec(self) -> ark_api::BackupSpec {
        let filters = self.filters;
        ark_api::BackupSpec {
            included_namespaces: non_empty(filters.include_namespaces),
            excluded_namespaces: non_empty(filters.exclude_namespaces),
            included_resources: non_empty(filters.include_resources),
            excluded_resources: non_empty(filters.exclude_resources),
            include_cluster_resources: filters.include_cluster_resources,
            label_selector: filters.selector,
            ttl: self.ttl.map(ark_api::duration::format),
            storage_location: self.storage_location,
            default_volumes_to_fs_backup: self.default_volumes_to_fs_backup,
            snapshot_volumes: self.snapshot_volumes,
            ..Default::default()
        }
    }
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

/// Where a backup storage location keeps its backups: the flags `ark install` (for its default
/// location) and `ark backup-location create` share.
#[derive(Debug, Args)]
pub struct BucketArgs {
    /// Object storage provider
    #[arg(long, value_enum)]
    pub provider: Provider,
    /// Bucket (for `file`: a directory the server can reach)
    #[arg(long)]
    pub bucket: String,
    /// Folder inside the bucket
    #[arg(long)]
    pub prefix: Option<String>,
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

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// What to describe
    #[arg(required = true, add = clap_complete::ArgValueCompleter::new(Names::OfTheNoun))]
    pub names: Vec<String>,
    /// Also show the resource list and every warning and error (read from the bucket)
    #[arg(long)]
    pub details: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    #[arg(add = clap_complete::ArgValueCompleter::new(Names::OfTheNoun))]
    pub name: String,
}

pub(crate) fn parse_name(text: &str) -> Result<String, String> {
    if ark_api::selector::is_dns_subdomain(text) {
        Ok(text.to_string())
    } else {
        Err("must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253 characters".into())
    }
}

pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    ark_api::duration::parse(text).map_err(|e| e.to_string())
}

pub(crate) fn parse_selector(text: &str) -> Result<ark_api::LabelSelector, String> {
    ark_api::selector::parse(text).map_err(|e| e.reason)
}

pub(crate) fn parse_mapping(text: &str) -> Result<(String, String), String> {
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
    #[arg(add = clap_complete::ArgValueCompleter::new(Names::OfTheNoun))]
    pub names: Vec<String>,
    /// Only those matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Add a LABELS column to the table: each one's labels as `key=value,...`
    #[arg(long)]
    pub show_labels: bool,
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

/// A filter list as a spec field: absent when the user gave none.
pub(crate) fn non_empty(list: Vec<String>) -> Option<Vec<String>> {
    (!list.is_empty()).then_some(list)
}
