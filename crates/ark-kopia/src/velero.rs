//! What Velero puts around a pod volume's snapshot (`pkg/uploader/kopia/snapshot.go`), so that
//! its node agent finds ark's snapshots and ark finds Velero's: the source each volume is
//! snapshotted as, the tags, the description and the pin, and the parent a new snapshot starts
//! from.

use std::collections::BTreeMap;

use crate::Error;
use crate::repository::{Repository, SnapshotOptions};
use crate::snapshot::{SnapshotManifest, SourceInfo};

/// The requester Velero's file-system backups snapshot as.
pub const POD_VOLUME_REQUESTER: &str = "snapshot-pod-volume";
/// The requester Velero's data mover snapshots a CSI snapshot's data as.
pub const DATA_MOVER_REQUESTER: &str = "snapshot-data-upload-download";
/// The tag a moved snapshot carries: the backup's item operation that moved it.
const OPERATION_TAG: &str = "velero.io/async-operation-id";
const REQUESTER_TAG: &str = "snapshot-requester";
const UPLOADER_TAG: &str = "snapshot-uploader";
const UPLOADER: &str = "kopia";
const DESCRIPTION: &str = "Kopia Uploader";
const PIN: &str = "velero-pin";

/// The source of a pod volume's snapshots: `default@default:snapshot-pod-volume/kopia/<ns>/<pod>/<volume>`,
/// where `volume` is the claim's name for a claim, the volume's otherwise.
pub fn pod_volume_source(namespace: &str, pod: &str, volume: &str) -> SourceInfo {
    SourceInfo {
        host: crate::repository::VELERO_IDENTITY.1.into(),
        user_name: crate::repository::VELERO_IDENTITY.0.into(),
        path: format!("{POD_VOLUME_REQUESTER}/{UPLOADER}/{namespace}/{pod}/{volume}"),
    }
}

/// The source of a claim's moved snapshot data:
/// `default@default:snapshot-data-upload-download/kopia/<ns>/<claim>` (Velero's `GetRealSource`).
pub fn data_mover_source(namespace: &str, claim: &str) -> SourceInfo {
    SourceInfo {
        host: crate::repository::VELERO_IDENTITY.1.into(),
        user_name: crate::repository::VELERO_IDENTITY.0.into(),
        path: format!("{DATA_MOVER_REQUESTER}/{UPLOADER}/{namespace}/{claim}"),
    }
}

fn tags(requester: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (REQUESTER_TAG.into(), requester.into()),
        (UPLOADER_TAG.into(), UPLOADER.into()),
    ])
}

fn options(tags: BTreeMap<String, String>, parent: Option<SnapshotManifest>) -> SnapshotOptions {
    SnapshotOptions {
        description: DESCRIPTION.into(),
        tags,
        pins: vec![PIN.into()],
        parent,
        ..SnapshotOptions::default()
    }
}

/// The options Velero snapshots a pod volume with, from `parent`.
pub fn pod_volume_options(parent: Option<SnapshotManifest>) -> SnapshotOptions {
    options(tags(POD_VOLUME_REQUESTER), parent)
}

/// The options Velero's data mover snapshots a claim's snapshot data with, from `parent`, for
/// the item operation `operation_id`.
pub fn data_mover_options(operation_id: &str, parent: Option<SnapshotManifest>) -> SnapshotOptions {
    let mut tags = tags(DATA_MOVER_REQUESTER);
    tags.insert(OPERATION_TAG.into(), operation_id.into());
    options(tags, parent)
}

/// The parent of a new pod volume snapshot of `source` (see [`parent`]).
pub async fn pod_volume_parent(
    repository: &Repository,
    source: &SourceInfo,
) -> Result<Option<SnapshotManifest>, Error> {
    parent(repository, source, POD_VOLUME_REQUESTER).await
}

/// The parent of a new moved snapshot of `source` (see [`parent`]).
pub async fn data_mover_parent(
    repository: &Repository,
    source: &SourceInfo,
) -> Result<Option<SnapshotManifest>, Error> {
    parent(repository, source, DATA_MOVER_REQUESTER).await
}

/// The parent of a new snapshot of `source`, as Velero's `findPreviousSnapshotManifest` picks it:
/// the latest complete snapshot of the same source with the same requester and uploader.
async fn parent(
    repository: &Repository,
    source: &SourceInfo,
    requester: &str,
) -> Result<Option<SnapshotManifest>, Error> {
    let wanted = tags(requester);
    let snapshots = repository.snapshots().await?;
    Ok(snapshots
        .into_iter()
        .map(|s| s.manifest)
        .filter(|m| {
            m.source == *source
                && m.incomplete_reason.is_empty()
                && wanted.iter().all(|(k, v)| m.tags.get(k) == Some(v))
        })
        .max_by(|a, b| a.start_time.cmp(&b.start_time)))
}
