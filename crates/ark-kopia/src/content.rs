//! Contents in packs (`repo/content`): reading a content through the index, and writing new ones
//! into packs, their local index and the epoch index blob that makes them visible.
//!
//! A writer never rewrites or deletes a blob another writer may need: it adds packs named after
//! its own session, announces the session with a marker blob while its packs are not indexed yet
//! (kopia's maintenance keeps the packs of live sessions), then adds one index blob.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::Error;
use crate::blobs::Blobs;
use crate::compression::{self, HeaderId};
use crate::crypto::{ContentCrypter, OVERHEAD, Sealed};
use crate::epoch::EpochState;
use crate::format::RepositoryConfig;
use crate::index::{self, ContentId, Info};

const PADDING_UNIT: usize = 4096;
const PREAMBLE: usize = 32;
/// The largest index blob ark reads: kopia shards indexes at 16 million entries, far above this,
/// but no index Velero writes comes near it.
const INDEX_BLOB_LIMIT: usize = 512 << 20;
/// Index blobs read at once.
const INDEX_READS: usize = 8;
/// Contents up to this size are read through pack windows of `WINDOW` bytes, `WINDOWS_KEPT` of
/// them kept (16 MiB).
const SMALL_CONTENT: u64 = 256 << 10;
const WINDOW: u64 = 2 << 20;
const WINDOWS_KEPT: usize = 8;
/// Contents this large are hashed and encrypted on the blocking pool, so that files read at once
/// are hashed on every core; smaller ones cost less than the hand-over.
const OFF_THREAD: usize = 256 << 10;
/// Packs one writer holds in memory at once, open or uploading (each up to the maximum pack size,
/// 20 MiB by default): an open pack of data, one of metadata, and one uploading. A writer that
/// needs a new pack waits for the upload to end. A second upload at once took 20 MiB more and
/// nothing off the time: the next pack fills while one uploads (bench-repository, 1 GiB: 7.5 s
/// and 87 MiB with one, 7.7 s and 106 MiB with two).
const PACKS_IN_MEMORY: usize = 3;

/// Decrypts an index or session blob: its IV is the hash in its ID, kopia's `blobcrypto`.
fn blob_iv(id: &str) -> Option<[u8; 16]> {
    let head = id.split('-').next()?;
    let hex_iv = head.get(head.len().checked_sub(32)?..)?;
    let mut iv = [0u8; 16];
    hex::decode_to_slice(hex_iv, &mut iv).ok()?;
    Some(iv)
}

/// Encrypts `plain` as the blob `<prefix><hash>-<suffix>`, returning its ID and bytes.
fn seal_blob(
    crypter: &ContentCrypter,
    plain: &[u8],
    prefix: &str,
    suffix: &str,
) -> (String, Vec<u8>) {
    let hash = crypter.hash(plain);
    let id = format!("{prefix}{}-{suffix}", hex::encode(hash));
    (id, crypter.encrypt(plain, &hash))
}

fn open_blob(crypter: &ContentCrypter, id: &str, sealed: &[u8]) -> Result<Vec<u8>, Error> {
    let iv = blob_iv(id).ok_or_else(|| Error::corrupt(id, "its ID holds no IV"))?;
    crypter.decrypt(sealed, &iv).ok_or_else(|| {
        Error::corrupt(
            id,
            "does not decrypt: forged, damaged, or another repository's",
        )
    })
}

/// A writer's session ID: `s`, 8 random bytes, and the 30-day period since 2000 it began in.
fn new_session_id(now: jiff::Timestamp) -> String {
    let mut r = [0u8; 8];
    crate::random(&mut r);
    let since_2000 = now.as_second() - 946_684_800;
    format!("s{}{:x}", hex::encode(r), since_2000 / (30 * 24 * 3600))
}

/// The session a pack or marker blob belongs to: the first `-`-separated part after the first
/// that starts with `s` (kopia's `SessionIDFromBlobID`).
pub fn session_of(blob: &str) -> Option<&str> {
    blob.split('-').skip(1).find(|p| p.starts_with('s'))
}

/// Sessions' last checkpoints, by session ID.
pub type Sessions = HashMap<String, jiff::Timestamp>;

#[derive(Deserialize)]
struct SessionCheckpoint {
    id: String,
    #[serde(rename = "checkpointTime")]
    checkpoint_time: jiff::Timestamp,
}

#[derive(Serialize)]
struct SessionInfo<'a> {
    id: &'a str,
    #[serde(rename = "startTime")]
    start_time: String,
    #[serde(rename = "checkpointTime")]
    checkpoint_time: String,
    username: &'a str,
    hostname: &'a str,
}

/// A pack being filled; it holds one of the `PACKS_IN_MEMORY` slots until it is uploaded.
struct OpenPack {
    id: Arc<str>,
    data: Vec<u8>,
    infos: Vec<Info>,
    slot: OwnedSemaphorePermit,
}

#[derive(Default)]
struct Pending {
    session: Option<String>,
    open: HashMap<u8, OpenPack>,
    /// Contents in packs written or being written, not in an index blob yet.
    unindexed: HashMap<ContentId, Info>,
    /// Deletion markers not in an index blob yet.
    deletions: Vec<Info>,
}

/// The repository's contents: the merged index, and what this process adds.
pub struct Contents {
    blobs: Blobs,
    crypter: ContentCrypter,
    max_pack_size: usize,
    format_version: u8,
    epoch: crate::format::EpochParameters,
    committed: RwLock<HashMap<ContentId, Info>>,
    /// The deletion watermark (unix seconds) the index was read under.
    watermark: RwLock<Option<i64>>,
    pending: Mutex<Pending>,
    uploads: tokio::sync::Mutex<JoinSet<Result<(), Error>>>,
    pack_slots: Arc<Semaphore>,
    /// The session marker blob, once written.
    marker: tokio::sync::Mutex<Option<String>>,
    identity: (String, String),
    /// Windows of packs recently read, for small contents (see `read`).
    windows: Mutex<Vec<(WindowKey, Bytes)>>,
    /// Bytes of new contents this process has stored, as written (encrypted, compressed).
    stored_bytes: std::sync::atomic::AtomicU64,
}

/// A pack and the number of one of its windows.
type WindowKey = (Arc<str>, u64);

impl Contents {
    pub async fn open(
        blobs: Blobs,
        config: &RepositoryConfig,
        identity: (String, String),
    ) -> Result<Self, Error> {
        let crypter = ContentCrypter::new(
            &config.hash,
            &config.encryption,
            &config.hmac_secret,
            &config.master_key,
        )?;
        let contents = Contents {
            blobs,
            crypter,
            max_pack_size: config.max_pack_size as usize,
            format_version: config.version as u8,
            epoch: config.epoch_parameters.clone(),
            committed: RwLock::new(HashMap::new()),
            watermark: RwLock::new(None),
            pending: Mutex::new(Pending::default()),
            uploads: tokio::sync::Mutex::new(JoinSet::new()),
            pack_slots: Arc::new(Semaphore::new(PACKS_IN_MEMORY)),
            marker: tokio::sync::Mutex::new(None),
            identity,
            windows: Mutex::new(Vec::new()),
            stored_bytes: Default::default(),
        };
        contents.refresh().await?;
        Ok(contents)
    }

    /// Bytes of new contents this process has stored so far: what its snapshots added.
    pub fn stored_bytes(&self) -> u64 {
        self.stored_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn crypter(&self) -> &ContentCrypter {
        &self.crypter
    }

    pub fn blobs(&self) -> &Blobs {
        &self.blobs
    }

    /// Reads the current index set anew.
    pub async fn refresh(&self) -> Result<(), Error> {
        // An index blob compacted away between the listing and the read: kopia loads the whole
        // index again, and so does ark, once.
        match self.load_index().await {
            Err(Error::MissingBlob(_)) => self.load_index().await,
            loaded => loaded,
        }
    }

    async fn load_index(&self) -> Result<(), Error> {
        let state = EpochState::load(&self.blobs).await?;
        let mut merged = HashMap::new();
        // Owned blob names: a stream of borrowed ones would make the future not `Send`.
        let mut reads =
            futures::stream::iter(state.index_blobs.clone().into_iter().map(|b| async move {
                if b.length as usize > INDEX_BLOB_LIMIT {
                    return Err(Error::corrupt(
                        &b.id,
                        format!("an index of {} bytes", b.length),
                    ));
                }
                let sealed = self.blobs.get(&b.id).await?;
                let plain = open_blob(&self.crypter, &b.id, &sealed)?;
                let mut infos = Vec::new();
                index::parse(&plain, &b.id, |i| infos.push(i))?;
                Ok::<_, Error>(infos)
            }))
            .buffer_unordered(INDEX_READS);
        while let Some(infos) = reads.next().await {
            infos?
                .into_iter()
                .for_each(|i| index::merge(&mut merged, i));
        }
        self.commit_index(merged, &state);
        Ok(())
    }

    /// Keeps the merged index, without the deletions the watermark hides (kopia's
    /// `shouldIgnore`: a content deleted at or before the watermark is gone, packs and all).
    fn commit_index(&self, mut merged: HashMap<ContentId, Info>, state: &EpochState) {
        let watermark = state.deletion_watermark.map(|w| w.as_second());
        if let Some(w) = watermark {
            merged.retain(|_, i| !(i.deleted && i.timestamp <= w));
        }
        *self.committed.write().unwrap() = merged;
        *self.watermark.write().unwrap() = watermark;
    }

    /// The deletion watermark (unix seconds) the index was last read under.
    pub fn watermark(&self) -> Option<i64> {
        *self.watermark.read().unwrap()
    }

    /// Every index entry, deleted ones included (those the watermark does not hide).
    pub fn entries(&self) -> Vec<Info> {
        self.committed.read().unwrap().values().cloned().collect()
    }

    /// The entry of `id`, deleted or not.
    pub fn entry(&self, id: &ContentId) -> Option<Info> {
        self.committed.read().unwrap().get(id).cloned()
    }

    /// Marks a content deleted: an index entry pointing where it is, newer than its last one
    /// (kopia's `deletedInfo`). The pack stays until maintenance finds nothing live in it.
    pub fn mark_deleted(&self, info: &Info) {
        let mut deleted = info.clone();
        deleted.deleted = true;
        deleted.timestamp = jiff::Timestamp::now().as_second().max(info.timestamp + 1);
        self.pending.lock().unwrap().deletions.push(deleted);
    }

    /// Brings a deleted content back, as kopia's `UndeleteContent` does: its bytes written anew.
    pub async fn undelete(&self, info: &Info) -> Result<(), Error> {
        let sealed = self
            .blobs
            .get_range(
                &info.pack,
                u64::from(info.offset),
                u64::from(info.packed_length),
            )
            .await?;
        let data = self.open_content(info, sealed.into())?;
        self.write(&data, info.id.prefix()).await?;
        Ok(())
    }

    /// The live (not deleted) index entry of `id`.
    pub fn info(&self, id: &ContentId) -> Option<Info> {
        if let Some(i) = self.pending.lock().unwrap().unindexed.get(id) {
            return Some(i.clone());
        }
        self.committed
            .read()
            .unwrap()
            .get(id)
            .filter(|i| !i.deleted)
            .cloned()
    }

    /// Every live content whose ID starts with `prefix` (`None`: unprefixed contents).
    pub fn list(&self, prefix: Option<u8>) -> Vec<Info> {
        self.committed
            .read()
            .unwrap()
            .values()
            .filter(|i| !i.deleted && i.id.prefix() == prefix)
            .cloned()
            .collect()
    }

    pub fn count(&self) -> usize {
        self.committed.read().unwrap().len()
    }

    /// Writers' sessions whose markers exist, with their last checkpoint (kopia's
    /// `ListActiveSessions`). A marker that does not decrypt is an error: maintenance stops
    /// rather than guess.
    pub async fn active_sessions(&self) -> Result<Sessions, Error> {
        let mut sessions = Sessions::new();
        for b in self.blobs.list("s").await? {
            let sealed = match self.blobs.get(&b.id).await {
                Ok(s) => s,
                Err(Error::MissingBlob(_)) => continue,
                Err(e) => return Err(e),
            };
            let plain = open_blob(&self.crypter, &b.id, &sealed)?;
            let info: SessionCheckpoint =
                serde_json::from_slice(&plain).map_err(|e| Error::corrupt(&b.id, e.to_string()))?;
            let at = sessions.entry(info.id).or_insert(info.checkpoint_time);
            *at = (*at).max(info.checkpoint_time);
        }
        Ok(sessions)
    }

    /// Reads one content, decrypted, checked and decompressed.
    pub async fn read(&self, id: &ContentId) -> Result<Vec<u8>, Error> {
        let info = self
            .info(id)
            .ok_or_else(|| Error::MissingContent(id.to_string()))?;
        let (offset, length) = (u64::from(info.offset), u64::from(info.packed_length));
        if length <= SMALL_CONTENT {
            let sealed = self
                .read_through_windows(&info.pack, offset, length)
                .await?;
            return self.open_content(&info, sealed);
        }
        // Its own buffer (as the object store collected the response), decrypted in place.
        let sealed = Vec::from(self.blobs.get_range(&info.pack, offset, length).await?);
        // On the blocking pool, as writes hash and encrypt: files read at once decrypt on every
        // core, and the runtime goes on fetching meanwhile.
        let crypter = self.crypter.clone();
        tokio::task::spawn_blocking(move || open_content(&crypter, &info, sealed))
            .await
            .expect("decryption does not panic")
    }

    /// Small contents are read through windows of their pack: the files of a directory were
    /// written one after the other into the same pack, so one read serves the next ones too.
    async fn read_through_windows(
        &self,
        pack: &Arc<str>,
        offset: u64,
        length: u64,
    ) -> Result<Vec<u8>, Error> {
        let (first, last) = (offset / WINDOW, (offset + length - 1) / WINDOW);
        let mut parts = Vec::new();
        for w in first..=last {
            let cached = {
                let windows = self.windows.lock().unwrap();
                windows
                    .iter()
                    .find(|(k, _)| k.0 == *pack && k.1 == w)
                    .map(|(_, b)| b.clone())
            };
            let bytes = match cached {
                Some(b) => b,
                None => {
                    let bytes = match self.blobs.get_range(pack, w * WINDOW, WINDOW).await {
                        Ok(b) => b,
                        // The pack's last window is shorter than a window: the content alone.
                        Err(Error::Corrupt { .. }) => {
                            return Ok(self.blobs.get_range(pack, offset, length).await?.into());
                        }
                        Err(e) => return Err(e),
                    };
                    let mut windows = self.windows.lock().unwrap();
                    windows.retain(|(k, _)| !(k.0 == *pack && k.1 == w));
                    windows.push(((pack.clone(), w), bytes.clone()));
                    if windows.len() > WINDOWS_KEPT {
                        windows.remove(0);
                    }
                    bytes
                }
            };
            parts.push(bytes);
        }
        let mut out = Vec::with_capacity(length as usize);
        for (i, part) in parts.iter().enumerate() {
            let base = (first + i as u64) * WINDOW;
            let from = offset.max(base) - base;
            let to = (offset + length)
                .min(base + part.len() as u64)
                .saturating_sub(base);
            if from > to || to as usize > part.len() {
                return Err(Error::corrupt(
                    pack.as_ref(),
                    format!("{length} bytes at offset {offset} are past its end"),
                ));
            }
            out.extend_from_slice(&part[from as usize..to as usize]);
        }
        if out.len() as u64 != length {
            return Err(Error::corrupt(
                pack.as_ref(),
                format!("{length} bytes at offset {offset} are past its end"),
            ));
        }
        Ok(out)
    }

    /// Decrypts one content's stored bytes, as read from its pack.
    pub fn open_content(&self, info: &Info, sealed: Vec<u8>) -> Result<Vec<u8>, Error> {
        open_content(&self.crypter, info, sealed)
    }

    /// Stores `data` as a content (once: a content already in the repository is not written
    /// again) and returns its ID. Metadata contents (with a prefix) are compressed as kopia
    /// compresses them.
    pub async fn write(&self, data: &[u8], prefix: Option<u8>) -> Result<ContentId, Error> {
        Ok(self.store(data.to_vec(), prefix).await?.0)
    }

    /// `write` for a chunk the caller owns: it is hashed and encrypted in its own buffer, which
    /// comes back empty for the next chunk, so a file in flight holds one chunk in memory.
    pub async fn store(
        &self,
        chunk: Vec<u8>,
        prefix: Option<u8>,
    ) -> Result<(ContentId, Vec<u8>), Error> {
        // Large chunks go to the blocking pool, so that files read at once hash on every core.
        let off_thread = chunk.len() >= OFF_THREAD;
        let (id, chunk) = if off_thread {
            let crypter = self.crypter.clone();
            tokio::task::spawn_blocking(move || {
                (ContentId::new(prefix, crypter.hash(&chunk)), chunk)
            })
            .await
            .expect("hashing does not panic")
        } else {
            (ContentId::new(prefix, self.crypter.hash(&chunk)), chunk)
        };
        let previous = self.committed.read().unwrap().get(&id).cloned();
        if previous.as_ref().is_some_and(|i| !i.deleted)
            || self.pending.lock().unwrap().unindexed.contains_key(&id)
        {
            return Ok((id, recycled(chunk)));
        }
        let original_length = chunk.len() as u32;
        let (sealed, header) = if off_thread {
            let crypter = self.crypter.clone();
            tokio::task::spawn_blocking(move || seal_content(&crypter, &id, chunk))
                .await
                .expect("encryption does not panic")
        } else {
            seal_content(&self.crypter, &id, chunk)
        };
        let now = jiff::Timestamp::now().as_second();
        let timestamp = previous.map_or(now, |p| now.max(p.timestamp + 1));
        let class = if prefix.is_some() { b'q' } else { b'p' };
        let mut slot = None;
        let full = loop {
            // The lock is held in this block only; a slot is awaited outside it.
            {
                let mut guard = self.pending.lock().unwrap();
                let pending = &mut *guard;
                if pending.unindexed.contains_key(&id) {
                    return Ok((id, sealed.into_buffer()));
                }
                // A pack is closed before a content would take it past the maximum size, and a
                // new one needs a slot: while none is free, this waits for an upload to end.
                let needs_new = pending.open.get(&class).is_none_or(|p| {
                    p.data.len() > PREAMBLE
                        && p.data.len() + sealed.stored_len() > self.max_pack_size
                });
                if !needs_new || slot.is_some() {
                    // A slot taken while another writer opened the pack goes back here.
                    let slot = slot.take();
                    let full = if needs_new {
                        let slot = slot.expect("a slot is held");
                        let session = self.session(pending);
                        let capacity = self.max_pack_size.max(sealed.stored_len() + PREAMBLE);
                        pending
                            .open
                            .insert(class, new_pack(class, &session, capacity, slot))
                    } else {
                        None
                    };
                    let pack = pending.open.get_mut(&class).expect("open");
                    let info = Info {
                        id,
                        pack: pack.id.clone(),
                        offset: pack.data.len() as u32,
                        packed_length: sealed.stored_len() as u32,
                        original_length,
                        timestamp,
                        deleted: false,
                        compression: header,
                        format_version: self.format_version,
                        encryption_key_id: 0,
                    };
                    sealed.append_to(&mut pack.data);
                    self.stored_bytes.fetch_add(
                        sealed.stored_len() as u64,
                        std::sync::atomic::Ordering::Relaxed,
                    );
                    pack.infos.push(info.clone());
                    pending.unindexed.insert(id, info);
                    break full;
                }
            }
            slot = Some(
                self.pack_slots
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("never closed"),
            );
        };
        if let Some(pack) = full {
            self.upload(pack).await?;
        }
        Ok((id, sealed.into_buffer()))
    }

    /// The session this writer's packs are named after; its marker is written with the first.
    fn session(&self, pending: &mut Pending) -> String {
        pending
            .session
            .get_or_insert_with(|| new_session_id(jiff::Timestamp::now()))
            .clone()
    }

    async fn write_session_marker(&self, session: &str) -> Result<(), Error> {
        let mut marker = self.marker.lock().await;
        if marker.is_some() {
            return Ok(());
        }
        let now = jiff::Timestamp::now().to_string();
        let info = serde_json::to_vec(&SessionInfo {
            id: session,
            start_time: now.clone(),
            checkpoint_time: now,
            username: &self.identity.0,
            hostname: &self.identity.1,
        })
        .expect("JSON");
        let (id, sealed) = seal_blob(&self.crypter, &info, "s", session);
        self.blobs.put(&id, sealed).await?;
        *marker = Some(id);
        Ok(())
    }

    /// Finishes `pack` and uploads it in the background; its slot is freed once it is stored.
    async fn upload(&self, pack: OpenPack) -> Result<(), Error> {
        let session = self
            .pending
            .lock()
            .unwrap()
            .session
            .clone()
            .expect("a pack has a session");
        self.write_session_marker(&session).await?;
        let (id, bytes, slot) = finish_pack(&self.crypter, pack);
        let blobs = self.blobs.clone();
        let mut uploads = self.uploads.lock().await;
        // Reap finished uploads so their errors surface early.
        while let Some(done) = uploads.try_join_next() {
            done.expect("an upload task does not panic")?;
        }
        uploads.spawn(async move {
            let _slot = slot;
            blobs.put(&id, bytes).await
        });
        Ok(())
    }

    /// Writes every open pack and then one index blob naming all contents written since the last
    /// flush: after this, kopia and Velero see them.
    pub async fn flush(&self) -> Result<(), Error> {
        let open: Vec<OpenPack> = {
            let mut pending = self.pending.lock().unwrap();
            pending.open.drain().map(|(_, p)| p).collect()
        };
        for pack in open {
            self.upload(pack).await?;
        }
        {
            let mut uploads = self.uploads.lock().await;
            while let Some(done) = uploads.join_next().await {
                done.expect("an upload task does not panic")?;
            }
        }
        let (infos, session) = {
            let mut pending = self.pending.lock().unwrap();
            let mut infos: Vec<Info> = pending.unindexed.values().cloned().collect();
            infos.extend(pending.deletions.iter().cloned());
            let session = self.session(&mut pending);
            (infos, session)
        };
        if infos.is_empty() {
            return Ok(());
        }
        let plain = index::build(&infos.iter().collect::<Vec<_>>());
        let (unprefixed, sealed) = seal_blob(&self.crypter, &plain, "", &format!("{session}-c1"));
        let state = EpochState::load(&self.blobs).await?;
        self.blobs
            .put(&format!("xn{}_{unprefixed}", state.write_epoch), sealed)
            .await?;
        if state.should_advance(&self.epoch) {
            state.advance(&self.blobs).await?;
        }
        if let Some(marker) = self.marker.lock().await.take() {
            self.blobs.delete(&marker).await?;
        }
        let mut committed = self.committed.write().unwrap();
        let mut pending = self.pending.lock().unwrap();
        for info in infos {
            pending.unindexed.remove(&info.id);
            index::merge(&mut committed, info);
        }
        pending.deletions.clear();
        pending.session = None;
        Ok(())
    }
}

/// A content's bytes from what its pack stores: decrypted under its ID, decompressed, and checked
/// against its length and its ID's hash.
fn open_content(crypter: &ContentCrypter, info: &Info, sealed: Vec<u8>) -> Result<Vec<u8>, Error> {
    let what = || format!("{} (content {})", info.pack, info.id);
    if info.encryption_key_id != 0 {
        return Err(Error::Unsupported(format!(
            "{}: encryption key {}",
            what(),
            info.encryption_key_id
        )));
    }
    let plain = crypter
        .decrypt_in_place(sealed, info.id.hash())
        .ok_or_else(|| Error::corrupt(what(), "does not decrypt under its ID"))?;
    let data = if info.compression == compression::NONE {
        plain
    } else {
        compression::decompress(
            info.compression,
            &plain,
            info.original_length as usize,
            &what(),
        )?
    };
    if data.len() != info.original_length as usize {
        return Err(Error::corrupt(
            what(),
            format!(
                "{} bytes, its index says {}",
                data.len(),
                info.original_length
            ),
        ));
    }
    if crypter.hash(&data) != *info.id.hash() {
        return Err(Error::corrupt(what(), "its bytes do not hash to its ID"));
    }
    Ok(data)
}

/// A content's stored bytes: compressed as kopia compresses metadata when that is smaller, then
/// encrypted under its ID.
fn seal_content(crypter: &ContentCrypter, id: &ContentId, data: Vec<u8>) -> (Sealed, HeaderId) {
    if id.prefix().is_some() {
        let packed = compression::compress_zstd_fastest(&data);
        if packed.len() < data.len() {
            return (
                crypter.seal_in_place(packed, id.hash()),
                compression::ZSTD_FASTEST,
            );
        }
    }
    (crypter.seal_in_place(data, id.hash()), compression::NONE)
}

/// A chunk's buffer, emptied for the next one.
fn recycled(mut chunk: Vec<u8>) -> Vec<u8> {
    chunk.clear();
    chunk
}

/// A new pack with room for `capacity` bytes of contents and its ending, so that filling it never
/// copies it.
fn new_pack(class: u8, session: &str, capacity: usize, slot: OwnedSemaphorePermit) -> OpenPack {
    let mut name = [0u8; 16];
    crate::random(&mut name);
    let mut data = Vec::with_capacity(capacity + PADDING_UNIT + (64 << 10));
    data.resize(PREAMBLE, 0);
    crate::random(&mut data);
    OpenPack {
        id: format!("{}{}-{session}", class as char, hex::encode(name)).into(),
        data,
        infos: Vec::new(),
        slot,
    }
}

/// Pads the pack to 4 KiB with random bytes, then appends its local index (encrypted under its own
/// hash) and the postamble that locates it, as `appendPackFileIndexRecoveryData` does.
fn finish_pack(crypter: &ContentCrypter, pack: OpenPack) -> (String, Bytes, OwnedSemaphorePermit) {
    let mut data = pack.data;
    let missing = PADDING_UNIT - data.len() % PADDING_UNIT;
    let mut padding = vec![0u8; missing];
    crate::random(&mut padding);
    data.extend_from_slice(&padding);
    let mut local = index::build(&pack.infos.iter().collect::<Vec<_>>());
    let mut suffix = [0u8; 32];
    crate::random(&mut suffix);
    local.extend_from_slice(&suffix);
    let iv = crypter.hash(&local);
    let sealed = crypter.encrypt(&local, &iv);
    let local_at = data.len();
    data.extend_from_slice(&sealed);
    data.extend_from_slice(&postamble(&iv, local_at as u32, sealed.len() as u32));
    (pack.id.to_string(), Bytes::from(data), pack.slot)
}

fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_uvarint(buf: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *buf = &buf[i + 1..];
            return Some(v);
        }
    }
    None
}

fn postamble(iv: &[u8], offset: u32, length: u32) -> Vec<u8> {
    let mut p = Vec::new();
    uvarint(&mut p, 1);
    uvarint(&mut p, iv.len() as u64);
    p.extend_from_slice(iv);
    uvarint(&mut p, u64::from(offset));
    uvarint(&mut p, u64::from(length));
    let crc = crc32fast::hash(&p);
    p.extend_from_slice(&crc.to_be_bytes());
    let n = p.len() as u8;
    p.push(n);
    p
}

/// The local index a pack carries at its end, read back (kopia's index recovery): for verifying
/// that a pack holds what the index says.
pub fn local_index(crypter: &ContentCrypter, pack: &str, data: &[u8]) -> Result<Vec<Info>, Error> {
    let bad = |r: &str| Error::corrupt(pack, format!("local index: {r}"));
    let n = *data.last().ok_or_else(|| bad("empty pack"))? as usize;
    let start = data
        .len()
        .checked_sub(1 + n)
        .filter(|_| n >= 5)
        .ok_or_else(|| bad("no postamble"))?;
    let body = &data[start..data.len() - 1];
    let (payload, crc) = body.split_at(body.len() - 4);
    if crc32fast::hash(payload).to_be_bytes() != crc {
        return Err(bad("postamble checksum"));
    }
    let mut fields = payload;
    let next = |fields: &mut &[u8]| read_uvarint(fields).ok_or_else(|| bad("postamble varint"));
    if next(&mut fields)? != 1 {
        return Err(bad("postamble version"));
    }
    let iv_len = next(&mut fields)? as usize;
    if iv_len > fields.len() {
        return Err(bad("postamble IV"));
    }
    let iv = fields[..iv_len].to_vec();
    fields = &fields[iv_len..];
    let offset = next(&mut fields)? as usize;
    let length = next(&mut fields)? as usize;
    let sealed = data
        .get(offset..offset.saturating_add(length))
        .ok_or_else(|| bad("beyond the pack"))?;
    if length < OVERHEAD {
        return Err(bad("too short"));
    }
    let plain = crypter
        .decrypt(sealed, &iv)
        .ok_or_else(|| bad("does not decrypt"))?;
    let mut infos = Vec::new();
    index::parse(&plain, pack, |i| infos.push(i))?;
    Ok(infos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_blob_ivs_are_read_from_their_ids() {
        let iv = blob_iv("xn0_00112233445566778899aabbccddeeff-s1234-c1").unwrap();
        assert_eq!(hex::encode(iv), "00112233445566778899aabbccddeeff");
        assert!(blob_iv("xn0_short-s1").is_none());
    }

    #[test]
    fn a_finished_pack_carries_a_local_index_that_reads_back() {
        let crypter = ContentCrypter::new(
            crate::crypto::HASH,
            crate::crypto::ENCRYPTION,
            &[1; 32],
            &[2; 32],
        )
        .unwrap();
        let slot = Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap();
        let mut pack = new_pack(b'p', "s0011", 1 << 20, slot);
        let data = b"hello";
        let id = ContentId::new(None, crypter.hash(data));
        let stored = crypter.encrypt(data, id.hash());
        pack.infos.push(Info {
            id,
            pack: pack.id.clone(),
            offset: pack.data.len() as u32,
            packed_length: stored.len() as u32,
            original_length: 5,
            timestamp: 1,
            deleted: false,
            compression: 0,
            format_version: 2,
            encryption_key_id: 0,
        });
        pack.data.extend_from_slice(&stored);
        let (name, bytes, _slot) = finish_pack(&crypter, pack);
        assert!(name.starts_with('p') && name.ends_with("-s0011"));
        let infos = local_index(&crypter, &name, &bytes).unwrap();
        assert_eq!(infos.len(), 1);
        assert_eq!(infos[0].id, id);
        assert!(local_index(&crypter, &name, &bytes[..bytes.len() - 3]).is_err());
    }
}

#[cfg(test)]
mod forged {
    use std::sync::Arc;

    use super::*;
    use crate::Repository;

    /// A repository holding one content, and that content's index entry.
    async fn one_content(dir: &std::path::Path) -> (Repository, Info) {
        std::fs::create_dir_all(dir).unwrap();
        let store = Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir).unwrap());
        let repo = Repository::create(store, object_store::path::Path::from("r"), "pw")
            .await
            .unwrap();
        let id = repo
            .contents()
            .write(b"the only content", None)
            .await
            .unwrap();
        repo.contents().flush().await.unwrap();
        let info = repo.contents().info(&id).unwrap();
        (repo, info)
    }

    /// Adds an index blob holding `info`, as a hostile writer with the keys could.
    async fn forge(repo: &Repository, info: Info) {
        let c = repo.contents();
        let (id, sealed) = seal_blob(&c.crypter, &index::build(&[&info]), "xn0_", "sforged-c1");
        c.blobs.put(&id, sealed).await.unwrap();
        c.refresh().await.unwrap();
    }

    #[tokio::test]
    async fn an_index_naming_bytes_outside_its_pack_is_an_error_naming_the_pack() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, info) = one_content(dir.path()).await;
        let mut beyond = info.clone();
        beyond.offset = 1 << 29;
        beyond.timestamp += 1;
        forge(&repo, beyond).await;
        let e = repo
            .contents()
            .read(&info.id)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("blob {}: ", info.pack)), "{e}");
    }

    #[tokio::test]
    async fn an_index_pointing_a_content_at_another_s_bytes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, info) = one_content(dir.path()).await;
        let other = repo
            .contents()
            .write(b"another content", None)
            .await
            .unwrap();
        repo.contents().flush().await.unwrap();
        let mut swapped = repo.contents().info(&other).unwrap();
        swapped.id = info.id;
        swapped.timestamp = info.timestamp + 1;
        forge(&repo, swapped).await;
        let e = repo
            .contents()
            .read(&info.id)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("does not decrypt under its ID"), "{e}");

        // Re-encrypted under the right key by someone who has it, the bytes still do not hash.
        let forged = repo
            .contents()
            .crypter
            .encrypt(b"another content", info.id.hash());
        let mut lying = info.clone();
        lying.original_length = 15;
        let e = repo
            .contents()
            .open_content(&lying, forged)
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("its bytes do not hash to its ID"), "{e}");
    }

    #[tokio::test]
    async fn a_truncated_pack_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, info) = one_content(dir.path()).await;
        let path = dir.path().join("r").join(&*info.pack);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..info.offset as usize + 10]).unwrap();
        let e = repo
            .contents()
            .read(&info.id)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("blob {}: ", info.pack)), "{e}");
    }
}
