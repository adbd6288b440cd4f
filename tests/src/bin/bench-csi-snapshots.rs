//! CSI snapshots of claims, by ark and by Velero v1.18 (its server with `--features=EnableCSI`),
//! one after the other, on the same claims of the test ground's driver (scripts/csi.sh):
//! - `--claims N` claims (20) of the class `ark-csi`, each holding `--mib M` MiB (16) of random
//!   bytes, written from the host into the driver's volume directory;
//! - per tool, each with a server of its own in a namespace of its own (both with their
//!   defaults): a backup of the claims' namespace, timed from the creation of the Backup to its
//!   final phase (every snapshot ready, its VolumeSnapshot removed), and a restore into a
//!   namespace of its own, timed from the creation of the Restore until it is Completed and
//!   every claim is Bound; each restored volume is compared with its original;
//! - each server's peak RSS, and the backup's deletion (untimed) so that the driver's snapshots go;
//! - the floor, in the same run: the driver's own time, N VolumeSnapshots of the claims created
//!   at once until all are ready; then what a restore makes of their handles (a content, a
//!   VolumeSnapshot on it and a claim from that, for each) at once until every claim is Bound.
//!
//! bash scripts/cluster.sh up
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-csi-snapshots [--claims 20] [--mib 16]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ark_tests::bench::{Server, run_operation, tool, velero_api};
use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster, csi, unique_name};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(600);

struct Measured {
    backup: f64,
    restore: f64,
    peak_mib: f64,
}

fn claim(name: &str, source: Option<&str>) -> PersistentVolumeClaim {
    let mut claim = json!({
        "metadata": { "name": name },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": csi::CLASS,
            "resources": { "requests": { "storage": "1Gi" } },
        },
    });
    if let Some(snapshot) = source {
        claim["spec"]["dataSource"] = json!({
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": snapshot,
        });
    }
    serde_json::from_value(claim).unwrap()
}

/// Polls `done` every 100 ms until it holds, for at most [`WAIT`].
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done().await {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until every claim in `ns` (there are `count`) is Bound: their volumes' directories on
/// the host, by claim name.
async fn bound(client: &Client, ns: &str, count: usize, volumes: &Path) -> Vec<(String, PathBuf)> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let mut found = Vec::new();
    until(&format!("{count} claims Bound in {ns}"), async || {
        let list = claims.list(&ListParams::default()).await.unwrap().items;
        found = list
            .iter()
            .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
            .map(|c| {
                (
                    c.name_any(),
                    c.spec.as_ref().unwrap().volume_name.clone().unwrap(),
                )
            })
            .collect();
        found.len() == count
    })
    .await;
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let mut dirs = Vec::new();
    for (claim, pv) in found {
        let pv = pvs.get(&pv).await.unwrap();
        let handle = pv.spec.unwrap().csi.unwrap().volume_handle;
        dirs.push((claim, volumes.join(handle)));
    }
    dirs.sort();
    dirs
}

async fn delete_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = namespaces.get(name).await.unwrap();
    namespaces
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    ark_tests::wait_deleted(namespaces, &namespace, WAIT).await;
}

/// The driver's own time: a VolumeSnapshot of each claim in `app` at once until all are ready;
/// then what a restore makes of each snapshot's handle (a content, a VolumeSnapshot on it, a
/// claim from that) at once until every claim is Bound. Everything it made is deleted.
async fn floor(client: &Client, app: &str, claims: &[String]) -> (f64, f64) {
    let snapshots = csi::api(client, Some(app), "VolumeSnapshot");
    let started = Instant::now();
    for name in claims {
        let snapshot = csi::volume_snapshot(&format!("floor-{name}"), name);
        snapshots
            .create(&PostParams::default(), &snapshot)
            .await
            .unwrap();
    }
    until("the floor's snapshots ready", async || {
        let list = snapshots.list(&ListParams::default()).await.unwrap().items;
        list.iter()
            .filter(|s| s.data["status"]["readyToUse"] == true)
            .count()
            == claims.len()
    })
    .await;
    let snapshot = started.elapsed().as_secs_f64();

    // What a restore makes, from the snapshots' handles: a content bound to each (Retain), a
    // VolumeSnapshot on it and a claim from that, all at once, beside the originals (a claim's
    // data source is in its own namespace).
    let contents = csi::api(client, None, "VolumeSnapshotContent");
    let mut handles = Vec::new();
    for name in claims {
        let ready = snapshots.get(&format!("floor-{name}")).await.unwrap();
        let content = ready.data["status"]["boundVolumeSnapshotContentName"]
            .as_str()
            .unwrap()
            .to_string();
        let content = contents.get(&content).await.unwrap();
        handles.push(
            content.data["status"]["snapshotHandle"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let copies: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    let started = Instant::now();
    for (name, handle) in claims.iter().zip(&handles) {
        let copy = format!("copy-{name}");
        let content: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
            "metadata": { "name": format!("{app}-{copy}") },
            "spec": { "deletionPolicy": "Retain", "driver": "hostpath.csi.ark.test",
                "volumeSnapshotClassName": csi::CLASS, "source": { "snapshotHandle": handle },
                "volumeSnapshotRef": { "namespace": app, "name": copy } },
        }))
        .unwrap();
        contents
            .create(&PostParams::default(), &content)
            .await
            .unwrap();
        let snapshot: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": { "name": copy },
            "spec": { "source": { "volumeSnapshotContentName": format!("{app}-{copy}") } },
        }))
        .unwrap();
        snapshots
            .create(&PostParams::default(), &snapshot)
            .await
            .unwrap();
        copies
            .create(&PostParams::default(), &claim(&copy, Some(&copy)))
            .await
            .unwrap();
    }
    until("the floor's claims Bound", async || {
        let list = copies.list(&ListParams::default()).await.unwrap().items;
        list.iter()
            .filter(|c| c.name_any().starts_with("copy-"))
            .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
            .count()
            == claims.len()
    })
    .await;
    let restore = started.elapsed().as_secs_f64();
    for name in claims {
        let copy = format!("copy-{name}");
        copies
            .delete(&copy, &DeleteParams::default())
            .await
            .unwrap();
        snapshots
            .delete(&copy, &DeleteParams::default())
            .await
            .unwrap();
        snapshots
            .delete(&format!("floor-{name}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    until("the floor's snapshots and claims deleted", async || {
        snapshots
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
            && copies
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .len()
                == claims.len()
    })
    .await;
    // The copies' contents are kept (Retain) once their snapshots are gone.
    for name in claims {
        contents
            .delete(&format!("{app}-copy-{name}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    (snapshot, restore)
}

/// Backs `app` up with the server `start` starts, restores it into a namespace of its own and
/// compares every restored volume with its original; then deletes the backup.
async fn measure(
    cluster: &Cluster,
    client: &Client,
    app: &str,
    originals: &[(String, PathBuf)],
    volumes: &Path,
    start: impl AsyncFnOnce(&str) -> Server,
) -> Measured {
    let (tool_ns, server) = tool(cluster, client, start).await;
    let ns = tool_ns.name.as_str();
    let (backup, phase) = run_operation(
        client,
        ns,
        "Backup",
        "bench",
        json!({ "includedNamespaces": [app], "storageLocation": "default", "ttl": "24h0m0s" }),
    )
    .await;
    assert_eq!(phase, "Completed", "the backup");
    let target = unique_name("bench-csi-restored");
    let started = Instant::now();
    let (_, phase) = run_operation(
        client,
        ns,
        "Restore",
        "bench",
        json!({ "backupName": "bench", "namespaceMapping": { app: target } }),
    )
    .await;
    assert_eq!(phase, "Completed", "the restore");
    let restored = bound(client, &target, originals.len(), volumes).await;
    let restore = started.elapsed().as_secs_f64();
    for ((claim, original), (restored_claim, copy)) in originals.iter().zip(&restored) {
        assert_eq!(claim, restored_claim);
        assert!(
            std::fs::read(original.join("blob")).unwrap()
                == std::fs::read(copy.join("blob")).unwrap(),
            "{claim}: {copy:?} differs from {original:?}"
        );
    }
    let peak_mib = server.peak_rss_mib();
    delete_namespace(client, &target).await;
    // The restored contents are kept (`Retain`) when their snapshots go: removed, the storage
    // snapshots staying with the backup until its deletion.
    let contents = csi::api(client, None, "VolumeSnapshotContent");
    for content in contents.list(&ListParams::default()).await.unwrap().items {
        if content.data["spec"]["volumeSnapshotRef"]["namespace"] == target.as_str() {
            contents
                .delete(&content.name_any(), &DeleteParams::default())
                .await
                .unwrap();
        }
    }
    delete_backup(client, ns).await;
    drop(server);
    ark_tests::velero::release_restores(client, ns).await;
    Measured {
        backup: backup.as_secs_f64(),
        restore,
        peak_mib,
    }
}

/// Deletes the backup `bench` through a DeleteBackupRequest, as both tools do, and waits until
/// it is gone (its snapshots with it).
async fn delete_backup(client: &Client, ns: &str) {
    let request: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
        "metadata": { "name": "bench-delete" },
        "spec": { "backupName": "bench" },
    }))
    .unwrap();
    velero_api(client, ns, "DeleteBackupRequest")
        .create(&PostParams::default(), &request)
        .await
        .unwrap();
    let backups = velero_api(client, ns, "Backup");
    until("the backup deleted", async || {
        backups.get_opt("bench").await.unwrap().is_none()
    })
    .await;
}

#[tokio::main]
async fn main() {
    let (mut count, mut mib) = (20usize, 16usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--claims" => count = args.next().expect("--claims N").parse().unwrap(),
            "--mib" => mib = args.next().expect("--mib M").parse().unwrap(),
            other => panic!("unknown argument {other:?}"),
        }
    }
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let volumes = cluster
        .kubeconfig
        .parent()
        .unwrap()
        .join("csi/data/volumes");

    let app = cluster.namespace("bench-csi").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    let names: Vec<String> = (0..count).map(|i| format!("data-{i:02}")).collect();
    for name in &names {
        claims
            .create(&PostParams::default(), &claim(name, None))
            .await
            .unwrap();
    }
    let originals = bound(&client, &app.name, count, &volumes).await;
    for (i, (_, dir)) in originals.iter().enumerate() {
        std::fs::write(
            dir.join("blob"),
            ark_tests::bench::random_bytes(i as u64, mib << 20),
        )
        .unwrap();
    }

    let (snapshot_floor, restore_floor) = floor(&client, &app.name, &names).await;
    let ark = measure(
        &cluster,
        &client,
        &app.name,
        &originals,
        &volumes,
        async |ns: &str| Server::Ark(ArkServer::start(&binary, &cluster, ns)),
    )
    .await;
    let velero = measure(
        &cluster,
        &client,
        &app.name,
        &originals,
        &volumes,
        async |ns: &str| {
            Server::Velero(VeleroServer::start_with(&cluster, ns, &["--features=EnableCSI"]).await)
        },
    )
    .await;

    println!(
        "| claims | step | floor: the driver alone (s) | ark (s) | Velero (s) | ark ÷ Velero |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    let what = format!("{count} × {mib} MiB");
    for (step, floor, ark, velero) in [
        (
            "backup (snapshots ready)",
            snapshot_floor,
            ark.backup,
            velero.backup,
        ),
        (
            "restore (claims Bound)",
            restore_floor,
            ark.restore,
            velero.restore,
        ),
    ] {
        println!(
            "| {what} | {step} | {floor:.2} | {ark:.2} | {velero:.2} | {:.2} |",
            ark / velero
        );
    }
    println!(
        "\nserver peak RSS: ark {:.0} MiB, Velero {:.0} MiB",
        ark.peak_mib, velero.peak_mib
    );
}
