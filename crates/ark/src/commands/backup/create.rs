use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, BackupPhase};
use clap::Args;
use kube::Api;
use kube::api::PostParams;

use crate::cli::{BackupTemplateArgs, GlobalArgs, WaitArgs, parse_name};
use crate::commands::wait;

#[derive(Debug, Args)]
pub struct BackupCreateArgs {
    /// The backup's name
    #[arg(value_parser = parse_name)]
    pub name: String,
    #[command(flatten)]
    pub template: BackupTemplateArgs,
    #[command(flatten)]
    pub wait: WaitArgs,
}

pub async fn run(global: &GlobalArgs, args: BackupCreateArgs) -> anyhow::Result<ExitCode> {
    let spec = args.template.spec();
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
