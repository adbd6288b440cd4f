//! The backup's tarball and resource list, written on a blocking thread of their own: compression
//! never holds the async runtime, and the next page is listed while the last one is compressed.

use std::fs::File;
use std::io;
use std::path::Path;

use ark_storage::tarball::{item_path, preferred_version_path};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::shared::archive::TarballWriter;
use crate::shared::resource_list::ResourceListWriter;

/// Items of one resource, as listed together.
pub struct Page {
    /// The group-resource: `configmaps`, `deployments.apps`.
    pub gr: String,
    pub version: String,
    /// The resource list's key: `v1/ConfigMap`, `apps/v1/Deployment`.
    pub key: String,
    pub items: Vec<Item>,
}

pub struct Item {
    pub namespace: Option<String>,
    pub name: String,
    pub json: Vec<u8>,
}

pub struct Written {
    pub tarball: File,
    pub resource_list: File,
}

pub struct ItemWriter {
    pages: mpsc::Sender<Page>,
    thread: JoinHandle<io::Result<Written>>,
}

impl ItemWriter {
    pub fn start(scratch: &Path) -> io::Result<Self> {
        let mut tarball = TarballWriter::create(scratch)?;
        let mut resource_list = ResourceListWriter::create(scratch)?;
        // One page waits while the one before is written: what is held is bounded by pages, each
        // bounded in bytes by the listing.
        let (pages, mut received) = mpsc::channel::<Page>(1);
        let thread = tokio::task::spawn_blocking(move || {
            while let Some(page) = received.blocking_recv() {
                for item in &page.items {
                    let namespace = item.namespace.as_deref();
                    tarball.add(&item_path(&page.gr, namespace, &item.name), &item.json)?;
                    tarball.add(
                        &preferred_version_path(&page.gr, &page.version, namespace, &item.name),
                        &item.json,
                    )?;
                    let entry = match namespace {
                        Some(ns) => format!("{ns}/{}", item.name),
                        None => item.name.clone(),
                    };
                    resource_list.add(&page.key, &entry)?;
                }
            }
            Ok(Written {
                tarball: tarball.finish()?,
                resource_list: resource_list.finish()?,
            })
        });
        Ok(Self { pages, thread })
    }

    /// Hands `page` to the writing thread; its error if it has stopped on one.
    pub async fn write(self, page: Page) -> io::Result<Self> {
        match self.pages.send(page).await {
            Ok(()) => Ok(self),
            // The thread drops its receiver only when it returns, and returns early only on an
            // error.
            Err(_) => Err(self.finish().await.err().unwrap_or_else(|| {
                io::Error::other("the tarball writer stopped before the backup ended")
            })),
        }
    }

    /// The finished files, once every page handed over is written.
    pub async fn finish(self) -> io::Result<Written> {
        drop(self.pages);
        self.thread
            .await
            .unwrap_or_else(|panic| Err(io::Error::other(panic)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::archive::{entry_names, gunzip};

    fn page(key: &str, names: &[&str]) -> Page {
        Page {
            gr: "configmaps".into(),
            version: "v1".into(),
            key: key.into(),
            items: names
                .iter()
                .map(|name| Item {
                    namespace: Some("shop".into()),
                    name: name.to_string(),
                    json: format!("{{\"name\":\"{name}\"}}").into_bytes(),
                })
                .collect(),
        }
    }

    #[tokio::test]
    async fn pages_are_written_in_order_to_both_files() {
        let dir = tempfile::tempdir().unwrap();
        let writer = ItemWriter::start(dir.path()).unwrap();
        let writer = writer
            .write(page("v1/ConfigMap", &["a", "b"]))
            .await
            .unwrap();
        let writer = writer.write(page("v1/ConfigMap", &["c"])).await.unwrap();
        let written = writer.finish().await.unwrap();

        let list: serde_json::Value =
            serde_json::from_slice(&gunzip(written.resource_list)).unwrap();
        assert_eq!(
            list,
            serde_json::json!({ "v1/ConfigMap": ["shop/a", "shop/b", "shop/c"] })
        );
        assert_eq!(
            entry_names(written.tarball),
            [
                "metadata/version",
                "resources/configmaps/namespaces/shop/a.json",
                "resources/configmaps/v1-preferredversion/namespaces/shop/a.json",
                "resources/configmaps/namespaces/shop/b.json",
                "resources/configmaps/v1-preferredversion/namespaces/shop/b.json",
                "resources/configmaps/namespaces/shop/c.json",
                "resources/configmaps/v1-preferredversion/namespaces/shop/c.json",
            ]
        );
    }

    #[tokio::test]
    async fn a_write_error_on_the_thread_is_the_error_of_the_next_page() {
        let dir = tempfile::tempdir().unwrap();
        let writer = ItemWriter::start(dir.path()).unwrap();
        // A name the tar format cannot hold: the thread stops on it.
        let bad = Page {
            items: vec![Item {
                namespace: None,
                name: "x\0y".into(),
                json: b"{}".to_vec(),
            }],
            ..page("v1/ConfigMap", &[])
        };
        let mut writer = writer.write(bad).await.unwrap();
        let error = loop {
            match writer.write(page("v1/ConfigMap", &["a"])).await {
                Ok(next) => writer = next,
                Err(error) => break error,
            }
        };
        assert!(error.to_string().contains("nul"), "{error}");
    }
}
