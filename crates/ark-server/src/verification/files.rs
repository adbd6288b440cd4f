//! A backup's files in its location: each of Velero's layout present and parseable ([`check`]),
//! and the tarball's items matching the resource list ([`objects`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use ark_api::{Backup, PodVolumeBackup};
use ark_storage::BackupStore;
use serde_json::Value;

use super::Report;
use crate::domain::snapshots::{self, Recorded};
use crate::records::archive::MAX_TARBALL_BYTES;

/// The most of a log a verification unpacks: a bucket may hold a few KiB that unpack to terabytes.
const MAX_LOG_BYTES: u64 = 1 << 30;
/// An item larger than this is not an object the API server could have served.
const MAX_ITEM_BYTES: u64 = 64 << 20;

/// What the files record of the backup's volume data, for the volume checks; and what the
/// tarball's check needs.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// The snapshots its files record (the tarball's are added once it is read).
    pub recorded: Recorded,
    pub pod_volumes: Vec<PodVolumeBackup>,
    /// The resource list, when it parsed.
    list: Option<BTreeMap<String, Vec<String>>>,
    /// Whether the folder holds the tarball.
    tarball: bool,
}

/// Checks the backup's folder but its tarball; what it records of volume data comes back, as far
/// as it reads.
pub(super) async fn check(
    store: &BackupStore,
    name: &str,
    scratch: &Path,
    report: &mut Report,
) -> Found {
    let layout = &store.layout;
    let listing = match store.list_backup(name).await {
        Ok(listing) => listing,
        Err(error) => {
            report.defect(format!("listing the backup's folder: {error}"));
            return Found::default();
        }
    };
    let file_name = |key: &ark_storage::Path| key.filename().unwrap_or_default().to_string();
    let required = [
        layout.backup_metadata(name),
        layout.backup_contents(name),
        layout.backup_log(name),
        layout.backup_resource_list(name),
    ];
    for key in required.iter().filter(|key| !listing.has(key)) {
        report.defect(format!("{} is missing", file_name(key)));
    }

    let mut records = BTreeMap::new();
    let mut read = 0;
    for key in listing.keys() {
        let file = file_name(key);
        let checked = if *key == layout.backup_contents(name) {
            continue;
        } else if *key == layout.backup_metadata(name) {
            metadata(store, key, name).await
        } else if *key == layout.backup_log(name) {
            log(store, key, scratch).await
        } else if file.ends_with(".json.gz") || *key == layout.backup_results(name) {
            match store
                .get_at_most(key, snapshots::MAX_LIST_BYTES as usize)
                .await
            {
                Ok(bytes) => snapshots::gunzip_json::<Value>(&bytes, &file).map(|_| {
                    records.insert(key.clone(), bytes);
                }),
                Err(error) => Err(format!("{file}: {error}")),
            }
        } else {
            // Not a file of Velero's layout (Velero ignores such files too).
            continue;
        };
        read += 1;
        if let Err(defect) = checked {
            report.defect(defect);
        }
    }
    let record = |key: ark_storage::Path| records.get(&key).map(|bytes| bytes.as_ref());
    let mut found = Found::default();
    match snapshots::parse_recorded(
        record(layout.backup_volume_snapshots(name)),
        record(layout.backup_csi_snapshot_contents(name)),
    ) {
        Ok(recorded) => found.recorded = recorded,
        Err(defect) => report.defect(defect),
    }
    match snapshots::pod_volume_backups(record(layout.backup_pod_volume_backups(name))) {
        Ok(pod_volumes) => found.pod_volumes = pod_volumes,
        Err(defect) => report.defect(defect),
    }
    report.checked(
        "Files",
        format!("{read} of the backup's folder read and parsed"),
    );

    let list = record(layout.backup_resource_list(name)).map(|bytes| {
        snapshots::gunzip_json::<BTreeMap<String, Vec<String>>>(bytes, "resource list")
    });
    let list = match list {
        Some(Ok(list)) => Some(list),
        Some(Err(defect)) => {
            report.defect(defect);
            None
        }
        None => None,
    };
    found.list = list;
    found.tarball = listing.has(&layout.backup_contents(name));
    found
}

async fn metadata(store: &BackupStore, key: &ark_storage::Path, name: &str) -> Result<(), String> {
    let bytes = store
        .get_backup_metadata(name)
        .await
        .map_err(|e| format!("velero-backup.json: {e}"))?;
    let backup: Backup = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a Backup: {e}", key.filename().unwrap_or_default()))?;
    match backup.metadata.name.as_deref() {
        Some(named) if named == name => Ok(()),
        named => Err(format!(
            "velero-backup.json names backup {named:?}, not {name:?}"
        )),
    }
}

async fn log(store: &BackupStore, key: &ark_storage::Path, scratch: &Path) -> Result<(), String> {
    let what = key.filename().unwrap_or_default().to_string();
    let file = tempfile::tempfile_in(scratch).map_err(|e| format!("scratch file: {e}"))?;
    store
        .download_file(key, &file, MAX_TARBALL_BYTES)
        .await
        .map_err(|e| format!("{what}: {e}"))?;
    tokio::task::spawn_blocking(move || {
        let unpacked = std::io::copy(
            &mut flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))
                .take(MAX_LOG_BYTES + 1),
            &mut std::io::sink(),
        )
        .map_err(|e| format!("{what}: {e}"))?;
        match unpacked > MAX_LOG_BYTES {
            true => Err(format!(
                "{what}: unpacks to more than {MAX_LOG_BYTES} bytes"
            )),
            false => Ok(()),
        }
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Reads the tarball: every item parsed and where its name says, the same set as the resource
/// list's; what it holds of VolumeSnapshotContents and DataUploads comes back.
pub(super) async fn objects(
    store: &BackupStore,
    name: &str,
    scratch: &Path,
    found: &Found,
    report: &mut Report,
) -> snapshots::TarballContents {
    if !found.tarball {
        // Its absence is a defect of the folder's check.
        return snapshots::TarballContents::default();
    }
    let file = match tempfile::tempfile_in(scratch) {
        Ok(file) => file,
        Err(error) => {
            report.defect(format!("scratch file: {error}"));
            return snapshots::TarballContents::default();
        }
    };
    let what = format!("{name}.tar.gz");
    if let Err(error) = store
        .download_backup_contents(name, &file, MAX_TARBALL_BYTES)
        .await
    {
        report.defect(format!("{what}: {error}"));
        return snapshots::TarballContents::default();
    }
    let read = tokio::task::spawn_blocking(move || items(std::io::BufReader::new(file))).await;
    let mut items = match read {
        Ok(items) => items,
        Err(error) => {
            report.defect(format!("{what}: {error}"));
            return snapshots::TarballContents::default();
        }
    };
    let unreadable = std::mem::take(&mut items.held.unreadable);
    for defect in items.defects.into_iter().chain(unreadable) {
        report.defect(format!("{what}: {defect}"));
    }
    let count: usize = items.listed.values().map(BTreeSet::len).sum();
    match &found.list {
        None => report.checked("Objects", format!("{count} items in the tarball")),
        Some(list) => {
            for defect in compare(&items.listed, list) {
                report.defect(defect);
            }
            report.checked(
                "Objects",
                format!("{count} items in the tarball, against the resource list"),
            );
        }
    }
    items.held
}

/// The items of a tarball, as its resource list would name them.
#[derive(Debug, Default)]
struct Items {
    /// `apps/v1/Deployment` → `shop/web`, of each item's main copy.
    listed: BTreeMap<String, BTreeSet<String>>,
    defects: Vec<String>,
    /// Its VolumeSnapshotContents and DataUploads, read in the same pass.
    held: snapshots::TarballContents,
}

fn items(tarball: impl Read) -> Items {
    let mut items = Items::default();
    let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(tarball));
    let mut version = false;
    let entries = match archive.entries() {
        Ok(entries) => entries,
        Err(e) => {
            items.defects.push(format!("not a gzip tar: {e}"));
            return items;
        }
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                items
                    .defects
                    .push(format!("not a gzip tar past its last good entry: {e}"));
                return items;
            }
        };
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if path.trim_start_matches("./") == ark_storage::tarball::VERSION_ENTRY {
            version = true;
            continue;
        }
        let main = ark_storage::tarball::parse_item_path(&path);
        let copy = ark_storage::tarball::parse_version_path(&path).map(|(entry, _)| entry);
        let Some(expected) = main.clone().or(copy) else {
            continue;
        };
        let mut content = Vec::new();
        if let Err(e) = (&mut entry)
            .take(MAX_ITEM_BYTES + 1)
            .read_to_end(&mut content)
        {
            items.defects.push(format!("{path}: {e}"));
            continue;
        }
        let item: Value = match serde_json::from_slice(&content) {
            Ok(item) if content.len() as u64 <= MAX_ITEM_BYTES => item,
            Ok(_) => {
                items
                    .defects
                    .push(format!("{path}: more than {MAX_ITEM_BYTES} bytes"));
                continue;
            }
            Err(e) => {
                items
                    .defects
                    .push(format!("{path}: not an object's JSON: {e}"));
                continue;
            }
        };
        let text = |pointer: &str| item.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        let namespace = Some(text("/metadata/namespace")).filter(|ns| !ns.is_empty());
        if text("/metadata/name") != expected.name || namespace != expected.namespace.as_deref() {
            items.defects.push(format!(
                "{path} holds {} {:?} of namespace {:?}",
                text("/kind"),
                text("/metadata/name"),
                namespace.unwrap_or("")
            ));
            continue;
        }
        if main.is_some() {
            let key = format!("{}/{}", text("/apiVersion"), text("/kind"));
            let named = match namespace {
                Some(namespace) => format!("{namespace}/{}", expected.name),
                None => expected.name.clone(),
            };
            items.listed.entry(key).or_default().insert(named);
            items.held.add(&path, &expected, item);
        }
    }
    if !version {
        let entry = ark_storage::tarball::VERSION_ENTRY;
        items.defects.push(format!("no {entry} entry"));
    }
    items
}

/// Each item the resource list names and the tarball does not hold, and the reverse.
fn compare(
    held: &BTreeMap<String, BTreeSet<String>>,
    list: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut defects = Vec::new();
    for (key, names) in list {
        for named in names {
            if !held.get(key).is_some_and(|held| held.contains(named)) {
                defects.push(format!(
                    "the resource list names {key} {named}, which the tarball does not hold"
                ));
            }
        }
    }
    for (key, names) in held {
        for named in names {
            if !list.get(key).is_some_and(|list| list.contains(named)) {
                defects.push(format!(
                    "the tarball holds {key} {named}, which the resource list does not name"
                ));
            }
        }
    }
    defects
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (path, content) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, path, content.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    const WEB: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}"#;
    const SHOP: &str = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}"#;

    #[test]
    fn items_are_named_as_the_resource_list_names_them_and_misplaced_ones_are_defects() {
        let bytes = tarball(&[
            ("metadata/version", "1.1.0"),
            ("resources/deployments.apps/namespaces/shop/web.json", WEB),
            (
                "resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json",
                WEB,
            ),
            ("resources/namespaces/cluster/shop.json", SHOP),
            ("resources/namespaces/cluster/other.json", SHOP),
            ("resources/pods/namespaces/shop/p.json", "{not json"),
        ]);
        let items = items(bytes.as_slice());
        assert_eq!(
            items.listed,
            BTreeMap::from([
                (
                    "apps/v1/Deployment".into(),
                    BTreeSet::from(["shop/web".into()])
                ),
                ("v1/Namespace".into(), BTreeSet::from(["shop".into()])),
            ])
        );
        assert_eq!(items.defects.len(), 2, "{:?}", items.defects);
        assert_eq!(
            items.defects[0],
            r#"resources/namespaces/cluster/other.json holds Namespace "shop" of namespace """#
        );
        assert!(
            items.defects[1]
                .starts_with("resources/pods/namespaces/shop/p.json: not an object's JSON")
        );
    }

    #[test]
    fn snapshot_contents_are_read_in_the_same_pass_as_the_items() {
        const VSC: &str = r#"{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"vsc"},"status":{"snapshotHandle":"h"}}"#;
        let bytes = tarball(&[
            ("metadata/version", "1.1.0"),
            (
                "resources/volumesnapshotcontents.snapshot.storage.k8s.io/cluster/vsc.json",
                VSC,
            ),
        ]);
        let items = items(bytes.as_slice());
        let held: Vec<&str> = (items.held.contents.iter())
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(held, ["vsc"]);
        assert_eq!(items.defects, Vec::<String>::new());
    }

    #[test]
    fn the_resource_list_and_the_tarball_must_name_the_same_items() {
        let held = BTreeMap::from([(
            "v1/ConfigMap".to_string(),
            BTreeSet::from(["a/one".to_string(), "a/two".to_string()]),
        )]);
        let list = BTreeMap::from([(
            "v1/ConfigMap".to_string(),
            vec!["a/one".to_string(), "a/three".to_string()],
        )]);
        assert_eq!(
            compare(&held, &list),
            [
                "the resource list names v1/ConfigMap a/three, which the tarball does not hold",
                "the tarball holds v1/ConfigMap a/two, which the resource list does not name",
            ]
        );
        assert_eq!(
            compare(
                &held,
                &BTreeMap::from([(
                    "v1/ConfigMap".to_string(),
                    vec!["a/one".into(), "a/two".into()]
                )])
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_tarball_that_is_not_one_is_a_defect_not_a_panic() {
        let items = items(&b"not gzip at all"[..]);
        assert_eq!(items.listed.len(), 0);
        assert_eq!(items.defects.len(), 1, "{:?}", items.defects);
        assert!(
            items.defects[0].starts_with("not a gzip tar"),
            "{:?}",
            items.defects
        );
        let truncated = tarball(&[("metadata/version", "1.1.0")]);
        let items = super::items(&truncated[..truncated.len() / 2]);
        assert!(!items.defects.is_empty());
    }
}
