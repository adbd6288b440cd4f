//! A volume's directory, or a block device, snapshotted into the kopia repository of a namespace
//! as Velero's uploader snapshots it, for a pod volume backup and a data upload alike: the parent
//! its requester's last snapshot of the source, the bytes done written into the request's status
//! as they go, the repository discarded (opened again next time) after a failure.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use ark_kopia::beneath::{Dir, Kind};
use ark_kopia::snapshot::{SnapshotManifest, SourceInfo, UploadCounts};
use ark_kopia::velero::Requester;
use kube::Api;
use kube::api::DynamicObject;

use super::open_repositories::InUse;
use super::{Ctx, ProgressReport};

/// A volume as the agent reaches it on its node.
pub enum Volume {
    /// Mounted: its directory, under the kubelet's.
    Mounted(PathBuf),
    /// A block device, open (handed over by the pod that exposes it), named as its path there.
    Device { device: File, name: String },
}

impl Volume {
    /// How messages name it.
    pub fn shown(&self) -> String {
        match self {
            Volume::Mounted(path) => path.display().to_string(),
            Volume::Device { name, .. } => format!("block device {name}"),
        }
    }
}

/// What to snapshot, and where into.
pub struct Upload<'a> {
    /// The backup storage location whose repositories it goes into.
    pub location: &'a str,
    /// The namespace whose repository it goes into.
    pub namespace: &'a str,
    pub volume: Volume,
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
            volume,
            source,
            requester,
            files_at_once,
        } = self;
        let shown = volume.shown();
        // Stopped while the repository is opened too: a silent bucket would hold it there.
        tokio::pin!(stop);
        let opened = open(ctx, location, namespace, &volume, &requester, &source);
        let (repository, parent) = tokio::select! {
            opened = opened => opened?,
            () = &mut stop => return Ok(None),
        };
        let total = match &volume {
            Volume::Mounted(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || tree_bytes(&path))
                    .await
                    .expect("walking does not panic")
            }
            Volume::Device { device, .. } => {
                device_bytes(device).map_err(|e| format!("{shown}: {e}"))?
            }
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
        let create = async {
            match volume {
                Volume::Mounted(path) => {
                    repository
                        .create_snapshot(&path, source.clone(), options)
                        .await
                }
                Volume::Device { device, name } => {
                    repository
                        .create_device_snapshot(device, &name, source.clone(), options)
                        .await
                }
            }
        };
        let created = tokio::select! {
            created = create => Some(created),
            () = &mut stop => None,
        };
        reporter.stop().await;
        let snapshot = match created {
            Some(Ok((snapshot, _))) => snapshot,
            Some(Err(error)) => {
                repository.discard();
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

/// The namespace's repository, and the snapshot of `source` to snapshot `volume` against: its
/// requester's last one for a tree, none for a device (read whole whatever came before).
async fn open(
    ctx: &Ctx,
    location: &str,
    namespace: &str,
    volume: &Volume,
    requester: &Requester<'_>,
    source: &SourceInfo,
) -> Result<(InUse, Option<SnapshotManifest>), String> {
    let repository =
        (ctx.repositories.get(location, namespace).await).map_err(|e| e.to_string())?;
    let parent = match volume {
        Volume::Device { .. } => None,
        Volume::Mounted(_) => match requester.parent(&repository, source).await {
            Ok(parent) => parent,
            Err(error) => {
                repository.discard();
                return Err(format!("listing the snapshots of {source}: {error}"));
            }
        },
    };
    Ok((repository, parent))
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

/// A block device's size: the progress's total. Read from its end, then back at its start.
pub fn device_bytes(device: &File) -> std::io::Result<u64> {
    use std::io::Seek as _;
    let mut device = device;
    let size = device.seek(std::io::SeekFrom::End(0))?;
    device.seek(std::io::SeekFrom::Start(0))?;
    Ok(size)
}

fn done_bytes(counts: &UploadCounts) -> u64 {
    counts.bytes.load(Ordering::Relaxed) + counts.cached_bytes.load(Ordering::Relaxed)
}
