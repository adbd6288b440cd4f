//! Writing a backup tarball to a scratch file, item by item, so memory does not grow with the number
//! of objects.
//!
//! A large item's content is compressed on its own, as a gzip member of its own, once for both of
//! its copies in the tarball (the item and its preferred-version copy) and on another thread
//! than the rest: the file is then several gzip members one after another, which gzip allows and
//! Velero's reader (Go's `gzip.Reader`) and ark's read in full.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The most of a backup tarball the server downloads into scratch space (to restore it, to find
/// its snapshots, to rewrite it), and the most a restore unpacks from it: a bucket may hold
/// anything, the server's scratch volume may not.
pub const MAX_TARBALL_BYTES: u64 = 16 << 30;

use flate2::Compression;
use flate2::write::GzEncoder;

pub(crate) type Gz = GzEncoder<BufWriter<File>>;

/// An item's JSON this large is compressed as a member of its own: alone it compresses as well as
/// among its neighbours, and a member's own header and trailer (18 bytes) are nothing beside it.
pub const OWN_MEMBER_BYTES: usize = 64 << 10;

/// An unnamed scratch file (nothing can open it by path; it goes with the last handle) and a gzip
/// writer into it.
pub(crate) fn gz_file(scratch: &Path) -> io::Result<(File, Gz)> {
    let file = tempfile::tempfile_in(scratch)?;
    let writer = GzEncoder::new(BufWriter::new(file.try_clone()?), Compression::default());
    Ok((file, writer))
}

/// A file's content compressed as a gzip member of its own.
pub struct GzipMember {
    /// The content's length, uncompressed.
    len: u64,
    compressed: Vec<u8>,
}

impl GzipMember {
    pub fn compress(content: &[u8]) -> io::Result<Self> {
        let mut encoder = GzEncoder::new(
            Vec::with_capacity(content.len() / 2),
            Compression::default(),
        );
        encoder.write_all(content)?;
        Ok(Self {
            len: content.len() as u64,
            compressed: encoder.finish()?,
        })
    }
}

/// A gzip file written as consecutive members: what is written goes into the current member
/// (begun on the first write after the last one ended); a precompressed member is put between.
enum GzMembers {
    Between(BufWriter<File>),
    Within(Box<Gz>),
    /// Only while one state is replaced by the next, or after an error in between.
    Broken,
}

impl GzMembers {
    fn append(&mut self, member: &GzipMember) -> io::Result<()> {
        let mut out = match std::mem::replace(self, GzMembers::Broken) {
            GzMembers::Between(out) => out,
            GzMembers::Within(gz) => gz.finish()?,
            GzMembers::Broken => return Err(broken()),
        };
        out.write_all(&member.compressed)?;
        *self = GzMembers::Between(out);
        Ok(())
    }

    fn finish(self) -> io::Result<BufWriter<File>> {
        match self {
            GzMembers::Between(out) => Ok(out),
            GzMembers::Within(gz) => gz.finish(),
            GzMembers::Broken => Err(broken()),
        }
    }
}

fn broken() -> io::Error {
    io::Error::other("the tarball broke on an earlier error")
}

impl Write for GzMembers {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        *self = match std::mem::replace(self, GzMembers::Broken) {
            GzMembers::Between(out) => {
                GzMembers::Within(Box::new(GzEncoder::new(out, Compression::default())))
            }
            state => state,
        };
        match self {
            GzMembers::Within(gz) => gz.write(bytes),
            _ => Err(broken()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            GzMembers::Between(out) => out.flush(),
            GzMembers::Within(gz) => gz.flush(),
            GzMembers::Broken => Err(broken()),
        }
    }
}

/// The gzip tarball: `metadata/version`, then items as they come.
pub struct TarballWriter {
    file: File,
    builder: tar::Builder<GzMembers>,
    mtime: u64,
}

impl TarballWriter {
    pub fn create(scratch: &Path) -> io::Result<Self> {
        let mut writer = Self::empty(scratch)?;
        writer.add(
            ark_storage::tarball::VERSION_ENTRY,
            ark_storage::tarball::FORMAT_VERSION.as_bytes(),
        )?;
        Ok(writer)
    }

    fn empty(scratch: &Path) -> io::Result<Self> {
        let file = tempfile::tempfile_in(scratch)?;
        let out = GzMembers::Between(BufWriter::new(file.try_clone()?));
        let mtime = k8s_openapi::jiff::Timestamp::now().as_second().max(0) as u64;
        Ok(Self {
            file,
            builder: tar::Builder::new(out),
            mtime,
        })
    }

    /// A copy of the gzip tarball `source`, entry for entry and in order (its format version
    /// too), with the entries named in `replaced` given their new contents.
    pub fn rewrite(
        source: impl io::Read,
        replaced: &std::collections::BTreeMap<String, Vec<u8>>,
        scratch: &Path,
    ) -> io::Result<File> {
        let mut writer = Self::empty(scratch)?;
        let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(source));
        let mut written = std::collections::BTreeSet::new();
        for entry in archive.entries()? {
            let mut entry = entry?;
            let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            match replaced.get(&path) {
                Some(content) => writer.add(&path, content)?,
                None => {
                    let mut header = writer.header(entry.size());
                    writer.builder.append_data(&mut header, &path, &mut entry)?;
                }
            }
            written.insert(path);
        }
        // Items the tarball did not hold yet (a DataUpload, written once it ended) go last, as
        // Velero's finalizer appends them.
        for (path, content) in replaced.iter().filter(|(p, _)| !written.contains(*p)) {
            writer.add(path, content)?;
        }
        writer.finish()
    }

    fn header(&self, size: u64) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        header.set_mtime(self.mtime);
        header.set_entry_type(tar::EntryType::Regular);
        header
    }

    pub fn add(&mut self, path: &str, data: &[u8]) -> io::Result<()> {
        let mut header = self.header(data.len() as u64);
        self.builder.append_data(&mut header, path, data)
    }

    /// Adds the file `path` whose content was compressed as `member`.
    pub fn add_member(&mut self, path: &str, member: &GzipMember) -> io::Result<()> {
        let mut header = self.header(member.len);
        // The header alone (a long path's extra entry included): without data, the tar builder
        // writes no padding either. The content and its padding follow.
        self.builder.append_data(&mut header, path, io::empty())?;
        let out = self.builder.get_mut();
        out.append(member)?;
        let padding = (512 - member.len % 512) % 512;
        out.write_all(&[0; 512][..padding as usize])
    }

    pub fn finish(self) -> io::Result<File> {
        self.builder.into_inner()?.finish()?.flush()?;
        Ok(self.file)
    }
}

/// What a finished scratch file holds, ungzipped.
#[cfg(test)]
pub(crate) fn gunzip(mut file: File) -> Vec<u8> {
    use std::io::{Read, Seek};
    file.rewind().unwrap();
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(file)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The entries of a finished gzip tarball, in order: name and content.
#[cfg(test)]
pub(crate) fn entries(file: File) -> Vec<(String, Vec<u8>)> {
    let bytes = gunzip(file);
    tar::Archive::new(bytes.as_slice())
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let mut content = Vec::new();
            io::Read::read_to_end(&mut entry, &mut content).unwrap();
            (entry.path().unwrap().display().to_string(), content)
        })
        .collect()
}

/// The entry names of a finished gzip tarball, in order.
#[cfg(test)]
pub(crate) fn entry_names(file: File) -> Vec<String> {
    entries(file).into_iter().map(|(name, _)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_path(name: &str) -> String {
        format!(
            "resources/secrets/v1-preferredversion/namespaces/{}/{name}.json",
            "n".repeat(63)
        )
    }

    /// Members and streamed entries read back as one tarball (long paths, contents of every
    /// length against the 512-byte blocks), each member's content compressed once.
    #[test]
    fn contents_compressed_as_members_read_back_between_streamed_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut tarball = TarballWriter::create(dir.path()).unwrap();
        let contents: Vec<Vec<u8>> = [1, 512, 513, 70_000]
            .iter()
            .map(|&len| (0..len).map(|i| b'a' + (i % 23) as u8).collect())
            .collect();
        let mut expected = vec![(
            ark_storage::tarball::VERSION_ENTRY.to_string(),
            ark_storage::tarball::FORMAT_VERSION.as_bytes().to_vec(),
        )];
        for (i, content) in contents.iter().enumerate() {
            let member = GzipMember::compress(content).unwrap();
            for path in [format!("a/{i}.json"), long_path(&i.to_string())] {
                tarball.add_member(&path, &member).unwrap();
                expected.push((path, content.clone()));
            }
            tarball.add(&format!("small/{i}.json"), b"{}").unwrap();
            expected.push((format!("small/{i}.json"), b"{}".to_vec()));
        }
        assert_eq!(entries(tarball.finish().unwrap()), expected);
    }

    #[test]
    fn a_rewritten_tarball_keeps_every_entry_in_order_with_the_replaced_ones_new_and_the_added_last()
     {
        let dir = tempfile::tempdir().unwrap();
        let mut tarball = TarballWriter::create(dir.path()).unwrap();
        let big: Vec<u8> = (0..70_000).map(|i| b'a' + (i % 23) as u8).collect();
        tarball.add("a.json", b"{\"old\":1}").unwrap();
        tarball
            .add_member(&long_path("b"), &GzipMember::compress(&big).unwrap())
            .unwrap();
        tarball.add("c.json", b"{}").unwrap();
        let replaced = [
            ("a.json".to_string(), b"{\"new\":2}".to_vec()),
            ("added.json".to_string(), b"{\"added\":3}".to_vec()),
        ]
        .into_iter()
        .collect();
        let mut source = tarball.finish().unwrap();
        io::Seek::rewind(&mut source).unwrap();
        let rewritten = TarballWriter::rewrite(source, &replaced, dir.path()).unwrap();
        assert_eq!(
            entries(rewritten),
            [
                (
                    ark_storage::tarball::VERSION_ENTRY.to_string(),
                    ark_storage::tarball::FORMAT_VERSION.as_bytes().to_vec()
                ),
                ("a.json".to_string(), b"{\"new\":2}".to_vec()),
                (long_path("b"), big),
                ("c.json".to_string(), b"{}".to_vec()),
                ("added.json".to_string(), b"{\"added\":3}".to_vec()),
            ]
        );
    }

    #[test]
    fn tarball_starts_with_the_format_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut tarball = TarballWriter::create(dir.path()).unwrap();
        tarball
            .add("resources/configmaps/namespaces/shop/a.json", b"{}")
            .unwrap();
        assert_eq!(
            entry_names(tarball.finish().unwrap()),
            [
                "metadata/version",
                "resources/configmaps/namespaces/shop/a.json"
            ]
        );
    }
}
