//! Writing a backup tarball to a scratch file, item by item, so memory does not grow with the number
//! of objects.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

pub(crate) type Gz = GzEncoder<BufWriter<File>>;

/// An unnamed scratch file (nothing can open it by path; it goes with the last handle) and a gzip
/// writer into it.
pub(crate) fn gz_file(scratch: &Path) -> std::io::Result<(File, Gz)> {
    let file = tempfile::tempfile_in(scratch)?;
    let writer = GzEncoder::new(BufWriter::new(file.try_clone()?), Compression::default());
    Ok((file, writer))
}

/// The gzip tarball: `metadata/version`, then items as they come.
pub struct TarballWriter {
    file: File,
    builder: tar::Builder<Gz>,
    mtime: u64,
}

impl TarballWriter {
    pub fn create(scratch: &Path) -> std::io::Result<Self> {
        let (file, gz) = gz_file(scratch)?;
        let mtime = k8s_openapi::jiff::Timestamp::now().as_second().max(0) as u64;
        let mut writer = Self {
            file,
            builder: tar::Builder::new(gz),
            mtime,
        };
        writer.add(
            ark_storage::tarball::VERSION_ENTRY,
            ark_storage::tarball::FORMAT_VERSION.as_bytes(),
        )?;
        Ok(writer)
    }

    pub fn add(&mut self, path: &str, data: &[u8]) -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(self.mtime);
        header.set_entry_type(tar::EntryType::Regular);
        self.builder.append_data(&mut header, path, data)
    }

    pub fn finish(self) -> std::io::Result<File> {
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

/// The entry names of a finished gzip tarball, in order.
#[cfg(test)]
pub(crate) fn entry_names(file: File) -> Vec<String> {
    let bytes = gunzip(file);
    tar::Archive::new(bytes.as_slice())
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
