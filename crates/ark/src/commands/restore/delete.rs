//! `ark restore delete`: look every restore up, confirm, delete each Restore; the server then
//! removes its files from the bucket (`restores/<name>/`) and lets the object go, as Velero's does
//! through its finalizer. With `--wait`, follow each until it is gone.

use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Restore;
use clap::Args;
use kube::api::DeleteParams;
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, ResourceExt as _};

use crate::cli::args::{GlobalArgs, WaitArgs};
use crate::commands::lookup::{Found, get_named_or_listed};

/// Exactly one way of choosing what to delete.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["names", "all", "selector"]))]
pub struct RestoreDeleteArgs {
    /// The restores to delete
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Restores))]
    pub names: Vec<String>,
    /// Delete every restore in the namespace
    #[arg(long)]
    pub all: bool,
    /// Delete the restores matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Do not ask for confirmation (required when standard input is not a terminal)
    #[arg(long)]
    pub confirm: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

pub async fn run(global: &GlobalArgs, args: RestoreDeleteArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: Found<Restore> = get_named_or_listed(
        &client,
        &global.namespace,
        &args.names,
        args.selector.as_deref(),
        "restore",
    )
    .await?;
    if found.items.is_empty() {
        if found.missing == 0 {
            println!("No restores found.");
        }
        return Ok(found.exit_code());
    }
    let names: Vec<String> = found.items.iter().map(|r| r.name_any()).collect();
    if !args.confirm
        && !crate::commands::confirm::confirmed(
            &format!("deleting {} restore(s)", names.len()),
            "You are about to delete these restores and their files in the bucket (logs, results); \
             what they restored stays in the cluster:",
            &names,
        )?
    {
        println!("Cancelled.");
        return Ok(found.exit_code());
    }
    let restores: Api<Restore> = Api::namespaced(client, &global.namespace);
    let mut failed = found.missing;
    let mut deleted = Vec::new();
    for restore in &found.items {
        let name = restore.name_any();
        match restores.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                println!(
                    "Request to delete restore {name:?} submitted successfully.\nThe restore will be \
                     fully deleted after all associated data (restore files in object storage) are \
                     removed."
                );
                deleted.push(restore);
            }
            // Gone meanwhile: what was asked.
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                eprintln!("error: restore {name:?}: {error}");
                failed += 1;
            }
        }
    }
    if args.wait.wait && !deleted.is_empty() {
        let gone = futures::future::join_all(deleted.iter().map(|restore| {
            let (restores, name, uid) = (restores.clone(), restore.name_any(), restore.uid());
            async move {
                let uid = uid.unwrap_or_default();
                await_condition(restores, &name, conditions::is_deleted(&uid)).await
            }
        }));
        let waited = crate::commands::wait::within(args.wait.timeout, gone).await;
        let Some(waited) = waited else {
            anyhow::bail!(
                "gave up waiting after {}: the server removes a deleted restore's files before it \
                 goes; `ark restore get` shows the ones left",
                ark_api::duration::format(args.wait.timeout.unwrap_or_default())
            );
        };
        for outcome in waited {
            outcome.context("cannot watch the restores")?;
        }
        println!("Deleted.");
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
