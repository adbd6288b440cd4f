//! The CSI test ground's objects (scripts/csi.sh): its classes, and the snapshot API's kinds.

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};

/// The StorageClass and the VolumeSnapshotClass (the driver's default) of the test driver.
pub const CLASS: &str = "ark-csi";

/// `kind` of `snapshot.storage.k8s.io/v1`, in namespace `ns` or cluster-wide.
pub fn api(client: &Client, ns: Option<&str>, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "snapshot.storage.k8s.io",
        "v1",
        kind,
    ));
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// A VolumeSnapshot `name` of claim `claim`, of the test driver's class.
pub fn volume_snapshot(name: &str, claim: &str) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
        "metadata": { "name": name },
        "spec": { "volumeSnapshotClassName": CLASS,
            "source": { "persistentVolumeClaimName": claim } },
    }))
    .expect("a VolumeSnapshot")
}
