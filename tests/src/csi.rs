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

/// The VolumeSnapshots left in `namespace` once none is, or when `timeout` has passed: a deleted
/// snapshot stays a moment, until the snapshot controller has removed its finalizers.
pub async fn volume_snapshots_left(
    client: &Client,
    namespace: &str,
    timeout: std::time::Duration,
) -> Vec<String> {
    let snapshots = api(client, Some(namespace), "VolumeSnapshot");
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left: Vec<String> = snapshots
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        if left.is_empty() || tokio::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
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

/// Where the test ground's driver keeps its volumes (a directory, or a block volume's file, and a
/// record each, named by the volume's handle).
pub fn volumes_dir(cluster: &crate::Cluster) -> std::path::PathBuf {
    (cluster.kubeconfig.parent().unwrap()).join("csi/data/volumes")
}

/// Where the test ground's driver keeps its storage snapshots (a directory and a record each,
/// named by the snapshot's handle).
pub fn snapshots_dir(cluster: &crate::Cluster) -> std::path::PathBuf {
    (cluster.kubeconfig.parent().unwrap()).join("csi/data/snapshots")
}
