//! A kopia repository, opened or created: snapshots written, listed, read back and forgotten.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use object_store::ObjectStore;

use crate::Error;
use crate::blobs::Blobs;
use crate::content::Contents;
use crate::format::{self, FormatBlob, RepositoryConfig};
use crate::manifest;
use crate::object::{self, ObjectId};
use crate::snapshot::{
    self, DirEntry, RestoreCounts, Restorer, SnapshotManifest, SourceInfo, Stats, Time,
    UploadCounts, Uploader,
};

/// Velero's password for every repository, unless its Secret says otherwise.
pub const VELERO_DEFAULT_PASSWORD: &str = "static-passw0rd";

/// A new repository password: 32 random bytes, as URL-safe base64 (kopia takes any string).
pub fn random_password() -> String {
    use base64::Engine as _;
    let mut bytes = [0; 32];
    crate::random(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
/// The user and host Velero's snapshots and sessions are made as.
pub const VELERO_IDENTITY: (&str, &str) = ("default", "default");

pub struct Repository {
    format: FormatBlob,
    config: RepositoryConfig,
    contents: Contents,
}

/// A snapshot as listed: its manifest ID and data.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub id: String,
    pub manifest: SnapshotManifest,
}

/// How far a verification got.
#[derive(Debug, Default)]
pub struct VerifyProgress {
    /// Files and directories checked.
    pub objects: AtomicU64,
    /// Files read whole.
    pub read: AtomicU64,
    pub bytes: AtomicU64,
}

/// What to record on a new snapshot.
#[derive(Clone, Debug, Default)]
pub struct SnapshotOptions {
    pub description: String,
    pub tags: BTreeMap<String, String>,
    pub pins: Vec<String>,
    /// A previous snapshot of the same tree: its unchanged files are not read again.
    pub parent: Option<SnapshotManifest>,
    /// What the upload has done so far, for whoever reports its progress meanwhile.
    pub counts: Arc<UploadCounts>,
    /// Files of one directory read at once (zero: ark's default), Velero's `parallelFilesUpload`.
    pub files_at_once: usize,
}

/// How a restore writes files, Velero's `uploaderConfig` of a restore.
#[derive(Clone, Copy, Debug, Default)]
pub struct RestoreSettings {
    /// Blocks of zeros are left as holes, so that sparse files come back sparse
    /// (`writeSparseFiles`).
    pub sparse: bool,
    /// Entries of one directory written at once (zero: ark's default), `parallelFilesDownload`.
    pub files_at_once: usize,
}

impl Repository {
    /// Opens the repository at `root`. A wrong password, a missing or foreign format blob, and a
    /// format ark does not implement are each an error saying so.
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        root: object_store::path::Path,
        password: &str,
    ) -> Result<Self, Error> {
        Self::open_blobs(Blobs::new(store, root), password).await
    }

    /// Opens the repository whose blobs `blobs` are (an object store's, or a filesystem's).
    pub async fn open_blobs(blobs: Blobs, password: &str) -> Result<Self, Error> {
        let bytes = match blobs.get(format::FORMAT_BLOB).await {
            Ok(b) => b,
            Err(Error::MissingBlob(_)) => {
                return Err(Error::NotARepository(format!(
                    "{} has no {}",
                    blobs.root(),
                    format::FORMAT_BLOB
                )));
            }
            Err(e) => return Err(e),
        };
        let format = FormatBlob::parse(&bytes)?;
        let key = format.password_key(password)?;
        let config = format.open(&key)?;
        let identity = (VELERO_IDENTITY.0.to_string(), VELERO_IDENTITY.1.to_string());
        let contents = Contents::open(blobs, &config, identity).await?;
        Ok(Repository {
            format,
            config,
            contents,
        })
    }

    /// Whether a repository is at `root`: its format blob is there (it is not opened).
    pub async fn exists(
        store: Arc<dyn ObjectStore>,
        root: object_store::path::Path,
    ) -> Result<bool, Error> {
        match Blobs::new(store, root).get(format::FORMAT_BLOB).await {
            Ok(_) => Ok(true),
            Err(Error::MissingBlob(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates a repository at `root` as Velero does (kopia's defaults, format 3, Velero's
    /// marker). Refuses if one is there already.
    pub async fn create(
        store: Arc<dyn ObjectStore>,
        root: object_store::path::Path,
        password: &str,
    ) -> Result<Self, Error> {
        Self::create_blobs(Blobs::new(store, root), password).await
    }

    /// Creates a repository in `blobs` (an object store's, or a filesystem's), as Velero does.
    pub async fn create_blobs(blobs: Blobs, password: &str) -> Result<Self, Error> {
        match blobs.get(format::FORMAT_BLOB).await {
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "{} already holds a repository",
                    blobs.root()
                )));
            }
            Err(Error::MissingBlob(_)) => {}
            Err(e) => return Err(e),
        }
        let config = RepositoryConfig::velero_default();
        let (format, key) = FormatBlob::seal(&config, password)?;
        blobs
            .put(format::BLOB_CONFIG_BLOB, format.blob_config(&key))
            .await?;
        blobs.put(format::FORMAT_BLOB, format.to_bytes()).await?;
        blobs
            .put(format::VELERO_MARKER_BLOB, format.velero_marker())
            .await?;
        let repo = Self::open_blobs(blobs, password).await?;
        // Velero's `writeInitParameters`: maintenance owned by default@default.
        let labels = BTreeMap::from([("type".to_string(), "maintenance".to_string())]);
        let params = manifest::new_entry(labels, &manifest::velero_maintenance_params());
        manifest::write(&repo.contents, vec![params]).await?;
        repo.contents.flush().await?;
        Ok(repo)
    }

    pub fn contents(&self) -> &Contents {
        &self.contents
    }

    pub fn config(&self) -> &RepositoryConfig {
        &self.config
    }

    pub fn unique_id(&self) -> &[u8] {
        &self.format.unique_id
    }

    /// Every snapshot, oldest first.
    pub async fn snapshots(&self) -> Result<Vec<Snapshot>, Error> {
        let mut found = Vec::new();
        for (id, entry) in manifest::load(&self.contents).await? {
            if entry.labels.get("type").map(String::as_str) != Some("snapshot") {
                continue;
            }
            let Some(data) = entry.data else { continue };
            let mut manifest: SnapshotManifest = serde_json::from_str(data.get())
                .map_err(|e| Error::Invalid(format!("snapshot manifest {id}: {e}")))?;
            manifest.id = id.clone();
            found.push(Snapshot { id, manifest });
        }
        found.sort_by(|a, b| {
            a.manifest
                .start_time
                .cmp(&b.manifest.start_time)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(found)
    }

    /// One snapshot, by its manifest ID (or a unique prefix of it).
    pub async fn snapshot(&self, id: &str) -> Result<Snapshot, Error> {
        let all = self.snapshots().await?;
        let mut matching = all.into_iter().filter(|s| s.id.starts_with(id));
        match (matching.next(), matching.next()) {
            (Some(s), None) if !id.is_empty() => Ok(s),
            (Some(_), Some(_)) => Err(Error::Invalid(format!(
                "{id:?} names more than one snapshot"
            ))),
            _ => Err(Error::Invalid(format!(
                "no snapshot {id:?} in the repository"
            ))),
        }
    }

    /// Snapshots the tree at `path` as `source`, and commits it: after this, kopia and Velero
    /// list it.
    pub async fn create_snapshot(
        &self,
        path: &Path,
        source: SourceInfo,
        options: SnapshotOptions,
    ) -> Result<(Snapshot, Arc<UploadCounts>), Error> {
        let start = Time::now();
        let parent_root = match &options.parent {
            Some(p) => match &p.root_entry {
                Some(root) => Some(snapshot::read_directory(&self.contents, root.object).await?),
                None => None,
            },
            None => None,
        };
        let uploader = Uploader::new(&self.contents, options.counts.clone())
            .with_files_at_once(options.files_at_once);
        let root = uploader.tree(path, parent_root.as_deref()).await?;
        self.commit_snapshot(start, root, source, options).await
    }

    /// Snapshots the bytes of a block device as `source`, as Velero's uploader snapshots a
    /// block volume ([`snapshot::upload_device`], `name` the device's path in its pod), and
    /// commits it. A parent in `options` is not read: the whole device is.
    pub async fn create_device_snapshot(
        &self,
        device: std::fs::File,
        name: &str,
        source: SourceInfo,
        options: SnapshotOptions,
    ) -> Result<(Snapshot, Arc<UploadCounts>), Error> {
        let start = Time::now();
        let root = snapshot::upload_device(&self.contents, device, name, &options.counts).await?;
        self.commit_snapshot(start, root, source, options).await
    }

    /// Writes a snapshot of a block device into `device` ([`snapshot::restore_device`]).
    pub async fn restore_device(
        &self,
        root: &DirEntry,
        device: &std::fs::File,
        counts: &RestoreCounts,
    ) -> Result<u64, Error> {
        snapshot::restore_device(&self.contents, root, device, counts).await
    }

    /// Records the snapshot whose tree `root` is, started at `start`, once its contents are
    /// flushed.
    async fn commit_snapshot(
        &self,
        start: Time,
        root: DirEntry,
        source: SourceInfo,
        options: SnapshotOptions,
    ) -> Result<(Snapshot, Arc<UploadCounts>), Error> {
        self.contents.flush().await?;
        let summary = root.summary.clone().unwrap_or_default();
        let counts = options.counts;
        let files = counts.files.load(std::sync::atomic::Ordering::Relaxed) as i32;
        let cached = counts
            .cached_files
            .load(std::sync::atomic::Ordering::Relaxed) as i32;
        let manifest = SnapshotManifest {
            id: String::new(),
            source,
            description: options.description,
            start_time: start,
            end_time: Time::now(),
            stats: Stats {
                total_file_size: summary.total_file_size,
                total_file_count: summary.total_file_count as i32,
                cached_files: cached,
                non_cached_files: files - cached,
                total_directory_count: summary.total_dir_count as i32,
                ..Stats::default()
            },
            incomplete_reason: String::new(),
            root_entry: Some(root),
            tags: options.tags,
            pins: options.pins,
        };
        let entry = manifest::new_entry(manifest.labels(), &manifest);
        let id = entry.id.clone();
        manifest::write(&self.contents, vec![entry]).await?;
        self.contents.flush().await?;
        let mut manifest = manifest;
        manifest.id = id.clone();
        Ok((Snapshot { id, manifest }, counts))
    }

    /// Forgets a snapshot: its manifest is deleted; its data stays until maintenance finds
    /// nothing references it.
    pub async fn forget(&self, id: &str) -> Result<(), Error> {
        let snapshot = self.snapshot(id).await?;
        manifest::write(&self.contents, vec![manifest::deletion(&snapshot.id)]).await?;
        self.contents.flush().await
    }

    /// Forgets those of `ids` (full manifest IDs) that are snapshots of the repository, in one
    /// write, as Velero's `BatchForget` does when a backup is deleted; the others are gone
    /// already. The number forgotten.
    pub async fn forget_all(&self, ids: &[String]) -> Result<usize, Error> {
        let present: BTreeSet<String> = self.snapshots().await?.into_iter().map(|s| s.id).collect();
        let deletions: Vec<_> = ids
            .iter()
            .filter(|id| present.contains(*id))
            .map(|id| manifest::deletion(id))
            .collect();
        let forgotten = deletions.len();
        if forgotten > 0 {
            manifest::write(&self.contents, deletions).await?;
            self.contents.flush().await?;
        }
        Ok(forgotten)
    }

    /// The entry at `path` (`/`-separated, relative to the root) of a snapshot.
    pub async fn entry_at(
        &self,
        snapshot: &SnapshotManifest,
        path: &str,
    ) -> Result<DirEntry, Error> {
        let mut entry = snapshot
            .root_entry
            .clone()
            .ok_or_else(|| Error::Invalid(format!("snapshot {} has no root", snapshot.id)))?;
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if entry.entry_type != snapshot::EntryType::Directory {
                return Err(Error::Invalid(format!(
                    "{path}: {} is not a directory",
                    entry.name
                )));
            }
            let children = snapshot::read_directory(&self.contents, entry.object).await?;
            entry = children
                .into_iter()
                .find(|c| c.name == part)
                .ok_or_else(|| {
                    Error::Invalid(format!("{path}: no {part:?} in snapshot {}", snapshot.id))
                })?;
        }
        Ok(entry)
    }

    /// Writes `entry` (a snapshot's root or any entry of it) to `target` on the local disk,
    /// counting what it writes into `counts` as it goes (for a progress bar).
    pub async fn restore(
        &self,
        entry: &DirEntry,
        target: &Path,
        counts: &RestoreCounts,
    ) -> Result<(), Error> {
        self.restore_with(entry, target, counts, RestoreSettings::default())
            .await
    }

    /// [`restore`](Self::restore), written as `settings` say.
    pub async fn restore_with(
        &self,
        entry: &DirEntry,
        target: &Path,
        counts: &RestoreCounts,
        settings: RestoreSettings,
    ) -> Result<(), Error> {
        let restorer = Restorer {
            contents: &self.contents,
            counts,
            // SAFETY: geteuid has no preconditions.
            owners: unsafe { libc::geteuid() } == 0,
            large_files: tokio::sync::Semaphore::new(snapshot::LARGE_FILES_AT_ONCE),
            sparse: settings.sparse,
            files_at_once: snapshot::files_at_once(settings.files_at_once),
        };
        restorer.entry(entry, target).await
    }

    /// Checks every content `snapshots` need, as `reading` says, and reports each failure with
    /// the path it concerns; the walk goes on past it. A content read is decrypted under its ID,
    /// hashed to it, and has the length its index and its directory entry say; a content only
    /// looked up must be in the index, in a pack the repository's storage holds at that length.
    pub async fn verify(
        &self,
        snapshots: &[Snapshot],
        reading: Reading,
        progress: &VerifyProgress,
    ) -> Vec<String> {
        let packs = match reading {
            Reading::All => None,
            Reading::Sample { .. } => match self.contents.blobs().list("").await {
                Ok(blobs) => Some(blobs.into_iter().map(|b| (b.id, b.length)).collect()),
                Err(e) => return vec![format!("listing the repository's packs: {e}")],
            },
        };
        let mut seed = [0u8; 8];
        crate::random(&mut seed);
        let verifier = Verifier {
            contents: &self.contents,
            reading,
            packs,
            seed: u64::from_le_bytes(seed),
            seen: Mutex::new(HashSet::new()),
            progress,
        };
        let mut errors = Vec::new();
        for s in snapshots {
            match &s.manifest.root_entry {
                Some(root) => {
                    let path = format!("{}:/", s.id);
                    errors.extend(verifier.entry(root.clone(), path).await);
                }
                None => errors.push(format!("snapshot {}: no root entry", s.id)),
            }
        }
        errors
    }
}

/// How much of a snapshot's data a verification reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Every byte of every file.
    All,
    /// Every directory, and one file in `one_in` (chosen anew by each verification); of the other
    /// files, each content is looked up in the index and its pack in the storage's listing.
    Sample { one_in: u64 },
}

/// One verification's walk: what it has seen, and how it reads.
struct Verifier<'a> {
    contents: &'a Contents,
    reading: Reading,
    /// The storage's blobs and their lengths, when files are not all read.
    packs: Option<HashMap<String, u64>>,
    seed: u64,
    seen: Mutex<HashSet<ObjectId>>,
    progress: &'a VerifyProgress,
}

impl Verifier<'_> {
    /// Verifies one entry and what is below it; the errors it finds come back, each naming its
    /// path.
    fn entry(&self, entry: DirEntry, path: String) -> BoxFuture<'_, Vec<String>> {
        async move {
            if !self.seen.lock().unwrap().insert(entry.object) {
                return Vec::new();
            }
            if entry.entry_type != snapshot::EntryType::Directory {
                self.progress.objects.fetch_add(1, Ordering::Relaxed);
                return match self.read_whole(&entry) {
                    true => self.read(&entry, &path).await,
                    false => self.look_up(entry.object, &path).await,
                };
            }
            let children = match snapshot::read_directory(self.contents, entry.object).await {
                Ok(c) => c,
                Err(e) => return vec![format!("{path}: {e}")],
            };
            self.progress.objects.fetch_add(1, Ordering::Relaxed);
            // Owned entries: a stream of borrowed ones would make the future not `Send`.
            let results: Vec<Vec<String>> = futures::stream::iter(children)
                .map(|c| {
                    let slash = if c.entry_type == snapshot::EntryType::Directory {
                        "/"
                    } else {
                        ""
                    };
                    let child = format!("{path}{}{slash}", c.name);
                    self.entry(c, child)
                })
                .buffer_unordered(4)
                .collect()
                .await;
            results.into_iter().flatten().collect()
        }
        .boxed()
    }

    fn read_whole(&self, entry: &DirEntry) -> bool {
        match self.reading {
            Reading::All => true,
            Reading::Sample { one_in } => {
                let hash = entry.object.content.hash();
                let picked = u64::from_le_bytes(hash[..8].try_into().unwrap()) ^ self.seed;
                picked.is_multiple_of(one_in.max(1))
            }
        }
    }

    async fn read(&self, entry: &DirEntry, path: &str) -> Vec<String> {
        let bytes = &self.progress.bytes;
        let read = object::read_into(self.contents, entry.object, &mut |chunk| {
            bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            Ok(())
        })
        .await;
        self.progress.read.fetch_add(1, Ordering::Relaxed);
        match read {
            Err(e) => vec![format!("{path}: {e}")],
            Ok(n) if entry.entry_type == snapshot::EntryType::File && n != entry.size as u64 => {
                vec![format!("{path}: {n} bytes, its entry says {}", entry.size)]
            }
            Ok(_) => Vec::new(),
        }
    }

    /// Looks up each content of `object` (reading its chunk lists, not its data).
    async fn look_up(&self, object: ObjectId, path: &str) -> Vec<String> {
        let chunks = match object::chunks(self.contents, object).await {
            Ok(chunks) => chunks,
            Err(e) => return vec![format!("{path}: {e}")],
        };
        let mut errors = Vec::new();
        for chunk in chunks {
            if chunk.object.indirection > 0 {
                errors.extend(Box::pin(self.look_up(chunk.object, path)).await);
                continue;
            }
            let id = chunk.object.content;
            let Some(info) = self.contents.info(&id) else {
                errors.push(format!("{path}: content {id} is not in the index"));
                continue;
            };
            let end = u64::from(info.offset) + u64::from(info.packed_length);
            match self.packs.as_ref().and_then(|p| p.get(&*info.pack)) {
                None => errors.push(format!(
                    "{path}: content {id} is in pack {}, which the storage does not hold",
                    info.pack
                )),
                Some(&length) if length < end => errors.push(format!(
                    "{path}: content {id} ends at byte {end} of pack {}, which holds {length}",
                    info.pack
                )),
                Some(_) => {}
            }
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>(_: &T) {}

    /// A new repository at `root` in `dir` on the local disk, and the store it is in.
    async fn local_repository(
        dir: &Path,
        root: &str,
    ) -> (Arc<dyn ObjectStore>, object_store::path::Path, Repository) {
        let store: Arc<dyn ObjectStore> =
            Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir).unwrap());
        let root = object_store::path::Path::from(root);
        let repo = Repository::create(store.clone(), root.clone(), "pw")
            .await
            .unwrap();
        (store, root, repo)
    }

    fn source() -> SourceInfo {
        SourceInfo {
            host: "h".into(),
            user_name: "u".into(),
            path: "/p".into(),
        }
    }

    #[tokio::test]
    async fn snapshots_restores_verification_and_maintenance_may_run_on_any_thread() {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, repo) = local_repository(dir.path(), "r").await;
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let source = source();
        let create = repo.create_snapshot(&data, source, SnapshotOptions::default());
        assert_send(&create);
        let (snapshot, _) = create.await.unwrap();
        let root = snapshot.manifest.root_entry.clone().unwrap();
        assert_send(&repo.entry_at(&snapshot.manifest, ""));
        assert_send(&repo.restore(&root, dir.path(), &RestoreCounts::default()));
        assert_send(&repo.verify(&[], Reading::All, &VerifyProgress::default()));
        assert_send(&repo.run_maintenance("default@default", crate::maintenance::Safety::Full));
    }

    /// A block device's bytes (a file stands in for the device) are snapshotted as Velero's
    /// uploader shapes them, one file in a directory both named as the device, and written back
    /// from its first byte into a device as large or larger; a smaller device, or a snapshot of
    /// a tree, is refused before anything is written.
    #[tokio::test]
    async fn a_block_device_is_snapshotted_as_velero_shapes_it_and_written_back_from_its_first_byte()
     {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, repo) = local_repository(dir.path(), "r").await;
        let bytes: Vec<u8> = (0..(3 << 20) + 17).map(|i| (i % 251) as u8).collect();
        let device = dir.path().join("device");
        std::fs::write(&device, &bytes).unwrap();
        let options = SnapshotOptions::default();
        let counts = options.counts.clone();
        let (snapshot, _) = repo
            .create_device_snapshot(
                std::fs::File::open(&device).unwrap(),
                "/uid-1",
                source(),
                options,
            )
            .await
            .unwrap();
        assert_eq!(counts.bytes.load(Ordering::Relaxed), bytes.len() as u64);
        let root = snapshot.manifest.root_entry.clone().unwrap();
        assert_eq!(
            (root.name.as_str(), root.entry_type),
            ("/uid-1", snapshot::EntryType::Directory)
        );
        let children = snapshot::read_directory(&repo.contents, root.object)
            .await
            .unwrap();
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].name, "/uid-1");
        assert_eq!(children[0].size, bytes.len() as i64);
        assert_eq!(snapshot.manifest.stats.total_file_size, bytes.len() as i64);

        let target = dir.path().join("target");
        std::fs::write(&target, vec![0xffu8; bytes.len() + 100]).unwrap();
        let writable = std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .unwrap();
        let written = repo
            .restore_device(&root, &writable, &RestoreCounts::default())
            .await
            .unwrap();
        assert_eq!(written, bytes.len() as u64);
        let restored = std::fs::read(&target).unwrap();
        assert_eq!(&restored[..bytes.len()], &bytes[..]);
        assert_eq!(&restored[bytes.len()..], &[0xffu8; 100][..]);

        let small = dir.path().join("small");
        std::fs::write(&small, vec![0xffu8; 1 << 20]).unwrap();
        let small_device = std::fs::OpenOptions::new()
            .write(true)
            .open(&small)
            .unwrap();
        let refused = repo
            .restore_device(&root, &small_device, &RestoreCounts::default())
            .await
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "the snapshot holds {} bytes, more than the block device's {}",
                bytes.len(),
                1 << 20
            )
        );
        assert_eq!(std::fs::read(&small).unwrap(), vec![0xffu8; 1 << 20]);

        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(tree.join("a"), b"a").unwrap();
        std::fs::write(tree.join("b"), b"b").unwrap();
        let (of_tree, _) = repo
            .create_snapshot(&tree, source(), SnapshotOptions::default())
            .await
            .unwrap();
        let refused = repo
            .restore_device(
                of_tree.manifest.root_entry.as_ref().unwrap(),
                &small_device,
                &RestoreCounts::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "the snapshot is not of a block volume (one file in its root directory): \
             its root holds 2 entries"
        );
    }

    /// A file of 8 MiB holding a few bytes at 1 MiB and at its end comes back whole either way,
    /// and with `sparse` takes about its data's blocks on disk rather than its length.
    #[tokio::test]
    async fn a_sparse_file_comes_back_sparse_when_asked_and_whole_either_way() {
        use std::io::{Seek as _, SeekFrom, Write as _};
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let (_, _, repo) = local_repository(dir.path(), "r").await;
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let mut file = std::fs::File::create(data.join("holes")).unwrap();
        file.seek(SeekFrom::Start(1 << 20)).unwrap();
        file.write_all(b"middle").unwrap();
        file.seek(SeekFrom::Start((8 << 20) - 3)).unwrap();
        file.write_all(b"end").unwrap();
        drop(file);
        let source = source();
        let (snapshot, _) = repo
            .create_snapshot(&data, source, SnapshotOptions::default())
            .await
            .unwrap();
        let root = snapshot.manifest.root_entry.clone().unwrap();
        let original = std::fs::read(data.join("holes")).unwrap();
        for (target, sparse) in [("dense", false), ("sparse", true)] {
            let target = dir.path().join(target);
            let settings = RestoreSettings {
                sparse,
                files_at_once: 1,
            };
            repo.restore_with(&root, &target, &RestoreCounts::default(), settings)
                .await
                .unwrap();
            let restored = target.join("holes");
            assert_eq!(
                std::fs::read(&restored).unwrap(),
                original,
                "sparse: {sparse}"
            );
            // 512-byte blocks allocated: two 4 KiB blocks of data, against 8 MiB written whole.
            let allocated = std::fs::metadata(&restored).unwrap().blocks() * 512;
            if sparse {
                assert!(allocated <= 64 << 10, "{allocated} bytes allocated");
            } else {
                assert!(allocated >= 8 << 20, "{allocated} bytes allocated");
            }
        }
    }

    /// Without reading every file, a verification still finds a pack gone from the storage, and
    /// reads the files its sample picks.
    #[tokio::test]
    async fn a_sampled_verification_finds_a_missing_pack_without_reading_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let (store, root, repo) = local_repository(dir.path(), "r").await;
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        for i in 0..64 {
            std::fs::write(data.join(format!("f{i}")), format!("file {i}").repeat(100)).unwrap();
        }
        let source = source();
        let (snapshot, _) = repo
            .create_snapshot(&data, source, SnapshotOptions::default())
            .await
            .unwrap();
        let snapshots = [snapshot];
        let sample = Reading::Sample { one_in: 8 };
        let progress = VerifyProgress::default();
        assert_eq!(
            repo.verify(&snapshots, sample, &progress).await,
            Vec::<String>::new()
        );
        assert_eq!(progress.objects.load(Ordering::Relaxed), 65);
        let read = progress.read.load(Ordering::Relaxed);
        assert!((1..64).contains(&read), "{read} files of 64 read");

        let blobs = repo.contents().blobs().list("p").await.unwrap();
        for pack in &blobs {
            repo.contents().blobs().delete(&pack.id).await.unwrap();
        }
        let again = Repository::open(store, root, "pw").await.unwrap();
        let errors = again
            .verify(&snapshots, sample, &VerifyProgress::default())
            .await;
        assert_eq!(errors.len(), 64, "one per file: {errors:?}");
        let (looked_up, read): (Vec<_>, Vec<_>) = errors
            .iter()
            .partition(|e| e.contains("which the storage does not hold"));
        assert!(
            read.iter().all(|e| e.contains("does not exist")),
            "{read:?}"
        );
        assert!(looked_up.len() > read.len(), "{looked_up:?} {read:?}");
    }

    #[tokio::test]
    async fn a_new_repository_has_velero_s_maintenance_owner() {
        let dir = tempfile::tempdir().unwrap();
        let (store, root, repo) = local_repository(dir.path(), "kopia/ns").await;
        assert_eq!(
            repo.maintenance_owner().await.unwrap().as_deref(),
            Some("default@default")
        );
        let again = Repository::open(store, root, "pw").await.unwrap();
        assert_eq!(
            again.maintenance_owner().await.unwrap().as_deref(),
            Some("default@default")
        );
    }
}
