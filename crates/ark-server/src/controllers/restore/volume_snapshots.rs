//! What a backup holds of CSI snapshots, read once before the restore plans its items: the
//! claims that come back from a snapshot (their volumes are not restored), and the contents of
//! the snapshots cut at backup (restored with their snapshots, whatever the restore's
//! cluster-scoped filter says).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use ark_api::RestoreSpec;
use kube::Client;
use kube::api::{ApiResource, ListParams};
use kube::discovery::ApiCapabilities;
use serde_json::Value;

use super::actions::is_backed_up_snapshot;
use super::engine::{child_dirs, json_files};
use crate::shared::csi::{self, text};

pub struct BackedUpSnapshots {
    /// Namespace and name, as backed up.
    pub claims: BTreeSet<(String, String)>,
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
        let claims = items("persistentvolumeclaims")
            .into_iter()
            .filter(|(_, claim)| text(claim, &snapshot_name).is_some())
            .filter_map(|(ns, claim)| Some((ns, text(&claim, "/metadata/name")?.to_string())))
            .collect();
        let contents = items(csi::VOLUME_SNAPSHOTS)
            .into_iter()
            .filter(|(_, snapshot)| is_backed_up_snapshot(snapshot))
            .filter_map(|(_, snapshot)| {
                Some(text(&snapshot, "/status/boundVolumeSnapshotContentName")?.to_string())
            })
            .collect();
        BackedUpSnapshots {
            claims,
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
