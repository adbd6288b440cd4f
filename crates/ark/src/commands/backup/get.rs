use std::process::ExitCode;

use ark_api::Backup;

use crate::cli::{GetArgs, GlobalArgs, OutputFormat};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: crate::commands::Found<Backup> =
        crate::commands::get_named_or_listed(&client, &global.namespace, &args, "backup").await?;
    match args.output.output {
        OutputFormat::Table => println!("{}", table(&found.items)),
        format => output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    Ok(found.exit_code())
}

fn table(backups: &[Backup]) -> String {
    output::table(
        &[
            "NAME",
            "STATUS",
            "ERRORS",
            "WARNINGS",
            "CREATED",
            "EXPIRES",
            "STORAGE LOCATION",
        ],
        backups.iter().map(|backup| {
            let status = backup.status.clone().unwrap_or_default();
            vec![
                backup.metadata.name.clone().unwrap_or_default(),
                format!("{:?}", backup.phase()),
                status.errors.unwrap_or(0).to_string(),
                status.warnings.unwrap_or(0).to_string(),
                output::time(backup.metadata.creation_timestamp.as_ref()),
                output::time(status.expiration.as_ref()),
                backup.spec.storage_location.clone().unwrap_or_default(),
            ]
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupPhase, BackupSpec, BackupStatus};

    #[test]
    fn backup_table() {
        let mut backup = Backup::new(
            "nightly",
            BackupSpec {
                storage_location: Some("default".into()),
                ..Default::default()
            },
        );
        backup.status = Some(BackupStatus {
            phase: Some(BackupPhase::PartiallyFailed),
            errors: Some(2),
            ..Default::default()
        });
        let fresh = Backup::new("fresh", BackupSpec::default());
        insta::assert_snapshot!(table(&[backup, fresh]), @r"
        NAME     STATUS           ERRORS  WARNINGS  CREATED  EXPIRES  STORAGE LOCATION
        nightly  PartiallyFailed  2       0         <none>   <none>   default
        fresh    New              0       0         <none>   <none>
        ");
    }
}
