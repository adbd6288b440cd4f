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
//! - where each step's time went: when its DataUpload or DataDownload (both tools' servers make
//!   them) was first seen in each phase, and the bytes the upload added to the repository;
//! - the floor, in the same run: the storage system's part, which both tools wait for alike (a
//!   VolumeSnapshot of the claim cut and ready, then a claim made from it and a pod running on it,
//!   for a backup; a new claim of the class and a pod running on it, for a restore), and the
//!   data's part: reading the volume (`tar cf /dev/null`), then writing its bytes to S3 in 20 MiB
//!   objects, two at a time, and reading them back into files (bench-repository's `--op
//!   upload|download`).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-data-movement [--trees large,small] [--scale 1.0]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ark_api::labels;
use ark_tests::bench::{
    Cost, Sampler, StepFloor, Tool, agents_table, delete_namespace, each_tool, floors, make_tree,
    measured, release_ark, tree_args,
};
use ark_tests::kopia::{RestoredBy, assert_same_tree};
use ark_tests::{Cluster, is_pod_running, unique_name, wait_deleted, wait_for};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client};

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
/// policy (what is retained stays, and is not waited for). Then the disk is settled too: what the
/// last steps wrote is flushed, and the page cache dropped, so that each step starts cold (the
/// driver copies a volume's 100,000 files for each snapshot and each volume made from one, at
/// anything from 5 to 60 s depending on what the cache held).
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
            let synced = std::process::Command::new("sync").status().unwrap();
            assert!(synced.success());
            // Root's only; a bench run without it starts each step with whatever is cached.
            if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", "3") {
                eprintln!("bench-data-movement: the page cache is not dropped: {e}");
            }
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

/// The storage system's part of a step, which both tools wait for alike (s): a VolumeSnapshot of
/// the claim cut and ready to use, a claim made from it with a pod running on it (a backup's
/// exposure), and a new claim of the class with a pod running on it (a restore's volume).
struct StorageFloor {
    snapshot: f64,
    from_snapshot: f64,
    provision: f64,
}

/// Times [`StorageFloor`]'s parts on the claim of pod `kind` in `ns`, removing what they made.
async fn storage_floor(cluster: &Cluster, ns: &str, kind: &str) -> StorageFloor {
    let client = cluster.client().await;
    let snapshots = ark_tests::csi::api(&client, Some(ns), "VolumeSnapshot");
    let name = format!("floor-{kind}");
    storage_settled(cluster).await;
    let started = Instant::now();
    (snapshots.create(
        &PostParams::default(),
        &ark_tests::csi::volume_snapshot(&name, kind),
    ))
    .await
    .unwrap();
    let ready =
        |s: Option<&DynamicObject>| s.is_some_and(|s| s.data["status"]["readyToUse"] == true);
    wait_for(snapshots.clone(), &name, ready, Duration::from_secs(600))
        .await
        .unwrap_or_else(|e| panic!("snapshot {ns}/{name} not ready: {e:#}"));
    let snapshot = started.elapsed().as_secs_f64();
    let source = serde_json::json!({
        "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": name,
    });
    let from_snapshot = volume_running(cluster, ns, &name, Some(source)).await;
    snapshots.delete(&name, &Default::default()).await.unwrap();
    storage_settled(cluster).await;
    let provision = volume_running(cluster, ns, &format!("floor-new-{kind}"), None).await;
    storage_settled(cluster).await;
    StorageFloor {
        snapshot,
        from_snapshot,
        provision,
    }
}

/// The seconds from making claim `name` (from `source`, when given) and a pod on the real node
/// that mounts it, to that pod running; both are deleted afterwards.
async fn volume_running(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    source: Option<serde_json::Value>,
) -> f64 {
    let client = cluster.client().await;
    let (mut claim, pod) = volume(cluster, name);
    (claim.spec.as_mut().unwrap()).data_source = source.map(|s| serde_json::from_value(s).unwrap());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client, ns);
    let started = Instant::now();
    claims.create(&PostParams::default(), &claim).await.unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let running = wait_for(
        pods.clone(),
        name,
        is_pod_running(),
        Duration::from_secs(600),
    )
    .await
    .unwrap_or_else(|e| panic!("pod {ns}/{name} not running: {e:#}"));
    let took = started.elapsed().as_secs_f64();
    pods.delete(name, &Default::default()).await.unwrap();
    wait_deleted(pods, &running, Duration::from_secs(120)).await;
    claims.delete(name, &Default::default()).await.unwrap();
    took
}

/// The phases of a DataUpload or DataDownload on its way, as Velero names them.
const PHASES: [&str; 4] = ["Accepted", "Prepared", "InProgress", "Completed"];

/// Where one step's time went: when its request (DataUpload or DataDownload) was first made and
/// first seen in each of [`PHASES`], in seconds from the step's start, sampled every 100 ms; and
/// the bytes the request added to the repository, of its total.
#[derive(Clone, Default)]
struct Parts {
    /// The requests' names.
    names: std::collections::BTreeSet<String>,
    made: Option<f64>,
    phases: BTreeMap<String, f64>,
    ended: f64,
    incremental: Option<i64>,
    total: Option<i64>,
}

/// Samples the requests labelled `label` of `kind` in `ns` until `stop` fires.
async fn parts_of(
    client: Client,
    (ns, kind, label): (String, &'static str, String),
    started: Instant,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> Parts {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("velero.io", "v2alpha1", kind));
    let requests: Api<DynamicObject> = Api::namespaced_with(client, &ns, &resource);
    let mut parts = Parts::default();
    loop {
        let stopped = stop.try_recv().is_ok();
        let at = started.elapsed().as_secs_f64();
        for request in (requests.list(&ListParams::default().labels(&label)).await)
            .map(|l| l.items)
            .unwrap_or_default()
        {
            parts.made.get_or_insert(at);
            parts
                .names
                .insert(request.metadata.name.clone().unwrap_or_default());
            let status = &request.data["status"];
            if let Some(phase) = status["phase"].as_str() {
                parts.phases.entry(phase.to_string()).or_insert(at);
            }
            parts.incremental = status["incrementalBytes"].as_i64().or(parts.incremental);
            parts.total = status["progress"]["totalBytes"].as_i64().or(parts.total);
        }
        if stopped {
            return parts;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`measured`], with the [`Parts`] of the step's request (`request` kind, found by `label`).
async fn measured_in_parts(
    cluster: &Cluster,
    sampler: &Sampler,
    tool: &Tool,
    (kind, name, spec): (&str, &str, serde_json::Value),
    (request, label): (&'static str, String),
) -> (Cost, Parts) {
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let client = cluster.client().await;
    let started = Instant::now();
    let sampling = tokio::spawn(parts_of(
        client,
        (tool.ns.clone(), request, label),
        started,
        stopped,
    ));
    let cost = measured(cluster, sampler, tool, kind, name, spec).await;
    stop.send(()).unwrap();
    let mut parts = sampling.await.unwrap();
    parts.ended = cost.seconds;
    if tool.name == "ark" {
        agent_said(cluster, &tool.ns, &parts.names).await;
    }
    (cost, parts)
}

/// Prints what ark's node agent logged of `requests`: its own times for moving the data.
async fn agent_said(cluster: &Cluster, ns: &str, requests: &std::collections::BTreeSet<String>) {
    let pods: Api<Pod> = Api::namespaced(cluster.client().await, ns);
    let agents = pods
        .list(&ListParams::default().labels("name=node-agent"))
        .await
        .unwrap();
    for agent in agents {
        let name = agent.metadata.name.unwrap_or_default();
        let log = pods
            .logs(&name, &Default::default())
            .await
            .unwrap_or_default();
        for line in log.lines() {
            if requests.iter().any(|r| line.contains(&format!(" {r}: "))) {
                eprintln!("bench: {name}: {line}");
            }
        }
    }
}

/// Where each step's time went, per claim, step and tool: seconds from the step's start.
fn parts_table(parts: &BTreeMap<(String, &str), [Parts; 3]>) -> String {
    let mut lines = vec![
        "| claim | step | tool | request made | Accepted | Prepared (exposed) | InProgress | Completed | step ended | bytes added / of |".to_string(),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|".to_string(),
    ];
    let seconds = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{s:.1}"));
    let mib = |b: Option<i64>| {
        b.map_or("-".to_string(), |b| {
            format!("{:.1} MiB", b as f64 / 1048576.0)
        })
    };
    for ((kind, tool), steps) in parts {
        for (step, p) in ["first backup", "unchanged backup", "restore"]
            .iter()
            .zip(steps)
        {
            let phases = PHASES.map(|phase| seconds(p.phases.get(phase).copied()));
            lines.push(format!(
                "| {kind} | {step} | {tool} | {} | {} | {:.1} | {} / {} |",
                seconds(p.made),
                phases.join(" | "),
                p.ended,
                mib(p.incremental),
                mib(p.total),
            ));
        }
    }
    lines.join("\n")
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
) -> ([Cost; 3], [Parts; 3]) {
    let backup = serde_json::json!({
        "includedNamespaces": [app],
        "labelSelector": { "matchLabels": { "tree": kind } },
        "snapshotMoveData": true,
        "ttl": "24h0m0s",
    });
    let mut costs = [Cost::default(); 3];
    let mut parts: [Parts; 3] = Default::default();
    for (i, name) in [format!("{kind}-1"), format!("{kind}-2")]
        .iter()
        .enumerate()
    {
        storage_settled(cluster).await;
        let step = ("Backup", name.as_str(), backup.clone());
        let request = ("DataUpload", format!("{}={name}", labels::BACKUP_NAME));
        (costs[i], parts[i]) = measured_in_parts(cluster, sampler, tool, step, request).await;
    }
    let target = unique_name(&format!("restored-{}", tool.name.to_lowercase()));
    let restore = serde_json::json!({
        "backupName": format!("{kind}-2"),
        "namespaceMapping": { app: target },
    });
    let name = format!("{kind}-restore");
    storage_settled(cluster).await;
    let request = ("DataDownload", format!("{}={name}", labels::RESTORE_NAME));
    (costs[2], parts[2]) =
        measured_in_parts(cluster, sampler, tool, ("Restore", &name, restore), request).await;
    let restored = volume_of(cluster, &target, kind).await;
    let by = match tool.name {
        "ark" => RestoredBy::Ark,
        _ => RestoredBy::Kopia,
    };
    assert_same_tree(&restored, original, by);
    delete_namespace(cluster, &target).await;
    (costs, parts)
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

    let mut floors: BTreeMap<String, (u64, [StepFloor; 3])> = BTreeMap::new();
    for (kind, (size, data)) in self::floors("bench-data-movement", &volumes) {
        let storage = storage_floor(&cluster, &app.name, &kind).await;
        let [first, unchanged, restore] = data.steps();
        let backup = |data: StepFloor| {
            let cluster = [
                ("snapshot", storage.snapshot),
                ("expose", storage.from_snapshot),
            ];
            StepFloor(cluster.into_iter().chain(data.0).collect())
        };
        let restore = StepFloor(
            [("provision", storage.provision)]
                .into_iter()
                .chain(restore.0)
                .collect(),
        );
        floors.insert(kind, (size, [backup(first), backup(unchanged), restore]));
    }
    let parts = Mutex::new(BTreeMap::new());
    let run = async |tool: &Tool, kind: &str, volume: &Path| {
        let (costs, steps) = run_tool(&cluster, &sampler, tool, &app.name, kind, volume).await;
        (parts.lock().unwrap()).insert((kind.to_string(), tool.name), steps);
        costs
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
    println!("\nWhere the time went (s from the step's start):\n");
    println!("{}", parts_table(&parts.into_inner().unwrap()));
}
