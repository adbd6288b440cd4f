//! A claim of a CSI volume is snapshotted by its driver (Velero's CSI PVC, VolumeSnapshot and
//! VolumeSnapshotContent actions): the claim's item names its VolumeSnapshot; the VolumeSnapshot
//! goes with it, annotated with what a restore needs (the storage snapshot's handle, driver, size
//! and deletion policy), and brings its content and class.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::DynamicObject;
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

use super::{BackupItemAction, Executed, ItemRef};
use crate::controllers::backup::volume_snapshots::{ClaimSnapshots, Snapshot};
use crate::domain::csi::{self, text};
use crate::domain::quantity;

const CLAIMS: &str = "persistentvolumeclaims";

pub struct VolumeSnapshotAction(pub ClaimSnapshots);

impl BackupItemAction for VolumeSnapshotAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == CLAIMS || group_resource == csi::VOLUME_SNAPSHOTS
    }

    fn adds(&self) -> &'static [&'static str] {
        &[
            csi::VOLUME_SNAPSHOTS,
            csi::VOLUME_SNAPSHOT_CONTENTS,
            csi::VOLUME_SNAPSHOT_CLASSES,
        ]
    }

    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        _: &'a Client,
    ) -> BoxFuture<'a, Result<Executed, String>> {
        Box::pin(async move {
            if item.metadata.namespace.is_none() {
                return Ok(Executed::default());
            }
            let json = serde_json::to_value(item).map_err(|e| e.to_string())?;
            let is_claim =
                json.get("kind").and_then(Value::as_str) == Some("PersistentVolumeClaim");
            if is_claim {
                let claim: PersistentVolumeClaim =
                    serde_json::from_value(json.clone()).map_err(|e| e.to_string())?;
                // Its outcome (a warning, an error) is the backup's once, when it ends.
                let cut = self.0.cut(&claim).await;
                return Ok(match &cut.snapshot {
                    Some(snapshot) => claim_naming(json, snapshot)?,
                    None => Executed::default(),
                });
            }
            let namespace = item.namespace().unwrap_or_default();
            match self.0.cut_as(&namespace, &item.name_any()) {
                Some(snapshot) => annotated(json, &snapshot),
                None => Ok(Executed::default()),
            }
        })
    }

    fn made_here(&self, group_resource: &str, item: &DynamicObject) -> bool {
        group_resource == csi::VOLUME_SNAPSHOTS && self.0.made_here(item)
    }
}

/// The claim as backed up: it names its snapshot (label and annotation), and asks for at least
/// the snapshot's size, so that the claim restored from it fits it.
fn claim_naming(mut claim: Value, snapshot: &Snapshot) -> Result<Executed, String> {
    for field in ["labels", "annotations"] {
        let metadata = &mut claim["metadata"];
        if !metadata[field].is_object() {
            metadata[field] = json!({});
        }
        metadata[field][csi::VOLUME_SNAPSHOT_NAME] = json!(snapshot.volume_snapshot);
    }
    if let Some(size) = snapshot.restore_size {
        let request = text(&claim, "/spec/resources/requests/storage").and_then(quantity::bytes);
        if request.is_some_and(|request| request < size) {
            claim["spec"]["resources"]["requests"]["storage"] = json!(size.to_string());
        }
    }
    Ok(Executed {
        additional: vec![ItemRef {
            group_resource: csi::VOLUME_SNAPSHOTS.into(),
            namespace: Some(snapshot.namespace.clone()),
            name: snapshot.volume_snapshot.clone(),
        }],
        updated: Some(serde_json::from_value(claim).map_err(|e| e.to_string())?),
    })
}

/// The VolumeSnapshot as backed up, with the annotations Velero's restore reads, and its content
/// and class to go with it.
fn annotated(mut snapshot_item: Value, snapshot: &Snapshot) -> Result<Executed, String> {
    csi::SnapshotRecord {
        deletion_policy: &snapshot.deletion_policy,
        handle: &snapshot.handle,
        driver: &snapshot.driver,
        restore_size: snapshot.restore_size,
    }
    .annotate(&mut snapshot_item);
    Ok(Executed {
        additional: vec![
            ItemRef {
                group_resource: csi::VOLUME_SNAPSHOT_CONTENTS.into(),
                namespace: None,
                name: snapshot.content.clone(),
            },
            ItemRef {
                group_resource: csi::VOLUME_SNAPSHOT_CLASSES.into(),
                namespace: None,
                name: snapshot.class.clone(),
            },
        ],
        updated: Some(serde_json::from_value(snapshot_item).map_err(|e| e.to_string())?),
    })
}
