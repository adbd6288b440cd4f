//! An application on a block volume (`volumeMode: Block`, the test ground's driver gives it as a
//! loop device on the real node): a pod that writes lines at the device's start and a random UUID
//! at 40 MiB once (a restored pod finds them there and writes nothing; one that wrote again would
//! write another UUID), and the volume's bytes read whole from the driver's file, to compare a
//! restored volume with the original.

use ark_tests::{Cluster, TestNamespace, wait_for};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use super::node_agent::{WAIT, is_ready};

/// The claim, and the pod that uses it.
pub const CLAIM: &str = "disk";
pub const POD: &str = "disk-user";
/// The claim's size.
pub const SIZE: usize = 64 << 20;

/// A namespace with the claim and its pod, once the pod has written its data (ready).
pub async fn application(cluster: &Cluster) -> TestNamespace {
    let client = cluster.client().await;
    let app = cluster.namespace("block").await;
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": CLAIM },
        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
            "volumeMode": "Block", "resources": { "requests": { "storage": "64Mi" } } },
    }))
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), &app.name)
        .create(&PostParams::default(), &claim)
        .await
        .unwrap();
    let script = "head -c 12 /dev/xvda | grep -q 'block line 0' || { i=0; \
        while [ $i -lt 2000 ]; do echo \"block line $i\"; i=$((i+1)); done \
        | dd of=/dev/xvda conv=notrunc 2>/dev/null \
        && dd if=/proc/sys/kernel/random/uuid of=/dev/xvda bs=1M seek=40 conv=notrunc 2>/dev/null; }; \
        sync; touch /tmp/written; exec sleep 3600";
    let pod = cluster.on_real_node(json!({
        "metadata": { "name": POD },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "app", "image": ark_tests::BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/tmp/written"] },
                    "periodSeconds": 1 },
                "volumeDevices": [{ "name": CLAIM, "devicePath": "/dev/xvda" }],
            }],
            "volumes": [{ "name": CLAIM, "persistentVolumeClaim": { "claimName": CLAIM } }],
        },
    }));
    let pods: Api<Pod> = Api::namespaced(client, &app.name);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods, POD, is_ready(), WAIT).await.unwrap();
    app
}

/// Every byte of the volume bound to the claim in `namespace`, from the driver's file.
pub async fn volume_bytes(cluster: &Cluster, namespace: &str) -> Vec<u8> {
    let client = cluster.client().await;
    let claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace)
        .get(CLAIM)
        .await
        .unwrap();
    let volume = claim
        .spec
        .and_then(|s| s.volume_name)
        .expect("a bound claim");
    let pv = Api::<PersistentVolume>::all(client)
        .get(&volume)
        .await
        .unwrap();
    let handle = pv
        .spec
        .and_then(|s| s.csi)
        .expect("a CSI volume")
        .volume_handle;
    let path = ark_tests::csi::volumes_dir(cluster).join(handle);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts that `restored` is `original`, naming the first byte that differs.
pub fn assert_same(restored: &[u8], original: &[u8]) {
    assert!(
        restored == original,
        "the restored volume ({} bytes) differs from the original ({} bytes) first at byte {:?}",
        restored.len(),
        original.len(),
        restored.iter().zip(original).position(|(a, b)| a != b)
    );
}

/// Asserts that `bytes` hold what the pod writes.
pub fn assert_written(bytes: &[u8]) {
    assert_eq!(bytes.len(), SIZE);
    assert!(bytes.starts_with(b"block line 0\nblock line 1\n"));
    let uuid = &bytes[40 << 20..(40 << 20) + 37];
    assert!(
        uuid[36] == b'\n'
            && uuid[..36]
                .iter()
                .all(|b| b.is_ascii_hexdigit() || *b == b'-'),
        "no UUID at 40 MiB: {uuid:?}"
    );
}
