//! A volume's directory snapshotted into the kopia repository of a namespace as Velero's uploader
//! snapshots it, for a pod volume backup and a data upload alike: the parent its requester's last
//! snapshot of the source, the bytes done written into the request's status as they go, the
//! repository discarded (opened again next time) after a failure.

use std::path::Path;
use std::sync::atomic::Ordering;

use ark_kopia::beneath::{Dir, Kind};
use ark_kopia::snapshot::{SourceInfo, UploadCounts};
use ark_kopia::velero::Requester;
use kube::Api;
use kube::api::DynamicObject;

use super::{Ctx, ProgressReport};

/// What to snapshot, and where into.
pub struct Upload<'a> {
    /// The backup storage location whose repositories it goes into.
    pub location: &'a str,
    /// The namespace whose repository it goes into.
    pub namespace: &'a str,
    pub path: &'a Path,
    pub source: SourceInfo,
    pub requester: Requester<'a>,
    /// Files read at once (0: the uploader's default).
    pub files_at_once: usize,
}

/// A snapshot taken.
pub struct Uploaded {
    pub snapshot_id: String,
    /// The bytes of the volume's files, and those read (or found unchanged).
    pub total: u64,
    pub done: u64,
    /// The bytes it added to the repository.
    pub added: u64,
}

impl Upload<'_> {
    /// Takes the snapshot, its progress in the status of request `name` (through `api`); None when
    /// `stop` ends first (nothing of it is saved then).
    pub async fn run(
        self,
        ctx: &Ctx,
        api: &Api<DynamicObject>,
        name: &str,
        stop: impl Future<Output = ()>,
    ) -> Result<Option<Uploaded>, String> {
        let Upload {
            location,
            namespace,
            path,
            source,
            requester,
            files_at_once,
        } = self;
        let repository =
            (ctx.repositories.get(location, namespace).await).map_err(|e| e.to_string())?;
        let parent = match requester.parent(&repository, &source).await {
            Ok(parent) => parent,
            Err(error) => {
                repository.discard();
                return Err(format!("listing the snapshots of {source}: {error}"));
            }
        };
        let total = {
            let path = path.to_path_buf();
            tokio::task::spawn_blocking(move || tree_bytes(&path))
                .await
                .expect("walking does not panic")
        };
        let options = ark_kopia::repository::SnapshotOptions {
            files_at_once,
            ..requester.options(parent)
        };
        let counts = options.counts.clone();
        let reporter = {
            let counts = counts.clone();
            ProgressReport::start(api.clone(), name.to_string(), total, move || {
                done_bytes(&counts)
            })
        };
        let stored_before = repository.contents().stored_bytes();
        let created = tokio::select! {
            created = repository.create_snapshot(path, source.clone(), options) => Some(created),
            () = stop => None,
        };
        reporter.stop().await;
        let snapshot = match created {
            Some(Ok((snapshot, _))) => snapshot,
            Some(Err(error)) => {
                repository.discard();
                let shown = path.display();
                return Err(format!("snapshotting {shown} as {source}: {error}"));
            }
            None => {
                repository.discard();
                return Ok(None);
            }
        };
        Ok(Some(Uploaded {
            snapshot_id: snapshot.id,
            total,
            done: done_bytes(&counts),
            added: repository.contents().stored_bytes() - stored_before,
        }))
    }
}

/// Whether the volume has nothing in it (no snapshot is taken of such a volume).
pub fn is_empty(path: &Path) -> Result<bool, String> {
    let mut entries =
        std::fs::read_dir(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Ok(entries.next().is_none())
}

/// The bytes of the regular files under `path`: the progress's total. Read through handles
/// beneath it, as the upload reads it: a directory swapped for a symlink is not followed.
fn tree_bytes(path: &Path) -> u64 {
    fn under(dir: &Dir) -> u64 {
        (dir.entries().unwrap_or_default().iter())
            .map(|(name, meta)| match meta.kind {
                Kind::Directory => dir.open_dir(name).map_or(0, |d| under(&d)),
                Kind::File => meta.size,
                _ => 0,
            })
            .sum()
    }
    Dir::root(path).map_or(0, |root| under(&root))
}

fn done_bytes(counts: &UploadCounts) -> u64 {
    counts.bytes.load(Ordering::Relaxed) + counts.cached_bytes.load(Ordering::Relaxed)
}
