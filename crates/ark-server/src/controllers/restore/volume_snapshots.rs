//! What a backup holds of CSI snapshots, read once before the restore plans its items: the
//! claims that come back from a snapshot (their volumes are not restored), and the contents of
//! the snapshots cut at backup (restored with their snapshots, whatever the restore's
//! cluster-scoped filter says); and, once the restore has created its items, the wait for the
//! driver to have each restored snapshot ready, so that a claim that cannot be provisioned from
//! its snapshot is named in the restore's errors rather than left Pending in silence.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use ark_api::RestoreSpec;
use futures::StreamExt;
use kube::Client;
use kube::api::{ApiResource, ListParams};
use kube::discovery::ApiCapabilities;
use serde_json::Value;
use tokio::time::Instant;

use super::actions::is_backed_up_snapshot;
use super::extract::{child_dirs, json_files};
use crate::domain::csi::{self, ContentStatus, SnapshotStatus, text};
use crate::runtime::objects;

/// How long a restored snapshot may take to be ready: Velero's default `csiSnapshotTimeout`.
const READY_WITHIN: Duration = Duration::from_secs(10 * 60);
/// An error the driver still reports after this long is its answer, not a passing failure (the
/// snapshotter retries, and clears the error once a retry succeeds).
const ERROR_STANDS_AFTER: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_secs(1);

pub struct BackedUpSnapshots {
    /// Namespace and name, as backed up.
    pub claims: BTreeSet<(String, String)>,
    /// The claims whose snapshot's data a data mover moved (the DataUploads the backup holds,
    /// as Velero's restore reads them): namespace and name, with the DataUpload. Their snapshots
    /// are gone.
    pub moved: BTreeMap<(String, String), ark_api::DataUpload>,
    pub contents: BTreeSet<String>,
    /// The restore's `restorePVs` (Velero's default: true).
    pub restore_pvs: bool,
}

impl BackedUpSnapshots {
    pub fn read(resources: &Path, spec: &RestoreSpec) -> Self {
        let items = |gr: &str| {
            let dir = resources.join(gr).join("namespaces");
            child_dirs(&dir)
                .into_iter()
                .flat_map(|ns| {
                    json_files(&dir.join(&ns))
                        .into_iter()
                        .map(move |path| (ns.clone(), path))
                })
                .filter_map(|(ns, path)| {
                    let item: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
                    Some((ns, item))
                })
                .collect::<Vec<_>>()
        };
        let snapshot_name = format!(
            "/metadata/annotations/{}",
            csi::VOLUME_SNAPSHOT_NAME.replace('/', "~1")
        );
        let moved: BTreeMap<(String, String), ark_api::DataUpload> = items(csi::DATA_UPLOADS)
            .into_iter()
            .filter_map(|(_, upload)| serde_json::from_value::<ark_api::DataUpload>(upload).ok())
            .map(|upload| {
                let spec = &upload.spec;
                (
                    (spec.source_namespace.clone(), spec.source_pvc.clone()),
                    upload,
                )
            })
            .collect();
        // A claim whose snapshot's data was moved names a snapshot that is gone.
        let claims = items("persistentvolumeclaims")
            .into_iter()
            .filter(|(_, claim)| text(claim, &snapshot_name).is_some())
            .filter_map(|(ns, claim)| Some((ns, text(&claim, "/metadata/name")?.to_string())))
            .filter(|claim| !moved.contains_key(claim))
            .collect();
        let contents = items(csi::VOLUME_SNAPSHOTS)
            .into_iter()
            .filter(|(_, snapshot)| is_backed_up_snapshot(snapshot))
            .filter_map(|(_, snapshot)| {
                Some(SnapshotStatus::of(&snapshot).bound_content?.to_string())
            })
            .collect();
        BackedUpSnapshots {
            claims,
            moved,
            contents,
            restore_pvs: spec.restore_pvs != Some(false),
        }
    }
}

/// The cluster's VolumeSnapshotClasses, name and driver; none when the cluster serves no
/// snapshots or they cannot be listed (a content restored then names no class, which a
/// statically bound content does not need).
pub async fn snapshot_classes(
    client: &Client,
    served: &BTreeMap<String, (ApiResource, ApiCapabilities)>,
) -> Vec<(String, String)> {
    if !served.contains_key(csi::VOLUME_SNAPSHOT_CLASSES) {
        return Vec::new();
    }
    let Ok(classes) = csi::volume_snapshot_classes(client)
        .list(&ListParams::default())
        .await
    else {
        return Vec::new();
    };
    classes
        .items
        .iter()
        .filter_map(|class| {
            Some((
                class.metadata.name.clone()?,
                class.data.get("driver")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Waits, for all of them at once, until each restored claim's VolumeSnapshot (namespace, claim,
/// snapshot) is ready to provision from; the errors, by namespace, of those that never are.
pub async fn wait_ready(
    client: &Client,
    claims: Vec<(String, String, String)>,
) -> Vec<(String, String)> {
    futures::stream::iter(claims)
        .map(|(namespace, claim, snapshot)| async move {
            let why = ready(client, &namespace, &snapshot).await.err()?;
            let error = format!(
                "claim {namespace}/{claim}: its VolumeSnapshot {snapshot} {why}; the claim stays Pending"
            );
            Some((namespace, error))
        })
        .buffer_unordered(16)
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// Ready, or why not: not there, an error of the driver's that stood for [`ERROR_STANDS_AFTER`],
/// or not ready within [`READY_WITHIN`].
async fn ready(client: &Client, namespace: &str, name: &str) -> Result<(), String> {
    let snapshots = csi::volume_snapshots(client, namespace);
    let contents = csi::volume_snapshot_contents(client);
    let deadline = Instant::now() + READY_WITHIN;
    let mut last = String::from("the snapshot controller never made it ready");
    let mut erring_since: Option<Instant> = None;
    loop {
        let mut error = None;
        match snapshots.get_opt(name).await {
            // Restored before its claim: gone since, or left out by the restore's filters.
            Ok(None) => return Err("is not in the cluster (deleted, or not restored)".into()),
            Ok(Some(snapshot)) => {
                let status = SnapshotStatus::of(&snapshot.data);
                if status.ready_to_use {
                    return Ok(());
                }
                error = status.error.map(str::to_string);
                if let (None, Some(bound)) = (&error, status.bound_content)
                    && let Ok(Some(content)) = contents.get_opt(bound).await
                {
                    error = ContentStatus::of(&content.data).error.map(str::to_string);
                }
            }
            Err(e) => last = format!("could not be read: {}", objects::reason(&e)),
        }
        match error {
            Some(error) => {
                let since = *erring_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= ERROR_STANDS_AFTER {
                    return Err(format!("is not usable: the driver said: {error}"));
                }
                last = format!("the driver said: {error}");
            }
            None => erring_since = None,
        }
        if Instant::now() + POLL > deadline {
            return Err(format!(
                "was not ready within {}: {last}",
                ark_api::duration::format(READY_WITHIN)
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The regression: a claim of a backup whose snapshot's data Velero's data mover moved names
    /// its snapshot too, but that snapshot is gone; restored from it, the claim stayed Pending and
    /// the restore waited for it. Only a claim whose snapshot the backup holds comes from one; a
    /// moved one is known by the backup's DataUpload for it.
    #[test]
    fn a_claim_whose_snapshot_s_data_was_moved_does_not_come_from_the_snapshot() {
        let unpacked = tempfile::tempdir().unwrap();
        let write = |folder: &str, name: &str, item: Value| {
            let dir = unpacked.path().join(folder);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{name}.json")), item.to_string()).unwrap();
        };
        for name in ["snapped", "moved"] {
            let snapshot = format!("velero-{name}-1");
            let annotations = json!({ "velero.io/volume-snapshot-name": snapshot });
            let claim = json!({ "metadata": { "name": name, "annotations": annotations } });
            write("persistentvolumeclaims/namespaces/shop", name, claim);
        }
        let upload = json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": { "name": "b-x7k2p", "namespace": "velero" },
            "spec": { "snapshotType": "CSI", "sourcePVC": "moved", "sourceNamespace": "shop",
                "backupStorageLocation": "default", "operationTimeout": "10m0s" },
        });
        write("datauploads.velero.io/namespaces/velero", "b-x7k2p", upload);
        let read = BackedUpSnapshots::read(unpacked.path(), &RestoreSpec::default());
        let claim = |name: &str| ("shop".to_string(), name.to_string());
        assert_eq!(read.claims, BTreeSet::from([claim("snapped")]));
        let moved: Vec<_> = (read.moved.iter())
            .map(|(claim, upload)| (claim.clone(), upload.metadata.name.clone()))
            .collect();
        assert_eq!(moved, [(claim("moved"), Some("b-x7k2p".to_string()))]);
    }
}
