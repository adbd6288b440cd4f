//! A restored claim loses the old cluster's binding and provisioning annotations (Velero's PVC
//! restore action), and its `volumeName` unless its volume is restored too. A claim whose
//! snapshot's data a data mover moved waits for the volume its DataDownload writes: its selector
//! names that volume alone (Velero's `velero.io/dynamic-pv-restore`), so none is provisioned for
//! it meanwhile.

use ark_api::{PodVolumePhase, labels};
use serde_json::{Value, json};

use super::{
    BIND_ANNOTATIONS, ClaimVolume, ItemCx, Output, RestoreCx, RestoreItemAction,
    remove_annotations, spec_mut,
};
use crate::domain::csi;

/// What a claim carries of the old cluster's provisioning.
const CLAIM_PROVISIONING_ANNOTATIONS: &[&str] = &[
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",
];

pub struct PersistentVolumeClaimAction;

impl RestoreItemAction for PersistentVolumeClaimAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "persistentvolumeclaims"
    }

    fn execute(
        &self,
        item: &mut Value,
        restore: &RestoreCx<'_>,
        cx: &ItemCx<'_>,
        out: &mut Output,
    ) {
        remove_annotations(item, BIND_ANNOTATIONS);
        remove_annotations(item, CLAIM_PROVISIONING_ANNOTATIONS);
        remove_annotations(item, &[csi::DATA_UPLOAD_NAME]);
        // A backup made before ark dropped it at backup, or by Velero, may hold it.
        remove_finalizer(item, csi::SNAPSHOT_SOURCE_FINALIZER);
        if let Some(spec) = spec_mut(item) {
            let volume = spec
                .get("volumeName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !restore.restored_volumes.contains(volume) {
                spec.remove("volumeName");
            }
        }
        if let Some(upload) = restore.moved_by(item, cx) {
            let namespace = restore.target_namespace(cx.source_namespace.unwrap_or_default());
            moved_data(item, namespace, upload, restore, out);
        }
    }
}

/// A claim whose data `upload` moved: it waits for the volume a DataDownload writes, when the
/// restore restores volumes and the upload completed with data; otherwise it comes back empty,
/// with a warning when data is lost.
fn moved_data(
    item: &mut Value,
    namespace: &str,
    upload: &ark_api::DataUpload,
    restore: &RestoreCx<'_>,
    out: &mut Output,
) {
    let name = item.pointer("/metadata/name").and_then(Value::as_str);
    let name = name.unwrap_or_default().to_string();
    let upload_name = upload.metadata.name.clone().unwrap_or_default();
    let status = upload.status.clone().unwrap_or_default();
    let has_data = status
        .snapshot_id
        .as_deref()
        .is_some_and(|id| !id.is_empty());
    if restore.spec.restore_pvs == Some(false) {
        return;
    }
    if status.phase != Some(PodVolumePhase::Completed) {
        let phase = status.phase.map_or("New".to_string(), |p| format!("{p:?}"));
        out.warnings.push(format!(
            "claim {namespace}/{name}: its data was not moved (DataUpload {upload_name} is \
             {phase}): the claim comes back without its data"
        ));
        return;
    }
    if !has_data {
        // An empty volume: nothing to write back.
        return;
    }
    if let Some(spec) = spec_mut(item) {
        spec.remove("dataSource");
        spec.remove("dataSourceRef");
        let selector = spec.entry("selector").or_insert_with(|| json!({}));
        if !selector.is_object() {
            *selector = json!({});
        }
        let match_labels = selector
            .as_object_mut()
            .expect("an object")
            .entry("matchLabels")
            .or_insert_with(|| json!({}));
        if !match_labels.is_object() {
            *match_labels = json!({});
        }
        // Velero adds 5 random characters; the restore's uid serves as well, and says which
        // restore made the claim wait.
        let uid: String = restore.restore_uid.chars().take(5).collect();
        let value = labels::valid_label_value(&format!("{namespace}.{name}.{uid}"));
        match_labels[labels::DYNAMIC_PV_RESTORE] = json!(value);
    }
    out.claim_volume = Some(ClaimVolume::MovedData(Box::new(upload.clone())));
}

fn remove_finalizer(item: &mut Value, finalizer: &str) {
    if let Some(finalizers) = item
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        finalizers.retain(|f| f.as_str() != Some(finalizer));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::persistent_volume::is_restored_volume;
    use super::super::testing;
    use super::*;

    #[test]
    fn a_bound_claim_and_its_retained_volume_are_restored_to_bind_again() {
        let bind = json!({ "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes", "keep": "me" });
        let volume = json!({
            "metadata": { "name": "pv-retained", "annotations": bind },
            "spec": { "persistentVolumeReclaimPolicy": "Retain",
                      "claimRef": { "kind": "PersistentVolumeClaim", "namespace": "shop", "name": "data", "uid": "u1", "resourceVersion": "7" } },
        });
        assert!(is_restored_volume(&volume));
        let mapping = [("shop", "shop-copy")];
        let restored = ["pv-retained"];
        let (volume, _) = testing::run(
            "persistentvolumes",
            volume,
            &mapping,
            &restored,
            testing::spec(),
        );
        assert_eq!(
            volume["spec"]["claimRef"],
            json!({ "kind": "PersistentVolumeClaim", "namespace": "shop-copy", "name": "data" })
        );
        assert_eq!(volume["metadata"]["annotations"], json!({ "keep": "me" }));
        let claim = |volume_name: &str| {
            json!({
                "metadata": { "name": "data", "namespace": "shop", "annotations": {
                    "pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "n1", "keep": "me" } },
                "spec": { "volumeName": volume_name },
            })
        };
        let claims = "persistentvolumeclaims";
        let (kept, _) = testing::run(
            claims,
            claim("pv-retained"),
            &mapping,
            &restored,
            testing::spec(),
        );
        assert_eq!(kept["spec"]["volumeName"], "pv-retained");
        assert_eq!(kept["metadata"]["annotations"], json!({ "keep": "me" }));
        // A claim whose volume is not restored (Delete policy, or not in the backup) is provisioned anew.
        let (anew, _) = testing::run(
            claims,
            claim("pv-deleted"),
            &mapping,
            &restored,
            testing::spec(),
        );
        assert_eq!(anew["spec"].get("volumeName"), None);
        assert!(!is_restored_volume(
            &json!({ "spec": { "persistentVolumeReclaimPolicy": "Delete" } })
        ));
    }

    /// A claim whose data was moved waits for the volume its DataDownload writes: its selector
    /// names that volume alone; it comes back empty, with a warning, when the upload did not
    /// complete, and empty when the restore restores no volumes.
    #[test]
    fn a_moved_claim_waits_for_its_data_unless_there_is_none_to_wait_for() {
        let upload = |phase: &str| -> ark_api::DataUpload {
            serde_json::from_value(json!({
                "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
                "metadata": { "name": "b-x7k2p", "namespace": "velero" },
                "spec": { "snapshotType": "CSI", "sourcePVC": "data", "sourceNamespace": "shop",
                    "backupStorageLocation": "default", "operationTimeout": "10m0s" },
                "status": { "phase": phase, "snapshotID": "k1" },
            }))
            .unwrap()
        };
        let claim = json!({
            "metadata": { "name": "data", "namespace": "shop",
                "finalizers": ["kubernetes.io/pvc-protection", "snapshot.storage.kubernetes.io/pvc-as-source-protection"],
                "annotations": { "velero.io/data-upload-name": "velero/b-x7k2p" } },
            "spec": { "volumeName": "pv-old", "storageClassName": "csi",
                "dataSource": { "kind": "VolumeSnapshot", "name": "s" } },
        });
        let run = |phase: &str, spec: &ark_api::RestoreSpec| {
            let moved = BTreeMap::from([(("shop".into(), "data".into()), upload(phase))]);
            let claims = "persistentvolumeclaims";
            testing::run_moved(
                claims,
                claim.clone(),
                &[("shop", "shop-2")],
                &[],
                spec,
                &moved,
            )
        };
        let (waiting, out) = run("Completed", testing::spec());
        assert_eq!(
            waiting["spec"],
            json!({ "storageClassName": "csi", "selector": { "matchLabels": {
                "velero.io/dynamic-pv-restore": "shop-2.data.resto" } } })
        );
        assert_eq!(
            waiting["metadata"]["finalizers"],
            json!(["kubernetes.io/pvc-protection"])
        );
        assert!(
            matches!(&out.claim_volume, Some(ClaimVolume::MovedData(u)) if u.spec == upload("Completed").spec)
        );
        assert!(out.warnings.is_empty());
        let (empty, out) = run("Failed", testing::spec());
        assert_eq!(empty["spec"].get("selector"), None);
        assert!(out.claim_volume.is_none());
        assert_eq!(
            out.warnings,
            [
                "claim shop-2/data: its data was not moved (DataUpload b-x7k2p is Failed): the \
              claim comes back without its data"
            ]
        );
        let no_volumes = ark_api::RestoreSpec {
            restore_pvs: Some(false),
            ..Default::default()
        };
        let (empty, out) = run("Completed", &no_volumes);
        assert_eq!(empty["spec"].get("selector"), None);
        assert!(out.claim_volume.is_none() && out.warnings.is_empty());
    }
}
