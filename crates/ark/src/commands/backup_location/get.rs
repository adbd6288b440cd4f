use std::process::ExitCode;

use ark_api::BackupStorageLocation;

use crate::cli::{GetArgs, GlobalArgs, OutputFormat};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: crate::commands::Found<BackupStorageLocation> =
        crate::commands::get_named_or_listed(
            &client,
            &global.namespace,
            &args,
            "backup storage location",
        )
        .await?;
    match args.output.output {
        OutputFormat::Table => println!("{}", table(&found.items)),
        format => output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    Ok(found.exit_code())
}

fn table(locations: &[BackupStorageLocation]) -> String {
    output::table(
        &[
            "NAME",
            "PROVIDER",
            "BUCKET/PREFIX",
            "PHASE",
            "LAST VALIDATED",
            "ACCESS MODE",
            "DEFAULT",
        ],
        locations.iter().map(|location| {
            let spec = &location.spec;
            let status = location.status.clone().unwrap_or_default();
            let bucket = match &spec.object_storage.prefix {
                Some(prefix) => format!("{}/{prefix}", spec.object_storage.bucket),
                None => spec.object_storage.bucket.clone(),
            };
            vec![
                location.metadata.name.clone().unwrap_or_default(),
                spec.provider.clone(),
                bucket,
                status.phase.map_or("Unknown".into(), |p| format!("{p:?}")),
                output::time(status.last_validation_time.as_ref()),
                if location.is_read_only() {
                    "ReadOnly"
                } else {
                    "ReadWrite"
                }
                .into(),
                if spec.default { "true" } else { "" }.into(),
            ]
        }),
    )
}
