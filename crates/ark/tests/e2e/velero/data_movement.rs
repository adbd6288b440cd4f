//! Snapshot data movement, with Velero's own server and node agent on the real node: Velero's
//! `--snapshot-move-data` backups, and what ark's server does with them once it takes over.

use crate::common;

use ark_api::Backup;
use ark_tests::kopia::Kopia;
use ark_tests::velero::{VeleroWithAgent, velero_ok};
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::node_agent::{WAIT, install_at, lose};
use common::volume_policies::application;
use kube::Api;

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
/// described and deleted by ark's server once it has taken over: `describe` shows where the data
/// went, and every kopia snapshot of the backup is forgotten, the moved one too (Velero's
/// `deleteMovedSnapshots`, from the DataUploads in the tarball), not only the pod volumes'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_deleting_velero_s_backup_with_moved_data_forgets_every_kopia_snapshot_of_it() {
    let _turn = ark_tests::Turn::real_node_host_network().await;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let app = application(&cluster).await;

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
    // A restore says that `files` comes back without its data, which ark cannot restore yet.
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
        &[&restore[..], &[&mapping, "--wait", "--timeout", "2m"]].concat(),
    );
    let described = ark_ok(&cluster, ns, &["restore", "describe", "r", "--details"]);
    let words = described.split_whitespace().collect::<Vec<_>>().join(" ");
    let warned = "claim files: its data was moved by a data mover (DataUpload vb-";
    assert!(words.contains(warned), "{described}");
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
