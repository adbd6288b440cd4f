//! A backup's and a restore's files as Velero keeps them: which there are, the order a backup is
//! uploaded in, and what deleting one reads and removes. Callers hand over contents; the keys are
//! the layout's.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path;

use crate::backoff::Backoff;
use crate::store::{BackupStore, StoreError};

/// A `velero-backup.json` is a few KiB; a larger one is not read.
const MAX_METADATA_BYTES: usize = 4 << 20;
/// A gzipped record beside the tarball (item operations, volume information): one entry per
/// volume, far below this even for thousands.
const MAX_RECORD_BYTES: usize = 16 << 20;

/// A backup's files, as [`BackupStore::put_backup`] uploads them.
pub struct BackupFiles {
    pub log: std::fs::File,
    /// The tarball.
    pub contents: std::fs::File,
    pub resource_list: std::fs::File,
    pub results: Bytes,
    pub volume_snapshots: Bytes,
    pub volume_info: Bytes,
    /// ark's record of each pod's backup hooks; None when no pod had any.
    pub hook_results: Option<Bytes>,
    /// The PodVolumeBackups the backup made; None when it made none.
    pub pod_volume_backups: Option<Bytes>,
    /// The item operations the backup waits for; None when it has none.
    pub item_operations: Option<Bytes>,
    /// `velero-backup.json`: the Backup object as uploaded.
    pub metadata: Bytes,
}

/// What finalizing a backup writes again, as [`BackupStore::put_finalized_backup`] uploads it.
pub struct FinalizedFiles {
    /// The tarball rewritten; None when it is unchanged.
    pub contents: Option<std::fs::File>,
    pub results: Bytes,
    pub volume_info: Bytes,
    pub item_operations: Bytes,
    pub metadata: Bytes,
}

/// A restore's files, as [`BackupStore::put_restore_outputs`] uploads them.
pub struct RestoreFiles {
    pub log: std::fs::File,
    pub results: Bytes,
    pub resource_list: std::fs::File,
    /// ark's record of each restored pod's hooks; None when no pod had any.
    pub hook_results: Option<Bytes>,
}

/// A file that could not be uploaded.
#[derive(Debug, thiserror::Error)]
#[error("uploading {what}: {source}")]
pub struct UploadError {
    pub what: &'static str,
    pub source: StoreError,
}

fn uploading(what: &'static str) -> impl FnOnce(StoreError) -> UploadError {
    move |source| UploadError { what, source }
}

/// Why a backup was not put.
#[derive(Debug, thiserror::Error)]
pub enum PutBackupError<E> {
    #[error(transparent)]
    Upload(#[from] UploadError),
    /// The caller's check before the metadata failed, or found the backup no longer its own.
    #[error("{0}")]
    Refused(E),
}

/// One listing of a backup's folder: which of its records there are to read, and what deleting
/// the backup removes.
pub struct BackupListing {
    name: String,
    keys: BTreeSet<Path>,
}

/// The records of a backup that its listing has, read for its deletion.
pub struct BackupRecords {
    pub volume_snapshots: Option<Bytes>,
    pub csi_snapshot_contents: Option<Bytes>,
    pub volume_info: Option<Bytes>,
    pub pod_volume_backups: Option<Bytes>,
    /// Whether the listing has the tarball.
    pub contents_listed: bool,
}

impl BackupListing {
    /// The keys of the backup's folder, in order.
    pub fn keys(&self) -> impl Iterator<Item = &Path> {
        self.keys.iter()
    }

    pub fn has(&self, key: &Path) -> bool {
        self.keys.contains(key)
    }
}

impl BackupStore {
    /// Whether the bucket has the backup: its `velero-backup.json`.
    pub async fn backup_exists(&self, name: &str) -> Result<bool, StoreError> {
        self.exists(&self.layout.backup_metadata(name)).await
    }

    /// Uploads a backup: its log, tarball, the other files, and `velero-backup.json` last, whose
    /// presence is what makes a backup exist (for sync here, on other clusters, and for Velero),
    /// so a server stopped at any point before it leaves no backup that looks whole.
    /// `still_ours` is awaited right before the metadata, which is uploaded only if it is Ok.
    /// On any failure what was uploaded is removed but the log, for `ark backup logs`.
    pub async fn put_backup<E>(
        &self,
        name: &str,
        files: BackupFiles,
        still_ours: impl Future<Output = Result<(), E>>,
    ) -> Result<(), PutBackupError<E>> {
        let layout = &self.layout;
        self.upload_file(&layout.backup_log(name), files.log)
            .await
            .map_err(uploading("log"))?;
        let uploaded = async {
            self.upload_file(&layout.backup_contents(name), files.contents)
                .await
                .map_err(uploading("tarball"))?;
            self.upload_file(&layout.backup_resource_list(name), files.resource_list)
                .await
                .map_err(uploading("resource list"))?;
            self.put(&layout.backup_results(name), files.results)
                .await
                .map_err(uploading("results"))?;
            self.put(
                &layout.backup_volume_snapshots(name),
                files.volume_snapshots,
            )
            .await
            .map_err(uploading("volume snapshots"))?;
            self.put(&layout.backup_volume_info(name), files.volume_info)
                .await
                .map_err(uploading("volume info"))?;
            if let Some(hook_results) = files.hook_results {
                self.put(&layout.backup_hook_results(name), hook_results)
                    .await
                    .map_err(uploading("hook results"))?;
            }
            if let Some(pod_volume_backups) = files.pod_volume_backups {
                self.put(&layout.backup_pod_volume_backups(name), pod_volume_backups)
                    .await
                    .map_err(uploading("pod volume backups"))?;
            }
            if let Some(item_operations) = files.item_operations {
                self.put(&layout.backup_item_operations(name), item_operations)
                    .await
                    .map_err(uploading("item operations"))?;
            }
            still_ours.await.map_err(PutBackupError::Refused)?;
            self.put_metadata(name, files.metadata)
                .await
                .map_err(uploading("metadata"))?;
            Ok(())
        };
        let uploaded = uploaded.await;
        if uploaded.is_err() {
            // The metadata is not in the bucket: only the files before it are there to remove.
            self.remove_files(name, false).await;
        }
        uploaded
    }

    /// A failed answer is not a failed write: the bucket may have stored the metadata and the
    /// answer been lost. The backup exists exactly when the bucket has the file, so it is asked.
    async fn put_metadata(&self, name: &str, metadata: Bytes) -> Result<(), StoreError> {
        let key = self.layout.backup_metadata(name);
        let Err(error) = self.put(&key, metadata).await else {
            return Ok(());
        };
        if self.landed(&key).await {
            tracing::warn!(
                "backup {name}: uploading {key} failed ({error}), but the bucket has it"
            );
            Ok(())
        } else {
            Err(error)
        }
    }

    /// Whether `key` is in the bucket, asked until the bucket answers (every second at first,
    /// then less often, up to every 30 s): until it does, whether the backup exists is not known
    /// (a server restarted meanwhile decides from the bucket too).
    async fn landed(&self, key: &Path) -> bool {
        let mut backoff = Backoff::starting_at(Duration::from_secs(1));
        loop {
            match self.exists(key).await {
                Ok(exists) => return exists,
                Err(error) => {
                    tracing::warn!(
                        "asking the bucket whether {key} was stored: {error}; again in {:?}",
                        backoff.pause()
                    );
                    backoff.wait().await;
                }
            }
        }
    }

    /// Removes a backup [`Self::put_backup`] uploaded that must not exist after all (ended
    /// elsewhere meanwhile). Failures are logged: a key left is left.
    pub async fn remove_uploaded_backup(&self, name: &str) {
        self.remove_files(name, true).await;
    }

    /// `velero-backup.json` first (from then on no backup exists), then the other files; the log
    /// stays, for `ark backup logs`.
    async fn remove_files(&self, name: &str, metadata: bool) {
        let layout = &self.layout;
        let metadata = metadata.then(|| layout.backup_metadata(name));
        for key in metadata.into_iter().chain([
            layout.backup_contents(name),
            layout.backup_resource_list(name),
            layout.backup_results(name),
            layout.backup_volume_snapshots(name),
            layout.backup_volume_info(name),
            layout.backup_hook_results(name),
            layout.backup_pod_volume_backups(name),
            layout.backup_item_operations(name),
        ]) {
            if let Err(error) = self.delete(&key).await {
                tracing::warn!("backup {name}: removing {key}: {error}");
            }
        }
    }

    /// Deletes every key of a backup whose upload never finished (no metadata in the bucket),
    /// its log too; returns how many went.
    pub async fn remove_incomplete_backup(&self, name: &str) -> Result<usize, StoreError> {
        self.delete_under(&self.layout.backup_dir(name)).await
    }

    /// A backup's `velero-backup.json`, which someone else may have written: a larger one than
    /// any Backup object can be is an error, and never held.
    pub async fn get_backup_metadata(&self, name: &str) -> Result<Bytes, StoreError> {
        let key = self.layout.backup_metadata(name);
        self.get_at_most(&key, MAX_METADATA_BYTES).await
    }

    /// A backup's item operations; None when it has none.
    pub async fn get_item_operations(&self, name: &str) -> Result<Option<Bytes>, StoreError> {
        self.get_if_there(&self.layout.backup_item_operations(name))
            .await
    }

    /// A backup's volume information; None when it has none (before Velero v1.13).
    pub async fn get_volume_info(&self, name: &str) -> Result<Option<Bytes>, StoreError> {
        self.get_if_there(&self.layout.backup_volume_info(name))
            .await
    }

    pub async fn put_item_operations(&self, name: &str, bytes: Bytes) -> Result<(), StoreError> {
        self.put(&self.layout.backup_item_operations(name), bytes)
            .await
    }

    /// Writes again what finalizing a backup changed: its tarball (the items its operations
    /// named, as they ended, when any was still in the cluster), results, volume information and
    /// operations, then its metadata with the phase it ended in. Each put replaces a whole
    /// object, so a finalizing cut off halfway is done again from the start.
    pub async fn put_finalized_backup(
        &self,
        name: &str,
        files: FinalizedFiles,
    ) -> Result<(), UploadError> {
        let layout = &self.layout;
        if let Some(contents) = files.contents {
            self.upload_file(&layout.backup_contents(name), contents)
                .await
                .map_err(uploading("tarball"))?;
        }
        self.put(&layout.backup_results(name), files.results)
            .await
            .map_err(uploading("results"))?;
        self.put(&layout.backup_volume_info(name), files.volume_info)
            .await
            .map_err(uploading("volume info"))?;
        self.put_item_operations(name, files.item_operations)
            .await
            .map_err(uploading("item operations"))?;
        self.put_metadata(name, files.metadata)
            .await
            .map_err(uploading("metadata"))
    }

    /// A backup's results; None when it has none.
    pub async fn get_backup_results(&self, name: &str) -> Result<Option<Bytes>, StoreError> {
        self.get_if_there(&self.layout.backup_results(name)).await
    }

    async fn get_if_there(&self, key: &Path) -> Result<Option<Bytes>, StoreError> {
        match self.get_at_most(key, MAX_RECORD_BYTES).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Downloads a backup's tarball into `file`, rewound for reading.
    /// The backup's tarball written to `file`, if it is at most `max` bytes.
    pub async fn download_backup_contents(
        &self,
        name: &str,
        file: &std::fs::File,
        max: u64,
    ) -> Result<(), StoreError> {
        let key = self.layout.backup_contents(name);
        self.download_file(&key, file, max).await
    }

    pub async fn list_backup(&self, name: &str) -> Result<BackupListing, StoreError> {
        let keys = self.keys_under(&self.layout.backup_dir(name)).await?;
        Ok(BackupListing {
            name: name.to_string(),
            keys: keys.into_iter().collect(),
        })
    }

    /// The snapshot records the listing has, each read up to `max` bytes (someone else may have
    /// written them); one deleted since the listing is absent.
    pub async fn backup_records(
        &self,
        listing: &BackupListing,
        max: usize,
    ) -> Result<BackupRecords, StoreError> {
        let layout = &self.layout;
        let name = &listing.name;
        let record = async |key: Path| -> Result<Option<Bytes>, StoreError> {
            if !listing.keys.contains(&key) {
                return Ok(None);
            }
            match self.get_at_most(&key, max).await {
                Ok(bytes) => Ok(Some(bytes)),
                Err(error) if error.is_not_found() => Ok(None),
                Err(error) => Err(error),
            }
        };
        Ok(BackupRecords {
            volume_snapshots: record(layout.backup_volume_snapshots(name)).await?,
            csi_snapshot_contents: record(layout.backup_csi_snapshot_contents(name)).await?,
            volume_info: record(layout.backup_volume_info(name)).await?,
            pod_volume_backups: record(layout.backup_pod_volume_backups(name)).await?,
            contents_listed: listing.keys.contains(&layout.backup_contents(name)),
        })
    }

    /// Every key of a restore's data.
    pub async fn restore_keys(&self, restore: &str) -> Result<Vec<Path>, StoreError> {
        self.keys_under(&self.layout.restore_dir(restore)).await
    }

    /// Deletes a restore's data (its log, results, resource list and hook results); the keys
    /// deleted.
    pub async fn delete_restore(&self, restore: &str) -> Result<usize, StoreError> {
        self.delete_under(&self.layout.restore_dir(restore)).await
    }

    /// Deletes a backup as listed: `velero-backup.json` first, from then on the backup no longer
    /// exists for sync; then the rest of its keys and `restore_keys` (its restores' data) in one
    /// batch delete.
    pub async fn delete_backup(
        &self,
        listing: BackupListing,
        restore_keys: Vec<Path>,
    ) -> Result<(), StoreError> {
        let metadata = self.layout.backup_metadata(&listing.name);
        self.delete(&metadata).await?;
        let rest = listing
            .keys
            .into_iter()
            .filter(|key| *key != metadata)
            .chain(restore_keys)
            .collect();
        self.delete_keys(rest).await.map(|_| ())
    }

    /// Uploads a restore's log, results, resource list and hook results, in that order.
    pub async fn put_restore_outputs(
        &self,
        restore: &str,
        files: RestoreFiles,
    ) -> Result<(), UploadError> {
        let layout = &self.layout;
        self.upload_file(&layout.restore_log(restore), files.log)
            .await
            .map_err(uploading("restore log"))?;
        self.put(&layout.restore_results(restore), files.results)
            .await
            .map_err(uploading("restore results"))?;
        self.upload_file(&layout.restore_resource_list(restore), files.resource_list)
            .await
            .map_err(uploading("restore resource list"))?;
        if let Some(hook_results) = files.hook_results {
            self.put(&layout.restore_hook_results(restore), hook_results)
                .await
                .map_err(uploading("restore hook results"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use futures::StreamExt;
    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
        PutMultipartOptions, PutOptions, PutPayload, PutResult,
    };

    use super::*;
    use crate::layout::Layout;

    /// How a call fails.
    #[derive(Clone, Copy, Debug)]
    enum Fault {
        /// Nothing is done.
        Refused,
        /// Done, and then failed as when the bucket's answer is lost on its way back (puts only).
        AnswerLost,
    }

    /// A bucket in memory that records each put and delete (`put <key>`, `delete <key>`) in
    /// order, and fails the calls it is told to.
    #[derive(Debug, Default)]
    struct Bucket {
        inner: InMemory,
        calls: Arc<Mutex<Vec<String>>>,
        faults: Arc<Mutex<HashMap<String, Fault>>>,
    }

    impl std::fmt::Display for Bucket {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Bucket")
        }
    }

    fn failed(what: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "Bucket",
            source: what.into(),
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for Bucket {
        async fn put_opts(
            &self,
            location: &Path,
            payload: PutPayload,
            opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            let call = format!("put {location}");
            let fault = self.faults.lock().unwrap().get(&call).copied();
            self.calls.lock().unwrap().push(call);
            match fault {
                Some(Fault::Refused) => Err(failed("refused")),
                Some(Fault::AnswerLost) => {
                    self.inner.put_opts(location, payload, opts).await?;
                    Err(failed("answer lost"))
                }
                None => self.inner.put_opts(location, payload, opts).await,
            }
        }

        async fn put_multipart_opts(
            &self,
            location: &Path,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }

        async fn get_opts(
            &self,
            location: &Path,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.inner.get_opts(location, options).await
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<Path>>,
        ) -> BoxStream<'static, object_store::Result<Path>> {
            let (calls, faults) = (self.calls.clone(), self.faults.clone());
            let locations = locations
                .map(move |key| {
                    let key = key?;
                    let call = format!("delete {key}");
                    let refused = faults.lock().unwrap().contains_key(&call);
                    calls.lock().unwrap().push(call);
                    if refused {
                        Err(failed("refused"))
                    } else {
                        Ok(key)
                    }
                })
                .boxed();
            self.inner.delete_stream(locations)
        }

        fn list(
            &self,
            prefix: Option<&Path>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.inner.list(prefix)
        }

        async fn list_with_delimiter(
            &self,
            prefix: Option<&Path>,
        ) -> object_store::Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(
            &self,
            from: &Path,
            to: &Path,
            options: CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    impl Bucket {
        fn fail_put(&self, key: Path, fault: Fault) {
            self.faults
                .lock()
                .unwrap()
                .insert(format!("put {key}"), fault);
        }

        fn refuse_delete(&self, key: Path) {
            let call = format!("delete {key}");
            self.faults.lock().unwrap().insert(call, Fault::Refused);
        }

        fn calls(&self) -> Vec<String> {
            std::mem::take(&mut self.calls.lock().unwrap())
        }
    }

    fn store() -> (Arc<Bucket>, BackupStore) {
        let bucket = Arc::new(Bucket::default());
        let store = BackupStore::new(bucket.clone(), Layout::new(Some("p")));
        (bucket, store)
    }

    fn file(contents: &[u8]) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(contents).unwrap();
        file
    }

    fn files(name: &str) -> BackupFiles {
        BackupFiles {
            log: file(b"log"),
            contents: file(b"tarball"),
            resource_list: file(b"resource list"),
            results: Bytes::from_static(b"results"),
            volume_snapshots: Bytes::from_static(b"volume snapshots"),
            volume_info: Bytes::from_static(b"volume info"),
            hook_results: Some(Bytes::from_static(b"hook results")),
            pod_volume_backups: None,
            item_operations: None,
            metadata: Bytes::from(format!("{{\"name\":\"{name}\"}}")),
        }
    }

    async fn ours() -> Result<(), String> {
        Ok(())
    }

    async fn keys(store: &BackupStore, dir: &str) -> Vec<String> {
        let mut keys: Vec<String> = (store.keys_under(&Path::from(dir)).await.unwrap())
            .iter()
            .map(|key| key.to_string())
            .collect();
        keys.sort();
        keys
    }

    #[tokio::test]
    async fn a_backups_metadata_is_uploaded_last() {
        let (bucket, store) = store();
        store.put_backup("b1", files("b1"), ours()).await.unwrap();
        assert_eq!(
            bucket.calls(),
            [
                "put p/backups/b1/b1-logs.gz",
                "put p/backups/b1/b1.tar.gz",
                "put p/backups/b1/b1-resource-list.json.gz",
                "put p/backups/b1/b1-results.gz",
                "put p/backups/b1/b1-volumesnapshots.json.gz",
                "put p/backups/b1/b1-volumeinfo.json.gz",
                "put p/backups/b1/b1-hook-results.json.gz",
                "put p/backups/b1/velero-backup.json",
            ]
        );
        assert!(store.backup_exists("b1").await.unwrap());
        assert_eq!(
            store.get_backup_metadata("b1").await.unwrap(),
            r#"{"name":"b1"}"#
        );
    }

    #[tokio::test]
    async fn a_backup_failing_midway_leaves_no_metadata_and_only_its_log() {
        let (bucket, store) = store();
        bucket.fail_put(store.layout.backup_results("b1"), Fault::Refused);
        let error = store
            .put_backup("b1", files("b1"), ours())
            .await
            .unwrap_err();
        assert!(
            error.to_string().starts_with("uploading results: "),
            "{error}"
        );
        assert!(
            !bucket
                .calls()
                .iter()
                .any(|c| c.ends_with("velero-backup.json"))
        );
        assert_eq!(keys(&store, "p").await, ["p/backups/b1/b1-logs.gz"]);
    }

    #[tokio::test]
    async fn a_backup_no_longer_ours_before_its_metadata_leaves_only_its_log() {
        let (_, store) = store();
        let taken = async { Err("ended elsewhere".to_string()) };
        let error = store
            .put_backup("b1", files("b1"), taken)
            .await
            .unwrap_err();
        assert!(matches!(&error, PutBackupError::Refused(reason) if reason == "ended elsewhere"));
        assert_eq!(keys(&store, "p").await, ["p/backups/b1/b1-logs.gz"]);
    }

    #[tokio::test]
    async fn a_backup_whose_metadata_answer_was_lost_but_stored_exists() {
        let (bucket, store) = store();
        bucket.fail_put(store.layout.backup_metadata("b1"), Fault::AnswerLost);
        store.put_backup("b1", files("b1"), ours()).await.unwrap();
        assert!(store.backup_exists("b1").await.unwrap());
        assert_eq!(keys(&store, "p/backups/b1").await.len(), 8);
    }

    #[tokio::test]
    async fn a_backup_whose_metadata_was_not_stored_is_removed_but_its_log() {
        let (bucket, store) = store();
        bucket.fail_put(store.layout.backup_metadata("b1"), Fault::Refused);
        let error = store
            .put_backup("b1", files("b1"), ours())
            .await
            .unwrap_err();
        assert!(
            error.to_string().starts_with("uploading metadata: "),
            "{error}"
        );
        assert_eq!(keys(&store, "p").await, ["p/backups/b1/b1-logs.gz"]);
    }

    #[tokio::test]
    async fn an_uploaded_backup_removed_loses_its_metadata_first_and_keeps_its_log() {
        let (bucket, store) = store();
        store.put_backup("b1", files("b1"), ours()).await.unwrap();
        bucket.calls();
        store.remove_uploaded_backup("b1").await;
        assert_eq!(
            bucket.calls().first().map(String::as_str),
            Some("delete p/backups/b1/velero-backup.json")
        );
        assert_eq!(keys(&store, "p").await, ["p/backups/b1/b1-logs.gz"]);
    }

    #[tokio::test]
    async fn deleting_a_backup_deletes_its_metadata_first_and_leaves_other_backups_alone() {
        let (bucket, store) = store();
        // b10 shares b1's name as a prefix; r2 is b10's restore.
        for name in ["b1", "b10"] {
            store.put_backup(name, files(name), ours()).await.unwrap();
        }
        for restore in ["r1", "r2"] {
            let outputs = RestoreFiles {
                log: file(b"log"),
                results: Bytes::from_static(b"results"),
                resource_list: file(b"resource list"),
                hook_results: None,
            };
            store.put_restore_outputs(restore, outputs).await.unwrap();
        }
        let before = keys(&store, "p").await;
        bucket.calls();

        let listing = store.list_backup("b1").await.unwrap();
        let restore_keys = store.restore_keys("r1").await.unwrap();
        store.delete_backup(listing, restore_keys).await.unwrap();

        let calls = bucket.calls();
        assert_eq!(calls[0], "delete p/backups/b1/velero-backup.json");
        // The backup's other seven files and the restore's three.
        assert_eq!(calls.len(), 1 + 7 + 3, "{calls:?}");
        let left = keys(&store, "p").await;
        let kept: Vec<&String> = before
            .iter()
            .filter(|key| !key.starts_with("p/backups/b1/") && !key.starts_with("p/restores/r1/"))
            .collect();
        assert_eq!(left.iter().collect::<Vec<_>>(), kept);
        assert_eq!(keys(&store, "p/backups/b10").await.len(), 8);
        assert_eq!(keys(&store, "p/restores/r2").await.len(), 3);
    }

    #[tokio::test]
    async fn a_backup_whose_metadata_cannot_be_deleted_keeps_its_other_files() {
        let (bucket, store) = store();
        store.put_backup("b1", files("b1"), ours()).await.unwrap();
        bucket.refuse_delete(store.layout.backup_metadata("b1"));
        let listing = store.list_backup("b1").await.unwrap();
        store.delete_backup(listing, vec![]).await.unwrap_err();
        assert_eq!(keys(&store, "p/backups/b1").await.len(), 8);
    }

    #[tokio::test]
    async fn a_backups_records_are_those_its_listing_has() {
        let (_, store) = store();
        store.put_backup("b1", files("b1"), ours()).await.unwrap();
        let listing = store.list_backup("b1").await.unwrap();
        // Written after the listing: not read.
        let csi = store.layout.backup_csi_snapshot_contents("b1");
        store.put(&csi, Bytes::from_static(b"[]")).await.unwrap();
        let records = store.backup_records(&listing, 1 << 10).await.unwrap();
        assert_eq!(records.volume_snapshots.unwrap(), "volume snapshots");
        assert_eq!(records.volume_info.unwrap(), "volume info");
        assert_eq!(records.csi_snapshot_contents, None);
        assert!(records.contents_listed);
        // A record larger than asked for is an error, not read.
        let error = store.backup_records(&listing, 4).await.err().unwrap();
        assert!(matches!(error, StoreError::TooLarge { .. }), "{error}");
    }

    #[tokio::test]
    async fn a_tarball_larger_than_the_scratch_may_take_is_refused_once_that_much_is_written() {
        let (_, store) = store();
        store.put_backup("b1", files("b1"), ours()).await.unwrap();
        let size = store
            .get(&store.layout.backup_contents("b1"))
            .await
            .unwrap()
            .len() as u64;
        let file = tempfile::tempfile().unwrap();
        store
            .download_backup_contents("b1", &file, size)
            .await
            .unwrap();
        assert_eq!(file.metadata().unwrap().len(), size);

        let file = tempfile::tempfile().unwrap();
        let error = store
            .download_backup_contents("b1", &file, size - 1)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "p/backups/b1/b1.tar.gz: larger than the {} bytes such a file may have",
                size - 1
            )
        );
        assert!(file.metadata().unwrap().len() < size);
    }
}
