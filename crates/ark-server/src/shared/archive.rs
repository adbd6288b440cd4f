//! Writing a backup tarball to a scratch file, item by item, so memory does not grow with the number
//! of objects.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use tempfile::NamedTempFile;

pub(crate) type Gz = GzEncoder<BufWriter<File>>;

pub(crate) fn gz_file(scratch: &Path) -> std::io::Result<(NamedTempFile, Gz)> {
    let file = NamedTempFile::new_in(scratch)?;
    let writer = GzEncoder::new(BufWriter::new(file.reopen()?), Compression::default());
    Ok((file, writer))
}

/// The gzip tarball: `metadata/version`, then items as they come.
pub struct TarballWriter {
    file: NamedTempFile,
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

    pub fn finish(self) -> std::io::Result<NamedTempFile> {
        self.builder.into_inner()?.finish()?.flush()?;
        Ok(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(path: &Path) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(File::open(path).unwrap())
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn tarball_starts_with_the_format_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut tarball = TarballWriter::create(dir.path()).unwrap();
        tarball
            .add("resources/configmaps/namespaces/shop/a.json", b"{}")
            .unwrap();
        let file = tarball.finish().unwrap();
        let bytes = gunzip(file.path());
        let mut archive = tar::Archive::new(bytes.as_slice());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "metadata/version",
                "resources/configmaps/namespaces/shop/a.json"
            ]
        );
    }
}
