//! A bound claim's volume goes with it (Velero's PV backup action): a restore into a fresh cluster
//! binds the pair again. The claim is backed up without the snapshot controller's finalizer of a
//! snapshot being cut from it (this backup's own, or another's): restored with it, by ark or by
//! Velero (which keeps a restored item's finalizers), the claim could never be deleted.

use futures::future::BoxFuture;
use kube::Client;
use kube::api::DynamicObject;

use super::{BackupItemAction, Executed, ItemRef};
use crate::domain::csi::SNAPSHOT_SOURCE_FINALIZER;

pub struct PersistentVolumeClaimAction;

impl BackupItemAction for PersistentVolumeClaimAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "persistentvolumeclaims"
    }

    fn adds(&self) -> &'static [&'static str] {
        &["persistentvolumes"]
    }

    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        _: &'a Client,
    ) -> BoxFuture<'a, Result<Executed, String>> {
        let volume = item
            .data
            .pointer("/spec/volumeName")
            .and_then(|v| v.as_str())
            .filter(|name| !name.is_empty());
        let related = volume
            .map(|name| ItemRef {
                group_resource: "persistentvolumes".into(),
                namespace: None,
                name: name.to_string(),
            })
            .into_iter()
            .collect();
        let updated = without_snapshot_finalizer(item);
        Box::pin(async move {
            Ok(Executed {
                additional: related,
                updated,
            })
        })
    }
}

/// The claim without [`SNAPSHOT_SOURCE_FINALIZER`], if it holds it.
fn without_snapshot_finalizer(item: &DynamicObject) -> Option<DynamicObject> {
    let finalizers = item.metadata.finalizers.as_ref()?;
    if !finalizers.iter().any(|f| f == SNAPSHOT_SOURCE_FINALIZER) {
        return None;
    }
    let mut updated = item.clone();
    let kept: Vec<String> = (finalizers.iter())
        .filter(|f| *f != SNAPSHOT_SOURCE_FINALIZER)
        .cloned()
        .collect();
    updated.metadata.finalizers = Some(kept).filter(|k| !k.is_empty());
    Some(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regression: Velero restored ark's backup of a claim listed while its snapshot was
    /// cut, finalizer and all, and the restored namespace could never be deleted (a CI run
    /// failed on it).
    #[test]
    fn a_claim_is_backed_up_without_the_finalizer_of_a_snapshot_being_cut_from_it() {
        let claim = |finalizers: serde_json::Value| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": { "name": "data", "namespace": "shop", "finalizers": finalizers },
            }))
            .unwrap()
        };
        let cutting = claim(serde_json::json!([
            "kubernetes.io/pvc-protection",
            "snapshot.storage.kubernetes.io/pvc-as-source-protection",
        ]));
        let backed_up = without_snapshot_finalizer(&cutting).unwrap();
        assert_eq!(
            backed_up.metadata.finalizers,
            Some(vec!["kubernetes.io/pvc-protection".to_string()])
        );
        let plain = claim(serde_json::json!(["kubernetes.io/pvc-protection"]));
        assert!(without_snapshot_finalizer(&plain).is_none());
    }
}
