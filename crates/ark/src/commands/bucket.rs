//! What `logs` and `describe --details` read from a backup's storage location.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::Context as _;
use ark_storage::BackupStore;

pub enum Of<'a> {
    Backup(&'a str),
    Restore(&'a str),
}

/// The files of a backup or restore that `logs` and `describe --details` read.
#[derive(Clone, Copy, Debug)]
enum File {
    Log,
    ResourceList,
    Results,
}

impl Of<'_> {
    fn name(&self) -> &str {
        match self {
            Of::Backup(name) | Of::Restore(name) => name,
        }
    }

    /// Velero's DownloadTargetKind of this object's `file`: `BackupLog`, `RestoreResults`...
    fn kind(&self, file: File) -> String {
        match self {
            Of::Backup(_) => format!("Backup{file:?}"),
            Of::Restore(_) => format!("Restore{file:?}"),
        }
    }

    fn key(&self, file: File, layout: &ark_storage::layout::Layout) -> ark_storage::Path {
        match (self, file) {
            (Of::Backup(name), File::Log) => layout.backup_log(name),
            (Of::Backup(name), File::ResourceList) => layout.backup_resource_list(name),
            (Of::Backup(name), File::Results) => layout.backup_results(name),
            (Of::Restore(name), File::Log) => layout.restore_log(name),
            (Of::Restore(name), File::ResourceList) => layout.restore_resource_list(name),
            (Of::Restore(name), File::Results) => layout.restore_results(name),
        }
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

    /// The named file, gunzipped.
    async fn text(&self, of: &Of<'_>, file: File) -> anyhow::Result<String> {
        let (kind, name) = (of.kind(file), of.name());
        let bytes = match self {
            Source::Bucket(store) => store.get(&of.key(file, &store.layout)).await?.to_vec(),
            Source::Server { client, namespace } => {
                super::download::fetch(client, namespace, &kind, name).await?
            }
        };
        gunzip(&bytes).with_context(|| format!("the {kind} of {name} is not gzip-compressed text"))
    }
}

fn gunzip(bytes: &[u8]) -> std::io::Result<String> {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(bytes).read_to_string(&mut text)?;
    Ok(text)
}

pub async fn read_log(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    of: Of<'_>,
) -> anyhow::Result<String> {
    Source::of(client, namespace, location)
        .await?
        .text(&of, File::Log)
        .await
}

/// The hooks each pod ran, as the backup or restore recorded them. Read from the bucket only:
/// Velero's DownloadRequests name no such file.
pub async fn hook_results(
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
            let text =
                gunzip(&bytes).with_context(|| format!("{key} is not gzip-compressed text"))?;
            Ok(serde_json::from_str(&text).with_context(|| format!("{key} is not valid"))?)
        }
        Err(error) if error.is_not_found() => Ok(vec![]),
        Err(error) => Err(error.into()),
    }
}

/// A backup's volumes as it recorded them, and the operations it waited for (CSI snapshots
/// becoming ready to use).
pub async fn volumes(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    backup: &str,
) -> anyhow::Result<(
    Vec<ark_api::BackupVolumeInfo>,
    Vec<ark_api::BackupOperation>,
)> {
    let store = ark_server::locations::open_named(client, namespace, location)
        .await?
        .store;
    fn read<T: serde::de::DeserializeOwned>(
        bytes: Option<&[u8]>,
        what: &str,
    ) -> anyhow::Result<Vec<T>> {
        Ok(match bytes {
            Some(bytes) => ark_server::snapshots::gunzip_json::<Option<Vec<T>>>(bytes, what)
                .map_err(anyhow::Error::msg)?
                .unwrap_or_default(),
            None => Vec::new(),
        })
    }
    let volumes = read(
        store.get_volume_info(backup).await?.as_deref(),
        "volume information",
    )?;
    let operations = read(
        store.get_item_operations(backup).await?.as_deref(),
        "item operations",
    )?;
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
        .text(&of, File::ResourceList)
        .await
        .and_then(|t| Ok(serde_json::from_str::<BTreeMap<String, Vec<String>>>(&t)?))
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
    match source
        .text(&of, File::Results)
        .await
        .and_then(|t| Ok(serde_json::from_str::<serde_json::Value>(&t)?))
    {
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
