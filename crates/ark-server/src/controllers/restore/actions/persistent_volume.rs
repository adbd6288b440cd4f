//! A restored volume keeps the name of its claim, in the claim's mapped namespace, without the old
//! claim's uid, so that the PV controller binds it to the restored claim (Velero's PV restore).

use serde_json::Value;

use super::{
    BIND_ANNOTATIONS, ItemCx, Output, PlanCx, RestoreCx, RestoreItemAction, Skip,
    remove_annotations,
};

pub struct PersistentVolumeAction;

impl RestoreItemAction for PersistentVolumeAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "persistentvolumes"
    }

    fn skips(&self, group_resource: &str) -> bool {
        self.applies_to(group_resource)
    }

    /// A volume whose claim comes back another way is not restored: its claim is provisioned anew
    /// (from its CSI snapshot, or empty for the node agent to fill), as Velero does.
    fn skip(&self, _: &str, volume: &Value, plan: &PlanCx<'_>) -> Option<Skip> {
        let claim_field = |field: &str| {
            volume
                .pointer(&format!("/spec/claimRef/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let claim = (claim_field("namespace"), claim_field("name"));
        let why = if plan.claims_from_snapshots.contains(&claim) {
            "its claim was backed up as a CSI snapshot and is provisioned anew from it"
        } else if plan.claims_moved.contains_key(&claim) {
            "its claim's data was moved into the backup location by a data mover; the claim \
             gets a new volume with that data"
        } else if plan.claims_with_data.contains(&claim) {
            "the node agent writes its claim's data back from the backup; the claim is \
             provisioned anew"
        } else if !is_restored_volume(volume) {
            "its reclaim policy is Delete and the backup holds no snapshot of it; its claim is \
             provisioned anew"
        } else {
            return None;
        };
        let name = volume.pointer("/metadata/name").and_then(Value::as_str);
        Some(Skip(format!(
            "not restoring persistent volume {}: {why}",
            name.unwrap_or_default()
        )))
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

/// Whether a backed-up PersistentVolume may be created again at restore: as in Velero without a
/// snapshot of it, a volume whose reclaim policy is Delete is not (its storage went with it).
pub(super) fn is_restored_volume(volume: &Value) -> bool {
    volume
        .pointer("/spec/persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        != Some("Delete")
}
