//! Unpacking a backup tarball into a scratch directory, refusing anything that could write outside
//! it or fill the disk: absolute paths, `..`, links and devices, oversized entries. Only the items
//! a restore reads are written (`resources/<gr>/namespaces/<ns>/<name>.json` and
//! `resources/<gr>/cluster/<name>.json`, and the copies of other versions than the preferred one
//! that a backup of every version holds, `resources/<gr>/<version>/...`): not the
//! preferred-version copies, which are the main copies again and would double the files created,
//! nor anything else a tarball holds. The preferred version's folder is made, empty: the folders
//! say which versions the backup holds, as Velero reads them.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use ark_storage::tarball::PREFERRED_VERSION_SUFFIX;
use tempfile::TempDir;

/// Bounds on what a tarball may unpack to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_entry_bytes: u64,
    /// Bytes the entries' headers announce, written or not: skipping an entry still decompresses
    /// it, so a refused entry counts too.
    pub max_total_bytes: u64,
    /// Entries of every kind, refused ones included.
    pub max_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entry_bytes: 64 << 20,
            max_total_bytes: crate::records::archive::MAX_TARBALL_BYTES,
            max_entries: 1_000_000,
        }
    }
}

pub struct Extracted {
    pub dir: TempDir,
    /// One line per refused entry, naming it and why (the first `MAX_LISTED`, the rest counted).
    pub rejected: crate::records::results::Result,
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the backup tarball is not a valid gzip tar: {0}")]
    Corrupt(std::io::Error),
    #[error("the backup tarball unpacks to more than {0} bytes")]
    TooLarge(u64),
    #[error("the backup tarball holds more than {0} entries")]
    TooManyEntries(u64),
    #[error("writing scratch files: {0}")]
    Io(std::io::Error),
}

/// The relative path an entry may be written to, or why it may not.
pub fn safe_relative_path(raw: &[u8]) -> Result<PathBuf, &'static str> {
    let text = std::str::from_utf8(raw).map_err(|_| "path is not UTF-8")?;
    if text.starts_with('/') {
        return Err("absolute path");
    }
    let mut out = PathBuf::new();
    for component in Path::new(text).components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err("path contains '..'"),
            Component::RootDir | Component::Prefix(_) => return Err("absolute path"),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("empty path");
    }
    Ok(out)
}

pub fn extract(tarball: File, scratch: &Path, limits: Limits) -> Result<Extracted, ExtractError> {
    let dir = tempfile::Builder::new()
        .prefix("restore-")
        .tempdir_in(scratch)
        .map_err(ExtractError::Io)?;
    let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(BufReader::new(tarball)));
    let mut rejected = crate::records::results::Result::default();
    let mut total = 0u64;
    let mut entries = 0u64;
    // Items come folder by folder: one create_dir_all per folder, not per item.
    let mut created_folder: Option<PathBuf> = None;
    let mut preferred_folders = std::collections::BTreeSet::new();
    for entry in archive.entries().map_err(ExtractError::Corrupt)? {
        let mut entry = entry.map_err(ExtractError::Corrupt)?;
        entries += 1;
        if entries > limits.max_entries {
            return Err(ExtractError::TooManyEntries(limits.max_entries));
        }
        total = total.saturating_add(entry.size());
        if total > limits.max_total_bytes {
            return Err(ExtractError::TooLarge(limits.max_total_bytes));
        }
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            rejected.add_general(format!(
                "tarball entry {shown:?}: {kind:?} entries (links, devices) are not restored"
            ));
            continue;
        }
        let relative = match safe_relative_path(&raw) {
            Ok(path) => path,
            Err(reason) => {
                rejected.add_general(format!("tarball entry {shown:?}: {reason}"));
                continue;
            }
        };
        // Safe paths are UTF-8; an item path has a fixed shape, so no item's file can be another
        // item's folder.
        let path = relative.to_str().unwrap_or_default();
        if ark_storage::tarball::parse_item_path(path).is_none() {
            match ark_storage::tarball::parse_version_path(path) {
                Some((item, folder)) if folder.ends_with(PREFERRED_VERSION_SUFFIX) => {
                    let folder = Path::new("resources")
                        .join(&item.group_resource)
                        .join(folder);
                    if preferred_folders.insert(folder.clone()) {
                        std::fs::create_dir_all(dir.path().join(folder))
                            .map_err(ExtractError::Io)?;
                    }
                    continue;
                }
                Some(_) => {}
                None => continue,
            }
        }
        if entry.size() > limits.max_entry_bytes {
            rejected.add_general(format!(
                "tarball entry {shown:?}: {} bytes, more than the {} allowed for one item",
                entry.size(),
                limits.max_entry_bytes
            ));
            continue;
        }
        let target = dir.path().join(&relative);
        if let Some(folder) = target.parent()
            && created_folder.as_deref() != Some(folder)
        {
            std::fs::create_dir_all(folder).map_err(ExtractError::Io)?;
            created_folder = Some(folder.to_path_buf());
        }
        let mut out = File::create(&target).map_err(ExtractError::Io)?;
        // The header's size is the tarball's word: read no more than it says, whatever follows.
        let size = entry.size();
        let mut limited = (&mut entry).take(limits.max_entry_bytes.min(size));
        std::io::copy(&mut limited, &mut out).map_err(ExtractError::Corrupt)?;
        out.flush().map_err(ExtractError::Io)?;
    }
    Ok(Extracted { dir, rejected })
}

/// The item files (`*.json`) directly in `dir` of an unpacked backup, sorted.
pub(crate) fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    files
}

/// The folders directly in `dir` of an unpacked backup, sorted by name.
pub(crate) fn child_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_escape_are_refused() {
        assert_eq!(
            safe_relative_path(b"resources/pods/namespaces/a/p.json").unwrap(),
            PathBuf::from("resources/pods/namespaces/a/p.json")
        );
        assert_eq!(
            safe_relative_path(b"./metadata/version").unwrap(),
            PathBuf::from("metadata/version")
        );
        assert_eq!(safe_relative_path(b"/etc/passwd"), Err("absolute path"));
        assert_eq!(
            safe_relative_path(b"resources/../../x"),
            Err("path contains '..'")
        );
        assert_eq!(safe_relative_path(b"."), Err("empty path"));
    }

    fn tarball(dir: &Path, build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> File {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        let tar = builder.into_inner().unwrap();
        let path = dir.join("backup.tar.gz");
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap();
        File::open(path).unwrap()
    }

    fn file_header(size: u64) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header
    }

    #[test]
    fn links_escapes_and_oversized_entries_are_named_and_skipped() {
        let scratch = tempfile::tempdir().unwrap();
        let path = tarball(scratch.path(), |b| {
            b.append_data(
                &mut file_header(2),
                "resources/configmaps/namespaces/a/ok.json",
                &b"{}"[..],
            )
            .unwrap();
            let mut link = tar::Header::new_gnu();
            link.set_entry_type(tar::EntryType::Symlink);
            link.set_size(0);
            b.append_link(&mut link, "resources/evil", "/etc/passwd")
                .unwrap();
            // tar::Builder refuses `..` itself; write the name into the header by hand.
            let mut escape = file_header(2);
            escape.as_gnu_mut().unwrap().name[..9].copy_from_slice(b"../x.json");
            escape.set_cksum();
            b.append(&escape, &b"{}"[..]).unwrap();
            b.append_data(
                &mut file_header(100),
                "resources/configmaps/namespaces/a/big.json",
                &[b' '; 100][..],
            )
            .unwrap();
            // Not an item a restore reads: passed over, not written.
            for other in [
                "metadata/version",
                "resources/configmaps/v1-preferredversion/namespaces/a/ok.json",
            ] {
                b.append_data(&mut file_header(2), other, &b"{}"[..])
                    .unwrap();
            }
        });
        let limits = Limits {
            max_entry_bytes: 50,
            max_total_bytes: 1000,
            max_entries: 10,
        };
        let extracted = extract(path, scratch.path(), limits).unwrap();
        assert!(
            extracted
                .dir
                .path()
                .join("resources/configmaps/namespaces/a/ok.json")
                .is_file()
        );
        assert_eq!(
            extracted.rejected.velero,
            [
                "tarball entry \"resources/evil\": Symlink entries (links, devices) are not restored",
                "tarball entry \"../x.json\": path contains '..'",
                "tarball entry \"resources/configmaps/namespaces/a/big.json\": 100 bytes, more than the 50 allowed for one item",
            ]
        );
        assert!(!scratch.path().join("x.json").exists());
        let written: Vec<_> = walk(extracted.dir.path());
        assert_eq!(written, ["resources/configmaps/namespaces/a/ok.json"]);
    }

    /// A backup of every version: the other versions' copies are written, the preferred
    /// version's are not (they are the main copies), but its folder is there to say it is.
    #[test]
    fn other_versions_copies_are_written_and_the_preferred_folder_made() {
        let scratch = tempfile::tempdir().unwrap();
        let path = tarball(scratch.path(), |b| {
            for path in [
                "resources/gauges.example.com/namespaces/a/g.json",
                "resources/gauges.example.com/v1-preferredversion/namespaces/a/g.json",
                "resources/gauges.example.com/v1beta1/namespaces/a/g.json",
                "resources/gauges.example.com/v1beta1/cluster/c.json",
            ] {
                b.append_data(&mut file_header(2), path, &b"{}"[..])
                    .unwrap();
            }
        });
        let extracted = extract(path, scratch.path(), Limits::default()).unwrap();
        assert_eq!(
            walk(extracted.dir.path()),
            [
                "resources/gauges.example.com/namespaces/a/g.json",
                "resources/gauges.example.com/v1beta1/cluster/c.json",
                "resources/gauges.example.com/v1beta1/namespaces/a/g.json",
            ]
        );
        let gauges = extracted.dir.path().join("resources/gauges.example.com");
        assert_eq!(
            child_dirs(&gauges),
            ["namespaces", "v1-preferredversion", "v1beta1"]
        );
    }

    /// The files under `dir`, relative to it.
    fn walk(dir: &Path) -> Vec<String> {
        let mut files = Vec::new();
        let mut folders = vec![dir.to_path_buf()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    files.push(path.strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
        files.sort();
        files
    }

    /// gzip allows a file of several members (pigz writes them, ark's backups of large items have
    /// them) and Velero's reader reads them all: every member's items are restored.
    #[test]
    fn a_tarball_of_several_gzip_members_is_extracted_in_full() {
        let scratch = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        for name in ["a", "b"] {
            let path = format!("resources/configmaps/namespaces/shop/{name}.json");
            builder
                .append_data(&mut file_header(2), path, &b"{}"[..])
                .unwrap();
        }
        let tar = builder.into_inner().unwrap();
        // The first member ends where entry b begins.
        let path = scratch.path().join("backup.tar.gz");
        let mut file = File::create(&path).unwrap();
        for part in [&tar[..1024], &tar[1024..]] {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(part).unwrap();
            file.write_all(&gz.finish().unwrap()).unwrap();
        }
        let extracted =
            extract(File::open(path).unwrap(), scratch.path(), Limits::default()).unwrap();
        assert_eq!(
            walk(extracted.dir.path()),
            [
                "resources/configmaps/namespaces/shop/a.json",
                "resources/configmaps/namespaces/shop/b.json"
            ]
        );
    }

    #[test]
    fn the_entry_count_is_bounded() {
        let scratch = tempfile::tempdir().unwrap();
        let build = |b: &mut tar::Builder<Vec<u8>>| {
            for name in ["a", "b", "c"] {
                let path = format!("resources/configmaps/cluster/{name}.json");
                b.append_data(&mut file_header(2), path, &b"{}"[..])
                    .unwrap();
            }
        };
        let limits = Limits {
            max_entry_bytes: 50,
            max_total_bytes: 1000,
            max_entries: 3,
        };
        let extracted = extract(tarball(scratch.path(), build), scratch.path(), limits).unwrap();
        assert_eq!(walk(extracted.dir.path()).len(), 3);
        let fewer = Limits {
            max_entries: 2,
            ..limits
        };
        assert!(matches!(
            extract(tarball(scratch.path(), build), scratch.path(), fewer),
            Err(ExtractError::TooManyEntries(2))
        ));
    }

    #[test]
    fn the_total_is_bounded_and_garbage_is_an_error() {
        let scratch = tempfile::tempdir().unwrap();
        let path = tarball(scratch.path(), |b| {
            for i in 0..5 {
                b.append_data(
                    &mut file_header(40),
                    format!("resources/configmaps/cluster/{i}.json"),
                    &[b' '; 40][..],
                )
                .unwrap();
            }
        });
        let limits = Limits {
            max_entry_bytes: 50,
            max_total_bytes: 100,
            max_entries: 10,
        };
        assert!(matches!(
            extract(path, scratch.path(), limits),
            Err(ExtractError::TooLarge(100))
        ));
        let garbage = scratch.path().join("garbage.tar.gz");
        std::fs::write(&garbage, b"not a tarball").unwrap();
        assert!(matches!(
            extract(
                File::open(&garbage).unwrap(),
                scratch.path(),
                Limits::default()
            ),
            Err(ExtractError::Corrupt(_))
        ));
    }
}
