//! A backup store: one location's object store seen through Velero's layout.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::signer::{Method, Signer};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio::io::{AsyncSeekExt, AsyncWriteExt};

use crate::layout::{Layout, TOP_LEVEL_FOLDERS};

/// A multipart upload's part: S3's least (every part but the last must be at least 5 MiB).
const UPLOAD_PART: usize = 5 << 20;
const UPLOADS_AT_ONCE: usize = 4;

/// An object-store error with the key it concerns.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{key}: {}", with_causes(source))]
    Object {
        key: String,
        source: object_store::Error,
    },
    #[error("{key}: {source}")]
    Io { key: String, source: std::io::Error },
    #[error("{key}: not found")]
    NotFound { key: String },
    #[error("{key}: larger than the {max} bytes such a file may have")]
    TooLarge { key: String, max: u64 },
    #[error(
        "the bucket{} holds {folder:?}, which is not a folder of a backup store (expected only {TOP_LEVEL_FOLDERS:?})",
        prefix.as_ref().map(|p| format!(" under prefix {p:?}")).unwrap_or_default()
    )]
    NotABackupStore {
        prefix: Option<String>,
        folder: String,
    },
}

/// An object store's error with the causes it wraps, each once: under "error sending request" lies
/// what a person can act on (a refused connection, a certificate no CA of the system signed).
fn with_causes(error: &object_store::Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        let shown = inner.to_string();
        if !text.contains(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        cause = inner.source();
    }
    text
}

impl StoreError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }
}

fn object_error(key: &Path) -> impl FnOnce(object_store::Error) -> StoreError + '_ {
    move |source| match source {
        object_store::Error::NotFound { .. } => StoreError::NotFound {
            key: key.to_string(),
        },
        source => StoreError::Object {
            key: key.to_string(),
            source,
        },
    }
}

#[derive(Clone)]
pub struct BackupStore {
    store: Arc<dyn ObjectStore>,
    signer: Option<Arc<dyn Signer>>,
    pub layout: Layout,
}

impl BackupStore {
    pub fn new(store: Arc<dyn ObjectStore>, layout: Layout) -> Self {
        Self {
            store,
            signer: None,
            layout,
        }
    }

    /// The object store itself, for what keeps its own layout under the prefix (kopia
    /// repositories).
    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// The same store, able to hand out signed URLs through `signer`.
    pub fn with_signer(mut self, signer: Option<Arc<dyn Signer>>) -> Self {
        self.signer = signer;
        self
    }

    /// A URL through which anyone may GET `key` for `ttl`, as Velero's DownloadRequests hand out;
    /// None when the store cannot sign (a local directory).
    pub async fn signed_url(
        &self,
        key: &Path,
        ttl: std::time::Duration,
    ) -> Result<Option<String>, StoreError> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let url = signer
            .signed_url(Method::GET, key, ttl)
            .await
            .map_err(object_error(key))?;
        Ok(Some(url.to_string()))
    }

    pub async fn put(&self, key: &Path, bytes: Bytes) -> Result<(), StoreError> {
        self.store
            .put(key, PutPayload::from_bytes(bytes))
            .await
            .map(|_| ())
            .map_err(object_error(key))
    }

    pub async fn get(&self, key: &Path) -> Result<Bytes, StoreError> {
        let result = self.store.get(key).await.map_err(object_error(key))?;
        result.bytes().await.map_err(object_error(key))
    }

    /// A file someone else may have written (a backup's metadata, its snapshot lists), read only
    /// up to `max` bytes: a larger one is an error, and no more than that is ever held.
    pub async fn get_at_most(&self, key: &Path, max: usize) -> Result<Bytes, StoreError> {
        let result = self.store.get(key).await.map_err(object_error(key))?;
        let mut stream = result.into_stream();
        let mut read = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(object_error(key))?;
            if read.len() + chunk.len() > max {
                let (key, max) = (key.to_string(), max as u64);
                return Err(StoreError::TooLarge { key, max });
            }
            read.extend_from_slice(&chunk);
        }
        Ok(read.into())
    }

    pub async fn exists(&self, key: &Path) -> Result<bool, StoreError> {
        match self.store.head(key).await.map_err(object_error(key)) {
            Ok(_) => Ok(true),
            Err(error) if error.is_not_found() => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Uploads a local file without reading it into memory (multipart past the first part).
    pub(crate) async fn upload_file(
        &self,
        key: &Path,
        file: std::fs::File,
    ) -> Result<(), StoreError> {
        let io_error = |source| StoreError::Io {
            key: key.to_string(),
            source,
        };
        let mut reader = tokio::fs::File::from_std(file);
        reader.rewind().await.map_err(io_error)?;
        // Parts of S3's least size, four in flight: 20 MiB at most, whatever the file's size
        // (object_store's default, 10 MiB parts eight at a time, would hold 80).
        let mut writer = BufWriter::with_capacity(self.store.clone(), key.clone(), UPLOAD_PART)
            .with_max_concurrency(UPLOADS_AT_ONCE);
        if let Err(source) = tokio::io::copy(&mut reader, &mut writer).await {
            let _ = writer.abort().await;
            return Err(io_error(source));
        }
        writer.shutdown().await.map_err(io_error)
    }

    /// Downloads an object into a local file, chunk by chunk, and rewinds it for reading.
    /// Writes the file at `key` to `file`, refusing one of more than `max` bytes once that much
    /// is written (a bucket may hold anything: scratch space is not).
    pub async fn download_file(
        &self,
        key: &Path,
        file: &std::fs::File,
        max: u64,
    ) -> Result<(), StoreError> {
        let io_error = |source| StoreError::Io {
            key: key.to_string(),
            source,
        };
        let result = self.store.get(key).await.map_err(object_error(key))?;
        let mut out = tokio::fs::File::from_std(file.try_clone().map_err(io_error)?);
        let mut stream = result.into_stream();
        let mut written = 0;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(object_error(key))?;
            written += chunk.len() as u64;
            if written > max {
                let key = key.to_string();
                return Err(StoreError::TooLarge { key, max });
            }
            out.write_all(&chunk).await.map_err(io_error)?;
        }
        out.flush().await.map_err(io_error)?;
        out.rewind().await.map_err(io_error)?;
        Ok(())
    }

    /// The backups in the store: every `backups/<name>/velero-backup.json`. Listed by key rather
    /// than by folder because some servers (SeaweedFS among them) keep a folder after its last key
    /// is deleted.
    pub async fn backup_names(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        let dir = self.layout.backups_dir();
        // The listing is read as it comes: a bucket of thousands of backups holds ten times as
        // many keys, none of which is kept but the names.
        self.store
            .list(Some(&dir))
            .map_err(|error| object_error(&dir)(error))
            .try_filter_map(|meta| {
                let key = meta.location;
                let named = (key.filename() == Some("velero-backup.json"))
                    .then(|| {
                        let parts: Vec<_> = key.parts().collect();
                        let name = parts.get(parts.len().checked_sub(2)?)?.as_ref().to_string();
                        (key == self.layout.backup_metadata(&name)).then_some(name)
                    })
                    .flatten();
                std::future::ready(Ok(named))
            })
            .try_collect()
            .await
    }

    /// Every key under `dir`.
    pub async fn keys_under(&self, dir: &Path) -> Result<Vec<Path>, StoreError> {
        self.store
            .list(Some(dir))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(object_error(dir))
    }

    /// Deletes every key under `dir` with the store's batch delete; returns how many went.
    pub async fn delete_under(&self, dir: &Path) -> Result<usize, StoreError> {
        let keys = self
            .store
            .list(Some(dir))
            .map_ok(|meta| meta.location)
            .boxed();
        self.delete_stream(keys, dir).await
    }

    /// Deletes these keys with the store's batch delete; returns how many went.
    pub(crate) async fn delete_keys(&self, keys: Vec<Path>) -> Result<usize, StoreError> {
        let Some(first) = keys.first().cloned() else {
            return Ok(0);
        };
        let keys = futures::stream::iter(keys.into_iter().map(Ok)).boxed();
        self.delete_stream(keys, &first).await
    }

    async fn delete_stream(
        &self,
        keys: futures::stream::BoxStream<'static, object_store::Result<Path>>,
        what: &Path,
    ) -> Result<usize, StoreError> {
        let deleted: Vec<Path> = self
            .store
            .delete_stream(keys)
            .try_collect()
            .await
            .map_err(object_error(what))?;
        Ok(deleted.len())
    }

    pub async fn delete(&self, key: &Path) -> Result<(), StoreError> {
        match self.store.delete(key).await.map_err(object_error(key)) {
            Err(error) if error.is_not_found() => Ok(()),
            other => other,
        }
    }

    /// Velero's check that a location is a backup store: reachable, and nothing under the prefix but
    /// the folders Velero writes.
    pub async fn validate(&self) -> Result<(), StoreError> {
        let root = self.layout.root();
        let listing = self
            .store
            .list_with_delimiter(root.as_ref())
            .await
            .map_err(object_error(root.as_ref().unwrap_or(&Path::from("/"))))?;
        for folder in listing.common_prefixes.iter().filter_map(|p| p.filename()) {
            if !TOP_LEVEL_FOLDERS.contains(&folder) {
                return Err(StoreError::NotABackupStore {
                    prefix: self.layout.prefix().map(str::to_string),
                    folder: folder.to_string(),
                });
            }
        }
        Ok(())
    }
}
