//! What `logs` and `describe --details` read from a backup's storage location.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::Context as _;
use ark_storage::{BackupStore, Path};

pub enum Of<'a> {
    Backup(&'a str),
    Restore(&'a str),
}

impl Of<'_> {
    fn log(&self, store: &BackupStore) -> Path {
        match self {
            Of::Backup(name) => store.layout.backup_log(name),
            Of::Restore(name) => store.layout.restore_log(name),
        }
    }
    fn resource_list(&self, store: &BackupStore) -> Path {
        match self {
            Of::Backup(name) => store.layout.backup_resource_list(name),
            Of::Restore(name) => store.layout.restore_resource_list(name),
        }
    }
    fn results(&self, store: &BackupStore) -> Path {
        match self {
            Of::Backup(name) => store.layout.backup_results(name),
            Of::Restore(name) => store.layout.restore_results(name),
        }
    }
}

async fn store(
    client: &kube::Client,
    namespace: &str,
    location: &str,
) -> anyhow::Result<BackupStore> {
    Ok(
        ark_server::locations::open_named(client, namespace, location)
            .await?
            .store,
    )
}

async fn gunzipped(store: &BackupStore, key: &Path) -> anyhow::Result<String> {
    let bytes = store.get(key).await?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes.as_ref())
        .read_to_string(&mut text)
        .with_context(|| format!("{key} is not gzip-compressed text"))?;
    Ok(text)
}

pub async fn read_log(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    of: Of<'_>,
) -> anyhow::Result<String> {
    let store = store(client, namespace, location).await?;
    gunzipped(&store, &of.log(&store)).await
}

/// The hooks each restored pod ran, as the restore recorded them.
pub async fn hook_results(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    restore: &str,
) -> anyhow::Result<Vec<ark_api::hooks::PodHookResults>> {
    let store = store(client, namespace, location).await?;
    let key = store.layout.restore_hook_results(restore);
    match gunzipped(&store, &key).await {
        Ok(text) => Ok(serde_json::from_str(&text).with_context(|| format!("{key} is not valid"))?),
        Err(error)
            if error
                .downcast_ref::<ark_storage::StoreError>()
                .is_some_and(|e| e.is_not_found()) =>
        {
            Ok(vec![])
        }
        Err(error) => Err(error),
    }
}

/// The resource list and every warning and error, as a describe section; what cannot be read is
/// said in place.
pub async fn details(client: &kube::Client, namespace: &str, location: &str, of: Of<'_>) -> String {
    let store = match store(client, namespace, location).await {
        Ok(store) => store,
        Err(error) => return format!("\nDetails unavailable: {error:#}\n"),
    };
    let mut out = String::from("\nResource List:\n");
    match gunzipped(&store, &of.resource_list(&store))
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
    match gunzipped(&store, &of.results(&store))
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
