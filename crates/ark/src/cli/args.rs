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
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub include_cluster_resources: Option<bool>,
    /// Only objects matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = parse_selector)]
    pub selector: Option<ark_api::LabelSelector>,
    /// Only objects matching any of these label selectors, separated by " or "
    /// ("app=db or tier in (cache)")
    #[arg(long, value_name = "SELECTORS", value_parser = parse_or_selector, conflicts_with = "selector")]
    pub or_selector: Option<OrSelectors>,
}

/// The selectors of `--or-selector`, as Velero's CLI reads them.
#[derive(Clone, Debug)]
pub struct OrSelectors(pub Vec<ark_api::LabelSelector>);

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
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub default_volumes_to_fs_backup: Option<bool>,
    /// Snapshot the claims of CSI volumes that no file-system backup takes, with their driver's
    /// VolumeSnapshotClass (default: true)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub snapshot_volumes: Option<bool>,
    /// Move each CSI snapshot's data into the backup location's kopia repository with the node
    /// agent, then remove the snapshot, so that the backup outlives the cluster's storage
    /// (default: the server's setting, --default-snapshot-move-data)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub snapshot_move_data: Option<bool>,
    /// The ConfigMap (in the server's namespace) of the backup's resource policies: which volumes
    /// go to the node agent, are snapshotted or skipped, by Velero's volume policies
    #[arg(long, value_name = "CONFIGMAP")]
    pub resource_policies_configmap: Option<String>,
    /// Files of a pod volume the node agent reads at once (default: its own)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub parallel_files_upload: Option<i64>,
    /// Items backed up first, in order, by resource: 'pods=ns/a,ns/b;persistentvolumes=pv-1'
    /// (Velero's form: resources separated by `;`, names by `,`, `namespace/name` when namespaced)
    #[arg(long, value_name = "MAPPING", value_parser = parse_ordered_resources)]
    pub ordered_resources: Option<OrderedResources>,
    #[command(flatten)]
    pub scoped: ScopedResourceArgs,
}

/// Velero's scoped resource filters, which cannot be mixed with the resource filters of
/// [`FilterArgs`] and `--include-cluster-resources`.
#[derive(Debug, Args)]
#[group(multiple = true, conflicts_with_all = ["include_resources", "exclude_resources", "include_cluster_resources"])]
pub struct ScopedResourceArgs {
    /// Cluster-scoped resources to back up (comma-separated; `*` for all; default: none but the
    /// backed-up namespaces' own objects)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub include_cluster_scoped_resources: Vec<String>,
    /// Cluster-scoped resources to leave out (comma-separated; `*` for all)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub exclude_cluster_scoped_resources: Vec<String>,
    /// Namespaced resources to back up (comma-separated; `*` for all, the default)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub include_namespace_scoped_resources: Vec<String>,
    /// Namespaced resources to leave out (comma-separated; `*` for all)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub exclude_namespace_scoped_resources: Vec<String>,
}

impl ScopedResourceArgs {
    fn is_set(&self) -> bool {
        !(self.include_cluster_scoped_resources.is_empty()
            && self.exclude_cluster_scoped_resources.is_empty()
            && self.include_namespace_scoped_resources.is_empty()
            && self.exclude_namespace_scoped_resources.is_empty())
    }
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
            && f.or_selector.is_none()
            && !self.scoped.is_set()
            && self.ttl.is_none()
            && self.storage_location.is_none()
            && self.default_volumes_to_fs_backup.is_none()
            && self.snapshot_volumes.is_none()
            && self.snapshot_move_data.is_none()
            && self.resource_policies_configmap.is_none()
            && self.parallel_files_upload.is_none()
            && self.ordered_resources.is_none())
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
            or_label_selectors: filters.or_selector.map(|s| s.0),
            included_cluster_scoped_resources: non_empty(
                self.scoped.include_cluster_scoped_resources,
            ),
            excluded_cluster_scoped_resources: non_empty(
                self.scoped.exclude_cluster_scoped_resources,
            ),
            included_namespace_scoped_resources: non_empty(
                self.scoped.include_namespace_scoped_resources,
            ),
            excluded_namespace_scoped_resources: non_empty(
                self.scoped.exclude_namespace_scoped_resources,
            ),
            ttl: self.ttl.map(ark_api::duration::format),
            storage_location: self.storage_location,
            default_volumes_to_fs_backup: self.default_volumes_to_fs_backup,
            snapshot_volumes: self.snapshot_volumes,
            snapshot_move_data: self.snapshot_move_data,
            resource_policy: self.resource_policies_configmap.map(|name| {
                k8s_openapi::api::core::v1::TypedLocalObjectReference {
                    kind: "configmap".into(),
                    name,
                    api_group: None,
                }
            }),
            ordered_resources: self.ordered_resources.map(|o| o.0),
            uploader_config: self.parallel_files_upload.map(|files| {
                ark_api::uploader::UploaderConfigForBackup {
                    parallel_files_upload: Some(files),
                }
            }),
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

/// Which new backups `ark server` reads back and verifies on its own (`--verify-new-backups`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VerifyNewBackups {
    // None.
    Off,
    // Every file and item; the volume data's directories, each content looked up, a sample read.
    Sampled,
    // The same, every byte of the volume data read.
    Data,
}

impl From<VerifyNewBackups> for ark_server::VerifyNewBackups {
    fn from(value: VerifyNewBackups) -> Self {
        match value {
            VerifyNewBackups::Off => Self::Off,
            VerifyNewBackups::Sampled => Self::Sampled,
            VerifyNewBackups::Data => Self::Data,
        }
    }
}

/// Velero's feature flags (`--features`, comma-separated), under Velero's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Feature {
    // Back up every version the cluster serves of each resource, and restore the version
    // Velero's priorities choose. (Plain comments: help on a value would turn the whole `--help`
    // into clap's long layout.)
    #[value(name = "EnableAPIGroupVersions")]
    EnableApiGroupVersions,
    // Accepted as Velero's command lines have it: ark always takes CSI snapshots.
    #[value(name = "EnableCSI")]
    EnableCsi,
}

impl Feature {
    /// `--features=A,B`, as Velero's command line has it; None for no feature.
    pub fn flag(features: &[Feature]) -> Option<String> {
        let names: Vec<String> = (features.iter())
            .filter_map(|f| f.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        (!names.is_empty()).then(|| format!("--features={}", names.join(",")))
    }
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

/// `--or-selector`: selectors separated by " or ", as Velero's CLI splits them.
pub(crate) fn parse_or_selector(text: &str) -> Result<OrSelectors, String> {
    text.split(" or ")
        .map(|selector| {
            parse_selector(selector).map_err(|reason| format!("{selector:?}: {reason}"))
        })
        .collect::<Result<_, _>>()
        .map(OrSelectors)
}

/// `--ordered-resources`, as Velero's CLI reads it.
#[derive(Clone, Debug)]
pub struct OrderedResources(pub std::collections::BTreeMap<String, String>);

/// Velero's `parseOrderedResources`: `resource=names;resource=names`, each pair whole.
pub(crate) fn parse_ordered_resources(text: &str) -> Result<OrderedResources, String> {
    text.split(';')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((resource, names)) if !resource.trim().is_empty() && !names.trim().is_empty() => {
                Ok((resource.trim().to_string(), names.trim().to_string()))
            }
            _ => Err(format!("{pair:?} is not resource=names")),
        })
        .collect::<Result<_, _>>()
        .map(OrderedResources)
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
    /// At most this many, the first by name; a note on stderr says how to get the next ones
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// Go on where a listing cut by --limit stopped (the token its note gave)
    #[arg(long = "continue", value_name = "TOKEN", requires = "limit")]
    pub continue_token: Option<String>,
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

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use crate::cli::Cli;

    fn backup_spec(args: &[&str]) -> Result<ark_api::BackupSpec, clap::Error> {
        let line = [&["ark", "backup", "create", "b"], args].concat();
        let cli = Cli::try_parse_from(line)?;
        let crate::cli::Command::Backup(crate::commands::backup::BackupCommand::Create(create)) =
            cli.command
        else {
            panic!("not `ark backup create`")
        };
        Ok(create.template.spec())
    }

    #[test]
    fn ordered_resources_are_read_in_velero_s_form() {
        let spec = backup_spec(&[
            "--ordered-resources",
            "pods=shop/db-0,shop/db-1;persistentvolumes=pv-1",
        ])
        .unwrap();
        let ordered = spec.ordered_resources.unwrap();
        assert_eq!(ordered["pods"], "shop/db-0,shop/db-1");
        assert_eq!(ordered["persistentvolumes"], "pv-1");
        let error = backup_spec(&["--ordered-resources", "pods"]).unwrap_err();
        assert!(
            error.to_string().contains("\"pods\" is not resource=names"),
            "{error}"
        );
    }

    #[test]
    fn optional_bools_take_velero_s_forms_bare_is_true_a_value_needs_equals() {
        let spec =
            backup_spec(&["--snapshot-volumes", "--include-cluster-resources=false"]).unwrap();
        assert_eq!(spec.snapshot_volumes, Some(true));
        assert_eq!(spec.include_cluster_resources, Some(false));
        let spec = backup_spec(&["--default-volumes-to-fs-backup=true"]).unwrap();
        assert_eq!(spec.default_volumes_to_fs_backup, Some(true));
        assert_eq!(spec.snapshot_volumes, None);
        // As under Velero's CLI, a value after a space is not the flag's: here, a second name.
        let error = backup_spec(&["--snapshot-volumes", "false"]).unwrap_err();
        assert!(
            error.to_string().contains("unexpected argument 'false'"),
            "{error}"
        );
    }

    #[test]
    fn or_selectors_and_scoped_filters_are_read_as_velero_s_cli_reads_them() {
        let spec = backup_spec(&[
            "--or-selector",
            "app=db or tier in (cache,queue)",
            "--include-cluster-scoped-resources",
            "clusterroles,storageclasses",
            "--exclude-namespace-scoped-resources",
            "secrets",
        ])
        .unwrap();
        let selectors = spec.or_label_selectors.unwrap();
        assert_eq!(selectors.len(), 2);
        assert_eq!(selectors[0].match_labels.as_ref().unwrap()["app"], "db");
        assert_eq!(
            spec.included_cluster_scoped_resources.unwrap(),
            ["clusterroles", "storageclasses"]
        );
        assert_eq!(
            spec.excluded_namespace_scoped_resources.unwrap(),
            ["secrets"]
        );
        assert_eq!(spec.label_selector, None);
    }

    #[test]
    fn old_and_scoped_filters_or_both_selectors_are_refused_before_anything_is_sent() {
        for args in [
            &[
                "--include-resources",
                "pods",
                "--exclude-cluster-scoped-resources",
                "*",
            ][..],
            &[
                "--include-cluster-resources",
                "--include-namespace-scoped-resources",
                "pods",
            ],
            &["--selector", "app=db", "--or-selector", "app=web or app=db"],
        ] {
            let error = backup_spec(args).unwrap_err();
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{args:?}"
            );
        }
        let bad = backup_spec(&["--or-selector", "app=db or =x"]).unwrap_err();
        assert!(bad.to_string().contains("\"=x\""), "{bad}");
    }
}
