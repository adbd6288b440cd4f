use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, BackupPhase, Schedule};
use clap::Args;
use kube::Api;
use kube::api::PostParams;

use crate::cli::args::{BackupTemplateArgs, GlobalArgs, WaitArgs, parse_name};
use crate::commands::wait;

#[derive(Debug, Args)]
pub struct BackupCreateArgs {
    /// The backup's name (with --from-schedule, default: <schedule>-<yyyyMMddHHmmss>)
    #[arg(value_parser = parse_name, required_unless_present = "from_schedule")]
    pub name: Option<String>,
    #[command(flatten)]
    pub template: BackupTemplateArgs,
    /// Back up as this schedule does, now: its template, labels and annotations (the filter flags
    /// are not taken with it)
    #[arg(long, value_name = "SCHEDULE", add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Schedules))]
    pub from_schedule: Option<String>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

pub async fn run(global: &GlobalArgs, args: BackupCreateArgs) -> anyhow::Result<ExitCode> {
    if args.from_schedule.is_some() && args.template.is_set() {
        anyhow::bail!(
            "--from-schedule backs up with the schedule's template: no filter, --ttl or \
             --storage-location can be given with it"
        );
    }
    let client = crate::context::client(global).await?;
    let mut backup = match &args.from_schedule {
        Some(schedule) => {
            let schedules: Api<Schedule> = Api::namespaced(client.clone(), &global.namespace);
            let Some(schedule_object) = schedules
                .get_opt(schedule)
                .await
                .with_context(|| format!("cannot look up schedule {schedule:?}"))?
            else {
                anyhow::bail!(
                    "schedule {schedule:?} not found in namespace {:?}{}",
                    global.namespace,
                    crate::commands::missing::suggestion(&schedules, schedule).await
                );
            };
            Backup::from_schedule(&schedule_object, k8s_openapi::jiff::Timestamp::now())
        }
        None => Backup::new("", args.template.spec()),
    };
    if let Some(name) = &args.name {
        backup.metadata.name = Some(name.clone());
    }
    let name = backup.metadata.name.clone().unwrap_or_default();
    let api: Api<Backup> = Api::namespaced(client, &global.namespace);
    api.create(&PostParams::default(), &backup)
        .await
        .with_context(|| {
            format!(
                "cannot create backup {name:?} in namespace {:?}",
                global.namespace
            )
        })?;
    println!("Backup request {name:?} submitted successfully.");
    if !args.wait.wait {
        println!(
            "Run `ark backup describe {0}` or `ark backup logs {0}` for more details.",
            name
        );
        return Ok(ExitCode::SUCCESS);
    }
    let backup = wait::until_done(api, &global.namespace, &name, args.wait.timeout).await?;
    let phase = backup.phase();
    println!(
        "Backup completed with status: {phase:?}. You may check for more information using the commands `ark backup describe {0}` and `ark backup logs {0}`.",
        name
    );
    Ok(if phase == BackupPhase::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
