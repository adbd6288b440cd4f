use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Schedule;
use clap::Args;
use kube::Api;
use kube::api::DeleteParams;

use crate::cli::args::GlobalArgs;

#[derive(Debug, Args)]
pub struct ScheduleDeleteArgs {
    /// The schedules to delete
    #[arg(required = true, add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Schedules))]
    pub names: Vec<String>,
    /// Do not ask for confirmation (required when standard input is not a terminal)
    #[arg(long)]
    pub confirm: bool,
}

pub async fn run(global: &GlobalArgs, args: ScheduleDeleteArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found = super::named(&client, global, &args.names).await?;
    if found.items.is_empty() {
        return Ok(found.exit_code());
    }
    let names: Vec<String> = found
        .items
        .iter()
        .map(|s| s.metadata.name.clone().unwrap_or_default())
        .collect();
    let intro = format!(
        "Deleting {} schedule(s). No backup is deleted with them, and no data: their backups \
         stay until their TTL or `ark backup delete`:",
        names.len()
    );
    if !args.confirm
        && !crate::commands::confirm::confirmed(
            &format!("deleting {} schedule(s)", names.len()),
            &intro,
            &names,
        )?
    {
        println!("Cancelled.");
        return Ok(found.exit_code());
    }
    let api: Api<Schedule> = Api::namespaced(client, &global.namespace);
    for name in &names {
        api.delete(name, &DeleteParams::default())
            .await
            .with_context(|| format!("cannot delete schedule {name:?}"))?;
        println!("Schedule {name:?} deleted; its backups are kept.");
    }
    Ok(found.exit_code())
}
