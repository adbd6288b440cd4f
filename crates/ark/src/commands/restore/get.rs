use std::process::ExitCode;

use ark_api::Restore;

use crate::cli::{GetArgs, GlobalArgs, OutputFormat};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: crate::commands::Found<Restore> =
        crate::commands::get_named_or_listed(&client, &global.namespace, &args, "restore").await?;
    match args.output.output {
        OutputFormat::Table => println!("{}", table(&found.items)),
        format => output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    Ok(found.exit_code())
}

fn table(restores: &[Restore]) -> String {
    output::table(
        &[
            "NAME",
            "BACKUP",
            "STATUS",
            "STARTED",
            "COMPLETED",
            "ERRORS",
            "WARNINGS",
            "CREATED",
        ],
        restores.iter().map(|restore| {
            let status = restore.status.clone().unwrap_or_default();
            vec![
                restore.metadata.name.clone().unwrap_or_default(),
                restore.spec.backup_name.clone(),
                format!("{:?}", restore.phase()),
                output::time(status.start_timestamp.as_ref()),
                output::time(status.completion_timestamp.as_ref()),
                status.errors.unwrap_or(0).to_string(),
                status.warnings.unwrap_or(0).to_string(),
                output::time(restore.metadata.creation_timestamp.as_ref()),
            ]
        }),
    )
}
