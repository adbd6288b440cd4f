//! A claim backed up as a CSI snapshot comes back from it (Velero's CSI PVC, VolumeSnapshot and
//! VolumeSnapshotContent restore actions). The snapshot and its content are created again under
//! a name of this restore's own (so that restoring a backup twice never collides), the content
//! bound statically to the storage snapshot's handle and kept (`Retain`) when the snapshot goes;
//! the claim is provisioned anew from the snapshot (`dataSource`). With `restorePVs: false` the
//! claim comes back empty, and the snapshot is not restored.

use serde_json::{Value, json};

use super::{ClaimVolume, ItemCx, Output, PlanCx, RestoreCx, RestoreItemAction, Skip, spec_mut};
use crate::domain::csi::{self, text};

pub struct VolumeSnapshotAction;

const CLAIMS: &str = "persistentvolumeclaims";

impl RestoreItemAction for VolumeSnapshotAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        [CLAIMS, csi::VOLUME_SNAPSHOTS, csi::VOLUME_SNAPSHOT_CONTENTS].contains(&group_resource)
    }

    fn skips(&self, group_resource: &str) -> bool {
        group_resource == csi::VOLUME_SNAPSHOTS
    }

    /// With `restorePVs: false`, a snapshot cut at backup is not restored: its claim comes back
    /// empty (Velero's CSI VolumeSnapshot restore action).
    fn skip(&self, _: &str, snapshot: &Value, plan: &PlanCx<'_>) -> Option<Skip> {
        (!plan.restore_pvs && is_backed_up_snapshot(snapshot)).then(|| {
            Skip(format!(
                "not restoring volume snapshot {}: the restore sets restorePVs to false",
                text(snapshot, "/metadata/name").unwrap_or_default()
            ))
        })
    }

    fn execute(
        &self,
        item: &mut Value,
        restore: &RestoreCx<'_>,
        cx: &ItemCx<'_>,
        out: &mut Output,
    ) {
        match cx.group_resource {
            CLAIMS => {
                if let Some(snapshot) = claim(item, restore, cx) {
                    out.claim_volume = Some(ClaimVolume::FromSnapshot(snapshot));
                }
            }
            csi::VOLUME_SNAPSHOTS => snapshot(item, restore),
            _ => content(item, restore, cx.backed_up_status),
        }
    }
}

/// A VolumeSnapshot that ark or Velero cut at backup: it says its storage snapshot's handle.
pub fn is_backed_up_snapshot(snapshot: &Value) -> bool {
    text(
        snapshot,
        &format!("/metadata/annotations/{}", escape(csi::SNAPSHOT_HANDLE)),
    )
    .is_some()
}

/// JSON pointer escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The restored VolumeSnapshot the claim comes back from, if it does: not one whose snapshot's
/// data was moved (that snapshot is gone).
fn claim(item: &mut Value, restore: &RestoreCx<'_>, cx: &ItemCx<'_>) -> Option<String> {
    if restore.moved_by(item, cx).is_some() {
        return None;
    }
    let snapshot = text(
        item,
        &format!(
            "/metadata/annotations/{}",
            escape(csi::VOLUME_SNAPSHOT_NAME)
        ),
    )
    .map(str::to_string)?;
    let restore_pvs = restore.spec.restore_pvs != Some(false);
    let spec = spec_mut(item)?;
    spec.remove("volumeName");
    spec.remove("dataSourceRef");
    if !restore_pvs {
        spec.remove("dataSource");
        return None;
    }
    let restored = csi::restored_snapshot_name(restore.restore_uid, &snapshot);
    spec.insert(
        "dataSource".into(),
        json!({ "apiGroup": csi::GROUP, "kind": "VolumeSnapshot", "name": restored }),
    );
    Some(restored)
}

fn snapshot(item: &mut Value, restore: &RestoreCx<'_>) {
    if !is_backed_up_snapshot(item) {
        return;
    }
    let name = text(item, "/metadata/name").unwrap_or_default().to_string();
    let restored = csi::restored_snapshot_name(restore.restore_uid, &name);
    item["metadata"]["name"] = json!(restored);
    item["metadata"]["annotations"][csi::DELETION_POLICY] = json!("Retain");
    item["spec"] = json!({ "source": { "volumeSnapshotContentName": restored } });
}

fn content(item: &mut Value, restore: &RestoreCx<'_>, status: Option<&Value>) {
    let (Some(handle), Some(snapshot), Some(namespace)) = (
        status
            .and_then(|s| text(s, "/snapshotHandle"))
            .map(str::to_string),
        text(item, "/spec/volumeSnapshotRef/name").map(str::to_string),
        text(item, "/spec/volumeSnapshotRef/namespace").map(str::to_string),
    ) else {
        return;
    };
    let restored = csi::restored_snapshot_name(restore.restore_uid, &snapshot);
    let driver = text(item, "/spec/driver").unwrap_or_default().to_string();
    item["metadata"]["name"] = json!(restored);
    let spec = &mut item["spec"];
    spec["volumeSnapshotRef"] = json!({
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "namespace": restore.target_namespace(&namespace),
        "name": restored,
    });
    spec["deletionPolicy"] = json!("Retain");
    spec["source"] = json!({ "snapshotHandle": handle });
    match restore
        .snapshot_classes
        .iter()
        .find(|(_, class_driver)| *class_driver == driver)
    {
        Some((class, _)) => spec["volumeSnapshotClassName"] = json!(class),
        None => {
            if let Some(spec) = spec.as_object_mut() {
                spec.remove("volumeSnapshotClassName");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing;
    use super::*;

    #[test]
    fn a_snapshotted_claim_comes_back_from_its_snapshot_under_the_restore_s_names() {
        let claim = json!({
            "metadata": { "name": "data", "namespace": "shop",
                "annotations": { "velero.io/volume-snapshot-name": "velero-data-x" } },
            "spec": { "volumeName": "pvc-1", "storageClassName": "csi",
                "dataSourceRef": { "kind": "Other", "name": "o" } },
        });
        let mapping = [("shop", "shop2")];
        let (restored, out) = testing::run(CLAIMS, claim.clone(), &mapping, &[], testing::spec());
        let name = csi::restored_snapshot_name(testing::RESTORE_UID, "velero-data-x");
        assert!(matches!(&out.claim_volume, Some(ClaimVolume::FromSnapshot(s)) if *s == name));
        assert_eq!(
            restored["spec"],
            json!({ "storageClassName": "csi", "dataSource": {
                "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": name } })
        );
        // Without restorePVs the claim comes back empty.
        let spec = ark_api::RestoreSpec {
            restore_pvs: Some(false),
            ..Default::default()
        };
        let (empty, out) = testing::run(CLAIMS, claim, &mapping, &[], &spec);
        assert_eq!(empty["spec"], json!({ "storageClassName": "csi" }));
        assert!(out.claim_volume.is_none());

        let snapshot = json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": { "name": "velero-data-x", "namespace": "shop",
                "annotations": { "velero.io/csi-volumesnapshot-handle": "h-1",
                    "velero.io/csi-vsc-deletion-policy": "Delete" } },
            "spec": { "source": { "persistentVolumeClaimName": "data" }, "volumeSnapshotClassName": "c" },
            "status": { "boundVolumeSnapshotContentName": "snapcontent-1", "readyToUse": true },
        });
        let (restored, _) = testing::run(
            csi::VOLUME_SNAPSHOTS,
            snapshot,
            &mapping,
            &[],
            testing::spec(),
        );
        assert_eq!(restored["metadata"]["name"], json!(name));
        assert_eq!(
            restored["metadata"]["annotations"]["velero.io/csi-vsc-deletion-policy"],
            "Retain"
        );
        assert_eq!(
            restored["spec"],
            json!({ "source": { "volumeSnapshotContentName": name } })
        );
        assert_eq!(restored.get("status"), None);

        let content = json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
            "metadata": { "name": "snapcontent-1" },
            "spec": { "driver": "hostpath.csi.ark.test", "deletionPolicy": "Delete",
                "source": { "volumeHandle": "v-1" }, "volumeSnapshotClassName": "old",
                "volumeSnapshotRef": { "kind": "VolumeSnapshot", "namespace": "shop",
                    "name": "velero-data-x", "uid": "u-old", "resourceVersion": "9" } },
            "status": { "snapshotHandle": "h-1", "readyToUse": true },
        });
        let (restored, _) = testing::run(
            csi::VOLUME_SNAPSHOT_CONTENTS,
            content,
            &mapping,
            &[],
            testing::spec(),
        );
        assert_eq!(restored["metadata"]["name"], json!(name));
        assert_eq!(
            restored["spec"],
            json!({ "driver": "hostpath.csi.ark.test", "deletionPolicy": "Retain",
                "source": { "snapshotHandle": "h-1" }, "volumeSnapshotClassName": "ark-csi",
                "volumeSnapshotRef": { "apiVersion": "snapshot.storage.k8s.io/v1",
                    "kind": "VolumeSnapshot", "namespace": "shop2", "name": name } })
        );
    }

    #[test]
    fn a_snapshot_ark_did_not_cut_is_restored_as_it_was() {
        let snapshot = json!({
            "metadata": { "name": "users-own", "namespace": "shop" },
            "spec": { "source": { "persistentVolumeClaimName": "data" } },
        });
        let (restored, _) = testing::run(
            csi::VOLUME_SNAPSHOTS,
            snapshot.clone(),
            &[],
            &[],
            testing::spec(),
        );
        assert_eq!(restored["metadata"]["name"], "users-own");
        assert_eq!(restored["spec"], snapshot["spec"]);
    }
}
