//! Snapshot data movement on the real node, by ark's node agent and by Velero's data mover, one
//! after the other (both agents take the host's network), each with its server and its own bucket
//! prefix, on the same claims of the CSI test ground's class `ark-csi`:
//! - `large`, 1 GiB in 4 files of random bytes, and `small`, 100,000 files of 4 KiB, each the
//!   claim of a pod of its own, filled from the host;
//! - per tool and claim: a backup with `snapshotMoveData` (the snapshot cut, exposed on the node,
//!   its data moved into the repository, the snapshot removed), a second of the unchanged claim,
//!   and a restore of the second into a namespace of its own (a new volume written by a
//!   DataDownload and bound to the restored claim), each timed from the creation of its Backup or
//!   Restore to its final phase, and each restored volume compared with the original;
//! - the agents' peak RSS: VmHWM sampled every 100 ms from the host, for ark's agent, Velero's
//!   agent and the data mover pod Velero's agent starts per request (`velero data-mover`);
//! - the floor, in the same run: reading the volume (`tar cf /dev/null`), then writing its bytes
//!   to S3 in 20 MiB objects, two at a time, and reading them back into files (bench-repository's
//!   `--op upload|download`). It leaves out what both tools wait for alike (the snapshot, a claim
//!   provisioned from it, a pod started on it).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-data-movement [--trees large,small] [--scale 1.0]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ark_tests::bench::{
    Cost, Sampler, Tool, agents_table, delete_namespace, each_tool, floors, make_tree, measured,
    release_ark, tree_args,
};
use ark_tests::kopia::{RestoredBy, assert_same_tree};
use ark_tests::{Cluster, is_pod_running, unique_name, wait_for};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;

/// The processes whose memory is sampled, by their command line's first two words.
const AGENTS: [(&str, &str); 3] = [
    ("ark agent", "/ark\0node-agent\0"),
    ("Velero agent", "/velero\0node-agent\0"),
    ("Velero data mover pod", "/velero\0data-mover\0"),
];

/// The host directory of the claim mounted at `/data` by pod `name`.
async fn volume_of(cluster: &Cluster, ns: &str, name: &str) -> PathBuf {
    let client = cluster.client().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod = wait_for(pods, name, is_pod_running(), Duration::from_secs(600))
        .await
        .unwrap_or_else(|e| panic!("pod {ns}/{name} not running: {e:#}"));
    let claim = Api::<PersistentVolumeClaim>::namespaced(client, ns)
        .get(name)
        .await
        .unwrap();
    let volume = claim.spec.unwrap().volume_name.unwrap();
    (cluster.real_node_pods.as_ref())
        .expect("the real node")
        .join(pod.metadata.uid.unwrap())
        .join("volumes/kubernetes.io~csi")
        .join(volume)
        .join("mount")
}

/// Waits until the storage system is done with what the steps before asked of it: the test
/// ground's driver does every call under one lock, so a step started while it still removes the
/// last step's copies (a snapshot, a volume made from one) would be timed waiting for that. Done:
/// no VolumeSnapshotContent being deleted, no volume being deleted or Released under a Delete
/// policy (what is retained stays, and is not waited for).
async fn storage_settled(cluster: &Cluster) {
    use k8s_openapi::api::core::v1::PersistentVolume;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
    let client = cluster.client().await;
    let contents: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "snapshot.storage.k8s.io",
            "v1",
            "VolumeSnapshotContent",
        )),
    );
    let volumes: Api<PersistentVolume> = Api::all(client);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    loop {
        let all = ListParams::default();
        let deleting_contents = (contents.list(&all).await.unwrap().items.iter())
            .filter(|c| c.metadata.deletion_timestamp.is_some())
            .count();
        let deleting_volumes = (volumes.list(&all).await.unwrap().items.iter())
            .filter(|v| {
                let released =
                    v.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
                let deleted = (v.spec.as_ref())
                    .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
                    == Some("Delete");
                v.metadata.deletion_timestamp.is_some() || (released && deleted)
            })
            .count();
        if deleting_contents + deleting_volumes == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the storage system still deletes {deleting_contents} snapshot contents and \
             {deleting_volumes} volumes after 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The three operations of `tool` on the claim of pod `kind` in `app`, each restored volume
/// compared with `original`, each started once the storage system is done with the last.
async fn run_tool(
    cluster: &Cluster,
    sampler: &Sampler,
    tool: &Tool,
    app: &str,
    kind: &str,
    original: &Path,
) -> [Cost; 3] {
    let backup = serde_json::json!({
        "includedNamespaces": [app],
        "labelSelector": { "matchLabels": { "tree": kind } },
        "snapshotMoveData": true,
        "ttl": "24h0m0s",
    });
    let mut costs = [Cost::default(); 3];
    for (i, name) in [format!("{kind}-1"), format!("{kind}-2")]
        .iter()
        .enumerate()
    {
        storage_settled(cluster).await;
        costs[i] = measured(cluster, sampler, tool, "Backup", name, backup.clone()).await;
    }
    let target = unique_name(&format!("restored-{}", tool.name.to_lowercase()));
    let restore = serde_json::json!({
        "backupName": format!("{kind}-2"),
        "namespaceMapping": { app: target },
    });
    let name = format!("{kind}-restore");
    storage_settled(cluster).await;
    costs[2] = measured(cluster, sampler, tool, "Restore", &name, restore).await;
    let restored = volume_of(cluster, &target, kind).await;
    let by = match tool.name {
        "ark" => RestoredBy::Ark,
        _ => RestoredBy::Kopia,
    };
    assert_same_tree(&restored, original, by);
    delete_namespace(cluster, &target).await;
    costs
}

/// The claim of tree `kind`, large enough for it, and the pod that mounts it: it only sleeps;
/// the volume is filled from the host.
fn volume(cluster: &Cluster, kind: &str) -> (PersistentVolumeClaim, Pod) {
    let claim = serde_json::from_value(serde_json::json!({
        "metadata": { "name": kind, "labels": { "tree": kind } },
        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
            "resources": { "requests": { "storage": "2Gi" } } },
    }))
    .unwrap();
    let pod = cluster.on_real_node(serde_json::json!({
        "metadata": { "name": kind, "labels": { "tree": kind } },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "sleep", "image": ark_tests::BUSYBOX,
                "command": ["sleep", "36000"],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": kind } }],
        },
    }));
    (claim, pod)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (trees, scale) = tree_args(&args);
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let (ark, image) = release_ark(&cluster);
    let sampler = Sampler::start(&AGENTS);

    // The claims, filled once from the host; both tools move the same bytes.
    let app = cluster.namespace("bench-moved").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    let mut volumes = BTreeMap::new();
    for kind in &trees {
        let (claim, pod) = volume(&cluster, kind);
        claims.create(&PostParams::default(), &claim).await.unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let volume = volume_of(&cluster, &app.name, kind).await;
        eprint!("bench-data-movement: filling the {kind} claim... ");
        make_tree(kind, &volume, scale);
        let size = ark_tests::kopia::tree_bytes(&volume);
        eprintln!("{} MiB", size >> 20);
        volumes.insert(kind.clone(), (volume, size));
    }

    let floors = floors("bench-data-movement", &volumes);
    let run = async |tool: &Tool, kind: &str, volume: &Path| {
        run_tool(&cluster, &sampler, tool, &app.name, kind, volume).await
    };
    let ark = (ark.as_path(), image.as_str());
    let costs = each_tool(
        &cluster,
        ark,
        "bench-data-movement",
        &["--features=EnableCSI"],
        "Velero data mover pod",
        &volumes,
        run,
    )
    .await;
    println!(
        "{}",
        agents_table("claim", "data mover pod", &floors, &costs)
    );
}
