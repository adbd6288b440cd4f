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
    layout: Layout,
}

/// How blob IDs map to object names: as they are (kopia's S3, GCS and Azure storages), or sharded
/// into directories with a `.f` suffix (kopia's filesystem storage, `repo/blob/sharded`).
#[derive(Clone, Debug)]
enum Layout {
    Flat,
    Sharded(Shards),
}

/// A sharded storage's `.shards` file.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Shards {
    #[serde(rename = "default")]
    default: Vec<usize>,
    #[serde(rename = "maxNonShardedLength", default)]
    unsharded_length: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    overrides: Vec<ShardOverride>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct ShardOverride {
    prefix: String,
    shards: Vec<usize>,
}

const SHARDS_FILE: &str = ".shards";
const SHARDED_SUFFIX: &str = ".f";

impl Shards {
    /// kopia's `GetShardDirectoryAndBlob`: the directories and the file name of `id`.
    fn split(&self, id: &str) -> (Vec<String>, String) {
        if id.len() <= self.unsharded_length {
            return (Vec::new(), format!("{id}{SHARDED_SUFFIX}"));
        }
        let shards = self
            .overrides
            .iter()
            .find(|o| id.starts_with(&o.prefix))
            .map_or(&self.default, |o| &o.shards);
        let mut dirs = Vec::new();
        let mut rest = id;
        for &size in shards {
            if rest.len() <= size {
                break;
            }
            dirs.push(rest[..size].to_string());
            rest = &rest[size..];
        }
        (dirs, format!("{rest}{SHARDED_SUFFIX}"))
    }
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
    /// The blobs of a repository in an object store: each blob an object under `root`.
    pub fn new(store: Arc<dyn ObjectStore>, root: Path) -> Self {
        Blobs {
            store,
            root,
            layout: Layout::Flat,
        }
    }

    /// The blobs of a kopia filesystem repository (`kopia repository create filesystem`), read
    /// through `store` at `root`: sharded as its `.shards` file says; a new one (`create`) gets
    /// kopia's `[1, 3]` and the file, an old one without the file kopia's legacy `[3, 3]`.
    pub async fn filesystem(
        store: Arc<dyn ObjectStore>,
        root: Path,
        create: bool,
    ) -> Result<Self, Error> {
        let shards_path = root.clone().join(SHARDS_FILE);
        let shards = match store.get(&shards_path).await {
            Ok(r) => serde_json::from_slice(&r.bytes().await?)
                .map_err(|e| Error::corrupt(SHARDS_FILE, format!("not kopia's JSON: {e}")))?,
            Err(object_store::Error::NotFound { .. }) => {
                let shards = Shards {
                    default: if create { vec![1, 3] } else { vec![3, 3] },
                    unsharded_length: 20,
                    overrides: Vec::new(),
                };
                if create {
                    let mut json = serde_json::to_vec(&shards).expect("JSON");
                    json.push(b'\n');
                    store.put(&shards_path, json.into()).await?;
                }
                shards
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Blobs {
            store,
            root,
            layout: Layout::Sharded(shards),
        })
    }

    /// Where the repository is, for messages.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, id: &str) -> Path {
        debug_assert!(is_blob_id(id), "{id:?} is not a blob ID");
        match &self.layout {
            Layout::Flat => self.root.clone().join(id),
            Layout::Sharded(shards) => {
                let (dirs, file) = shards.split(id);
                dirs.into_iter()
                    .fold(self.root.clone(), |p, d| p.join(d))
                    .join(file)
            }
        }
    }

    /// The blob ID an object name under the root holds, if any.
    fn id_of(&self, location: &Path) -> Option<String> {
        let parts: Vec<String> = location
            .prefix_match(&self.root)?
            .map(|p| p.as_ref().to_string())
            .collect();
        let id = match &self.layout {
            Layout::Flat => match parts.as_slice() {
                [one] => one.clone(),
                _ => return None,
            },
            Layout::Sharded(_) => parts.concat().strip_suffix(SHARDED_SUFFIX)?.to_string(),
        };
        is_blob_id(&id).then_some(id)
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
        let mut listing = if prefix.is_empty() || matches!(self.layout, Layout::Sharded(_)) {
            self.store.list(Some(&self.root))
        } else {
            self.store.list_with_offset(Some(&self.root), &offset)
        };
        let mut found = Vec::new();
        while let Some(meta) = listing.try_next().await? {
            let Some(id) = self.id_of(&meta.location) else {
                continue;
            };
            if !id.starts_with(prefix) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharded_names_are_kopia_s() {
        let shards = Shards {
            default: vec![1, 3],
            unsharded_length: 20,
            overrides: Vec::new(),
        };
        assert_eq!(
            shards.split("kopia.repository"),
            (vec![], "kopia.repository.f".into())
        );
        let (dirs, file) = shards.split("p0123456789abcdef0123456789abcdef-s01");
        assert_eq!(dirs, ["p", "012"]);
        assert_eq!(file, "3456789abcdef0123456789abcdef-s01.f");
    }
}
