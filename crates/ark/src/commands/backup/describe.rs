use std::process::ExitCode;

use ark_api::{Backup, BackupPhase, DeleteBackupRequest, DeleteBackupRequestPhase, labels};
use kube::ResourceExt;

use crate::cli::args::{DescribeArgs, GlobalArgs, OutputFormat};
use crate::commands::bucket;
use crate::describe::Describe;
use crate::output;

pub async fn run(global: &GlobalArgs, args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: crate::commands::lookup::Found<Backup> =
        crate::commands::lookup::get_named_or_listed(
            &client,
            &global.namespace,
            &args.names,
            None,
            "backup",
        )
        .await?;
    let mut described = Vec::new();
    for backup in &found.items {
        described.push((
            backup,
            deletion_attempts(&client, &global.namespace, backup).await?,
        ));
    }
    if args.output.output != OutputFormat::Table {
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
        output::print_objects(args.output.output, &structured, args.names.len() == 1)?;
        return Ok(found.exit_code());
    }
    for (index, (backup, attempts)) in described.iter().enumerate() {
        if index > 0 {
            println!();
        }
        let mut text = describe_text(backup);
        text.push_str(&attempts_text(attempts));
        let name = backup.metadata.name.clone().unwrap_or_default();
        let location = backup.spec.storage_location.clone().unwrap_or_default();
        let hooked = backup
            .status
            .as_ref()
            .and_then(|s| s.hook_status.as_ref())
            .is_some_and(|h| h.hooks_attempted.is_some());
        if hooked {
            let of = bucket::Of::Backup(&name);
            let section =
                bucket::hooks_section(&client, &global.namespace, &location, of, args.details);
            text.push_str(&section.await);
        }
        // Only a backup that was uploaded has a record of its volumes.
        let uploaded = backup
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .is_some_and(|p| {
                p.is_finishing()
                    || matches!(p, BackupPhase::Completed | BackupPhase::PartiallyFailed)
            });
        if uploaded && !location.is_empty() {
            text.push_str(
                &match bucket::volumes(&client, &global.namespace, &location, &name).await {
                    Ok((volumes, operations)) => {
                        crate::describe::volumes_text(&volumes, &operations)
                    }
                    Err(error) => format!("\nCSI Snapshots: <unavailable: {error:#}>\n"),
                },
            );
        }
        text.push_str(
            &match pod_volume_backups(&client, &global.namespace, backup).await {
                Ok(volumes) => {
                    crate::describe::pod_volumes_text("Pod Volume Backups", volumes, args.details)
                }
                Err(error) => format!("\nPod Volume Backups: <unavailable: {error:#}>\n"),
            },
        );
        text.push_str(
            &match data_uploads(&client, &global.namespace, backup).await {
                Ok(uploads) => {
                    crate::describe::pod_volumes_text("Data Uploads", uploads, args.details)
                }
                Err(error) => format!("\nData Uploads: <unavailable: {error:#}>\n"),
            },
        );
        if args.details {
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

/// The objects of kind `K` in `namespace` that belong to this very backup: its name label AND its
/// uid label, so that those of an earlier backup of the same name are not shown.
async fn of_backup<K>(
    client: &kube::Client,
    namespace: &str,
    backup: &Backup,
) -> anyhow::Result<Vec<K>>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let selector = labels::selector_for_backup(
        &backup.name_any(),
        backup.metadata.uid.as_deref().unwrap_or_default(),
    );
    crate::describe::labelled(client, namespace, &selector).await
}

/// The backup's PodVolumeBackups.
async fn pod_volume_backups(
    client: &kube::Client,
    namespace: &str,
    backup: &Backup,
) -> anyhow::Result<Vec<crate::describe::PodVolume>> {
    let listed: Vec<ark_api::PodVolumeBackup> = of_backup(client, namespace, backup).await?;
    let volumes = listed
        .into_iter()
        .map(|pvb| {
            let status = pvb.status.unwrap_or_default();
            crate::describe::PodVolume::new(
                status.phase,
                &pvb.spec.pod,
                pvb.spec.volume,
                status.progress,
                status.message,
            )
        })
        .collect();
    Ok(volumes)
}

/// The backup's DataUploads (its CSI snapshots' data moved), as its PodVolumeBackups: each claim
/// with its phase and the bytes moved so far.
async fn data_uploads(
    client: &kube::Client,
    namespace: &str,
    backup: &Backup,
) -> anyhow::Result<Vec<crate::describe::PodVolume>> {
    let listed: Vec<ark_api::DataUpload> = of_backup(client, namespace, backup).await?;
    let uploads = listed.into_iter().map(|upload| {
        let status = upload.status.unwrap_or_default();
        crate::describe::PodVolume {
            phase: status.phase,
            pod: format!(
                "{}/{}",
                upload.spec.source_namespace, upload.spec.source_pvc
            ),
            volume: String::new(),
            bytes_done: status.progress.and_then(|p| p.bytes_done),
            message: status.message,
        }
    });
    Ok(uploads.collect())
}

/// The DeleteBackupRequests of this very backup, newest first.
async fn deletion_attempts(
    client: &kube::Client,
    namespace: &str,
    backup: &Backup,
) -> anyhow::Result<Vec<DeleteBackupRequest>> {
    let mut list: Vec<DeleteBackupRequest> = of_backup(client, namespace, backup).await?;
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
/// The last verification: its outcome, when, by whom and how deep, and the first defect.
fn verification_text(verification: Result<ark_api::verification::Verification, String>) -> String {
    use ark_api::verification::Outcome;
    let v = match verification {
        Ok(v) => v,
        Err(error) => return format!("<unreadable: {error}>"),
    };
    let depth = match v.data {
        true => "every byte of its volume data read",
        false => "its volume data sampled",
    };
    let head = format!("{:?} at {} by {} ({depth})", v.outcome, v.at, v.by);
    match (v.outcome, v.first_defect) {
        (Outcome::Failed, Some(first)) => {
            format!("{head}: {} defects; the first: {first}", v.defects)
        }
        _ => head,
    }
}

pub fn describe_text(backup: &Backup) -> String {
    let spec = &backup.spec;
    let status = backup.status.clone().unwrap_or_default();
    let mut d = Describe::default();
    d.metadata(&backup.metadata);
    d.blank();
    d.field("Phase", &format!("{:?}", backup.phase()));
    if let Some(verification) = ark_api::verification::Verification::of(backup) {
        d.field("Verified", &verification_text(verification));
    }
    if let Some(result) = ark_api::restore_test::TestResult::of_backup(backup) {
        d.field("Restore test", &crate::describe::restore_test_text(result));
    }
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
    if let Some(policy) = &spec.resource_policy {
        // As Velero's `DescribeResourcePolicies` shows them.
        d.blank();
        d.line("Resource policies:");
        d.nested(&[("Type", policy.kind.clone()), ("Name", policy.name.clone())]);
    }
    d.blank();
    d.field(
        "Storage Location",
        spec.storage_location.as_deref().unwrap_or("<none>"),
    );
    if spec.snapshot_move_data == Some(true) {
        // As Velero shows it; only when on, which a backup says only when asked.
        let mover = (spec.datamover.as_deref())
            .filter(|d| !d.is_empty())
            .unwrap_or("velero");
        d.blank();
        d.fields(&[
            ("Snapshot Move Data", "true".to_string()),
            ("Data Mover", mover.to_string()),
        ]);
    }
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
    if let Some(hooks) = status
        .hook_status
        .as_ref()
        .filter(|h| h.hooks_attempted.is_some())
    {
        d.blank();
        d.fields(&[
            (
                "HooksAttempted",
                hooks.hooks_attempted.unwrap_or(0).to_string(),
            ),
            ("HooksFailed", hooks.hooks_failed.unwrap_or(0).to_string()),
        ]);
    }
    d.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupPhase, BackupSpec, BackupStatus};

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
                ..Default::default()
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
