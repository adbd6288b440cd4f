use std::process::ExitCode;

use ark_api::Backup;

use crate::cli::args::{GlobalArgs, LogsArgs};
use crate::commands::bucket;

pub async fn run(global: &GlobalArgs, args: LogsArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let backup: Backup =
        crate::commands::missing::get(&client, &global.namespace, &args.name, "backup").await?;
    let location = backup.spec.storage_location.clone().unwrap_or_default();
    bucket::print_log(
        &client,
        &global.namespace,
        &location,
        bucket::Of::Backup(&args.name),
        &mut std::io::stdout(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
