use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, Restore, RestorePhase, RestoreSpec};
use clap::{Args, ValueEnum};
use kube::Api;
use kube::api::PostParams;

use crate::cli::args::{FilterArgs, GlobalArgs, OutputFormat, WaitArgs, parse_mapping, parse_name};
use crate::commands::{spec_file, wait};

#[derive(Debug, Args)]
pub struct RestoreCreateArgs {
    /// The restore's name (default: <backup>-<timestamp>)
    #[arg(value_parser = parse_name)]
    pub name: Option<String>,
    /// The backup to restore from
    #[arg(long, value_name = "BACKUP", required_unless_present = "from_schedule", conflicts_with = "from_schedule", add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Backups))]
    pub from_backup: Option<String>,
    /// Restore from the newest Completed backup of this schedule
    #[arg(long, value_name = "SCHEDULE", add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Schedules))]
    pub from_schedule: Option<String>,
    /// With --from-schedule: a PartiallyFailed backup may be the newest
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub allow_partially_failed: Option<bool>,
    #[command(flatten)]
    pub filters: FilterArgs,
    /// Restore namespaces under other names: old:new,old2:new2
    #[arg(long, value_delimiter = ',', value_name = "OLD:NEW", value_parser = parse_mapping)]
    pub namespace_mappings: Vec<(String, String)>,
    /// What to do with objects that already exist
    #[arg(long, value_enum, default_value_t = ExistingResourcePolicy::None)]
    pub existing_resource_policy: ExistingResourcePolicy,
    /// Services keep their node ports (one taken in this cluster fails that Service)
    #[arg(long = "preserve-nodeports", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub preserve_node_ports: Option<bool>,
    /// Restore claims backed up as CSI snapshots from their snapshots (default: true); with
    /// false they come back empty
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub restore_volumes: Option<bool>,
    /// Restore hooks (YAML or JSON: the `spec.hooks` of a Restore; `-` reads standard input),
    /// checked before anything is created
    #[arg(long, value_name = "FILE")]
    pub hooks_file: Option<PathBuf>,
    /// Resource modifier rules for the restored items: a ConfigMap in the server's namespace, in
    /// Velero's format (see docs/restores-and-hooks.md)
    #[arg(long, value_name = "CONFIGMAP", value_parser = parse_name)]
    pub resource_modifier_configmap: Option<String>,
    /// Resources whose backed-up status is put back on the objects created (comma-separated,
    /// resource.group: `foos.example.com`; `*` for all)
    #[arg(long, value_delimiter = ',', value_name = "RESOURCES")]
    pub status_include_resources: Vec<String>,
    /// Resources whose status is not restored (with --status-include-resources)
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "RESOURCES",
        requires = "status_include_resources"
    )]
    pub status_exclude_resources: Vec<String>,
    /// Write blocks of zeros in pod volumes as holes, so that sparse files come back sparse
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub write_sparse_files: Option<bool>,
    /// Files of a pod volume the node agent writes at once (default: its own)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub parallel_files_download: Option<i64>,
    /// Create nothing: print what the restore would do to each item (create, update with the
    /// fields that change, skip, conflict, or refused, as the API server's dry run answers), the
    /// volumes it would restore and the hooks it would run; exit 1 if anything would fail
    #[arg(long, conflicts_with = "wait")]
    pub dry_run: bool,
    /// With --dry-run: the plan as a table, JSON or YAML
    #[arg(short = 'o', long, value_enum, requires = "dry_run", default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
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

/// The newest backup of `schedule` (by start) that is Completed, or PartiallyFailed when allowed.
async fn newest_of_schedule(
    backups: &Api<Backup>,
    schedule: &str,
    allow_partially_failed: bool,
    global: &GlobalArgs,
) -> anyhow::Result<String> {
    let selector = format!("{}={schedule}", ark_api::labels::SCHEDULE_NAME);
    let listed = backups
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .with_context(|| format!("cannot list the backups of schedule {schedule:?}"))?;
    listed
        .items
        .iter()
        .filter(|b| {
            b.phase() == ark_api::BackupPhase::Completed
                || (allow_partially_failed && b.phase() == ark_api::BackupPhase::PartiallyFailed)
        })
        .max_by_key(|b| {
            b.status
                .as_ref()
                .and_then(|s| s.start_timestamp.as_ref())
                .map(|t| t.0)
        })
        .and_then(|b| b.metadata.name.clone())
        .with_context(|| {
            format!(
                "schedule {schedule:?} has no {}backup in namespace {:?}",
                if allow_partially_failed {
                    "Completed or PartiallyFailed "
                } else {
                    "Completed "
                },
                global.namespace
            )
        })
}

pub async fn run(global: &GlobalArgs, args: RestoreCreateArgs) -> anyhow::Result<ExitCode> {
    // The hooks file first: a broken file fails fast, even when the cluster is out of reach.
    let hooks = args
        .hooks_file
        .as_deref()
        .map(|path| spec_file::read(path, "hooks", ark_api::hooks::parse_file))
        .transpose()?;
    let allow_partially_failed = args.allow_partially_failed == Some(true);
    if allow_partially_failed && args.from_schedule.is_none() {
        // As under Velero's CLI, which takes it and does nothing with it.
        eprintln!("note: --allow-partially-failed has no effect without --from-schedule");
    }
    let client = crate::context::client(global).await?;
    // The backup is looked up first: a typo is named before anything is created.
    let backups = Api::<Backup>::namespaced(client.clone(), &global.namespace);
    let from_backup = match (&args.from_backup, &args.from_schedule) {
        (_, Some(schedule)) => {
            newest_of_schedule(&backups, schedule, allow_partially_failed, global).await?
        }
        (Some(backup), None) => backup.clone(),
        (None, None) => anyhow::bail!("--from-backup or --from-schedule is required"),
    };
    let _: Backup =
        crate::commands::missing::get(&client, &global.namespace, &from_backup, "backup").await?;
    let name = args.name.unwrap_or_else(|| {
        let stamp = k8s_openapi::jiff::Timestamp::now().strftime("%Y%m%d%H%M%S");
        let of = args.from_schedule.as_deref().unwrap_or(&from_backup);
        format!("{of}-{stamp}")
    });
    let filters = args.filters;
    let mut unmodelled = ark_api::Unmodelled::default();
    if let Some(schedule) = &args.from_schedule {
        // As Velero's CLI records it (the restore's metrics are labelled with it).
        unmodelled.insert("scheduleName".into(), schedule.clone().into());
    }
    let spec = RestoreSpec {
        backup_name: from_backup,
        unmodelled,
        included_namespaces: crate::cli::args::non_empty(filters.include_namespaces),
        excluded_namespaces: crate::cli::args::non_empty(filters.exclude_namespaces),
        included_resources: crate::cli::args::non_empty(filters.include_resources),
        excluded_resources: crate::cli::args::non_empty(filters.exclude_resources),
        include_cluster_resources: filters.include_cluster_resources,
        label_selector: filters.selector,
        or_label_selectors: filters.or_selector.map(|s| s.0),
        namespace_mapping: (!args.namespace_mappings.is_empty())
            .then(|| args.namespace_mappings.into_iter().collect()),
        existing_resource_policy: Some(
            match args.existing_resource_policy {
                ExistingResourcePolicy::None => "none",
                ExistingResourcePolicy::Update => "update",
            }
            .to_string(),
        ),
        hooks,
        preserve_node_ports: args.preserve_node_ports,
        restore_pvs: args.restore_volumes,
        uploader_config: (args.write_sparse_files.is_some()
            || args.parallel_files_download.is_some())
        .then_some(ark_api::uploader::UploaderConfigForRestore {
            write_sparse_files: args.write_sparse_files,
            parallel_files_download: args.parallel_files_download,
        }),
        // As Velero's CLI: only with resources to include.
        restore_status: (!args.status_include_resources.is_empty()).then(|| {
            ark_api::RestoreStatusSpec {
                included_resources: Some(args.status_include_resources),
                excluded_resources: crate::cli::args::non_empty(args.status_exclude_resources),
            }
        }),
        // As Velero's CLI names the reference.
        resource_modifier: args.resource_modifier_configmap.map(|name| {
            k8s_openapi::api::core::v1::TypedLocalObjectReference {
                kind: "configmap".into(),
                name,
                api_group: None,
            }
        }),
        ..Default::default()
    };
    if args.dry_run {
        let restore = Restore::new(&name, spec);
        return super::preview::run(&client, global, &restore, args.output).await;
    }
    let api: Api<Restore> = Api::namespaced(client, &global.namespace);
    api.create(&PostParams::default(), &Restore::new(&name, spec))
        .await
        .with_context(|| {
            format!(
                "cannot create restore {name:?} in namespace {:?}",
                global.namespace
            )
        })?;
    println!("Restore request {name:?} submitted successfully.");
    if !args.wait.wait {
        println!(
            "Run `ark restore describe {name}` or `ark restore logs {name}` for more details."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let restore = wait::until_done(api, &global.namespace, &name, args.wait.timeout).await?;
    let phase = restore.phase();
    println!(
        "Restore completed with status: {phase:?}. You may check for more information using the commands `ark restore describe {name}` and `ark restore logs {name}`."
    );
    Ok(if phase == RestorePhase::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
