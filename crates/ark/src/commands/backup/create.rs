use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, BackupPhase, BackupSpec};
use clap::Args;
use kube::Api;
use kube::api::PostParams;

use crate::cli::{FilterArgs, GlobalArgs, WaitArgs, parse_duration, parse_name};
use crate::commands::wait;

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
    #[arg(long, value_name = "LOCATION", add = clap_complete::ArgValueCompleter::new(crate::complete::Names::Locations))]
    pub storage_location: Option<String>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

pub async fn run(global: &GlobalArgs, args: BackupCreateArgs) -> anyhow::Result<ExitCode> {
    let filters = args.filters;
    let spec = BackupSpec {
        included_namespaces: crate::commands::non_empty(filters.include_namespaces),
        excluded_namespaces: crate::commands::non_empty(filters.exclude_namespaces),
        included_resources: crate::commands::non_empty(filters.include_resources),
        excluded_resources: crate::commands::non_empty(filters.exclude_resources),
        include_cluster_resources: filters.include_cluster_resources,
        label_selector: filters.selector,
        ttl: args.ttl.map(ark_api::duration::format),
        storage_location: args.storage_location,
        ..Default::default()
    };
    let client = crate::context::client(global).await?;
    let api: Api<Backup> = Api::namespaced(client, &global.namespace);
    api.create(&PostParams::default(), &Backup::new(&args.name, spec))
        .await
        .with_context(|| {
            format!(
                "cannot create backup {:?} in namespace {:?}",
                args.name, global.namespace
            )
        })?;
    println!("Backup request {:?} submitted successfully.", args.name);
    if !args.wait.wait {
        println!(
            "Run `ark backup describe {0}` or `ark backup logs {0}` for more details.",
            args.name
        );
        return Ok(ExitCode::SUCCESS);
    }
    let backup = wait::until_done(api, &global.namespace, &args.name, args.wait.timeout).await?;
    let phase = backup.phase();
    println!(
        "Backup completed with status: {phase:?}. You may check for more information using the commands `ark backup describe {0}` and `ark backup logs {0}`.",
        args.name
    );
    Ok(if phase == BackupPhase::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
