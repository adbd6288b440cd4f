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

/// Who a snapshot is for, as its `snapshot-requester` tag says: a pod volume backup, or a data
/// upload (which also tags the item operation it carries out).
#[derive(Clone, Copy, Debug)]
pub enum Requester<'a> {
    PodVolume,
    DataMover { operation_id: &'a str },
}

impl Requester<'_> {
    fn tags(&self) -> BTreeMap<String, String> {
        let requester = match self {
            Requester::PodVolume => POD_VOLUME_REQUESTER,
            Requester::DataMover { .. } => DATA_MOVER_REQUESTER,
        };
        BTreeMap::from([
            (REQUESTER_TAG.into(), requester.into()),
            (UPLOADER_TAG.into(), UPLOADER.into()),
        ])
    }

    /// The options Velero snapshots with, from `parent`.
    pub fn options(&self, parent: Option<SnapshotManifest>) -> SnapshotOptions {
        let mut tags = self.tags();
        if let Requester::DataMover { operation_id } = self {
            tags.insert(OPERATION_TAG.into(), operation_id.to_string());
        }
        SnapshotOptions {
            description: DESCRIPTION.into(),
            tags,
            pins: vec![PIN.into()],
            parent,
            ..SnapshotOptions::default()
        }
    }

    /// The parent of a new snapshot of `source`, as Velero's `findPreviousSnapshotManifest`
    /// picks it: the latest complete snapshot of the same source with the same requester and
    /// uploader.
    pub async fn parent(
        &self,
        repository: &Repository,
        source: &SourceInfo,
    ) -> Result<Option<SnapshotManifest>, Error> {
        let wanted = self.tags();
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
}
