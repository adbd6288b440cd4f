//! Snapshots of directory trees (`snapshot/`, `snapshot/snapshotfs`): directory objects (prefix
//! `k`) listing entries, file objects, and the snapshot manifest naming the root.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _, TryStreamExt as _};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt as _;

use crate::Error;
use crate::beneath::{self, Dir, Kind, Meta};
use crate::content::Contents;
use crate::object::{self, ObjectId, ObjectWriter};

/// Files read or written at once.
const FILES_AT_ONCE: usize = 4;
/// Files of a chunk or more read at once: each holds a chunk (up to 8 MiB) in memory, and two
/// already hash and encrypt on both of a small node's cores.
pub const LARGE_FILES_AT_ONCE: usize = 2;
/// The largest directory object ark reads: a million entries are ~200 MiB of JSON.
const DIRECTORY_LIMIT: usize = 512 << 20;
const READ_BUFFER: usize = 1 << 20;

/// Go's `os.FileMode` bits for setuid, setgid and sticky, which kopia stores as they are.
const GO_SETUID: u32 = 1 << 23;
const GO_SETGID: u32 = 1 << 22;
const GO_STICKY: u32 = 1 << 20;

pub fn mode_to_kopia(unix: u32) -> u32 {
    let mut m = unix & 0o777;
    if unix & 0o4000 != 0 {
        m |= GO_SETUID;
    }
    if unix & 0o2000 != 0 {
        m |= GO_SETGID;
    }
    if unix & 0o1000 != 0 {
        m |= GO_STICKY;
    }
    m
}

pub fn mode_to_unix(kopia: u32) -> u32 {
    let mut m = kopia & 0o777;
    if kopia & GO_SETUID != 0 {
        m |= 0o4000;
    }
    if kopia & GO_SETGID != 0 {
        m |= 0o2000;
    }
    if kopia & GO_STICKY != 0 {
        m |= 0o1000;
    }
    m
}

/// A time as kopia stores it: nanoseconds, written as RFC 3339 in UTC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time(pub i128);

impl Time {
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }

    pub fn timestamp(&self) -> jiff::Timestamp {
        jiff::Timestamp::from_nanosecond(self.0).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    pub fn now() -> Self {
        Time(jiff::Timestamp::now().as_nanosecond())
    }
}

impl Serialize for Time {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.timestamp())
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t: jiff::Timestamp = Deserialize::deserialize(d)?;
        Ok(Time(t.as_nanosecond()))
    }
}

/// The mode as kopia writes it: `"0"` and octal digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode(pub u32);

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("0{:o}", self.0))
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let digits = text
            .strip_prefix("0o")
            .or_else(|| text.strip_prefix('0'))
            .unwrap_or(&text);
        let value = if digits.is_empty() {
            Ok(0)
        } else {
            u32::from_str_radix(digits, 8)
        };
        value
            .map(Mode)
            .map_err(|_| serde::de::Error::custom(format!("mode {text:?}")))
    }
}

fn zero_u32(v: &u32) -> bool {
    *v == 0
}

fn zero_i64(v: &i64) -> bool {
    *v == 0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryType {
    #[serde(rename = "f")]
    File,
    #[serde(rename = "d")]
    Directory,
    #[serde(rename = "s")]
    Symlink,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectorySummary {
    #[serde(rename = "size")]
    pub total_file_size: i64,
    #[serde(rename = "files")]
    pub total_file_count: i64,
    #[serde(rename = "symlinks")]
    pub total_symlink_count: i64,
    #[serde(rename = "dirs")]
    pub total_dir_count: i64,
    #[serde(rename = "maxTime")]
    pub max_mod_time: Time,
    #[serde(
        rename = "incomplete",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub incomplete_reason: String,
    #[serde(rename = "numFailed", default)]
    pub fatal_error_count: i64,
    #[serde(rename = "numIgnoredErrors", default, skip_serializing_if = "zero_i64")]
    pub ignored_error_count: i64,
    #[serde(rename = "errors", default, skip_serializing_if = "Vec::is_empty")]
    pub failed_entries: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DirEntry {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "type")]
    pub entry_type: EntryType,
    #[serde(rename = "mode", default, skip_serializing_if = "mode_is_zero")]
    pub mode: Mode,
    #[serde(rename = "size", default, skip_serializing_if = "zero_i64")]
    pub size: i64,
    #[serde(rename = "mtime", default, skip_serializing_if = "Time::is_zero")]
    pub mtime: Time,
    #[serde(default, skip_serializing_if = "zero_u32")]
    pub uid: u32,
    #[serde(default, skip_serializing_if = "zero_u32")]
    pub gid: u32,
    #[serde(rename = "obj")]
    pub object: ObjectId,
    #[serde(rename = "summ", default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<DirectorySummary>,
}

fn mode_is_zero(m: &Mode) -> bool {
    m.0 == 0
}

/// Go writes a nil slice (an empty directory's entries) as `null`.
fn null_as_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_default())
}

#[derive(Serialize, Deserialize)]
struct DirManifest {
    stream: String,
    #[serde(deserialize_with = "null_as_empty")]
    entries: Vec<DirEntry>,
    summary: Option<DirectorySummary>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceInfo {
    pub host: String,
    #[serde(rename = "userName")]
    pub user_name: String,
    pub path: String,
}

impl std::fmt::Display for SourceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}:{}", self.user_name, self.host, self.path)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    #[serde(rename = "totalSize", default)]
    pub total_file_size: i64,
    #[serde(rename = "excludedTotalSize", default)]
    pub excluded_total_file_size: i64,
    #[serde(rename = "fileCount", default)]
    pub total_file_count: i32,
    #[serde(rename = "cachedFiles", default)]
    pub cached_files: i32,
    #[serde(rename = "nonCachedFiles", default)]
    pub non_cached_files: i32,
    #[serde(rename = "dirCount", default)]
    pub total_directory_count: i32,
    #[serde(rename = "excludedFileCount", default)]
    pub excluded_file_count: i32,
    #[serde(rename = "excludedDirCount", default)]
    pub excluded_dir_count: i32,
    #[serde(rename = "ignoredErrorCount", default)]
    pub ignored_error_count: i32,
    #[serde(rename = "errorCount", default)]
    pub error_count: i32,
}

/// A snapshot manifest's data (`snapshot.Manifest`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotManifest {
    #[serde(default)]
    pub id: String,
    pub source: SourceInfo,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "startTime")]
    pub start_time: Time,
    #[serde(rename = "endTime")]
    pub end_time: Time,
    #[serde(default)]
    pub stats: Stats,
    #[serde(
        rename = "incomplete",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub incomplete_reason: String,
    #[serde(rename = "rootEntry")]
    pub root_entry: Option<DirEntry>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<String>,
}

impl SnapshotManifest {
    /// The labels kopia finds a snapshot by: type, source, and the tags.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.tags.clone();
        labels.insert("type".into(), "snapshot".into());
        labels.insert("hostname".into(), self.source.host.clone());
        labels.insert("username".into(), self.source.user_name.clone());
        labels.insert("path".into(), self.source.path.clone());
        labels
    }
}

/// Reads one directory object's entries.
pub async fn read_directory(contents: &Contents, id: ObjectId) -> Result<Vec<DirEntry>, Error> {
    if id.content.prefix() != Some(b'k') {
        return Err(Error::Invalid(format!("object {id} is not a directory")));
    }
    let json = object::read_all(contents, id, DIRECTORY_LIMIT).await?;
    parse_directory(&json, &format!("directory {id}"))
}

/// A directory object's entries, from its JSON (`{"stream":"kopia:directory","entries":[…]}`);
/// `what` names it in errors.
pub fn parse_directory(json: &[u8], what: &str) -> Result<Vec<DirEntry>, Error> {
    let dir: DirManifest =
        serde_json::from_slice(json).map_err(|e| Error::Invalid(format!("{what}: {e}")))?;
    if dir.stream != "kopia:directory" {
        return Err(Error::Invalid(format!("{what}: stream {:?}", dir.stream)));
    }
    Ok(dir.entries)
}

/// What one snapshot upload did.
#[derive(Debug, Default)]
pub struct UploadCounts {
    pub files: AtomicU64,
    pub cached_files: AtomicU64,
    /// Bytes read from files.
    pub bytes: AtomicU64,
    /// Bytes of unchanged files taken from the parent without being read.
    pub cached_bytes: AtomicU64,
    pub ignored: AtomicU64,
}

/// Walks and uploads a directory tree.
pub struct Uploader<'a> {
    contents: &'a Contents,
    pub counts: std::sync::Arc<UploadCounts>,
    large_files: tokio::sync::Semaphore,
    /// Entries of one directory read at once.
    files_at_once: usize,
}

/// Entries of a directory handled at once: as asked, or ark's default for zero.
pub fn files_at_once(asked: usize) -> usize {
    if asked == 0 { FILES_AT_ONCE } else { asked }
}

/// The blocks a sparse write looks at: one of zeros is left a hole.
const SPARSE_BLOCK: u64 = 4096;

/// Writes `chunk` at `offset` of `file`, leaving out the blocks (aligned on the file) that are
/// all zeros; the file's length is set once it is whole.
fn write_sparse(file: &std::fs::File, offset: u64, chunk: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt as _;
    let mut at = 0usize;
    while at < chunk.len() {
        let position = offset + at as u64;
        let to_boundary = (SPARSE_BLOCK - position % SPARSE_BLOCK) as usize;
        let piece = &chunk[at..(at + to_boundary).min(chunk.len())];
        if piece.iter().any(|b| *b != 0) {
            file.write_all_at(piece, position)?;
        }
        at += piece.len();
    }
    Ok(())
}

fn name_of(name: &OsStr) -> String {
    String::from_utf8_lossy(name.as_bytes()).into_owned()
}

fn entry_of(name: String, entry_type: EntryType, meta: &Meta, object: ObjectId) -> DirEntry {
    DirEntry {
        name,
        entry_type,
        mode: Mode(mode_to_kopia(meta.mode)),
        size: if entry_type == EntryType::Directory {
            0
        } else {
            meta.size as i64
        },
        mtime: Time(meta.mtime),
        uid: meta.uid,
        gid: meta.gid,
        object,
        summary: None,
    }
}

impl<'c> Uploader<'c> {
    pub fn new(contents: &'c Contents, counts: std::sync::Arc<UploadCounts>) -> Self {
        Uploader {
            contents,
            counts,
            large_files: tokio::sync::Semaphore::new(LARGE_FILES_AT_ONCE),
            files_at_once: FILES_AT_ONCE,
        }
    }

    /// Reads `asked` entries of a directory at once (zero: the default).
    pub fn with_files_at_once(mut self, asked: usize) -> Self {
        self.files_at_once = files_at_once(asked);
        self
    }

    /// Uploads the tree at `path`, read through handles beneath it ([`Dir`]); `parent` is its
    /// root directory's entries in a previous snapshot, whose unchanged files (same size, time,
    /// mode and owner) are taken without being read.
    pub async fn tree(&self, path: &Path, parent: Option<&[DirEntry]>) -> Result<DirEntry, Error> {
        let root = Dir::root(path)?;
        let name = path.file_name().map(name_of).unwrap_or_default();
        self.directory(root, name, parent).await
    }

    /// Uploads directory `dir`, named `name` in its parent.
    fn directory<'a>(
        &'a self,
        dir: Dir,
        name: String,
        parent: Option<&'a [DirEntry]>,
    ) -> BoxFuture<'a, Result<DirEntry, Error>> {
        async move {
            let meta = dir.meta()?;
            let children = dir.entries()?;
            // Each child's entry in the previous snapshot, found by name once per directory: a
            // search of the list per child would cost the square of a large directory's size.
            let previous: HashMap<&str, &DirEntry> = (parent.unwrap_or_default().iter())
                .map(|e| (e.name.as_str(), e))
                .collect();
            let (dir, previous) = (&dir, &previous);
            let entries: Vec<Option<DirEntry>> = futures::stream::iter(children)
                .map(|(child, meta)| async move {
                    let name = name_of(&child);
                    let before = previous.get(name.as_str()).copied();
                    self.child(dir, &child, name, meta, before).await
                })
                .buffered(self.files_at_once)
                .try_collect()
                .await?;
            let entries: Vec<DirEntry> = entries.into_iter().flatten().collect();
            let (id, summary) = write_directory(self.contents, entries, Time(meta.mtime)).await?;
            let mut entry = entry_of(name, EntryType::Directory, &meta, id);
            entry.summary = Some(summary);
            Ok(entry)
        }
        .boxed()
    }

    /// Entry `child` of `dir`, `meta` its metadata as listed, `previous` its entry in the
    /// previous snapshot; `None` for what is not kept (of a type Velero's policy ignores).
    async fn child(
        &self,
        dir: &Dir,
        child: &OsStr,
        name: String,
        meta: Meta,
        previous: Option<&DirEntry>,
    ) -> Result<Option<DirEntry>, Error> {
        match meta.kind {
            Kind::Directory => {
                let previous = match previous {
                    Some(p) if p.entry_type == EntryType::Directory => {
                        Some(read_directory(self.contents, p.object).await?)
                    }
                    _ => None,
                };
                let opened = dir.open_dir(child)?;
                self.directory(opened, name, previous.as_deref())
                    .await
                    .map(Some)
            }
            Kind::Symlink => {
                let target = dir.read_link(child)?;
                let mut w = ObjectWriter::new(self.contents, None);
                w.write(target.as_bytes()).await?;
                let id = w.finish().await?;
                Ok(Some(entry_of(name, EntryType::Symlink, &meta, id)))
            }
            Kind::File => {
                let unchanged = previous.filter(|p| {
                    p.entry_type == EntryType::File
                        && p.size == meta.size as i64
                        && p.mtime == Time(meta.mtime)
                        && p.mode == Mode(mode_to_kopia(meta.mode))
                        && p.uid == meta.uid
                        && p.gid == meta.gid
                });
                self.counts.files.fetch_add(1, Ordering::Relaxed);
                if let Some(p) = unchanged {
                    self.counts.cached_files.fetch_add(1, Ordering::Relaxed);
                    self.counts
                        .cached_bytes
                        .fetch_add(meta.size, Ordering::Relaxed);
                    return Ok(Some(entry_of(name, EntryType::File, &meta, p.object)));
                }
                let (id, size) = self.file(dir, child, meta.size).await?;
                let mut entry = entry_of(name, EntryType::File, &meta, id);
                entry.size = size as i64;
                Ok(Some(entry))
            }
            Kind::Other => {
                // Sockets, pipes and devices: Velero's policy ignores unknown types.
                self.counts.ignored.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
        }
    }

    /// File `name` of `dir`, listed with `length` bytes: its object and the bytes read.
    async fn file(&self, dir: &Dir, name: &OsStr, length: u64) -> Result<(ObjectId, u64), Error> {
        let path = dir.shown(name);
        let mut writer = ObjectWriter::new(self.contents, None);
        if length < READ_BUFFER as u64 {
            // A small file in one read: most files of a volume are, and a buffer of 1 MiB each
            // would cost more than the file.
            let mut file = dir.open_file(name)?;
            let mut bytes = Vec::with_capacity(length as usize);
            std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| Error::io(&path, e))?;
            writer.write(&bytes).await?;
            self.counts
                .bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            return Ok((writer.finish().await?, bytes.len() as u64));
        }
        let _turn = self.large_files.acquire().await.expect("never closed");
        let file = dir.open_file(name)?;
        let size = write_read(&mut writer, file, &path, &self.counts.bytes).await?;
        Ok((writer.finish().await?, size))
    }
}

/// Writes everything `file` (`shown` in errors) reads into `writer`, a buffer at a time, counting
/// the bytes into `counted` as they are read. The bytes read.
async fn write_read(
    writer: &mut ObjectWriter<'_>,
    file: std::fs::File,
    shown: &Path,
    counted: &AtomicU64,
) -> Result<u64, Error> {
    let mut file = tokio::fs::File::from_std(file);
    let mut buffer = vec![0u8; READ_BUFFER];
    let mut size = 0u64;
    loop {
        let n = file
            .read(&mut buffer)
            .await
            .map_err(|e| Error::io(shown, e))?;
        if n == 0 {
            return Ok(size);
        }
        writer.write(&buffer[..n]).await?;
        size += n as u64;
        counted.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A block device as Velero's uploader snapshots a block volume (`getLocalBlockEntry`: kopia's
/// virtual directory holding one streaming file, both named as the device's path in its pod):
/// every byte read, as a device has no time to find it unchanged by (chunks the repository holds
/// already are not stored again). The directory's entry.
pub async fn upload_device(
    contents: &Contents,
    device: std::fs::File,
    name: &str,
    counts: &UploadCounts,
) -> Result<DirEntry, Error> {
    let mut writer = ObjectWriter::new(contents, None);
    let size = write_read(&mut writer, device, Path::new(name), &counts.bytes).await?;
    counts.files.fetch_add(1, Ordering::Relaxed);
    let now = Time::now();
    // kopia's virtual entries: read, write and execute for all, owned by nobody in particular.
    let virtual_entry = |entry_type, object| DirEntry {
        name: name.to_string(),
        entry_type,
        mode: Mode(0o777),
        size: 0,
        mtime: now,
        uid: 0,
        gid: 0,
        object,
        summary: None,
    };
    let file = DirEntry {
        size: size as i64,
        ..virtual_entry(EntryType::File, writer.finish().await?)
    };
    let (id, summary) = write_directory(contents, vec![file], now).await?;
    Ok(DirEntry {
        summary: Some(summary),
        ..virtual_entry(EntryType::Directory, id)
    })
}

/// Writes the snapshot of a block device (`root`, as [`upload_device`] makes it and Velero's
/// uploader does) into `device` from its first byte, as Velero's `BlockOutput` does, and flushes
/// it. A snapshot of another shape, or larger than the device, is refused before anything is
/// written. The bytes written.
pub async fn restore_device(
    contents: &Contents,
    root: &DirEntry,
    device: &std::fs::File,
    counts: &RestoreCounts,
) -> Result<u64, Error> {
    use std::io::Seek as _;
    use std::os::unix::fs::FileExt as _;
    let not_a_device = |what: String| {
        Error::Invalid(format!(
            "the snapshot is not of a block volume (one file in its root directory): {what}"
        ))
    };
    if root.entry_type != EntryType::Directory {
        return Err(not_a_device(format!("its root is a {:?}", root.entry_type)));
    }
    let children = read_directory(contents, root.object).await?;
    let file = match children.as_slice() {
        [file] if file.entry_type == EntryType::File => file,
        [other] => {
            return Err(not_a_device(format!(
                "its root holds a {:?}",
                other.entry_type
            )));
        }
        _ => {
            return Err(not_a_device(format!(
                "its root holds {} entries",
                children.len()
            )));
        }
    };
    let shown = Path::new("the block device");
    let capacity = (&*device)
        .seek(std::io::SeekFrom::End(0))
        .map_err(|e| Error::io(shown, e))?;
    if file.size < 0 || file.size as u64 > capacity {
        return Err(Error::Invalid(format!(
            "the snapshot holds {} bytes, more than the block device's {capacity}",
            file.size
        )));
    }
    let mut offset = 0u64;
    let written = object::read_into(contents, file.object, &mut |chunk| {
        device
            .write_all_at(chunk, offset)
            .map_err(|e| Error::io(shown, e))?;
        offset += chunk.len() as u64;
        counts
            .bytes
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        Ok(())
    })
    .await?;
    device.sync_all().map_err(|e| Error::io(shown, e))?;
    if written != file.size as u64 {
        return Err(Error::Invalid(format!(
            "object {} holds {written} bytes, its entry says {}",
            file.object, file.size
        )));
    }
    counts.files.fetch_add(1, Ordering::Relaxed);
    Ok(written)
}

/// Writes a directory object as kopia's `DirManifestBuilder` builds it: directories first, then
/// by name, with the summary of the whole subtree.
pub async fn write_directory(
    contents: &Contents,
    mut entries: Vec<DirEntry>,
    dir_mtime: Time,
) -> Result<(ObjectId, DirectorySummary), Error> {
    let mut s = DirectorySummary::default();
    for e in &entries {
        s.max_mod_time = s.max_mod_time.max(e.mtime);
        match e.entry_type {
            EntryType::Symlink => s.total_symlink_count += 1,
            EntryType::File => {
                s.total_file_count += 1;
                s.total_file_size += e.size;
            }
            EntryType::Directory => {
                if let Some(c) = &e.summary {
                    s.total_file_count += c.total_file_count;
                    s.total_file_size += c.total_file_size;
                    s.total_dir_count += c.total_dir_count;
                    s.fatal_error_count += c.fatal_error_count;
                    s.ignored_error_count += c.ignored_error_count;
                    s.max_mod_time = s.max_mod_time.max(c.max_mod_time);
                }
            }
        }
    }
    s.total_dir_count += 1;
    if entries.is_empty() {
        s.max_mod_time = dir_mtime;
    }
    entries.sort_by(|a, b| {
        let (ad, bd) = (
            a.entry_type == EntryType::Directory,
            b.entry_type == EntryType::Directory,
        );
        bd.cmp(&ad)
            .then_with(|| a.name.as_bytes().cmp(b.name.as_bytes()))
    });
    let mut json = serde_json::to_vec(&DirManifest {
        stream: "kopia:directory".into(),
        entries,
        summary: Some(s.clone()),
    })
    .expect("JSON");
    json.push(b'\n');
    let mut w = ObjectWriter::new(contents, Some(b'k'));
    w.write(&json).await?;
    Ok((w.finish().await?, s))
}

/// Is `name` one entry of a directory, and nothing more? A name from a repository must not
/// climb out of the restore target or name it.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

/// What a restore wrote.
#[derive(Debug, Default)]
pub struct RestoreCounts {
    pub files: AtomicU64,
    pub directories: AtomicU64,
    pub symlinks: AtomicU64,
    pub bytes: AtomicU64,
}

/// Writes snapshot entries to the local disk. Entries are written below `target` only: names are
/// checked, and a path that is a symlink on disk is never followed.
pub struct Restorer<'a> {
    pub contents: &'a Contents,
    pub counts: &'a RestoreCounts,
    /// Set owners (only when running as root).
    pub owners: bool,
    /// Files of a chunk or more written at once (see `LARGE_FILES_AT_ONCE`).
    pub large_files: tokio::sync::Semaphore,
    /// Blocks of zeros left as holes.
    pub sparse: bool,
    /// Entries of one directory written at once.
    pub files_at_once: usize,
}

impl Restorer<'_> {
    /// Restores `entry` (a file, symlink or directory) as `target`: a directory's entries are
    /// written through handles beneath it ([`Dir`]); `target`'s parent is taken as it is.
    pub async fn entry(&self, entry: &DirEntry, target: &Path) -> Result<(), Error> {
        if entry.entry_type == EntryType::Directory {
            match std::fs::create_dir(target) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(Error::io(target, e));
                }
                _ => {}
            }
            return self.directory(entry, Dir::root(target)?).await;
        }
        let (parent, name) = match (target.parent(), target.file_name()) {
            (Some(parent), Some(name)) => (parent, name),
            _ => {
                return Err(Error::Invalid(format!(
                    "{} names no file",
                    target.display()
                )));
            }
        };
        self.child(&Dir::root(parent)?, entry, name).await
    }

    /// Entry `entry` of `parent`, under `name`.
    async fn child(&self, parent: &Dir, entry: &DirEntry, name: &OsStr) -> Result<(), Error> {
        match entry.entry_type {
            EntryType::Directory => self.directory(entry, parent.make_dir(name, 0o700)?).await,
            EntryType::File => self.file(parent, entry, name).await,
            EntryType::Symlink => self.symlink(parent, entry, name).await,
        }
    }

    /// The owner to give what is written, when the restore sets owners.
    fn owner(&self, entry: &DirEntry) -> Option<(u32, u32)> {
        self.owners.then_some((entry.uid, entry.gid))
    }

    fn directory<'a>(&'a self, entry: &'a DirEntry, dir: Dir) -> BoxFuture<'a, Result<(), Error>> {
        async move {
            let children = read_directory(self.contents, entry.object).await?;
            let mut seen = std::collections::HashSet::new();
            for c in &children {
                if !is_plain_name(&c.name) || !seen.insert(c.name.as_str()) {
                    return Err(Error::Invalid(format!(
                        "directory {} holds the entry {:?}: not restored",
                        entry.object, c.name
                    )));
                }
            }
            let dir = &dir;
            // Owned entries: a stream of borrowed ones would make the future not `Send`.
            futures::stream::iter(children)
                .map(|c| async move { self.child(dir, &c, OsStr::new(&c.name)).await })
                .buffer_unordered(self.files_at_once)
                .try_collect::<()>()
                .await?;
            self.counts.directories.fetch_add(1, Ordering::Relaxed);
            // Its time last: writing its entries changed it.
            dir.set_meta(self.owner(entry), mode_to_unix(entry.mode.0), entry.mtime.0)
        }
        .boxed()
    }

    async fn file(&self, dir: &Dir, entry: &DirEntry, name: &OsStr) -> Result<(), Error> {
        let path = dir.shown(name);
        dir.clear(name)?;
        let _turn = if entry.size >= READ_BUFFER as i64 {
            Some(self.large_files.acquire().await.expect("never closed"))
        } else {
            None
        };
        let mut file = dir.create_file(name, 0o600)?;
        let mut offset = 0u64;
        let written = object::read_into(self.contents, entry.object, &mut |chunk| {
            let wrote = if self.sparse {
                write_sparse(&file, offset, chunk)
            } else {
                std::io::Write::write_all(&mut file, chunk)
            };
            offset += chunk.len() as u64;
            wrote.map_err(|e| Error::io(&path, e))
        })
        .await?;
        if self.sparse {
            // The holes at its end, if any, are the file's too.
            file.set_len(written).map_err(|e| Error::io(&path, e))?;
        }
        if written != entry.size as u64 {
            return Err(Error::Invalid(format!(
                "{}: object {} holds {written} bytes, its entry says {}",
                path.display(),
                entry.object,
                entry.size
            )));
        }
        let mode = mode_to_unix(entry.mode.0);
        beneath::set_meta(&file, &path, self.owner(entry), mode, entry.mtime.0)?;
        self.counts.files.fetch_add(1, Ordering::Relaxed);
        self.counts.bytes.fetch_add(written, Ordering::Relaxed);
        Ok(())
    }

    async fn symlink(&self, dir: &Dir, entry: &DirEntry, name: &OsStr) -> Result<(), Error> {
        let target = object::read_all(self.contents, entry.object, 64 << 10).await?;
        dir.clear(name)?;
        dir.symlink(OsStr::from_bytes(&target), name)?;
        dir.set_link_meta(name, self.owner(entry), entry.mtime.0)?;
        self.counts.symlinks.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_between_unix_and_go() {
        for m in [0o644, 0o755, 0o4755, 0o2750, 0o1777, 0o0] {
            assert_eq!(mode_to_unix(mode_to_kopia(m)), m);
        }
        assert_eq!(format!("0{:o}", mode_to_kopia(0o4755)), "040000755");
    }

    #[test]
    fn a_dir_entry_serialises_as_kopia_writes_it() {
        let e = DirEntry {
            name: "a b".into(),
            entry_type: EntryType::File,
            mode: Mode(0o644),
            size: 5,
            mtime: Time(1_700_000_000_123_000_000),
            uid: 0,
            gid: 7,
            object: ObjectId::parse("0123456789abcdef0123456789abcdef").unwrap(),
            summary: None,
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"name":"a b","type":"f","mode":"0644","size":5,"mtime":"2023-11-14T22:13:20.123Z","gid":7,"obj":"0123456789abcdef0123456789abcdef"}"#
        );
        let back: DirEntry = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn names_that_leave_the_target_are_not_plain() {
        for bad in ["", ".", "..", "a/b", "/etc", "a\0"] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
        assert!(is_plain_name("..a"));
        assert!(is_plain_name("a b\n"));
    }
}
