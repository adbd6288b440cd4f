use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Schedule;
use clap::Args;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::cli::args::GlobalArgs;

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The schedules
    #[arg(required = true, add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Schedules))]
    pub names: Vec<String>,
    /// Once unpaused, wait for the next slot rather than backing up at once (sets the schedule's
    /// skipImmediately)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub skip_immediately: Option<bool>,
}

/// Sets `paused` (and `skipImmediately` as given, as Velero's CLI does); a schedule already so is
/// left alone.
pub async fn run(global: &GlobalArgs, args: PauseArgs, paused: bool) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found = super::named(&client, global, &args.names).await?;
    let api: Api<Schedule> = Api::namespaced(client, &global.namespace);
    let verb = if paused { "paused" } else { "unpaused" };
    for schedule in &found.items {
        let name = schedule.metadata.name.clone().unwrap_or_default();
        if schedule.spec.paused == paused {
            println!("Schedule {name:?} is already {verb}.");
            continue;
        }
        let patch =
            json!({ "spec": { "paused": paused, "skipImmediately": args.skip_immediately } });
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("cannot update schedule {name:?}"))?;
        println!("Schedule {name:?} {verb}.");
    }
    Ok(found.exit_code())
}
