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
/// Velero's mark on an item whose additional items must be backed up with it.
const MUST_INCLUDE_ADDITIONAL_ITEMS: &str = "backup.velero.io/must-include-additional-items";

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

/// The claim as backed up, as Velero's CSI PVC action writes it: it names its snapshot (label and
/// annotation). Its data is either in the snapshot, which goes with it, and the claim asks for
/// at least the snapshot's size so that the claim restored from it fits it; or moved by a
/// DataUpload, which it names, and the snapshot is not backed up (it is removed once moved).
fn claim_naming(mut claim: Value, snapshot: &Snapshot) -> Result<Executed, String> {
    let metadata = &mut claim["metadata"];
    for field in ["labels", "annotations"] {
        if !metadata[field].is_object() {
            metadata[field] = json!({});
        }
        metadata[field][csi::VOLUME_SNAPSHOT_NAME] = json!(snapshot.volume_snapshot);
    }
    metadata["annotations"][MUST_INCLUDE_ADDITIONAL_ITEMS] = json!("true");
    let additional = match &snapshot.moved_by {
        Some(data_upload) => {
            let upload = format!("{}/{}", data_upload.namespace, data_upload.name);
            metadata["annotations"][csi::DATA_UPLOAD_NAME] = json!(upload);
            Vec::new()
        }
        None => {
            if let Some(size) = snapshot.restore_size {
                let request =
                    text(&claim, "/spec/resources/requests/storage").and_then(quantity::bytes);
                if request.is_some_and(|request| request < size) {
                    claim["spec"]["resources"]["requests"]["storage"] = json!(size.to_string());
                }
            }
            vec![ItemRef {
                group_resource: csi::VOLUME_SNAPSHOTS.into(),
                namespace: Some(snapshot.namespace.clone()),
                name: snapshot.volume_snapshot.clone(),
            }]
        }
    };
    Ok(Executed {
        additional,
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
