//! The application of the volume policy tests (`node/volume_policies.rs`,
//! `velero/volume_policies.rs`): three claims of the test ground's CSI class in one pod on the real
//! node, a policy that gives each its own method, and what a backup made of each claim.

use std::collections::BTreeMap;

use ark_api::{BackupVolumeInfo, PodVolumeBackup};
use ark_tests::{Cluster, TestNamespace, wait_for};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

use super::node_agent::{WAIT, is_ready, kubectl};

/// The claims, each labelled with the method its policy gives it.
pub const CLAIMS: [(&str, &str); 3] = [("files", "fs"), ("snap", "csi"), ("skip", "none")];

/// The ConfigMap of [`POLICY`].
pub const POLICY_MAP: &str = "volume-policy";

/// Velero's policy document: by the claim's label, to the node agent, snapshotted, or skipped.
pub const POLICY: &str = "version: v1
volumePolicies:
- conditions:
    pvcLabels: {method: fs}
  action: {type: fs-backup}
- conditions:
    pvcLabels: {method: csi}
    csi: {driver: hostpath.csi.ark.test}
  action: {type: snapshot}
- conditions:
    pvcLabels: {method: none}
  action: {type: skip}
";

/// A namespace holding the claims and the pod `app` mounting each at `/<claim>`, each claim
/// holding its own line and a MiB of random bytes once the pod is ready. The pod's annotation
/// names `skip` and `snap` for the node agent: the policy's word is the one that counts.
pub async fn application(cluster: &Cluster) -> TestNamespace {
    let client = cluster.client().await;
    let app = cluster.namespace("policies").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    for (name, method) in CLAIMS {
        let claim = serde_json::from_value(json!({
            "metadata": { "name": name, "labels": { "method": method } },
            "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
                "resources": { "requests": { "storage": "64Mi" } } },
        }))
        .unwrap();
        claims.create(&PostParams::default(), &claim).await.unwrap();
    }
    let pods: Api<Pod> = Api::namespaced(client, &app.name);
    pods.create(&PostParams::default(), &pod(cluster))
        .await
        .unwrap();
    wait_for(pods, "app", is_ready(), WAIT).await.unwrap();
    app
}

fn pod(cluster: &Cluster) -> Pod {
    let script = "for d in files snap skip; do test -f /$d/.done || { echo \"$d before the backup\" > /$d/line \
        && head -c 1048576 /dev/urandom > /$d/blob && touch /$d/.done; }; done; sync; exec sleep 3600";
    let mounts: Vec<_> = CLAIMS
        .iter()
        .map(|(name, _)| json!({ "name": name, "mountPath": format!("/{name}") }))
        .collect();
    let volumes: Vec<_> = CLAIMS
        .iter()
        .map(|(name, _)| json!({ "name": name, "persistentVolumeClaim": { "claimName": name } }))
        .collect();
    cluster.on_real_node(json!({
        "metadata": {
            "name": "app",
            "annotations": { "backup.velero.io/backup-volumes": "skip,snap" },
        },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "app", "image": ark_tests::BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/skip/.done"] }, "periodSeconds": 1 },
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    }))
}

/// The policy's ConfigMap, in the namespace of the server that reads it.
pub async fn policy(cluster: &Cluster, namespace: &str) {
    let policy: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": POLICY_MAP },
        "data": { "policy.yaml": POLICY },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(cluster.client().await, namespace)
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
}

/// Each claim's line and the checksum of its random bytes (or what `sh` said without them).
pub fn contents(cluster: &Cluster, namespace: &str) -> String {
    kubectl(
        cluster,
        &[
            "-n",
            namespace,
            "exec",
            "app",
            "--",
            "sh",
            "-c",
            "for d in files snap skip; do cat /$d/line 2>&1; md5sum /$d/blob 2>&1; done",
        ],
    )
}

/// What backup `backup` (its server in `ns`, its bucket at `prefix`) made of each claim: the node
/// agent's (a PodVolumeBackup of the pod's volume), a CSI snapshot, a CSI snapshot whose data was
/// moved, or skipped.
pub async fn methods(
    cluster: &Cluster,
    ns: &str,
    prefix: &str,
    backup: &str,
) -> BTreeMap<String, String> {
    let client = cluster.client().await;
    let mut methods = BTreeMap::new();
    let pvbs = Api::<PodVolumeBackup>::namespaced(client, ns)
        .list(&ListParams::default().labels(&format!("velero.io/backup-name={backup}")))
        .await
        .unwrap();
    for pvb in pvbs.items {
        methods.insert(pvb.spec.volume.clone(), "node agent".to_string());
    }
    let store = ark_storage::open(&cluster.s3_location(prefix)).unwrap();
    let info: Vec<BackupVolumeInfo> = serde_json::from_slice(&ark_tests::gunzip(
        &store
            .get_volume_info(backup)
            .await
            .unwrap()
            .expect("the backup's volume information"),
    ))
    .unwrap();
    for volume in info {
        // The reasons differ in words: Velero's joins what each of its trackers noted.
        let method = if volume.skipped {
            "skipped".to_string()
        } else if volume.snapshot_data_moved {
            "moved".to_string()
        } else if volume.csi_snapshot_info.is_some() {
            "CSI snapshot".to_string()
        } else {
            continue;
        };
        methods.insert(volume.pvc_name, method);
    }
    methods
}
