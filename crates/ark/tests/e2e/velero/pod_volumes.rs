//! Pod volume data between ark and Velero, each with its own node agent on the real node, in the
//! kopia repository both keep in one bucket prefix: each tool's agent restores the other's
//! snapshot, then backs the volume up again from it, and the kopia CLI verifies every byte.
//!
//! Velero's agent is Velero's own build (scripts/velero-build.sh) in Velero's image, installed as
//! `velero install --use-node-agent` makes it; ark's is this build's image, installed with
//! `ark install --use-node-agent`. Only one of them runs at a time: both take the host's network.

use crate::common;

use std::path::PathBuf;

use ark_api::{Backup, PodVolumePhase, Restore};
use ark_tests::kopia::{Kopia, RestoredBy, assert_same_tree};
use ark_tests::velero::{self, VeleroWithAgent, velero_ok};
use ark_tests::{Cluster, TestNamespace, wait_for};
use common::ark_ok;
use common::node_agent::{WAIT, install_at, is_ready, keep, lose, only_pvb, only_pvr, writer_pod};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;

/// The namespace of the writer pod (`writer_pod`), once it has written its tree; the directory of
/// its volume `data` on the host.
async fn writer(cluster: &Cluster) -> (TestNamespace, PathBuf) {
    let client = cluster.client().await;
    let app = cluster.namespace("volumes").await;
    let pods: Api<Pod> = Api::namespaced(client, &app.name);
    pods.create(&PostParams::default(), &writer_pod(cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let volume = volume_of(cluster, &pods).await;
    (app, volume)
}

/// The directory on the host of volume `data` of pod `writer`.
async fn volume_of(cluster: &Cluster, pods: &Api<Pod>) -> PathBuf {
    let uid = pods.get("writer").await.unwrap().metadata.uid.unwrap();
    cluster
        .real_node_pods
        .as_ref()
        .unwrap()
        .join(uid)
        .join("volumes/kubernetes.io~empty-dir/data")
}

/// A kopia client connected to the repository of namespace `app` at `prefix`, as Velero's.
fn kopia_of(cluster: &Cluster, prefix: &str, app: &str) -> Kopia {
    let kopia = Kopia::new("static-passw0rd");
    kopia.connect(cluster, &format!("{prefix}/kopia/{app}"));
    kopia
}

/// ark's agent writes a snapshot of a volume; Velero's agent restores it into a restored pod
/// before the pod's own container starts, then backs the volume up again into the same
/// repository, which kopia verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_s_node_agent_restores_ark_s_volume_backup_and_writes_after_it() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install_at(&cluster, &ark_tests::unique_name("agent")).await;
    let (app, volume) = writer(&cluster).await;
    let created = ark_ok(
        &cluster,
        &installed.ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    assert!(created.contains("Completed"), "{created}");
    let snapshot_id = only_pvb(&client, &installed.ns, "b1")
        .await
        .status
        .unwrap()
        .snapshot_id
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let original = keep(&volume, &dir);
    let prefix = installed.prefix.clone();
    installed.uninstall(&cluster).await;

    let velero = VeleroWithAgent::start(&cluster, &prefix).await;
    let ns = velero.ns.name.clone();
    wait_for(
        Api::<Backup>::namespaced(client.clone(), &ns),
        "b1",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .expect("ark's backup synced by Velero's server");
    lose(&cluster, &app.name).await;
    velero_ok(
        &cluster,
        &ns,
        &["restore", "create", "r1", "--from-backup", "b1"],
    );
    let restores = Api::<Restore>::namespaced(client.clone(), &ns);
    let ended = |r: Option<&Restore>| r.is_some_and(|r| r.phase().is_terminal());
    let restore = wait_for(restores, "r1", ended, std::time::Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "Velero's restore r1 did not end: {e:#}\n{}",
                velero::diagnostics(&cluster, &ns)
            )
        });
    assert_eq!(
        restore.phase(),
        ark_api::RestorePhase::Completed,
        "{:#?}\n{}",
        restore.status,
        velero::diagnostics(&cluster, &ns)
    );
    let pvr = only_pvr(&client, &ns, "r1").await;
    assert_eq!(pvr.spec.snapshot_id, snapshot_id);
    assert_eq!(pvr.spec.uploader_type.as_deref(), Some("kopia"));
    let status = pvr.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");

    // Velero's server put its own helper before the pod's container; the data was there first.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let pod = pods.get("writer").await.unwrap();
    let init = pod.spec.unwrap().init_containers.unwrap();
    assert_eq!(
        (init[0].name.as_str(), init[0].image.as_deref()),
        ("restore-wait", Some(velero::IMAGE))
    );
    let restored = volume_of(&cluster, &pods).await;
    // Velero's agent writes its mark as root and its helper runs as user 1000, which cannot remove
    // it: Velero leaves it in the volume (ark's agent gives it to the helper's user).
    let mark = restored.join(".velero").join(restore.metadata.uid.unwrap());
    assert!(mark.is_file(), "{}", mark.display());
    std::fs::remove_dir_all(restored.join(".velero")).unwrap();
    assert_same_tree(&restored, &original, RestoredBy::Kopia);

    // Velero's agent backs the restored volume up into the repository ark made.
    velero_ok(
        &cluster,
        &ns,
        &["backup", "create", "vb2", "--include-namespaces", &app.name],
    );
    velero.backup_completed(&cluster, "vb2").await;
    let pvb = only_pvb(&client, &ns, "vb2").await;
    let status = pvb.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    let kopia = kopia_of(&cluster, &prefix, &app.name);
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
    let snapshots = kopia.snapshots();
    assert_eq!(
        snapshots
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        [snapshot_id.as_str(), status.snapshot_id.as_deref().unwrap()]
    );
    assert_eq!(
        snapshots[0]["source"], snapshots[1]["source"],
        "one source, so each tool's next backup starts from the other's"
    );
    velero.stop(&cluster).await;
}

/// Velero's agent writes a snapshot of a volume; ark's agent backs the unchanged volume up from
/// it (nothing read again), and restores Velero's snapshot before the pod's own container starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_s_node_agent_restores_velero_s_volume_backup_and_writes_after_it() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let prefix = ark_tests::unique_name("velero-agent");
    let velero = VeleroWithAgent::start(&cluster, &prefix).await;
    let (app, volume) = writer(&cluster).await;
    velero_ok(
        &cluster,
        &velero.ns.name,
        &["backup", "create", "vb1", "--include-namespaces", &app.name],
    );
    velero.backup_completed(&cluster, "vb1").await;
    let snapshot_id = only_pvb(&client, &velero.ns.name, "vb1")
        .await
        .status
        .unwrap()
        .snapshot_id
        .unwrap();
    velero.stop(&cluster).await;

    let installed = install_at(&cluster, &prefix).await;
    let ns = &installed.ns;
    wait_for(
        Api::<Backup>::namespaced(client.clone(), ns),
        "vb1",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .expect("Velero's backup synced by ark's server");
    // Velero's backup reads whole under ark's verification: every file of its folder, its
    // tarball against its resource list, every byte of its volume data.
    let verified = common::ark(
        Some(&cluster),
        &["backup", "verify", "vb1", "--data", "-n", ns],
    );
    let stdout = common::text(&verified.stdout);
    assert_eq!(verified.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("  Volume data:    1 snapshots in 1 repositories: ")
            && stdout.contains(", every file read (")
            && stdout.contains("\nNo defects.\n"),
        "{stdout}"
    );
    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b2",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    let status = only_pvb(&client, ns, "b2").await.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    assert!(
        status.incremental_bytes.unwrap() < 10_000,
        "the unchanged volume starts from Velero's snapshot: {status:#?}"
    );
    let kopia = kopia_of(&cluster, &prefix, &app.name);
    let snapshots = kopia.snapshots();
    assert_eq!(snapshots.len(), 2, "{snapshots:#?}");
    assert_eq!(snapshots[1]["stats"]["nonCachedFiles"], 0, "{snapshots:#?}");
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);

    let dir = tempfile::tempdir().unwrap();
    let original = keep(&volume, &dir);
    lose(&cluster, &app.name).await;
    let restored = ark_ok(
        &cluster,
        ns,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "vb1",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(restored.contains("Completed"), "{restored}");
    let pvr = only_pvr(&client, ns, "r1").await;
    assert_eq!(pvr.spec.snapshot_id, snapshot_id);
    assert_eq!(pvr.status.unwrap().phase, Some(PodVolumePhase::Completed));
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let restored = volume_of(&cluster, &pods).await;
    assert!(!restored.join(".velero").exists());
    assert_same_tree(&restored, &original, RestoredBy::Ark);
    installed.uninstall(&cluster).await;
}
