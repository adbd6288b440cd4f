//! A restored volume keeps the name of its claim, in the claim's mapped namespace, without the old
//! claim's uid, so that the PV controller binds it to the restored claim (Velero's PV restore).

use serde_json::Value;

use super::{BIND_ANNOTATIONS, ItemCx, Output, RestoreCx, RestoreItemAction, remove_annotations};

pub struct PersistentVolumeAction;

impl RestoreItemAction for PersistentVolumeAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "persistentvolumes"
    }

    fn execute(&self, item: &mut Value, restore: &RestoreCx<'_>, _: &ItemCx<'_>, _: &mut Output) {
        remove_annotations(item, BIND_ANNOTATIONS);
        if let Some(claim) = item
            .pointer_mut("/spec/claimRef")
            .and_then(Value::as_object_mut)
        {
            claim.remove("uid");
            claim.remove("resourceVersion");
            if let Some(Value::String(ns)) = claim.get("namespace") {
                let mapped = restore.target_namespace(ns).to_string();
                claim.insert("namespace".into(), Value::String(mapped));
            }
        }
    }
}

/// Whether a backed-up PersistentVolume is created again at restore. ark takes no volume
/// snapshots, so, as in Velero without a snapshot, a volume whose reclaim policy is Delete is
/// not: its storage went with it, and its claim is provisioned anew.
pub fn is_restored_volume(volume: &Value) -> bool {
    volume
        .pointer("/spec/persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        != Some("Delete")
}
