//! What `logs` and `describe --details` read from a backup's storage location.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::Context as _;
use ark_storage::BackupStore;

pub enum Of<'a> {
    Backup(&'a str),
    Restore(&'a str),
}

/// The files of a backup or restore that `logs` and `describe` read.
#[derive(Clone, Copy, Debug)]
enum File {
    Log,
    ResourceList,
    Results,
    VolumeInfo,
    ItemOperations,
}

impl Of<'_> {
    fn name(&self) -> &str {
        match self {
            Of::Backup(name) | Of::Restore(name) => name,
        }
    }

    /// Velero's DownloadTargetKind of this object's `file`: `BackupLog`, `RestoreResults`...
    fn kind(&self, file: File) -> &'static str {
        match (self, file) {
            (Of::Backup(_), File::Log) => "BackupLog",
            (Of::Backup(_), File::ResourceList) => "BackupResourceList",
            (Of::Backup(_), File::Results) => "BackupResults",
            (Of::Backup(_), File::VolumeInfo) => "BackupVolumeInfos",
            (Of::Backup(_), File::ItemOperations) => "BackupItemOperations",
            (Of::Restore(_), File::Log) => "RestoreLog",
            (Of::Restore(_), File::ResourceList) => "RestoreResourceList",
            (Of::Restore(_), File::Results) => "RestoreResults",
            (Of::Restore(_), File::VolumeInfo) => "RestoreVolumeInfo",
            (Of::Restore(_), File::ItemOperations) => "RestoreItemOperations",
        }
    }

    fn key(&self, file: File, layout: &ark_storage::layout::Layout) -> ark_storage::Path {
        (layout.download_target(self.kind(file), self.name()))
            .expect("every file's kind is a DownloadTargetKind of Velero's")
    }
}

/// Where a backup's files are read from: the bucket itself, or, for a person who may not read the
/// location's credentials, the server (through DownloadRequests, as Velero's CLI reads them).
enum Source<'a> {
    Bucket(BackupStore),
    Server {
        client: &'a kube::Client,
        namespace: &'a str,
    },
}

impl<'a> Source<'a> {
    async fn of(
        client: &'a kube::Client,
        namespace: &'a str,
        location: &str,
    ) -> anyhow::Result<Self> {
        match ark_server::locations::open_named(client, namespace, location).await {
            Ok(open) => Ok(Source::Bucket(open.store)),
            Err(error) if error.is_refused() => Ok(Source::Server { client, namespace }),
            Err(error) => Err(error.into()),
        }
    }

    /// The named file as stored (gzip-compressed), and what it is, for messages.
    async fn file(&self, of: &Of<'_>, file: File) -> anyhow::Result<(String, Vec<u8>)> {
        let what = format!("the {} of {}", of.kind(file), of.name());
        let bytes = self.file_if_there(of, file).await?;
        let bytes = bytes.with_context(|| format!("{what} is not in the bucket"))?;
        Ok((what, bytes))
    }

    /// The named file as stored; None when the bucket does not hold it.
    async fn file_if_there(&self, of: &Of<'_>, file: File) -> anyhow::Result<Option<Vec<u8>>> {
        match self {
            Source::Bucket(store) => match store.get(&of.key(file, &store.layout)).await {
                Ok(bytes) => Ok(Some(bytes.to_vec())),
                Err(error) if error.is_not_found() => Ok(None),
                Err(error) => Err(error.into()),
            },
            Source::Server { client, namespace } => {
                super::download::fetch_if_there(client, namespace, of.kind(file), of.name()).await
            }
        }
    }

    /// The named file, gunzipped (within the bound the server reads such files with) and parsed.
    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        of: &Of<'_>,
        file: File,
    ) -> anyhow::Result<T> {
        let (what, bytes) = self.file(of, file).await?;
        ark_server::snapshots::gunzip_json(&bytes, &what).map_err(anyhow::Error::msg)
    }
}

/// The most of a log that `logs` prints: a log is written by a server, but read from a bucket
/// that others may write, where a few kilobytes can unpack to terabytes.
const MAX_LOG_BYTES: u64 = 1 << 30;

/// Writes the log of a backup or restore to `out` as it unpacks (never all of it in memory), up to
/// `MAX_LOG_BYTES`; a log that unpacks to more is an error once that much is written.
pub async fn print_log(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    of: Of<'_>,
    out: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    let source = Source::of(client, namespace, location).await?;
    let (what, bytes) = source.file(&of, File::Log).await?;
    copy_unpacked(&bytes, out, MAX_LOG_BYTES, &what)
}

/// `gzip`'s contents written to `out`, at most `limit` bytes of them.
fn copy_unpacked(
    gzip: &[u8],
    out: &mut impl std::io::Write,
    limit: u64,
    what: &str,
) -> anyhow::Result<()> {
    let mut unpacked = flate2::read::MultiGzDecoder::new(gzip).take(limit);
    std::io::copy(&mut unpacked, out)
        .with_context(|| format!("{what} is not gzip-compressed text"))?;
    if unpacked.into_inner().read(&mut [0])? > 0 {
        anyhow::bail!(
            "{what} unpacks to more than {limit} bytes: only the first {limit} are shown"
        );
    }
    Ok(())
}

/// The hooks each pod ran, as the backup or restore recorded them, as a describe section. Read
/// from the bucket only (Velero's DownloadRequests name no such file): a person who may not read
/// the location's credentials is pointed to the log, which has every hook's outcome too.
pub async fn hooks_section(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    of: Of<'_>,
    details: bool,
) -> String {
    let logs = match of {
        Of::Backup(name) => format!("ark backup logs {name}"),
        Of::Restore(name) => format!("ark restore logs {name}"),
    };
    match hook_results(client, namespace, location, of).await {
        Ok(pods) => crate::describe::hooks_text(&pods, details),
        Err(error)
            if (error.downcast_ref::<ark_server::locations::LocationError>())
                .is_some_and(|e| e.is_refused()) =>
        {
            format!(
                "\nHooks: each pod's results are read from the bucket, with the location's \
             credentials; `{logs}` has every hook's outcome\n"
            )
        }
        Err(error) => format!("\nHooks: <unavailable: {error:#}>\n"),
    }
}

async fn hook_results(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    of: Of<'_>,
) -> anyhow::Result<Vec<ark_api::hooks::PodHookResults>> {
    let store = ark_server::locations::open_named(client, namespace, location)
        .await?
        .store;
    let key = match of {
        Of::Backup(backup) => store.layout.backup_hook_results(backup),
        Of::Restore(restore) => store.layout.restore_hook_results(restore),
    };
    match store.get(&key).await {
        Ok(bytes) => {
            ark_server::snapshots::gunzip_json(&bytes, key.as_ref()).map_err(anyhow::Error::msg)
        }
        Err(error) if error.is_not_found() => Ok(vec![]),
        Err(error) => Err(error.into()),
    }
}

/// A backup's volumes as it recorded them, and the operations it waited for (CSI snapshots
/// becoming ready to use); through the server for a person who may not read the location's
/// credentials (a viewer, a namespace's own people).
pub async fn volumes(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    backup: &str,
) -> anyhow::Result<(
    Vec<ark_api::BackupVolumeInfo>,
    Vec<ark_api::BackupOperation>,
)> {
    let source = Source::of(client, namespace, location).await?;
    let of = Of::Backup(backup);
    // Either may be absent: a backup made before Velero v1.13 has no volume information, one
    // that waited for nothing no operations.
    async fn read<T: serde::de::DeserializeOwned>(
        source: &Source<'_>,
        of: &Of<'_>,
        file: File,
    ) -> anyhow::Result<Vec<T>> {
        let Some(bytes) = source.file_if_there(of, file).await? else {
            return Ok(Vec::new());
        };
        let what = format!("the {} of {}", of.kind(file), of.name());
        let read = ark_server::snapshots::gunzip_json::<Option<Vec<T>>>(&bytes, &what);
        Ok(read.map_err(anyhow::Error::msg)?.unwrap_or_default())
    }
    let volumes = read(&source, &of, File::VolumeInfo).await?;
    let operations = read(&source, &of, File::ItemOperations).await?;
    Ok((volumes, operations))
}

/// The resource list and every warning and error, as a describe section; what cannot be read is
/// said in place.
pub async fn details(client: &kube::Client, namespace: &str, location: &str, of: Of<'_>) -> String {
    let source = match Source::of(client, namespace, location).await {
        Ok(source) => source,
        Err(error) => return format!("\nDetails unavailable: {error:#}\n"),
    };
    let mut out = String::from("\nResource List:\n");
    match source
        .json::<BTreeMap<String, Vec<String>>>(&of, File::ResourceList)
        .await
    {
        Ok(list) if list.is_empty() => out.push_str("  <none>\n"),
        Ok(list) => {
            for (kind, items) in list {
                out.push_str(&format!("  {kind}:\n"));
                for item in items {
                    out.push_str(&format!("    - {item}\n"));
                }
            }
        }
        Err(error) => out.push_str(&format!("  <error reading the resource list: {error:#}>\n")),
    }
    match source.json::<serde_json::Value>(&of, File::Results).await {
        Ok(results) => {
            for (title, key) in [("Warnings", "warnings"), ("Errors", "errors")] {
                out.push_str(&format!("\n{title}:\n"));
                let section = &results[key];
                let mut any = false;
                for message in section["velero"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.as_str())
                {
                    out.push_str(&format!("  Velero:  {message}\n"));
                    any = true;
                }
                for message in section["cluster"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.as_str())
                {
                    out.push_str(&format!("  Cluster:  {message}\n"));
                    any = true;
                }
                for (ns, messages) in section["namespaces"].as_object().into_iter().flatten() {
                    out.push_str(&format!("  Namespaces:\n    {ns}:\n"));
                    for message in messages
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|m| m.as_str())
                    {
                        out.push_str(&format!("      {message}\n"));
                    }
                    any = true;
                }
                if !any {
                    out.push_str("  <none>\n");
                }
            }
        }
        Err(error) => out.push_str(&format!("\n<error reading the results: {error:#}>\n")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `members` gzip members of 1 MiB of zeros each, one after the other (a gzip reader reads
    /// them as one stream): about a kilobyte each, as a bucket's bomb would be made.
    fn zeros(members: usize) -> Vec<u8> {
        let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut member, &[0; 1 << 20]).unwrap();
        member.finish().unwrap().repeat(members)
    }

    #[test]
    fn a_log_that_unpacks_past_the_bound_is_cut_there_and_an_error() {
        let mut out = Vec::new();
        copy_unpacked(&zeros(4), &mut out, 4 << 20, "the BackupLog of b").unwrap();
        assert_eq!(out.len(), 4 << 20);

        let mut out = Vec::new();
        let error = copy_unpacked(&zeros(64), &mut out, 4 << 20, "the BackupLog of b");
        assert_eq!(
            error.unwrap_err().to_string(),
            "the BackupLog of b unpacks to more than 4194304 bytes: only the first 4194304 are shown"
        );
        assert_eq!(out.len(), 4 << 20);
    }

    #[test]
    fn a_log_that_is_not_gzip_is_named() {
        let error = copy_unpacked(
            b"plain text, not gzip",
            &mut Vec::new(),
            1 << 20,
            "the RestoreLog of r",
        );
        assert_eq!(
            format!("{:#}", error.unwrap_err()),
            "the RestoreLog of r is not gzip-compressed text: invalid gzip header"
        );
    }
}
