use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{
    Backup, BackupPhase, BackupSpec, DeleteBackupRequest, DeleteBackupRequestPhase, labels,
};
use kube::Api;
use kube::ResourceExt;
use kube::api::{ListParams, PostParams};

use super::{bucket, wait};
use crate::cli::{
    BackupCommand, BackupCreateArgs, DescribeArgs, GetArgs, GlobalArgs, LogsArgs, OutputFormat,
};
use crate::describe::Describe;
use crate::output;

pub async fn run(global: &GlobalArgs, command: BackupCommand) -> anyhow::Result<ExitCode> {
    match command {
        BackupCommand::Create(args) => create(global, args).await,
        BackupCommand::Get(args) => get(global, args).await,
        BackupCommand::Describe(args) => describe(global, args).await,
        BackupCommand::Logs(args) => logs(global, args).await,
        BackupCommand::Delete(args) => super::backup_delete::run(global, args).await,
    }
}

fn non_empty(list: Vec<String>) -> Option<Vec<String>> {
    (!list.is_empty()).then_some(list)
}

async fn create(global: &GlobalArgs, args: BackupCreateArgs) -> anyhow::Result<ExitCode> {
    let filters = args.filters;
    let spec = BackupSpec {
        included_namespaces: non_empty(filters.include_namespaces),
        excluded_namespaces: non_empty(filters.exclude_namespaces),
        included_resources: non_empty(filters.include_resources),
        excluded_resources: non_empty(filters.exclude_resources),
        include_cluster_resources: filters.include_cluster_resources,
        label_selector: filters.selector,
        ttl: args.ttl.map(ark_api::duration::format),
        storage_location: args.storage_location,
        ..Default::default()
    };
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

async fn get(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: super::Found<Backup> =
        super::get_named_or_listed(&client, &global.namespace, &args, "backup").await?;
    match args.output.output {
        OutputFormat::Table => println!("{}", table(&found.items)),
        format => output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    Ok(found.exit_code())
}

async fn describe(global: &GlobalArgs, args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let lookup = GetArgs {
        names: args.names.clone(),
        selector: None,
        output: args.output,
    };
    let found: super::Found<Backup> =
        super::get_named_or_listed(&client, &global.namespace, &lookup, "backup").await?;
    let requests: Api<DeleteBackupRequest> = Api::namespaced(client.clone(), &global.namespace);
    let mut described = Vec::new();
    for backup in &found.items {
        described.push((backup, deletion_attempts(&requests, backup).await?));
    }
    if lookup.output.output != OutputFormat::Table {
        let structured: Vec<serde_json::Value> = described
            .iter()
            .map(|(backup, attempts)| {
                let mut value = serde_json::to_value(backup).unwrap_or_default();
                if !attempts.is_empty() {
                    value["deletionAttempts"] = attempts_json(attempts);
                }
                value
            })
            .collect();
        output::print_objects(lookup.output.output, &structured, args.names.len() == 1)?;
        return Ok(found.exit_code());
    }
    for (index, (backup, attempts)) in described.iter().enumerate() {
        if index > 0 {
            println!();
        }
        let mut text = describe_text(backup);
        text.push_str(&attempts_text(attempts));
        if args.details {
            let name = backup.metadata.name.clone().unwrap_or_default();
            let location = backup.spec.storage_location.clone().unwrap_or_default();
            text.push_str(
                &bucket::details(
                    &client,
                    &global.namespace,
                    &location,
                    bucket::Of::Backup(&name),
                )
                .await,
            );
        }
        print!("{text}");
    }
    Ok(found.exit_code())
}

/// The DeleteBackupRequests of this very backup: its name label AND its uid label, so a request
/// that belonged to an earlier backup of the same name is not shown. Newest first.
async fn deletion_attempts(
    requests: &Api<DeleteBackupRequest>,
    backup: &Backup,
) -> anyhow::Result<Vec<DeleteBackupRequest>> {
    let selector = labels::selector_for_backup(
        &backup.name_any(),
        backup.metadata.uid.as_deref().unwrap_or_default(),
    );
    let mut list = requests
        .list(&ListParams::default().labels(&selector))
        .await
        .context("cannot list DeleteBackupRequests")?
        .items;
    list.sort_by(|a, b| {
        b.metadata
            .creation_timestamp
            .cmp(&a.metadata.creation_timestamp)
    });
    Ok(list)
}

fn failed(attempts: &[DeleteBackupRequest]) -> usize {
    attempts
        .iter()
        .filter(|r| {
            r.phase() == Some(DeleteBackupRequestPhase::Processed) && !r.errors().is_empty()
        })
        .count()
}

/// Velero's "Deletion Attempts" section; empty when there is none.
pub fn attempts_text(attempts: &[DeleteBackupRequest]) -> String {
    if attempts.is_empty() {
        return String::new();
    }
    let failed = failed(attempts);
    let mut out = if failed > 0 {
        format!("\nDeletion Attempts ({failed} failed):\n")
    } else {
        "\nDeletion Attempts:\n".to_string()
    };
    for (index, request) in attempts.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let phase = request
            .phase()
            .map_or("New".to_string(), |p| format!("{p:?}"));
        out.push_str(&format!(
            "  {}: {phase}\n",
            output::time(request.metadata.creation_timestamp.as_ref())
        ));
        if !request.errors().is_empty() {
            out.push_str("  Errors:\n");
            for error in request.errors() {
                out.push_str(&format!("    {error}\n"));
            }
        }
    }
    out
}

fn attempts_json(attempts: &[DeleteBackupRequest]) -> serde_json::Value {
    serde_json::json!({
        "failed": failed(attempts),
        "deleteBackupRequests": attempts.iter().map(|r| serde_json::json!({
            "creationTimestamp": r.metadata.creation_timestamp,
            "phase": r.phase(),
            "errors": r.errors(),
        })).collect::<Vec<_>>(),
    })
}

fn list_or(list: Option<&Vec<String>>, default: &str) -> String {
    match list {
        Some(items) if !items.is_empty() => items.join(", "),
        _ => default.to_string(),
    }
}

/// `ark backup describe`, in Velero's layout.
pub fn describe_text(backup: &Backup) -> String {
    let spec = &backup.spec;
    let status = backup.status.clone().unwrap_or_default();
    let mut d = Describe::default();
    d.metadata(&backup.metadata);
    d.blank();
    d.field("Phase", &format!("{:?}", backup.phase()));
    if let Some(errors) = status.validation_errors.as_ref().filter(|e| !e.is_empty()) {
        d.blank();
        d.line("Validation errors:");
        for error in errors {
            d.line(&format!("  {error}"));
        }
    }
    if let Some(reason) = status.failure_reason.as_ref().filter(|r| !r.is_empty()) {
        d.field("Failure reason", reason);
    }
    d.blank();
    d.line("Namespaces:");
    d.nested(&[
        ("Included", list_or(spec.included_namespaces.as_ref(), "*")),
        (
            "Excluded",
            list_or(spec.excluded_namespaces.as_ref(), "<none>"),
        ),
    ]);
    d.blank();
    d.line("Resources:");
    let cluster = match spec.include_cluster_resources {
        None => "auto".to_string(),
        Some(true) => "included".to_string(),
        Some(false) => "excluded".to_string(),
    };
    d.nested(&[
        ("Included", list_or(spec.included_resources.as_ref(), "*")),
        (
            "Excluded",
            list_or(spec.excluded_resources.as_ref(), "<none>"),
        ),
        ("Cluster-scoped", cluster),
    ]);
    d.blank();
    d.field(
        "Label selector",
        &crate::describe::selector(spec.label_selector.as_ref()),
    );
    d.blank();
    d.field(
        "Storage Location",
        spec.storage_location.as_deref().unwrap_or("<none>"),
    );
    d.blank();
    d.field("TTL", spec.ttl.as_deref().unwrap_or("<none>"));
    d.blank();
    d.fields(&[
        ("Started", output::time(status.start_timestamp.as_ref())),
        (
            "Completed",
            output::time(status.completion_timestamp.as_ref()),
        ),
    ]);
    d.blank();
    d.field("Expiration", &output::time(status.expiration.as_ref()));
    if let Some(progress) = &status.progress {
        d.blank();
        d.fields(&[
            (
                "Total items to be backed up",
                progress.total_items.unwrap_or(0).to_string(),
            ),
            (
                "Items backed up",
                progress.items_backed_up.unwrap_or(0).to_string(),
            ),
        ]);
    }
    d.blank();
    d.fields(&[
        ("Errors", status.errors.unwrap_or(0).to_string()),
        ("Warnings", status.warnings.unwrap_or(0).to_string()),
    ]);
    d.finish()
}

async fn logs(global: &GlobalArgs, args: LogsArgs) -> anyhow::Result<ExitCode> {
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
    let text = bucket::read_log(
        &client,
        &global.namespace,
        &location,
        bucket::Of::Backup(&args.name),
    )
    .await?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
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

    #[test]
    fn deletion_attempts_in_velero_layout() {
        use ark_api::DeleteBackupRequestStatus;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let backup = Backup::new("nightly", BackupSpec::default());
        let attempt = |day: &str, phase, errors: &[&str]| {
            let mut request = DeleteBackupRequest::for_backup(&backup);
            request.metadata.creation_timestamp =
                Some(Time(format!("2023-06-{day}T00:00:00Z").parse().unwrap()));
            request.status = Some(DeleteBackupRequestStatus {
                phase: Some(phase),
                errors: (!errors.is_empty())
                    .then(|| errors.iter().map(|e| e.to_string()).collect()),
            });
            request
        };
        let attempts = [
            attempt("26", DeleteBackupRequestPhase::Processed, &["some error"]),
            attempt("25", DeleteBackupRequestPhase::InProgress, &[]),
        ];
        insta::assert_snapshot!(attempts_text(&attempts), @r"

        Deletion Attempts (1 failed):
          2023-06-26 00:00:00 +0000 UTC: Processed
          Errors:
            some error

          2023-06-25 00:00:00 +0000 UTC: InProgress
        ");
        assert_eq!(attempts_json(&attempts)["failed"], 1);
        assert_eq!(attempts_text(&[]), "");
    }

    #[test]
    fn describe_layout() {
        let mut backup = Backup::new(
            "nightly",
            BackupSpec {
                included_namespaces: Some(vec!["shop".into()]),
                storage_location: Some("default".into()),
                ttl: Some("720h0m0s".into()),
                ..Default::default()
            },
        );
        backup.metadata.namespace = Some("velero".into());
        backup.status = Some(BackupStatus {
            phase: Some(BackupPhase::Completed),
            warnings: Some(1),
            ..Default::default()
        });
        insta::assert_snapshot!(describe_text(&backup), @r"
        Name:         nightly
        Namespace:    velero
        Labels:       <none>
        Annotations:  <none>

        Phase:  Completed

        Namespaces:
          Included:  shop
          Excluded:  <none>

        Resources:
          Included:        *
          Excluded:        <none>
          Cluster-scoped:  auto

        Label selector:  <none>

        Storage Location:  default

        TTL:  720h0m0s

        Started:    <none>
        Completed:  <none>

        Expiration:  <none>

        Errors:    0
        Warnings:  1
        ");
    }
}
