use std::process::ExitCode;

use ark_api::Backup;
use kube::Api;

use crate::cli::args::{GlobalArgs, LogsArgs};
use crate::commands::bucket;

pub async fn run(global: &GlobalArgs, args: LogsArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let api: Api<Backup> = Api::namespaced(client.clone(), &global.namespace);
    let backup = api.get_opt(&args.name).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "backup {:?} not found in namespace {:?}",
            args.name,
            global.namespace
        )
    })?;
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
