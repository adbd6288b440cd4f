use std::process::ExitCode;

use ark_api::{Backup, Restore};
use kube::Api;

use crate::cli::args::{GlobalArgs, LogsArgs};
use crate::commands::bucket;

pub async fn run(global: &GlobalArgs, args: LogsArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let restore: Restore =
        crate::commands::missing::get(&client, &global.namespace, &args.name, "restore").await?;
    let backup = Api::<Backup>::namespaced(client.clone(), &global.namespace)
        .get_opt(&restore.spec.backup_name)
        .await?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "backup {:?} of restore {:?} not found: its location is unknown",
                restore.spec.backup_name,
                args.name
            )
        })?;
    let location = backup.spec.storage_location.unwrap_or_default();
    bucket::print_log(
        &client,
        &global.namespace,
        &location,
        bucket::Of::Restore(&args.name),
        &mut std::io::stdout(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
