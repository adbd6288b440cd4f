use std::process::ExitCode;

use ark_api::{Backup, Restore};
use kube::Api;

use crate::cli::args::{DescribeArgs, GlobalArgs, OutputFormat};
use crate::commands::bucket;
use crate::describe::Describe;
use crate::output;

pub async fn run(global: &GlobalArgs, args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: crate::commands::lookup::Found<Restore> =
        crate::commands::lookup::get_named_or_listed(
            &client,
            &global.namespace,
            &args.names,
            None,
            "restore",
        )
        .await?;
    if args.output.output != OutputFormat::Table {
        output::print_objects(args.output.output, &found.items, args.names.len() == 1)?;
        return Ok(found.exit_code());
    }
    let backups: Api<Backup> = Api::namespaced(client.clone(), &global.namespace);
    for (index, restore) in found.items.iter().enumerate() {
        if index > 0 {
            println!();
        }
        let mut text = describe_text(restore);
        let name = restore.metadata.name.clone().unwrap_or_default();
        let location = backups
            .get_opt(&restore.spec.backup_name)
            .await
            .ok()
            .flatten()
            .and_then(|b| b.spec.storage_location)
            .unwrap_or_default();
        let with_hooks = restore
            .status
            .as_ref()
            .and_then(|s| s.hook_status.as_ref())
            .is_some()
            || restore.spec.hooks.is_some();
        if with_hooks {
            let of = bucket::Of::Restore(&name);
            let section =
                bucket::hooks_section(&client, &global.namespace, &location, of, args.details);
            text.push_str(&section.await);
        }
        let restored = of_restore::<ark_api::PodVolumeRestore>(&client, &global.namespace, restore);
        text.push_str(&match restored.await {
            Ok(listed) => {
                let volumes = listed
                    .into_iter()
                    .map(|pvr| {
                        let status = pvr.status.unwrap_or_default();
                        crate::describe::PodVolume::new(
                            status.phase,
                            &pvr.spec.pod,
                            pvr.spec.volume,
                            status.progress,
                            status.message,
                        )
                    })
                    .collect();
                crate::describe::pod_volumes_text("Pod Volume Restores", volumes, args.details)
            }
            Err(error) => format!("\nPod Volume Restores: <unavailable: {error:#}>\n"),
        });
        let downloaded = of_restore::<ark_api::DataDownload>(&client, &global.namespace, restore);
        text.push_str(&match downloaded.await {
            Ok(listed) => {
                let downloads = listed
                    .into_iter()
                    .map(|download| {
                        let status = download.status.unwrap_or_default();
                        let target = download.spec.target_volume;
                        crate::describe::PodVolume {
                            phase: status.phase,
                            pod: format!("{}/{}", target.namespace, target.pvc),
                            volume: String::new(),
                            bytes_done: status.progress.and_then(|p| p.bytes_done),
                            message: status.message,
                        }
                    })
                    .collect();
                crate::describe::pod_volumes_text("Data Downloads", downloads, args.details)
            }
            Err(error) => format!("\nData Downloads: <unavailable: {error:#}>\n"),
        });
        if args.details {
            text.push_str(
                &bucket::details(
                    &client,
                    &global.namespace,
                    &location,
                    bucket::Of::Restore(&name),
                )
                .await,
            );
        }
        print!("{text}");
    }
    Ok(found.exit_code())
}

/// The objects of kind `K` in `namespace` that belong to this very restore (its uid label).
async fn of_restore<K>(
    client: &kube::Client,
    namespace: &str,
    restore: &Restore,
) -> anyhow::Result<Vec<K>>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let uid = restore.metadata.uid.as_deref().unwrap_or_default();
    let selector = format!("{}={uid}", ark_api::labels::RESTORE_UID);
    crate::describe::labelled(client, namespace, &selector).await
}

pub fn describe_text(restore: &Restore) -> String {
    let spec = &restore.spec;
    let status = restore.status.clone().unwrap_or_default();
    let list = |l: Option<&Vec<String>>, default: &str| {
        l.filter(|l| !l.is_empty())
            .map_or(default.to_string(), |l| l.join(", "))
    };
    let mut d = Describe::default();
    d.metadata(&restore.metadata);
    d.blank();
    d.field("Phase", &format!("{:?}", restore.phase()));
    if let Some(progress) = &status.progress {
        d.fields(&[
            (
                "Total items to be restored",
                progress.total_items.unwrap_or(0).to_string(),
            ),
            (
                "Items restored",
                progress.items_restored.unwrap_or(0).to_string(),
            ),
        ]);
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
    d.fields(&[
        ("Started", output::time(status.start_timestamp.as_ref())),
        (
            "Completed",
            output::time(status.completion_timestamp.as_ref()),
        ),
    ]);
    d.blank();
    d.fields(&[
        ("Errors", status.errors.unwrap_or(0).to_string()),
        ("Warnings", status.warnings.unwrap_or(0).to_string()),
    ]);
    if let Some(hooks) = &status.hook_status {
        d.blank();
        d.fields(&[
            (
                "HooksAttempted",
                hooks.hooks_attempted.unwrap_or(0).to_string(),
            ),
            ("HooksFailed", hooks.hooks_failed.unwrap_or(0).to_string()),
        ]);
    }
    if let Some(attempted) = status.restore_item_operations_attempted.filter(|n| *n > 0) {
        d.blank();
        d.field(
            "Restore Item Operations",
            &format!(
                "{} of {attempted} completed successfully, {} failed",
                status.restore_item_operations_completed.unwrap_or(0),
                status.restore_item_operations_failed.unwrap_or(0)
            ),
        );
    }
    d.blank();
    d.field("Backup", &spec.backup_name);
    d.blank();
    d.line("Namespaces:");
    d.nested(&[
        (
            "Included",
            list(
                spec.included_namespaces.as_ref(),
                "all namespaces found in the backup",
            ),
        ),
        (
            "Excluded",
            list(spec.excluded_namespaces.as_ref(), "<none>"),
        ),
    ]);
    d.blank();
    d.line("Resources:");
    let cluster = match spec.include_cluster_resources {
        None => "auto",
        Some(true) => "included",
        Some(false) => "excluded",
    };
    d.nested(&[
        ("Included", list(spec.included_resources.as_ref(), "*")),
        (
            "Excluded",
            list(
                spec.excluded_resources.as_ref(),
                "nodes, events, events.events.k8s.io, backups.velero.io, restores.velero.io",
            ),
        ),
        ("Cluster-scoped", cluster.to_string()),
    ]);
    d.blank();
    let mapping = spec
        .namespace_mapping
        .as_ref()
        .filter(|m| !m.is_empty())
        .map_or("<none>".to_string(), |m| {
            m.iter()
                .map(|(a, b)| format!("{a}:{b}"))
                .collect::<Vec<_>>()
                .join(", ")
        });
    d.field("Namespace mappings", &mapping);
    d.blank();
    d.field(
        "Label selector",
        &crate::describe::selector(spec.label_selector.as_ref()),
    );
    d.blank();
    d.field(
        "Existing Resource Policy",
        spec.existing_resource_policy.as_deref().unwrap_or("none"),
    );
    d.finish()
}
