//! Backup sync: every backup in a location's bucket that has no Backup object gets one, so a
//! deleted namespace or a new cluster pointed at the same bucket sees every backup again. A
//! finished Backup whose data has left the bucket is deleted the one safe way, through a
//! DeleteBackupRequest, so its snapshots and restores go with it (Velero #9480).

use std::collections::BTreeSet;
use std::sync::Arc;

use ark_api::{Backup, BackupPhase, BackupStorageLocation, DeleteBackupRequest, labels};
use kube::Api;
use kube::api::{ListParams, PostParams};

use crate::{Context, locations};

pub async fn run(ctx: Arc<Context>) {
    loop {
        if let Err(error) = sync_all(&ctx).await {
            tracing::warn!("backup sync: {error}");
        }
        tokio::time::sleep(ctx.sync_period).await;
    }
}

async fn sync_all(ctx: &Context) -> Result<(), kube::Error> {
    let locations_api: Api<BackupStorageLocation> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    for location in locations_api.list(&Default::default()).await?.items {
        let name = location.metadata.name.clone().unwrap_or_default();
        let existing = backups.list(&Default::default()).await?.items;
        if let Err(error) = sync_location(ctx, &backups, location, &existing).await {
            tracing::warn!("backup sync of location {name}: {error}");
        }
    }
    Ok(())
}

/// Finished backups of `location` whose folder is gone from the bucket.
pub fn orphaned<'a>(
    existing: &'a [Backup],
    location: &str,
    in_bucket: &BTreeSet<&str>,
) -> Vec<&'a Backup> {
    existing
        .iter()
        .filter(|b| b.spec.storage_location.as_deref() == Some(location))
        .filter(|b| {
            matches!(
                b.phase(),
                BackupPhase::Completed | BackupPhase::PartiallyFailed
            )
        })
        .filter(|b| !in_bucket.contains(b.metadata.name.as_deref().unwrap_or_default()))
        .collect()
}

async fn request_deletion(ctx: &Context, backup: &Backup) -> Result<(), String> {
    let requests: Api<DeleteBackupRequest> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = backup.metadata.name.clone().unwrap_or_default();
    let selector =
        labels::selector_for_backup(&name, backup.metadata.uid.as_deref().unwrap_or_default());
    let pending = requests
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| e.to_string())?
        .items
        .iter()
        .any(crate::gc::is_pending);
    if !pending {
        requests
            .create(
                &PostParams::default(),
                &DeleteBackupRequest::for_backup(backup),
            )
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!("backup sync: backup {name} is gone from its bucket; deletion requested");
    }
    Ok(())
}

async fn sync_location(
    ctx: &Context,
    backups: &Api<Backup>,
    location: BackupStorageLocation,
    existing: &[Backup],
) -> Result<(), String> {
    let open = locations::open(&ctx.client, location)
        .await
        .map_err(|e| e.to_string())?;
    let location_name = open.name();
    let store = &open.store;
    let in_bucket = store.backup_names().await.map_err(|e| e.to_string())?;
    let known: BTreeSet<&str> = existing
        .iter()
        .filter_map(|b| b.metadata.name.as_deref())
        .collect();
    for name in in_bucket
        .iter()
        .filter(|name| !known.contains(name.as_str()))
    {
        let bytes = match store.get(&store.layout.backup_metadata(name)).await {
            Ok(bytes) => bytes,
            // Deleted since it was listed.
            Err(error) if error.is_not_found() => continue,
            Err(error) => return Err(error.to_string()),
        };
        let backup: Backup = match serde_json::from_slice(&bytes) {
            Ok(backup) => backup,
            Err(error) => {
                tracing::warn!(
                    "backup sync: {name}/velero-backup.json in location {location_name} is invalid: {error}"
                );
                continue;
            }
        };
        let synced = synced_backup(backup, &ctx.namespace, &location_name);
        match backups.create(&PostParams::default(), &synced).await {
            Ok(_) => {
                tracing::info!("backup sync: created Backup {name} from location {location_name}")
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(format!("creating Backup {name}: {error}")),
        }
    }
    let read_only = open.location.is_read_only();
    let in_bucket: BTreeSet<&str> = in_bucket.iter().map(String::as_str).collect();
    for backup in orphaned(existing, &location_name, &in_bucket) {
        if read_only {
            // Nothing of it can be deleted through a read-only location; the cluster that owns
            // the bucket does that.
            continue;
        }
        request_deletion(ctx, backup).await?;
    }
    Ok(())
}

/// The Backup object for a backup found in a bucket: its spec and status as uploaded, with only
/// the identity a new object may carry, in this server's namespace and location.
pub fn synced_backup(uploaded: Backup, namespace: &str, location: &str) -> Backup {
    let mut backup = Backup::new(
        uploaded.metadata.name.as_deref().unwrap_or_default(),
        uploaded.spec,
    );
    backup.status = uploaded.status;
    backup.metadata.namespace = Some(namespace.to_string());
    backup.metadata.annotations = uploaded.metadata.annotations;
    let mut labels = uploaded.metadata.labels.unwrap_or_default();
    labels.insert(
        labels::STORAGE_LOCATION.to_string(),
        labels::valid_label_value(location),
    );
    backup.metadata.labels = Some(labels);
    backup.spec.storage_location = Some(location.to_string());
    backup
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupPhase, BackupSpec, BackupStatus};

    #[test]
    fn a_synced_backup_keeps_spec_and_status_and_drops_server_fields() {
        let mut uploaded = Backup::new(
            "nightly",
            BackupSpec {
                storage_location: Some("old".into()),
                ..Default::default()
            },
        );
        uploaded.metadata.uid = Some("uid-from-another-cluster".into());
        uploaded.metadata.resource_version = Some("42".into());
        uploaded.metadata.namespace = Some("elsewhere".into());
        uploaded.status = Some(BackupStatus {
            phase: Some(BackupPhase::Completed),
            ..Default::default()
        });
        let synced = synced_backup(uploaded, "velero", "default");
        assert_eq!(synced.metadata.uid, None);
        assert_eq!(synced.metadata.resource_version, None);
        assert_eq!(synced.metadata.namespace.as_deref(), Some("velero"));
        assert_eq!(synced.spec.storage_location.as_deref(), Some("default"));
        assert_eq!(
            synced.metadata.labels.unwrap()[labels::STORAGE_LOCATION],
            "default"
        );
        assert_eq!(synced.status.unwrap().phase, Some(BackupPhase::Completed));
    }

    #[test]
    fn only_finished_backups_of_the_location_missing_from_the_bucket_are_orphans() {
        let backup = |name: &str, location: &str, phase: BackupPhase| {
            let mut b = Backup::new(
                name,
                BackupSpec {
                    storage_location: Some(location.into()),
                    ..Default::default()
                },
            );
            b.status = Some(BackupStatus {
                phase: Some(phase),
                ..Default::default()
            });
            b
        };
        let existing = [
            backup("kept", "default", BackupPhase::Completed),
            backup("gone", "default", BackupPhase::Completed),
            backup("running", "default", BackupPhase::InProgress),
            backup("elsewhere", "other", BackupPhase::Completed),
        ];
        let in_bucket = BTreeSet::from(["kept"]);
        let names: Vec<_> = orphaned(&existing, "default", &in_bucket)
            .iter()
            .map(|b| b.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["gone"]);
    }
}
