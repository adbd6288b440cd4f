//! Backup sync: every backup in a location's bucket that has no Backup object gets one, so a
//! deleted namespace or a new cluster pointed at the same bucket sees every backup again. A
//! finished Backup whose data has left the bucket is deleted the one safe way, through a
//! DeleteBackupRequest, so its snapshots and restores go with it (Velero #9480).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ark_api::{Backup, BackupPhase, BackupStorageLocation, BackupStorageLocationPhase, labels};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{ListParams, PostParams};
use kube::{Api, Resource, ResourceExt};

use crate::controllers::gc;
use crate::domain::locations;
use crate::runtime::context::Kube;
use crate::runtime::objects::Readable;
use crate::runtime::sync::Locked;
use crate::runtime::{objects, periodic};

pub struct Ctx {
    pub kube: Kube,
    /// How often each location's bucket is read (`--backup-sync-period`).
    pub period: Duration,
    /// How long a failed deletion holds back the next request for its backup (garbage
    /// collection's frequency, as for its own requests).
    pub deletion_backoff: Duration,
    /// Per location, the uids of its backups that the previous listing of its bucket lacked.
    pub missing: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    periodic::run::<BackupStorageLocation, _, _, _>(ctx, sync).await;
}

/// One location's sync; again after its `backupSyncPeriod` (else `--backup-sync-period`). A
/// location whose period is 0 is not synced at all, as Velero has it.
async fn sync(object: Arc<Readable<BackupStorageLocation>>, ctx: Arc<Ctx>) -> Option<Duration> {
    let name = object.name();
    let every = match &object.read {
        Ok(location) => {
            locations::own_period(location.spec.backup_sync_period.as_deref(), ctx.period)
        }
        Err(_) => Some(ctx.period),
    };
    if every.is_none() {
        tracing::debug!("location {name}: its backupSyncPeriod is 0: not synced");
        return None;
    }
    if let Err(error) = sync_one(&ctx, &object).await {
        tracing::warn!("backup sync of location {name}: {error}");
    }
    every
}

async fn sync_one(ctx: &Ctx, object: &Readable<BackupStorageLocation>) -> Result<(), String> {
    let location = object.read.clone().map_err(|e| e.to_string())?;
    let name = object.name();
    let listed = list_backups(&ctx.kube, &name).await?;
    let was_missing = ctx.missing.locked().remove(&name).unwrap_or_default();
    let missing_now = sync_location(ctx, location, &listed, &was_missing).await?;
    ctx.missing.locked().insert(name, missing_now);
    Ok(())
}

/// The namespace's Backup objects, as one listing has them.
struct Listed {
    /// The names of every Backup object, also those ark's types cannot read: none is created
    /// twice.
    known: BTreeSet<String>,
    /// The location's finished ones that fit ark's types, for the orphan check: each only as
    /// that check reads it (a Backup is a kilobyte before its strings; these are thousands).
    existing: Vec<Kept>,
}

/// A Backup object as the orphan check reads it.
#[derive(Debug)]
pub struct Kept {
    name: String,
    uid: String,
    location: Option<String>,
    phase: BackupPhase,
}

impl Kept {
    fn of(backup: Backup) -> Self {
        Kept {
            phase: backup.phase(),
            name: backup.metadata.name.unwrap_or_default(),
            uid: backup.metadata.uid.unwrap_or_default(),
            location: backup.spec.storage_location,
        }
    }

    /// The Backup with what a deletion request reads of it.
    fn as_backup(&self, namespace: &str) -> Backup {
        let mut backup = Backup::new(&self.name, Default::default());
        backup.metadata.namespace = Some(namespace.to_string());
        backup.metadata.uid = Some(self.uid.clone());
        backup
    }
}

/// Lists the namespace's Backup objects, once, a page at a time.
async fn list_backups(kube: &Kube, location: &str) -> Result<Listed, String> {
    let mut listed = Listed {
        known: BTreeSet::new(),
        existing: Vec::new(),
    };
    let all = ListParams::default();
    objects::each_page::<Backup>(&kube.client, &kube.namespace, &all, |page| {
        for object in page {
            listed.known.insert(object.name_any());
            let Ok(backup) = objects::typed::<Backup>(&object) else {
                continue;
            };
            let finished = matches!(
                backup.phase(),
                BackupPhase::Completed | BackupPhase::PartiallyFailed
            );
            if finished && backup.spec.storage_location.as_deref() == Some(location) {
                listed.existing.push(Kept::of(backup));
            }
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok(listed)
}

/// What a listing of a location's bucket means for the Backups of that location.
#[derive(Debug)]
pub struct Orphans<'a> {
    /// Lacking from this listing and the previous one: their data has left the bucket.
    pub delete: Vec<&'a Kept>,
    /// The uids lacking from this listing, to be checked against the next one.
    pub missing: BTreeSet<String>,
    /// The listing lacks every finished backup of the location: more likely a wrong prefix or
    /// bucket than a bucket emptied on purpose, so nothing is deleted.
    pub all_missing: bool,
}

/// Finished backups of `location` whose folder is gone from the bucket, deleted only when two
/// consecutive listings lack them and the listing does not lack them all.
pub fn orphans<'a>(
    existing: &'a [Kept],
    location: &str,
    in_bucket: &BTreeSet<&str>,
    previously_missing: &BTreeSet<String>,
) -> Orphans<'a> {
    let finished: Vec<&Kept> = existing
        .iter()
        .filter(|b| b.location.as_deref() == Some(location))
        .filter(|b| {
            matches!(
                b.phase,
                BackupPhase::Completed | BackupPhase::PartiallyFailed
            )
        })
        .collect();
    let lacking: Vec<&Kept> = finished
        .iter()
        .copied()
        .filter(|b| !in_bucket.contains(b.name.as_str()))
        .collect();
    let uid = |b: &Kept| b.uid.clone();
    let all_missing = !lacking.is_empty() && lacking.len() == finished.len();
    Orphans {
        delete: if all_missing {
            Vec::new()
        } else {
            lacking
                .iter()
                .copied()
                .filter(|b| previously_missing.contains(&uid(b)))
                .collect()
        },
        missing: lacking.iter().map(|b| uid(b)).collect(),
        all_missing,
    }
}

/// Imports the bucket's backups that have no object; returns the uids of this location's backups
/// the bucket lacks.
async fn sync_location(
    ctx: &Ctx,
    location: BackupStorageLocation,
    listed: &Listed,
    previously_missing: &BTreeSet<String>,
) -> Result<BTreeSet<String>, String> {
    let reference = location.object_ref(&());
    let available = location.status.as_ref().and_then(|s| s.phase)
        == Some(BackupStorageLocationPhase::Available);
    let kube = &ctx.kube;
    let open = locations::open(&kube.client, location)
        .await
        .map_err(|e| e.to_string())?;
    let location_name = open.name();
    let store = &open.store;
    let in_bucket = store.backup_names().await.map_err(|e| e.to_string())?;
    let without_object: Vec<String> = (in_bucket.iter())
        .filter(|name| !listed.known.contains(*name))
        .cloned()
        .collect();
    create_missing(kube, store, &location_name, without_object).await?;
    // Nothing of a backup is deleted through a location that is read-only (the cluster that
    // owns the bucket does that) or not found Available by its last check.
    if open.location.is_read_only() || !available {
        return Ok(BTreeSet::new());
    }
    let in_bucket: BTreeSet<&str> = in_bucket.iter().map(String::as_str).collect();
    let orphans = orphans(
        &listed.existing,
        &location_name,
        &in_bucket,
        previously_missing,
    );
    delete_orphans(ctx, reference, &location_name, orphans).await
}

/// How many of a location's backups sync reads and creates at once.
const SYNC_AT_ONCE: usize = 16;
/// How often a long pass of sync says in the log how far it is.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Creates the Backup of each of the bucket's backups in `names`, several at once; an error that
/// is not the backup's own (the bucket or the API server failing) ends the pass, and the next
/// pass takes up what is left. How far it is goes to the log and to the metrics
/// `ark_backup_sync_created` and `ark_backup_sync_remaining`.
async fn create_missing(
    kube: &Kube,
    store: &ark_storage::BackupStore,
    location_name: &str,
    names: Vec<String>,
) -> Result<(), String> {
    let backups = Api::<Backup>::namespaced(kube.client.clone(), &kube.namespace);
    let (total, metrics) = (names.len(), &kube.metrics);
    metrics.sync_remaining(location_name, total);
    if total == 0 {
        return Ok(());
    }
    let started = Instant::now();
    let mut said = started;
    let (mut read, mut created) = (0, 0);
    // Owned names: a stream of futures that borrow their item trips rustc's check that the
    // periodic's future is Send (rust-lang/rust#102211).
    let mut each = futures::stream::iter(names)
        .map(|name| create_one(&kube.namespace, store, &backups, location_name, name))
        .buffer_unordered(SYNC_AT_ONCE);
    while let Some(made) = each.next().await {
        read += 1;
        if made? {
            created += 1;
            metrics.synced(location_name);
        }
        metrics.sync_remaining(location_name, total - read);
        if said.elapsed() >= PROGRESS_EVERY {
            tracing::info!(
                "backup sync of location {location_name}: {read} of {total} backups read, \
                 {created} Backups created"
            );
            said = Instant::now();
        }
    }
    tracing::info!(
        "backup sync of location {location_name}: {created} Backups created of the {total} \
         backups without one, in {:.1?}",
        started.elapsed()
    );
    Ok(())
}

/// Reads the bucket's backup `name` and creates its Backup in `namespace`; true when it did.
async fn create_one(
    namespace: &str,
    store: &ark_storage::BackupStore,
    backups: &Api<Backup>,
    location_name: &str,
    name: String,
) -> Result<bool, String> {
    let Some(backup) = uploaded_backup(store, location_name, &name).await? else {
        return Ok(false);
    };
    let synced = synced_backup(backup, namespace, location_name);
    create_synced(backups, location_name, &name, &synced).await
}

/// The finished backup the bucket's folder `name` holds; None, with a note in the log, when
/// there is none to sync (gone since listed, too large, invalid, named otherwise, unfinished).
async fn uploaded_backup(
    store: &ark_storage::BackupStore,
    location_name: &str,
    name: &str,
) -> Result<Option<Backup>, String> {
    let bytes = match store.get_backup_metadata(name).await {
        Ok(bytes) => bytes,
        // Deleted since it was listed.
        Err(error) if error.is_not_found() => return Ok(None),
        Err(error @ ark_storage::StoreError::TooLarge { .. }) => {
            tracing::warn!("backup sync: location {location_name}: {error}; not synced");
            return Ok(None);
        }
        Err(error) => return Err(error.to_string()),
    };
    let backup: Backup = match serde_json::from_slice(&bytes) {
        Ok(backup) => backup,
        Err(error) => {
            tracing::warn!(
                "backup sync: {name}/velero-backup.json in location {location_name} is invalid: {error}"
            );
            return Ok(None);
        }
    };
    // A backup is its folder: metadata naming another backup would make an object whose
    // name leads to other data.
    if backup.metadata.name.as_deref() != Some(name) {
        tracing::warn!(
            "backup sync: {name}/velero-backup.json in location {location_name} names backup {:?}; not synced",
            backup.metadata.name.as_deref().unwrap_or_default()
        );
        return Ok(None);
    }
    // Velero uploads the metadata before the backup ends (Finalizing, WaitingForPlugin...)
    // and again at the end: an object made from an unfinished one would never finish here.
    if !backup.phase().is_terminal() {
        tracing::debug!(
            "backup sync: {name} in location {location_name} is {:?} still; later",
            backup.phase()
        );
        return Ok(None);
    }
    Ok(Some(backup))
}

/// Creates the Backup object of a synced backup (true when it did); one that exists already, or
/// that the API server refuses, is left (and the next one still synced).
async fn create_synced(
    backups: &Api<Backup>,
    location_name: &str,
    name: &str,
    synced: &Backup,
) -> Result<bool, String> {
    match backups.create(&PostParams::default(), synced).await {
        Ok(_) => {
            tracing::debug!("backup sync: created Backup {name} from location {location_name}");
            return Ok(true);
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        // The API server refuses this one (too large annotations, an invalid label): it
        // alone is not synced; the backups listed after it still are.
        Err(kube::Error::Api(status)) if status.code == 400 || status.code == 422 => {
            tracing::warn!(
                "backup sync: Backup {name} from location {location_name} refused: {}; not synced",
                status.message
            );
        }
        Err(error) => return Err(format!("creating Backup {name}: {error}")),
    }
    Ok(false)
}

/// Requests the deletion of the orphans, unless the bucket lacks all of the location's backups
/// (then a warning event on the location); the uids to check against the next listing.
async fn delete_orphans(
    ctx: &Ctx,
    reference: ObjectReference,
    location_name: &str,
    orphans: Orphans<'_>,
) -> Result<BTreeSet<String>, String> {
    let kube = &ctx.kube;
    if orphans.all_missing {
        let note = format!(
            "the bucket of location {location_name} lacks all {} of its backups: is its bucket or prefix wrong? Nothing is deleted",
            orphans.missing.len()
        );
        kube.events
            .warn(reference, None, "AllBackupsMissing", "Sync", note)
            .await;
        return Ok(BTreeSet::new());
    }
    for backup in orphans.delete {
        gc::request_deletion(
            kube,
            &backup.as_backup(&kube.namespace),
            "is gone from its bucket",
            ctx.deletion_backoff,
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    Ok(orphans.missing)
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
    fn only_finished_backups_missing_from_two_listings_are_orphans_and_never_all_of_them() {
        let backup = |name: &str, location: &str, phase: BackupPhase| {
            let mut b = Backup::new(
                name,
                BackupSpec {
                    storage_location: Some(location.into()),
                    ..Default::default()
                },
            );
            b.metadata.uid = Some(format!("uid-{name}"));
            b.status = Some(BackupStatus {
                phase: Some(phase),
                ..Default::default()
            });
            Kept::of(b)
        };
        let existing = [
            backup("kept", "default", BackupPhase::Completed),
            backup("gone", "default", BackupPhase::Completed),
            backup("running", "default", BackupPhase::InProgress),
            backup("elsewhere", "other", BackupPhase::Completed),
        ];
        let names =
            |o: &Orphans| -> Vec<String> { o.delete.iter().map(|b| b.name.clone()).collect() };
        let in_bucket = BTreeSet::from(["kept"]);
        // First listing without it: remembered, not deleted.
        let first = orphans(&existing, "default", &in_bucket, &BTreeSet::new());
        assert!(names(&first).is_empty());
        assert_eq!(first.missing, BTreeSet::from(["uid-gone".to_string()]));
        assert!(!first.all_missing);
        // Second listing without it: deleted.
        let second = orphans(&existing, "default", &in_bucket, &first.missing);
        assert_eq!(names(&second), ["gone"]);
        // A listing without any of the location's backups deletes nothing, however often.
        let empty = BTreeSet::new();
        let all = orphans(&existing, "default", &empty, &second.missing);
        assert!(all.all_missing);
        assert!(names(&all).is_empty());
    }
}
