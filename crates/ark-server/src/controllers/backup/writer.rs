//! The backup's tarball and resource list, written on a blocking thread of their own: compression
//! never holds the async runtime, and the next page is listed while the last one is compressed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::Path;

use ark_storage::tarball::{item_path, preferred_version_path, version_path};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::records::archive::{GzipMember, OWN_MEMBER_BYTES, TarballWriter};
use crate::records::resource_list::ResourceListWriter;

/// Items of one resource, as listed together.
pub struct Page {
    /// The group-resource: `configmaps`, `deployments.apps`.
    pub gr: String,
    pub version: String,
    /// Whether `version` is the resource's preferred version: its items are then written as the
    /// main copies and the preferred version's; otherwise as that version's copies only.
    pub preferred: bool,
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
    /// Items handed over so far.
    items: i64,
}

impl ItemWriter {
    /// `added_later`: the group-resources whose items may also come after their resource's
    /// listing (added by an item action), recorded in the resource list at the end.
    pub fn start(scratch: &Path, added_later: BTreeSet<&'static str>) -> io::Result<Self> {
        let mut tarball = TarballWriter::create(scratch)?;
        let mut resource_list = ResourceListWriter::create(scratch)?;
        // One page waits while the one before is written: what is held is bounded by pages, each
        // bounded in bytes by the listing.
        let (pages, mut received) = mpsc::channel::<Page>(1);
        let thread = tokio::task::spawn_blocking(move || {
            while let Some(page) = received.blocking_recv() {
                let mut members = compress_large(&page.items)?.into_iter();
                for item in &page.items {
                    let namespace = item.namespace.as_deref();
                    let paths = match page.preferred {
                        true => vec![
                            item_path(&page.gr, namespace, &item.name),
                            preferred_version_path(&page.gr, &page.version, namespace, &item.name),
                        ],
                        false => vec![version_path(&page.gr, &page.version, namespace, &item.name)],
                    };
                    match members.next().flatten() {
                        Some(member) => {
                            for path in &paths {
                                tarball.add_member(path, &member)?;
                            }
                        }
                        None => {
                            for path in &paths {
                                tarball.add(path, &item.json)?;
                            }
                        }
                    }
                    let entry = match namespace {
                        Some(ns) => format!("{ns}/{}", item.name),
                        None => item.name.clone(),
                    };
                    if added_later.contains(page.gr.as_str()) {
                        resource_list.add_deferred(&page.key, &entry);
                    } else {
                        resource_list.add(&page.key, &entry)?;
                    }
                }
            }
            Ok(Written {
                tarball: tarball.finish()?,
                resource_list: resource_list.finish()?,
            })
        });
        Ok(Self {
            pages,
            thread,
            items: 0,
        })
    }

    /// Hands `page` to the writing thread; its error if it has stopped on one (then the writer
    /// is done with: the backup fails).
    pub async fn write(&mut self, page: Page) -> io::Result<()> {
        let items = page.items.len() as i64;
        if self.pages.send(page).await.is_ok() {
            self.items += items;
            return Ok(());
        }
        // The thread drops its receiver only when it returns, and returns early only on an error.
        let ended = (&mut self.thread).await;
        Err(ended
            .unwrap_or_else(|panic| Err(io::Error::other(panic)))
            .err()
            .unwrap_or_else(|| {
                io::Error::other("the tarball writer stopped before the backup ended")
            }))
    }

    /// Items handed over so far.
    pub fn items(&self) -> i64 {
        self.items
    }

    /// The finished files, once every page handed over is written.
    pub async fn finish(self) -> io::Result<Written> {
        drop(self.pages);
        self.thread
            .await
            .unwrap_or_else(|panic| Err(io::Error::other(panic)))
    }
}

/// The page's items of at least `OWN_MEMBER_BYTES`, compressed as members of their own, on as
/// many threads as the machine has cores (the first on this one); None for the others.
fn compress_large(items: &[Item]) -> io::Result<Vec<Option<GzipMember>>> {
    let large: Vec<usize> = (0..items.len())
        .filter(|&i| items[i].json.len() >= OWN_MEMBER_BYTES)
        .collect();
    let mut members: Vec<Option<GzipMember>> = items.iter().map(|_| None).collect();
    if large.is_empty() {
        return Ok(members);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let share = large.len().div_ceil(threads.min(large.len()));
    let compress = |indices: &[usize]| -> io::Result<Vec<(usize, GzipMember)>> {
        indices
            .iter()
            .map(|&i| Ok((i, GzipMember::compress(&items[i].json)?)))
            .collect()
    };
    let compressed: Vec<io::Result<Vec<(usize, GzipMember)>>> = std::thread::scope(|scope| {
        let mut shares = large.chunks(share);
        let first = shares.next().unwrap_or_default();
        let others: Vec<_> = shares
            .map(|indices| scope.spawn(move || compress(indices)))
            .collect();
        std::iter::once(compress(first))
            .chain(others.into_iter().map(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("compressing an item panicked")))
            }))
            .collect()
    });
    for share in compressed {
        for (i, member) in share? {
            members[i] = Some(member);
        }
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::archive::{entries, entry_names, gunzip};

    fn page(key: &str, names: &[&str]) -> Page {
        Page {
            gr: "configmaps".into(),
            version: "v1".into(),
            preferred: true,
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
        let mut writer = ItemWriter::start(dir.path(), BTreeSet::new()).unwrap();
        writer
            .write(page("v1/ConfigMap", &["a", "b"]))
            .await
            .unwrap();
        writer.write(page("v1/ConfigMap", &["c"])).await.unwrap();
        assert_eq!(writer.items(), 3);
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

    /// A page of another version than the preferred one (a backup of every served version) is
    /// that version's copies only, listed under its own key, as Velero writes them.
    #[tokio::test]
    async fn another_version_is_written_as_its_copies_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = ItemWriter::start(dir.path(), BTreeSet::new()).unwrap();
        writer.write(page("v1/ConfigMap", &["a"])).await.unwrap();
        let other = Page {
            version: "v1beta1".into(),
            preferred: false,
            ..page("v1beta1/ConfigMap", &["a"])
        };
        writer.write(other).await.unwrap();
        let written = writer.finish().await.unwrap();
        let list: serde_json::Value =
            serde_json::from_slice(&gunzip(written.resource_list)).unwrap();
        assert_eq!(
            list,
            serde_json::json!({ "v1/ConfigMap": ["shop/a"], "v1beta1/ConfigMap": ["shop/a"] })
        );
        assert_eq!(
            entry_names(written.tarball),
            [
                "metadata/version",
                "resources/configmaps/namespaces/shop/a.json",
                "resources/configmaps/v1-preferredversion/namespaces/shop/a.json",
                "resources/configmaps/v1beta1/namespaces/shop/a.json",
            ]
        );
    }

    /// Large items (compressed on their own, on several threads) and small ones, mixed in a
    /// page, come out whole and in order under both of their paths.
    #[tokio::test]
    async fn large_items_among_small_ones_are_written_whole_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [
            10,
            OWN_MEMBER_BYTES,
            3 * OWN_MEMBER_BYTES + 7,
            20,
            OWN_MEMBER_BYTES + 1,
        ];
        let items: Vec<Item> = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| Item {
                namespace: Some("shop".into()),
                name: format!("i{i}"),
                json: (0..size).map(|b| b'a' + ((b * 7 + i) % 26) as u8).collect(),
            })
            .collect();
        let expected: Vec<(String, Vec<u8>)> = items
            .iter()
            .flat_map(|item| {
                [
                    format!("resources/configmaps/namespaces/shop/{}.json", item.name),
                    format!(
                        "resources/configmaps/v1-preferredversion/namespaces/shop/{}.json",
                        item.name
                    ),
                ]
                .map(|path| (path, item.json.clone()))
            })
            .collect();
        let mut writer = ItemWriter::start(dir.path(), BTreeSet::new()).unwrap();
        writer
            .write(Page {
                items,
                ..page("v1/ConfigMap", &[])
            })
            .await
            .unwrap();
        let written = writer.finish().await.unwrap();
        assert_eq!(entries(written.tarball)[1..], expected);
    }

    #[tokio::test]
    async fn a_write_error_on_the_thread_is_the_error_of_the_next_page() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = ItemWriter::start(dir.path(), BTreeSet::new()).unwrap();
        // A name the tar format cannot hold: the thread stops on it.
        let bad = Page {
            items: vec![Item {
                namespace: None,
                name: "x\0y".into(),
                json: b"{}".to_vec(),
            }],
            ..page("v1/ConfigMap", &[])
        };
        writer.write(bad).await.unwrap();
        let error = loop {
            if let Err(error) = writer.write(page("v1/ConfigMap", &["a"])).await {
                break error;
            }
        };
        assert!(error.to_string().contains("nul"), "{error}");
    }
}
