//! A repository's blobs: objects named by kopia's blob IDs directly under one prefix of an object
//! store, as kopia's S3, GCS and Azure storages keep them.

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload};

use crate::Error;

/// One blob, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobMeta {
    pub id: String,
    pub length: u64,
    pub modified: jiff::Timestamp,
}

/// The blobs of one repository.
#[derive(Clone, Debug)]
pub struct Blobs {
    store: Arc<dyn ObjectStore>,
    root: Path,
}

/// Kopia's blob IDs are letters, digits and `._-`; anything else in a listing was not written by
/// kopia and is never read (a hostile name cannot address a path outside the repository).
pub fn is_blob_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

fn timestamp(t: chrono::DateTime<chrono::Utc>) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(t.timestamp_millis()).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

impl Blobs {
    pub fn new(store: Arc<dyn ObjectStore>, root: Path) -> Self {
        Blobs { store, root }
    }

    /// Where the repository is, for messages.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, id: &str) -> Path {
        debug_assert!(is_blob_id(id), "{id:?} is not a blob ID");
        self.root.clone().join(id)
    }

    /// The whole blob; `Error::MissingBlob` when there is none.
    pub async fn get(&self, id: &str) -> Result<Bytes, Error> {
        match self.store.get(&self.path(id)).await {
            Ok(r) => Ok(r.bytes().await?),
            Err(object_store::Error::NotFound { .. }) => Err(Error::MissingBlob(id.into())),
            Err(e) => Err(e.into()),
        }
    }

    /// `length` bytes at `offset`; a blob shorter than that is corrupt, not an I/O error.
    pub async fn get_range(&self, id: &str, offset: u64, length: u64) -> Result<Bytes, Error> {
        if length == 0 {
            return Ok(Bytes::new());
        }
        match self
            .store
            .get_range(&self.path(id), offset..offset + length)
            .await
        {
            Ok(b) if b.len() as u64 == length => Ok(b),
            Ok(b) => Err(Error::corrupt(
                id,
                format!("{} bytes at offset {offset}, {length} expected", b.len()),
            )),
            Err(object_store::Error::NotFound { .. }) => Err(Error::MissingBlob(id.into())),
            Err(object_store::Error::NotModified { .. }) => Err(Error::MissingBlob(id.into())),
            Err(e @ object_store::Error::Generic { .. }) => Err(Error::corrupt(
                id,
                format!("cannot read {length} bytes at offset {offset}: {e}"),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// The blob's length and time, as the store keeps them.
    pub async fn head(&self, id: &str) -> Result<BlobMeta, Error> {
        match self.store.head(&self.path(id)).await {
            Ok(meta) => Ok(BlobMeta {
                id: id.into(),
                length: meta.size,
                modified: timestamp(meta.last_modified),
            }),
            Err(object_store::Error::NotFound { .. }) => Err(Error::MissingBlob(id.into())),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn put(&self, id: &str, data: impl Into<PutPayload>) -> Result<(), Error> {
        self.store.put(&self.path(id), data.into()).await?;
        Ok(())
    }

    /// Deletes a blob; one already gone is not an error.
    pub async fn delete(&self, id: &str) -> Result<(), Error> {
        match self.store.delete(&self.path(id)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The blobs whose IDs start with `prefix`, in no particular order.
    pub async fn list(&self, prefix: &str) -> Result<Vec<BlobMeta>, Error> {
        // Listing from the prefix on skips the packs (`p…`), which are most of a repository,
        // whenever the prefix sorts after them, as every index prefix (`x…`) does.
        let offset = self.root.clone().join(prefix);
        let mut listing = if prefix.is_empty() {
            self.store.list(Some(&self.root))
        } else {
            self.store.list_with_offset(Some(&self.root), &offset)
        };
        let mut found = Vec::new();
        while let Some(meta) = listing.try_next().await? {
            let Some(id) = meta
                .location
                .prefix_match(&self.root)
                .and_then(|mut parts| {
                    let first = parts.next()?;
                    parts.next().is_none().then(|| first.as_ref().to_string())
                })
            else {
                continue;
            };
            if !id.starts_with(prefix) || !is_blob_id(&id) {
                continue;
            }
            found.push(BlobMeta {
                id,
                length: meta.size,
                modified: timestamp(meta.last_modified),
            });
        }
        Ok(found)
    }
}
