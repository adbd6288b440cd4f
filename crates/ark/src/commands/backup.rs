use std::process::ExitCode;

use ark_api::Backup;
use kube::Api;

use super::not_implemented;
use crate::cli::{BackupCommand, GetArgs, GlobalArgs, OutputFormat};
use crate::output;

pub async fn run(global: &GlobalArgs, command: BackupCommand) -> anyhow::Result<ExitCode> {
    match command {
        BackupCommand::Get(args) => get(global, args).await,
        BackupCommand::Create(args) => not_implemented("backup create", args),
        BackupCommand::Describe(args) => not_implemented("backup describe", args),
        BackupCommand::Logs(args) => not_implemented("backup logs", args),
        BackupCommand::Delete(args) => not_implemented("backup delete", args),
    }
}

async fn get(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let api: Api<Backup> = Api::namespaced(client, &global.namespace);
    let found = super::get_named_or_listed(&api, &args, "backup").await?;
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
