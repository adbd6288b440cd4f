//! A restored claim loses the old cluster's binding and provisioning annotations (Velero's PVC
//! restore action), and its `volumeName` unless its volume is restored too. A claim whose
//! snapshot's data Velero's data mover moved is restored empty, with a warning: ark does not
//! restore moved data yet.

use serde_json::Value;

use super::{
    BIND_ANNOTATIONS, ItemCx, Output, RestoreCx, RestoreItemAction, remove_annotations, spec_mut,
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
        if let Some(upload) = restore.moved_by(item, cx) {
            let name = item.pointer("/metadata/name").and_then(Value::as_str);
            out.warnings.push(format!(
                "claim {}: its data was moved by a data mover (DataUpload {upload}), which ark \
                 does not restore yet: the claim comes back without its data",
                name.unwrap_or_default()
            ));
        }
        remove_annotations(item, BIND_ANNOTATIONS);
        remove_annotations(item, CLAIM_PROVISIONING_ANNOTATIONS);
        remove_annotations(item, &[csi::DATA_UPLOAD_NAME]);
        if let Some(spec) = spec_mut(item) {
            let volume = spec
                .get("volumeName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !restore.restored_volumes.contains(volume) {
                spec.remove("volumeName");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::persistent_volume::is_restored_volume;
    use super::super::testing;
    use serde_json::json;

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
}
