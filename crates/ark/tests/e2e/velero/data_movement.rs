//! Snapshot data movement, with Velero's own server and node agent on the real node: Velero's
//! `--snapshot-move-data` backups, and what ark's server does with them once it takes over; and
//! ark's, which Velero restores once it takes over.

use crate::common;

use ark_api::{Backup, DataDownload, PodVolumePhase, Restore, RestorePhase};
use ark_tests::kopia::Kopia;
use ark_tests::velero::{self, VeleroWithAgent, velero_ok};
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::block;
use common::node_agent::is_ready;
use common::node_agent::{WAIT, install_at, lose};
use common::volume_policies::{application, contents};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt as _};

/// The kopia snapshots of the repository of namespace `app` at `prefix`, by source path.
fn sources(cluster: &Cluster, prefix: &str, app: &str) -> Vec<String> {
    let kopia = Kopia::new("static-passw0rd");
    kopia.connect(cluster, &format!("{prefix}/kopia/{app}"));
    let mut sources: Vec<String> = (kopia.snapshots().iter())
        .map(|snapshot| {
            snapshot["source"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    sources.sort();
    sources
}

/// A backup Velero made with `--snapshot-move-data` (claim `files` snapshotted and its data moved
/// by Velero's data mover; `snap` and `skip` by its node agent, as the pod's annotation says),
/// described, restored and deleted by ark's server once it has taken over: `describe` shows where
/// the data went, the restore writes `files`'s bytes back from the kopia snapshot Velero's data
/// mover wrote (a DataDownload on the real node) beside the pod volumes', and every kopia
/// snapshot of the backup is forgotten, the moved one too (Velero's `deleteMovedSnapshots`, from
/// the DataUploads in the tarball), not only the pod volumes'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_restores_the_data_velero_moved_and_deleting_the_backup_forgets_every_kopia_snapshot() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let app = application(&cluster).await;
    let before = contents(&cluster, &app.name);

    let prefix = ark_tests::unique_name("velero-moved");
    let velero = VeleroWithAgent::start_with(&cluster, &prefix, &["--features=EnableCSI"]).await;
    velero_ok(
        &cluster,
        &velero.ns.name,
        &[
            "backup",
            "create",
            "vb",
            "--include-namespaces",
            &app.name,
            "--snapshot-move-data",
        ],
    );
    velero.backup_completed(&cluster, "vb").await;
    velero.stop(&cluster).await;
    let moved = format!("snapshot-data-upload-download/kopia/{}/files", app.name);
    let by_pod = |volume: &str| format!("snapshot-pod-volume/kopia/{}/app/{volume}", app.name);
    assert_eq!(
        sources(&cluster, &prefix, &app.name),
        [moved, by_pod("skip"), by_pod("snap")],
        "Velero moved `files` and backed up the others with its node agent"
    );

    let installed = install_at(&cluster, &prefix).await;
    let ns = &installed.ns;
    wait_for(
        Api::<Backup>::namespaced(client.clone(), ns),
        "vb",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .expect("Velero's backup synced by ark's server");
    // Where `files`'s data went, as `velero backup describe --details` shows it; not its CSI
    // snapshot, which Velero removed once the data was moved.
    let described = ark_ok(&cluster, ns, &["backup", "describe", "vb", "--details"]);
    let words = described.split_whitespace().collect::<Vec<_>>().join(" ");
    let files = format!("{}/files: Data Movement: Operation ID: du-", app.name);
    for shown in [
        files.as_str(),
        "Data Mover: velero Uploader Type: kopia Snapshot ID: ",
        "Result: succeeded",
    ] {
        assert!(words.contains(shown), "{shown:?} not in:\n{described}");
    }
    assert!(!described.contains("Storage Snapshot ID"), "{described}");
    // The restore writes every claim's data back, `files`'s through a DataDownload.
    let target = format!("{}-restored", app.name);
    let _target = cluster.delete_on_drop::<k8s_openapi::api::core::v1::Namespace>(&target);
    let mapping = format!("{}:{target}", app.name);
    let restore = [
        "restore",
        "create",
        "r",
        "--from-backup",
        "vb",
        "--namespace-mappings",
    ];
    ark_ok(
        &cluster,
        ns,
        &[&restore[..], &[&mapping, "--wait", "--timeout", "4m"]].concat(),
    );
    let restored = Api::<Restore>::namespaced(client.clone(), ns)
        .get("r")
        .await
        .unwrap();
    let status = restored.status.clone().unwrap();
    assert_eq!(
        (
            status.phase,
            status.errors,
            status.restore_item_operations_attempted,
            status.restore_item_operations_completed,
        ),
        (Some(RestorePhase::Completed), Some(0), Some(1), Some(1)),
        "{status:#?}"
    );
    let downloads = Api::<DataDownload>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels("velero.io/restore-name=r"))
        .await
        .unwrap()
        .items;
    let [download] = downloads.as_slice() else {
        panic!("one DataDownload, not {downloads:#?}")
    };
    let download_status = download.status.clone().unwrap();
    assert_eq!(download_status.phase, Some(PodVolumePhase::Completed));
    assert_eq!(download_status.node, cluster.real_node);
    assert_eq!(
        (
            download.spec.target_volume.namespace.as_str(),
            download.spec.target_volume.pvc.as_str(),
            download.spec.source_namespace.as_str(),
        ),
        (target.as_str(), "files", app.name.as_str())
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &target);
    wait_for(pods, "app", is_ready(), WAIT).await.unwrap();
    assert_eq!(contents(&cluster, &target), before);
    let described = ark_ok(&cluster, ns, &["restore", "describe", "r"]);
    assert!(
        described.contains("Restore Item Operations:  1 of 1 completed successfully, 0 failed\n"),
        "{described}"
    );
    assert!(
        described.contains("\nData Downloads - kopia:\n  Completed:  1\n"),
        "{described}"
    );
    lose(&cluster, &target).await;
    let delete = ["backup", "delete", "vb", "--confirm", "--wait"];
    ark_ok(&cluster, ns, &[&delete[..], &["--timeout", "2m"]].concat());
    assert_eq!(
        sources(&cluster, &prefix, &app.name),
        Vec::<String>::new(),
        "every snapshot of the backup is forgotten"
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// A block volume whose data Velero's data mover moved (its shape of a block volume, read from
/// the device in Velero's pod) is restored by ark's server, once it has taken over, into another
/// namespace: a DataDownload on the real node writes it into a new block volume, equal to the
/// original byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_restores_a_block_volume_whose_data_velero_moved() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let app = block::application(&cluster).await;
    let before = block::volume_bytes(&cluster, &app.name).await;
    block::assert_written(&before);
    let prefix = ark_tests::unique_name("velero-moved-block");
    let velero = VeleroWithAgent::start_with(&cluster, &prefix, &["--features=EnableCSI"]).await;
    let backup = ["backup", "create", "vb", "--include-namespaces", &app.name];
    velero_ok(
        &cluster,
        &velero.ns.name,
        &[&backup[..], &["--snapshot-move-data"]].concat(),
    );
    velero.backup_completed(&cluster, "vb").await;
    velero.stop(&cluster).await;

    let installed = install_at(&cluster, &prefix).await;
    let ns = &installed.ns;
    wait_for(
        Api::<Backup>::namespaced(client.clone(), ns),
        "vb",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .expect("Velero's backup synced by ark's server");
    let target = format!("{}-restored", app.name);
    let _target = cluster.delete_on_drop::<Namespace>(&target);
    let mapping = format!("{}:{target}", app.name);
    let restore = ["restore", "create", "r", "--from-backup", "vb"];
    let flags = [
        "--namespace-mappings",
        &mapping,
        "--wait",
        "--timeout",
        "4m",
    ];
    let restored = ark_ok(&cluster, ns, &[&restore[..], &flags[..]].concat());
    assert!(restored.contains("Completed"), "{restored}");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &target);
    wait_for(pods, block::POD, is_ready(), WAIT).await.unwrap();
    block::assert_same(&block::volume_bytes(&cluster, &target).await, &before);
    lose(&cluster, &target).await;
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// A backup ark made with `--snapshot-move-data` is a Velero user's data-mover backup: Velero's
/// own server, node agent and data mover, taking the location over, restore it into another
/// namespace, the moved claim's bytes from the kopia snapshot ark's agent wrote (Velero's
/// DataDownload, read from the DataUpload in ark's tarball) and the pod volumes' from theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_restores_a_claim_whose_snapshot_data_ark_moved() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let app = application(&cluster).await;
    let before = contents(&cluster, &app.name);
    let restored = VeleroRestoresArksMovedData::of(&cluster, &app.name).await;
    assert_eq!(contents(&cluster, &restored.target), before);
    restored.end(&cluster).await;
    lose(&cluster, &app.name).await;
}

/// The same for a block volume: Velero's data mover writes the snapshot ark's agent made of the
/// device (Velero's shape: one file, named as the device) into a new block volume, equal to the
/// original byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_restores_a_block_volume_whose_data_ark_moved() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let app = block::application(&cluster).await;
    let before = block::volume_bytes(&cluster, &app.name).await;
    block::assert_written(&before);
    let restored = VeleroRestoresArksMovedData::of(&cluster, &app.name).await;
    block::assert_same(
        &block::volume_bytes(&cluster, &restored.target).await,
        &before,
    );
    restored.end(&cluster).await;
    lose(&cluster, &app.name).await;
}

/// Namespace `app` backed up by ark with `--snapshot-move-data`, then restored by Velero's
/// server (taking the location over) into namespace `target`, whose pod is ready.
struct VeleroRestoresArksMovedData {
    target: String,
    velero: VeleroWithAgent,
    _target: ark_tests::DeletedOnDrop<Namespace>,
}

impl VeleroRestoresArksMovedData {
    async fn of(cluster: &Cluster, app: &str) -> Self {
        let client = cluster.client().await;
        let prefix = ark_tests::unique_name("ark-moved");
        let installed = install_at(cluster, &prefix).await;
        let backup = ["backup", "create", "moved", "--include-namespaces", app];
        let flags = ["--snapshot-move-data", "--wait", "--timeout", "3m"];
        let created = ark_ok(cluster, &installed.ns, &[&backup[..], &flags[..]].concat());
        assert!(created.contains("Completed"), "{created}");
        installed.uninstall(cluster).await;

        let velero = VeleroWithAgent::start_with(cluster, &prefix, &["--features=EnableCSI"]).await;
        let ns = velero.ns.name.clone();
        wait_for(
            Api::<Backup>::namespaced(client.clone(), &ns),
            "moved",
            |b: Option<&Backup>| b.is_some(),
            WAIT,
        )
        .await
        .expect("ark's backup synced by Velero's server");
        let target = format!("{app}-restored");
        let target_guard = cluster.delete_on_drop::<Namespace>(&target);
        let mapping = format!("{app}:{target}");
        velero_ok(
            cluster,
            &ns,
            &[
                "restore",
                "create",
                "r",
                "--from-backup",
                "moved",
                "--namespace-mappings",
                &mapping,
            ],
        );
        let restores = Api::<Restore>::namespaced(client.clone(), &ns);
        let ended = |r: Option<&Restore>| r.is_some_and(|r| r.phase().is_terminal());
        let restore = wait_for(restores, "r", ended, std::time::Duration::from_secs(240))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "Velero's restore r did not end: {e:#}\n{}",
                    velero::diagnostics(cluster, &ns)
                )
            });
        assert_eq!(
            restore.phase(),
            RestorePhase::Completed,
            "{:#?}\n{}",
            restore.status,
            velero::diagnostics(cluster, &ns)
        );
        let pods: Api<Pod> = Api::namespaced(client.clone(), &target);
        let pod = pods.list(&ListParams::default()).await.unwrap().items;
        let [pod] = pod.as_slice() else {
            panic!("one pod restored, not {pod:#?}")
        };
        wait_for(pods.clone(), &pod.name_any(), is_ready(), WAIT)
            .await
            .unwrap();
        VeleroRestoresArksMovedData {
            target,
            velero,
            _target: target_guard,
        }
    }

    /// Removes the restored namespace, and stops Velero.
    async fn end(self, cluster: &Cluster) {
        lose(cluster, &self.target).await;
        self.velero.stop(cluster).await;
    }
}
