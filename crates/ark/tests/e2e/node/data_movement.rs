//! Snapshot data movement by ark on the real node: a backup with `--snapshot-move-data` cuts each
//! claim's CSI snapshot, its node agent exposes the snapshot (a claim made from it, mounted by a
//! pod on the agent's node) and moves the data into the location's kopia repository, and nothing
//! of the snapshot is left in the cluster or the storage system; a restore writes the data back
//! into a new volume for the restored claim (a DataDownload), from the bucket alone.

use crate::common;

use ark_api::{
    Backup, BackupPhase, BackupVolumeInfo, DataDownload, DataUpload, PodVolumePhase, Restore,
    RestorePhase,
};
use ark_tests::kopia::Kopia;
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::block;
use common::database;
use common::node_agent::{
    Options, WAIT, install, install_behind_a_pausable_bucket, install_with, is_ready, lose,
};
use common::volume_policies::{application, contents, methods};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::{Api, Client, ResourceExt};

fn snapshot_api(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "snapshot.storage.k8s.io",
        "v1",
        kind,
    ))
}

/// What is left of snapshots and their exposure once the snapshot controller and the kubelet are
/// done (waited for, within the deadline): VolumeSnapshots and their contents in `namespaces`,
/// and claims and pods in ark's namespace `ark`.
async fn left(client: &Client, namespaces: &[&str], ark: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let mut found = Vec::new();
        for namespace in namespaces {
            let snapshots: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &snapshot_api("VolumeSnapshot"));
            for snapshot in snapshots.list(&ListParams::default()).await.unwrap().items {
                found.push(format!(
                    "VolumeSnapshot {namespace}/{}",
                    snapshot.name_any()
                ));
            }
        }
        let contents: Api<DynamicObject> =
            Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotContent"));
        for content in contents.list(&ListParams::default()).await.unwrap().items {
            let of = content.data["spec"]["volumeSnapshotRef"]["namespace"].as_str();
            if of.is_some_and(|of| namespaces.contains(&of)) {
                found.push(format!("VolumeSnapshotContent {}", content.name_any()));
            }
        }
        let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), ark);
        for claim in claims.list(&ListParams::default()).await.unwrap().items {
            found.push(format!("claim {ark}/{}", claim.name_any()));
        }
        let pods = Api::<Pod>::namespaced(client.clone(), ark);
        for label in ["velero.io/data-upload", "velero.io/data-download"] {
            let exposing = ListParams::default().labels(label);
            for pod in pods.list(&exposing).await.unwrap().items {
                found.push(format!("pod {ark}/{}", pod.name_any()));
            }
        }
        if found.is_empty() || tokio::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Backup `name` of namespace `app` with `--snapshot-move-data`, by the server in `ns`, once it
/// is Completed: its one DataUpload, ended Completed.
async fn backed_up_moving_data(cluster: &Cluster, ns: &str, app: &str, name: &str) -> DataUpload {
    let backup = ["backup", "create", name, "--include-namespaces", app];
    let flags = ["--snapshot-move-data", "--wait", "--timeout", "3m"];
    let created = ark_ok(cluster, ns, &[&backup[..], &flags[..]].concat());
    assert!(created.contains("Completed"), "{created}");
    let uploads = Api::<DataUpload>::namespaced(cluster.client().await, ns)
        .list(&ListParams::default().labels(&format!("velero.io/backup-name={name}")))
        .await
        .unwrap()
        .items;
    let [upload] = uploads.as_slice() else {
        panic!("one DataUpload, not {uploads:#?}")
    };
    let phase = upload.status.as_ref().and_then(|s| s.phase);
    assert_eq!(phase, Some(PodVolumePhase::Completed), "{upload:#?}");
    upload.clone()
}

/// Restore `name` of backup `backup`, by the server in `ns`, once it is Completed: its one
/// DataDownload, ended Completed.
async fn restored_moved_data(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    backup: &str,
) -> DataDownload {
    let restore = ["restore", "create", name, "--from-backup", backup];
    let restored = ark_ok(
        cluster,
        ns,
        &[&restore[..], &["--wait", "--timeout", "4m"]].concat(),
    );
    assert!(restored.contains("Completed"), "{restored}");
    let downloads = Api::<DataDownload>::namespaced(cluster.client().await, ns)
        .list(&ListParams::default().labels(&format!("velero.io/restore-name={name}")))
        .await
        .unwrap()
        .items;
    let [download] = downloads.as_slice() else {
        panic!("one DataDownload, not {downloads:#?}")
    };
    let phase = download.status.as_ref().and_then(|s| s.phase);
    assert_eq!(phase, Some(PodVolumePhase::Completed), "{download:#?}");
    download.clone()
}

/// The backup moves `files`'s data (the claim its pod does not name for the node agent) and the
/// node agent backs up the other two: the DataUpload ends Completed on the real node, the kopia
/// CLI finds the moved snapshot under Velero's source and restores the claim's bytes from it,
/// the bucket records it as Velero does (volume information, the DataUpload in the tarball, the
/// claim naming it), and no snapshot, claim or pod of the exposure is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_moving_snapshot_data_puts_a_claim_s_bytes_in_the_bucket_and_leaves_no_snapshot() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = application(&cluster).await;
    let before = contents(&cluster, &app.name);

    let upload = backed_up_moving_data(&cluster, ns, &app.name, "moved").await;
    let backup = Api::<Backup>::namespaced(client.clone(), ns)
        .get("moved")
        .await
        .unwrap();
    let status = backup.status.unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Completed));
    // One operation, the upload; no CSI snapshot is backed up (Velero's counts).
    assert_eq!(
        (
            status.backup_item_operations_attempted,
            status.backup_item_operations_completed,
            status.csi_volume_snapshots_attempted,
        ),
        (Some(1), Some(1), None)
    );
    assert_eq!(backup.spec.snapshot_move_data, Some(true));
    let taken = methods(&cluster, ns, &installed.prefix, "moved").await;
    assert_eq!(
        taken
            .iter()
            .map(|(c, m)| (c.as_str(), m.as_str()))
            .collect::<Vec<_>>(),
        [
            ("files", "moved"),
            ("skip", "node agent"),
            ("snap", "node agent"),
        ]
    );

    // The DataUpload, as Velero's data mover ends one: on the real node, with its snapshot.
    let upload_status = upload.status.clone().unwrap();
    let real_node = cluster.real_node.clone();
    assert_eq!(upload_status.node, real_node);
    assert!(upload_status.accepted_by_node.is_some());
    assert_eq!(
        (
            upload.spec.source_namespace.as_str(),
            upload.spec.source_pvc.as_str()
        ),
        (app.name.as_str(), "files")
    );
    let snapshot_id = upload_status.snapshot_id.clone().unwrap();
    let done = upload_status.progress.unwrap().bytes_done.unwrap();
    assert!(done > 1 << 20, "{done} bytes moved");
    let operation = &upload.labels()["velero.io/async-operation-id"];
    assert!(operation.starts_with("du-"), "{operation}");

    // Nothing of the snapshot or its exposure is left.
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );

    // The kopia CLI finds it under Velero's source and restores the claim's bytes from it.
    let kopia = Kopia::new(&installed.password);
    kopia.connect(
        &cluster,
        &format!("{}/kopia/{}", installed.prefix, app.name),
    );
    let moved_source = format!("snapshot-data-upload-download/kopia/{}/files", app.name);
    let listed = kopia.snapshots();
    let moved: Vec<_> = listed
        .iter()
        .filter(|s| s["source"]["path"] == moved_source.as_str())
        .collect();
    let [moved] = moved.as_slice() else {
        panic!("one snapshot of {moved_source}, not {listed:#?}")
    };
    assert_eq!(moved["id"], snapshot_id.as_str());
    let tags = &moved["tags"];
    assert_eq!(
        (
            tags["snapshot-requester"].as_str(),
            tags["snapshot-uploader"].as_str(),
            tags["velero.io/async-operation-id"].as_str(),
        ),
        (
            Some("snapshot-data-upload-download"),
            Some("kopia"),
            Some(operation.as_str())
        ),
        "{moved:#}"
    );
    let restored = tempfile::tempdir().unwrap();
    let into = restored.path().join("files");
    kopia.ok(&[
        "snapshot",
        "restore",
        &snapshot_id,
        &into.display().to_string(),
    ]);
    let line = std::fs::read_to_string(into.join("line")).unwrap();
    assert_eq!(line, "files before the backup\n");
    let summed = std::process::Command::new("md5sum")
        .arg(into.join("blob"))
        .output()
        .unwrap();
    let sum = common::text(&summed.stdout);
    let sum = sum.split_whitespace().next().unwrap();
    assert!(
        before.contains(&format!("{sum}  /files/blob")),
        "{sum} in {before}"
    );

    // The bucket records it as Velero does.
    let store = ark_storage::open(&cluster.s3_location(&installed.prefix)).unwrap();
    let info: Vec<BackupVolumeInfo> = serde_json::from_slice(&ark_tests::gunzip(
        &store.get_volume_info("moved").await.unwrap().unwrap(),
    ))
    .unwrap();
    let files = info.iter().find(|v| v.pvc_name == "files").unwrap();
    let movement = files.snapshot_data_movement_info.as_ref().unwrap();
    assert_eq!(
        (
            movement.snapshot_handle.as_str(),
            movement.data_mover.as_str(),
            movement.uploader_type.as_str(),
            movement.phase,
            files.result.as_str(),
        ),
        (
            snapshot_id.as_str(),
            "velero",
            "kopia",
            Some(PodVolumePhase::Completed),
            "succeeded"
        )
    );
    assert_eq!(movement.operation_id, *operation);
    let entries = ark_tests::tarball_entries(&store, "moved").await;
    let entry = |path: &str| -> serde_json::Value {
        let (_, bytes) = entries
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("{path} not in the tarball"));
        serde_json::from_slice(bytes).unwrap()
    };
    let name = upload.name_any();
    let in_tarball = entry(&format!(
        "resources/datauploads.velero.io/namespaces/{ns}/{name}.json"
    ));
    assert_eq!(in_tarball["status"]["phase"], "Completed");
    assert_eq!(in_tarball["status"]["snapshotID"], snapshot_id.as_str());
    let claim = entry(&format!(
        "resources/persistentvolumeclaims/namespaces/{}/files.json",
        app.name
    ));
    assert_eq!(
        claim["metadata"]["annotations"]["velero.io/data-upload-name"],
        format!("{ns}/{name}")
    );
    // Not with the snapshot controller's finalizer, however the snapshot's cut overlapped the
    // claim's listing: restored with it (Velero keeps it), the claim could never be deleted.
    let finalizers = claim["metadata"]["finalizers"].to_string();
    assert!(
        !finalizers.contains("pvc-as-source-protection"),
        "{finalizers}"
    );
    assert!(
        !entries.iter().any(|(p, _)| p.contains("volumesnapshots")),
        "no snapshot is backed up: {entries:#?}",
    );
    let described = ark_ok(&cluster, ns, &["backup", "describe", "moved", "--details"]);
    let words = described.split_whitespace().collect::<Vec<_>>().join(" ");
    let summary = ark_ok(&cluster, ns, &["backup", "describe", "moved"]);
    assert!(
        summary.contains("\nData Uploads - kopia:\n  Completed:  1\n"),
        "{summary}"
    );
    let shown = format!("Data Uploads - kopia: Completed: {}/files (", app.name);
    assert!(words.contains(&shown), "{shown:?} not in:\n{described}");
    for shown in [
        format!("Snapshot ID: {snapshot_id}"),
        "Snapshot Move Data: true Data Mover: velero".to_string(),
    ] {
        assert!(words.contains(&shown), "{shown:?} not in:\n{described}");
    }

    // The pod and its claims are untouched.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    wait_for(pods, "app", is_ready(), WAIT).await.unwrap();
    assert_eq!(contents(&cluster, &app.name), before);
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// The node agent killed while it moves a claim's snapshot data: the agent the kubelet starts in
/// its place fails the upload it finds InProgress (nobody carries it on) and removes what its
/// exposure made, and the backup ends PartiallyFailed at once rather than at its timeout. The next
/// backup's upload rides out a bucket that stops answering for 45 s once it is under way (the agent
/// is patient where no person waits), and moves the claim's data whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_s_upload_fails_and_the_next_rides_out_a_silent_bucket_whole() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let (s3, installed) = install_behind_a_pausable_bucket(&cluster).await;
    let ns = &installed.ns;
    let app = big_claim_application(&cluster, "moved-killed").await;

    let uploads = Api::<DataUpload>::namespaced(client.clone(), ns);
    let name = moving_data_of(&cluster, ns, &app.name, "b1").await;
    let pid = common::ark_pid("node-agent", ns).expect("the node agent's process on this host");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());

    let ended = |u: Option<&DataUpload>| {
        (u.and_then(|u| u.status.as_ref()).and_then(|s| s.phase))
            .is_some_and(PodVolumePhase::is_final)
    };
    let upload = wait_for(uploads.clone(), &name, ended, WAIT).await.unwrap();
    let status = upload.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
    assert_eq!(
        status.message.as_deref(),
        Some("the node agent on 127.0.0.1 stopped while the data upload was InProgress")
    );
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    // Past its operations too: the failed upload is found at the next check of them.
    let terminal = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
    let b1 = wait_for(backups.clone(), "b1", terminal, WAIT)
        .await
        .unwrap();
    assert_eq!(b1.status.unwrap().phase, Some(BackupPhase::PartiallyFailed));
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );

    let name = moving_data_of(&cluster, ns, &app.name, "b2").await;
    s3.pause();
    tokio::time::sleep(std::time::Duration::from_secs(45)).await;
    // Nothing moves without the bucket; before the agent was patient, the upload failed at 30 s.
    let paused = uploads.get(&name).await.unwrap().status.unwrap();
    assert_eq!(
        paused.phase,
        Some(PodVolumePhase::InProgress),
        "{paused:#?}"
    );
    s3.resume();
    let b2 = wait_for(backups.clone(), "b2", terminal, WAIT)
        .await
        .unwrap();
    let moved = uploads.get(&name).await.unwrap();
    assert_eq!(
        b2.status.as_ref().unwrap().phase,
        Some(BackupPhase::Completed),
        "{}\n{moved:#?}",
        ark_ok(&cluster, ns, &["backup", "describe", "b2", "--details"]),
    );
    let status = moved.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    let done = status.progress.unwrap().bytes_done.unwrap();
    assert!(done >= 200_000_000, "{done} bytes moved");
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// A DataUpload deleted while its agent moves its data, the bucket silent meanwhile, and held by
/// Velero's finalizer as Velero's agent holds each upload it takes on: the agent stops at once
/// (the bucket's return is not awaited), ends it Canceled, removes what its exposure made and the
/// claim's snapshot, and lets go of Velero's finalizer; the backup ends PartiallyFailed, naming
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_upload_deleted_while_it_moves_stops_though_the_bucket_is_silent() {
    use ark_api::DATA_MOVER_FINALIZER;
    use kube::api::{DeleteParams, Patch, PatchParams};
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let (s3, installed) = install_behind_a_pausable_bucket(&cluster).await;
    let ns = &installed.ns;
    let app = big_claim_application(&cluster, "moved-deleted").await;
    let uploads = Api::<DataUpload>::namespaced(client.clone(), ns);
    let name = moving_data_of(&cluster, ns, &app.name, "b1").await;
    // Velero's, and the test's own that keeps the upload to be looked at once it has ended.
    let held = serde_json::json!({ "metadata": {
        "finalizers": [DATA_MOVER_FINALIZER, "ark.test/kept"] } });
    uploads
        .patch(&name, &PatchParams::default(), &Patch::Merge(&held))
        .await
        .unwrap();
    s3.pause();
    uploads
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();

    let let_go = |u: Option<&DataUpload>| {
        u.and_then(|u| u.metadata.finalizers.as_deref()) == Some(&["ark.test/kept".to_string()][..])
    };
    let ended = match wait_for(uploads.clone(), &name, let_go, WAIT).await {
        Ok(ended) => ended,
        Err(error) => panic!("{error:#}; it is now {:#?}", uploads.get_opt(&name).await),
    };
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Canceled), "{status:#?}");
    assert_eq!(
        status.message.as_deref(),
        Some("canceled while its data was moved")
    );
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );
    let kept = serde_json::json!({ "metadata": { "finalizers": null } });
    uploads
        .patch(&name, &PatchParams::default(), &Patch::Merge(&kept))
        .await
        .unwrap();
    s3.resume();
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    let terminal = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
    let b1 = wait_for(backups, "b1", terminal, WAIT).await.unwrap();
    let described = ark_ok(&cluster, ns, &["backup", "describe", "b1", "--details"]);
    assert_eq!(
        b1.status.unwrap().phase,
        Some(BackupPhase::PartiallyFailed),
        "{described}"
    );
    assert!(
        described.contains(&format!("DataUpload {name} was")),
        "{described}"
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// A namespace (named after `prefix`) whose pod writes a few hundred MB into a 1 GiB claim of the
/// test ground's CSI class, named for no file-system backup: a backup moving snapshot data takes
/// a while over it. Ready once the pod is.
async fn big_claim_application(cluster: &Cluster, prefix: &str) -> ark_tests::TestNamespace {
    let client = cluster.client().await;
    let app = cluster.namespace(prefix).await;
    let claim: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "big" },
        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
            "resources": { "requests": { "storage": "1Gi" } } },
    }))
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), &app.name)
        .create(&Default::default(), &claim)
        .await
        .unwrap();
    // The node agent's big pod, its volume on the claim and named for no file-system backup.
    let mut pod = common::node_agent::big_pod(cluster);
    pod.metadata.annotations = None;
    pod.spec.as_mut().unwrap().volumes = Some(vec![
        serde_json::from_value(serde_json::json!({
            "name": "data", "persistentVolumeClaim": { "claimName": "big" },
        }))
        .unwrap(),
    ]);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&Default::default(), &pod).await.unwrap();
    wait_for(pods.clone(), "big", is_ready(), WAIT)
        .await
        .unwrap();
    app
}

/// Backup `backup` of namespace `app` with `--snapshot-move-data`, by the server in `ns`, not
/// waited for: its DataUpload, once the agent moves its data.
async fn moving_data_of(cluster: &Cluster, ns: &str, app: &str, backup: &str) -> String {
    let create = ["backup", "create", backup, "--include-namespaces", app];
    ark_ok(
        cluster,
        ns,
        &[&create[..], &["--snapshot-move-data"]].concat(),
    );
    let uploads = Api::<DataUpload>::namespaced(cluster.client().await, ns);
    moving(&uploads, backup).await
}

/// The DataUpload of `backup` once the agent moves its data (InProgress).
async fn moving(uploads: &Api<DataUpload>, backup: &str) -> String {
    let of_backup = ListParams::default().labels(&format!("velero.io/backup-name={backup}"));
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = uploads.list(&of_backup).await.unwrap().items;
        let moving = |u: &&DataUpload| {
            u.status.as_ref().and_then(|s| s.phase) == Some(PodVolumePhase::InProgress)
        };
        if let Some(upload) = listed.iter().find(moving) {
            return upload.name_any();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no data upload of {backup} moving: {listed:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The disaster: the namespace and every snapshot of its claims are gone, only the bucket is
/// left. The restore brings `files` back with its bytes from the kopia snapshot the backup moved
/// (a DataDownload, on the real node: a volume written in ark's namespace, then handed to the
/// restored claim), and `snap` and `skip` from the node agent's backups; the pod starts once its
/// claims hold their data; nothing of the download is left in ark's namespace, and the restored
/// namespace can be deleted (no finalizer of the snapshot controller came back with its claims).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_s_data_moved_into_the_bucket_comes_back_once_its_namespace_and_snapshots_are_gone()
{
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = application(&cluster).await;
    let before = contents(&cluster, &app.name);
    let upload = backed_up_moving_data(&cluster, ns, &app.name, "moved").await;
    let snapshot_id = upload.status.unwrap().snapshot_id.unwrap();

    lose(&cluster, &app.name).await;
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new(),
        "no snapshot of the claims is left"
    );
    let download = restored_moved_data(&cluster, ns, "back", "moved").await;
    let status = Api::<Restore>::namespaced(client.clone(), ns)
        .get("back")
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(
        (
            status.phase,
            status.errors,
            status.restore_item_operations_attempted,
            status.restore_item_operations_completed,
            status.restore_item_operations_failed,
        ),
        (
            Some(RestorePhase::Completed),
            Some(0),
            Some(1),
            Some(1),
            Some(0)
        ),
        "{status:#?}"
    );
    assert_eq!(download.status.clone().unwrap().node, cluster.real_node);
    assert_eq!(download.spec.snapshot_id, snapshot_id);
    assert_eq!(
        (
            download.spec.target_volume.namespace.as_str(),
            download.spec.target_volume.pvc.as_str()
        ),
        (app.name.as_str(), "files")
    );
    let operation = &download.labels()["velero.io/async-operation-id"];
    assert!(operation.starts_with("dd-"), "{operation}");
    // The agent's metrics, under Velero's node agent names (its port of the host's network).
    let scraped = ark_tests::scrape(&installed.agent_metrics.to_string(), "/metrics");
    for line in [
        "podVolume_data_upload_success_total{node=\"127.0.0.1\"} 1\n",
        "podVolume_data_download_success_total{node=\"127.0.0.1\"} 1\n",
    ] {
        assert!(scraped.contains(line), "{line} not in:\n{scraped}");
    }

    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    wait_for(pods, "app", is_ready(), WAIT).await.unwrap();
    assert_eq!(contents(&cluster, &app.name), before);
    // The claim is bound to the volume written for it, which its selector names and which has
    // its class's reclaim policy back.
    let claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &app.name)
        .get("files")
        .await
        .unwrap();
    let selected = claim
        .spec
        .clone()
        .unwrap()
        .selector
        .unwrap()
        .match_labels
        .unwrap();
    let volume_name = claim.spec.unwrap().volume_name.unwrap();
    let volume = Api::<PersistentVolume>::all(client.clone())
        .get(&volume_name)
        .await
        .unwrap();
    let label = "velero.io/dynamic-pv-restore";
    assert_eq!(volume.labels().get(label), selected.get(label));
    assert_eq!(
        volume
            .spec
            .unwrap()
            .persistent_volume_reclaim_policy
            .as_deref(),
        Some("Delete")
    );
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );
    let described = ark_ok(&cluster, ns, &["restore", "describe", "back", "--details"]);
    assert!(
        described.contains("Restore Item Operations:  1 of 1 completed successfully, 0 failed\n"),
        "{described}"
    );
    let shown = format!(
        "\nData Downloads - kopia:\n  Completed:\n    {}/files (",
        app.name
    );
    assert!(described.contains(&shown), "{shown:?} not in:\n{described}");
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// DataDownloads the agent cannot carry out end Failed with their reason, and leave nothing in
/// ark's namespace: one for a claim that is not there, one for a claim bound to a volume already
/// (its data is never written over), one whose data is in no repository (its claim is exposed
/// first: the volume made for it goes too, and the claim is handed nothing), and one for a claim
/// whose storage class is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_downloads_that_cannot_be_carried_out_end_with_their_reason_and_leave_nothing() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("downloads").await;
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &app.name);
    let claim_of = |name: &str, class: &str, selector: serde_json::Value| {
        serde_json::from_value::<PersistentVolumeClaim>(serde_json::json!({
            "metadata": { "name": name },
            "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": class,
                "selector": selector, "resources": { "requests": { "storage": "16Mi" } } },
        }))
        .unwrap()
    };
    let claim = |name: &str, selector: serde_json::Value| claim_of(name, "ark-csi", selector);
    claims
        .create(
            &Default::default(),
            &claim("bound", serde_json::Value::Null),
        )
        .await
        .unwrap();
    let waiting = serde_json::json!({ "matchLabels": { "velero.io/dynamic-pv-restore": "none" } });
    claims
        .create(&Default::default(), &claim("waiting", waiting.clone()))
        .await
        .unwrap();
    // Restored into a cluster whose class is gone.
    claims
        .create(&Default::default(), &claim_of("classless", "gone", waiting))
        .await
        .unwrap();
    let bound = |c: Option<&PersistentVolumeClaim>| {
        c.and_then(|c| c.status.as_ref()?.phase.as_deref()) == Some("Bound")
    };
    wait_for(claims.clone(), "bound", bound, WAIT)
        .await
        .unwrap();
    let downloads = Api::<DataDownload>::namespaced(client.clone(), ns);
    let download = |name: &str, claim: &str| -> DataDownload {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataDownload",
            "metadata": { "name": name },
            "spec": { "targetVolume": { "pvc": claim, "pv": "", "namespace": app.name },
                "backupStorageLocation": "default", "snapshotID": "0123456789abcdef0123456789abcdef",
                "sourceNamespace": app.name, "operationTimeout": "1m" },
        }))
        .unwrap()
    };
    for (name, claim) in [
        ("absent", "absent"),
        ("bound", "bound"),
        ("unread", "waiting"),
        ("classless", "classless"),
    ] {
        downloads
            .create(&Default::default(), &download(name, claim))
            .await
            .unwrap();
    }
    let ended = |d: Option<&DataDownload>| {
        (d.and_then(|d| d.status.as_ref()).and_then(|s| s.phase))
            .is_some_and(PodVolumePhase::is_final)
    };
    let mut messages = Vec::new();
    for name in ["absent", "bound", "unread", "classless"] {
        let download = wait_for(downloads.clone(), name, ended, WAIT)
            .await
            .unwrap();
        let status = download.status.unwrap();
        assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
        messages.push(status.message.unwrap_or_default());
    }
    let volume = claims
        .get("bound")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    let expected = [
        format!("exposing its volume: reading claim {}/absent: ", app.name),
        format!(
            "exposing its volume: claim {}/bound is bound to volume {volume} already",
            app.name
        ),
        format!(
            "the repository of namespace \"{}\" in location \"default\" ({}/kopia/{}): no kopia \
             repository",
            app.name, installed.prefix, app.name
        ),
        "exposing its volume: reading StorageClass gone: ".to_string(),
    ];
    for (message, expected) in messages.iter().zip(&expected) {
        assert!(
            message.starts_with(expected.as_str()),
            "{message:?} does not start with {expected:?}"
        );
    }
    assert_eq!(left(&client, &[], ns).await, Vec::<String>::new());
    let waiting = claims.get("waiting").await.unwrap();
    assert_eq!(
        waiting.spec.unwrap().volume_name,
        None,
        "nothing was handed over"
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// DataUploads the agent cannot carry out end Failed with their reason and leave nothing in ark's
/// namespace: two made by hand that name snapshots their backup did not cut of their claim (one
/// of another backup, one of another claim; both snapshots are left as they were, never taken
/// over), one whose exposed claim never binds (its class provisions nothing: failed at the agent's
/// `--data-mover-prepare-timeout` in the scheduler's words, its snapshot taken over and removed),
/// and one held Prepared by a node that is gone (failed by the agent that accepted it). The agent
/// reads its node's labels for Velero's `loadConcurrency` rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_uploads_that_cannot_be_carried_out_end_with_their_reason_and_leave_nothing() {
    use k8s_openapi::api::storage::v1::StorageClass;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let never_binds = ark_tests::unique_name("never-binds");
    let _class = cluster.delete_on_drop::<StorageClass>(&never_binds);
    let class = serde_json::from_value(serde_json::json!({
        "metadata": { "name": never_binds }, "provisioner": "ark.test/nothing",
    }))
    .unwrap();
    Api::<StorageClass>::all(client.clone())
        .create(&Default::default(), &class)
        .await
        .unwrap();
    let settings = format!(
        r#"{{ "loadConcurrency": {{ "globalConfig": 1, "perNodeConfig": [
            {{ "nodeSelector": {{ "matchLabels": {{ "ark.test/real-node": "true" }} }}, "number": 2 }} ] }},
        "backupPVC": {{ "ark-csi": {{ "storageClass": "{never_binds}" }} }} }}"#
    );
    let options = Options {
        agent_settings: Some(&settings),
        agent_args: &["--data-mover-prepare-timeout=15s"],
        ..Options::default()
    };
    let installed = install_with(&cluster, options).await;
    let ns = &installed.ns;
    let app = cluster.namespace("hand-made").await;
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &app.name);
    let snapshots: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &app.name, &snapshot_api("VolumeSnapshot"));
    for claim in ["data", "other"] {
        let claim = serde_json::from_value(serde_json::json!({
            "metadata": { "name": claim },
            "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
                "resources": { "requests": { "storage": "16Mi" } } },
        }))
        .unwrap();
        claims.create(&Default::default(), &claim).await.unwrap();
    }
    for (name, backup, claim) in [
        ("foreign", "other", "data"),
        ("of-other", "b", "other"),
        ("cut", "b", "data"),
    ] {
        let snapshot = serde_json::from_value(serde_json::json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": { "name": name, "labels": { "velero.io/backup-name": backup } },
            "spec": { "source": { "persistentVolumeClaimName": claim } },
        }))
        .unwrap();
        snapshots
            .create(&Default::default(), &snapshot)
            .await
            .unwrap();
    }
    let uploads = Api::<DataUpload>::namespaced(client.clone(), ns);
    let upload = |name: &str, snapshot: &str| -> DataUpload {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": { "name": name, "labels": { "velero.io/backup-name": "b" } },
            "spec": { "snapshotType": "CSI",
                "csiSnapshot": { "volumeSnapshot": snapshot, "storageClass": "ark-csi" },
                "sourcePVC": "data", "sourceNamespace": app.name,
                "backupStorageLocation": "default", "operationTimeout": "2m" },
        }))
        .unwrap()
    };
    for (name, snapshot) in [
        ("foreign", "foreign"),
        ("other-claim", "of-other"),
        ("unbound", "cut"),
    ] {
        uploads
            .create(&Default::default(), &upload(name, snapshot))
            .await
            .unwrap();
    }
    // Made held by a node that is not there, accepted by this one (Velero's CRD has no status
    // subresource: the status is made with the object).
    let lost_node = ark_tests::unique_name("lost-node");
    let mut held = upload("held", "foreign");
    held.status = Some(
        serde_json::from_value(serde_json::json!({ "phase": "Prepared", "node": lost_node,
            "acceptedByNode": "127.0.0.1" }))
        .unwrap(),
    );
    uploads.create(&Default::default(), &held).await.unwrap();

    let ended = |u: Option<&DataUpload>| {
        (u.and_then(|u| u.status.as_ref()).and_then(|s| s.phase))
            .is_some_and(PodVolumePhase::is_final)
    };
    let mut messages = Vec::new();
    for name in ["foreign", "other-claim", "held", "unbound"] {
        let upload = wait_for(uploads.clone(), name, ended, WAIT).await.unwrap();
        let status = upload.status.unwrap();
        assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
        messages.push(status.message.unwrap_or_default());
    }
    let unbound = messages.pop().unwrap();
    assert!(
        unbound
            .starts_with("its pod unbound did not run within 15s (it is Pending, not scheduled: ")
            && unbound.contains("unbound immediate PersistentVolumeClaims"),
        "{unbound}"
    );
    assert_eq!(
        messages,
        [
            format!(
                "exposing its volume: VolumeSnapshot {}/foreign was not cut by backup b",
                app.name
            ),
            format!(
                "exposing its volume: VolumeSnapshot {}/of-other is not a snapshot of claim data",
                app.name
            ),
            format!("node {lost_node}, whose agent held it Prepared, is gone"),
        ]
    );
    for name in ["foreign", "of-other"] {
        let snapshot = snapshots.get(name).await.unwrap();
        assert_eq!(
            snapshot.metadata.deletion_timestamp, None,
            "{name} was left as it was"
        );
    }
    // The snapshot `unbound` took over went with its exposure.
    assert_eq!(left(&client, &[ns], ns).await, Vec::<String>::new());
    assert_eq!(
        snapshots
            .get_opt("cut")
            .await
            .unwrap()
            .map(|s| s.name_any()),
        None
    );
    let agent_log = common::node_agent::kubectl(
        &cluster,
        &["logs", "-n", ns, "daemonset/node-agent", "--tail", "-1"],
    );
    assert!(
        agent_log.contains("node 127.0.0.1 moves the data of 2 volume(s) at once"),
        "{agent_log}"
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// A node agent stopped in the middle of a data download's hand-over (the volume written,
/// retained, not yet bound to the restored claim: the records the agent makes before it retains
/// the volume, made here by hand) settles it when it starts again: the download fails and the
/// volume, bound to nothing, is deleted rather than kept for nobody. A record on a download alone
/// (one made by hand, naming a volume whose own record names another download) moves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_stopped_mid_hand_over_leaves_no_volume_retained_for_nobody() {
    use ark_api::labels::{HANDED_OVER_BY, HANDING_OVER_VOLUME, RECLAIM_POLICY};
    use ark_api::{DataDownloadStatus, TargetVolumeSpec};
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let (retained, another_s) = (
        ark_tests::unique_name("retained"),
        ark_tests::unique_name("another-s"),
    );
    let volumes = Api::<PersistentVolume>::all(client.clone());
    let _volumes = [&retained, &another_s].map(|v| cluster.delete_on_drop::<PersistentVolume>(v));
    for (volume, by) in [(&retained, "interrupted"), (&another_s, "someone-else")] {
        let made: PersistentVolume = serde_json::from_value(serde_json::json!({
            "metadata": { "name": volume, "annotations": {
                HANDED_OVER_BY: format!("{ns}/{by}"), RECLAIM_POLICY: "Delete" } },
            "spec": { "capacity": { "storage": "1Mi" }, "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                "hostPath": { "path": "/nonexistent/ark-test" } },
        }))
        .unwrap();
        volumes.create(&Default::default(), &made).await.unwrap();
    }
    let downloads = Api::<DataDownload>::namespaced(client.clone(), ns);
    for (name, volume) in [("interrupted", &retained), ("by-hand", &another_s)] {
        let mut download = DataDownload::new(name, Default::default());
        download.spec.target_volume = TargetVolumeSpec {
            namespace: "restored".into(),
            pvc: "data".into(),
            ..Default::default()
        };
        download.metadata.annotations =
            Some([(HANDING_OVER_VOLUME.to_string(), volume.to_string())].into());
        download.status = Some(DataDownloadStatus {
            phase: Some(PodVolumePhase::InProgress),
            node: Some("127.0.0.1".into()),
            ..Default::default()
        });
        downloads
            .create(&Default::default(), &download)
            .await
            .unwrap();
    }

    let retained_volume = volumes.get(&retained).await.unwrap();
    let pid = common::ark_pid("node-agent", ns).expect("the node agent's process on this host");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let failed = |d: Option<&DataDownload>| {
        d.and_then(|d| d.status.as_ref()?.phase) == Some(PodVolumePhase::Failed)
    };
    for name in ["interrupted", "by-hand"] {
        let ended = wait_for(downloads.clone(), name, failed, WAIT)
            .await
            .unwrap();
        assert_eq!(
            ended.status.unwrap().message.as_deref(),
            Some("the node agent on 127.0.0.1 stopped while the data download was InProgress")
        );
    }
    ark_tests::wait_deleted(volumes.clone(), &retained_volume, WAIT).await;
    let kept = volumes.get(&another_s).await.unwrap();
    assert_eq!(
        kept.spec
            .unwrap()
            .persistent_volume_reclaim_policy
            .as_deref(),
        Some("Retain")
    );
    installed.uninstall(&cluster).await;
}

/// Velero's `loadConcurrency.prepareQueueLength`: with a queue of one, held by a pod volume
/// restore whose volume is being exposed (labelled as Velero's agents label it), a backup's
/// upload stays New, nothing of it exposed; once that request leaves the queue, the upload is
/// taken and moved, and leaves the queue in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_prepare_queue_keeps_a_data_upload_new_until_the_exposed_one_leaves_it() {
    use ark_api::labels::EXPOSE_ON_GOING;
    use ark_api::{PodVolumeRestore, PodVolumeRestoreStatus};
    use kube::api::{Patch, PatchParams};
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let options = Options {
        agent_settings: Some(r#"{ "loadConcurrency": { "prepareQueueLength": 1 } }"#),
        ..Options::default()
    };
    let installed = install_with(&cluster, options).await;
    let ns = &installed.ns;
    let app = application(&cluster).await;
    let mut queued = PodVolumeRestore::new("exposing-elsewhere", Default::default());
    queued.metadata.labels = Some([(EXPOSE_ON_GOING.to_string(), "true".to_string())].into());
    queued.status = Some(PodVolumeRestoreStatus {
        phase: Some(PodVolumePhase::Accepted),
        ..Default::default()
    });
    let restores = Api::<PodVolumeRestore>::namespaced(client.clone(), ns);
    restores.create(&Default::default(), &queued).await.unwrap();

    let backup = [
        "backup",
        "create",
        "queued",
        "--include-namespaces",
        &app.name,
    ];
    ark_ok(
        &cluster,
        ns,
        &[&backup[..], &["--snapshot-move-data"]].concat(),
    );
    let uploads = Api::<DataUpload>::namespaced(client.clone(), ns);
    let of_backup = ListParams::default().labels("velero.io/backup-name=queued");
    let deadline = tokio::time::Instant::now() + WAIT;
    let name = loop {
        if let Some(upload) = uploads.list(&of_backup).await.unwrap().items.first() {
            break upload.name_any();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no DataUpload of the backup"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    // Three looks of the agent's (every 5 s) at a full queue.
    tokio::time::sleep(std::time::Duration::from_secs(15)).await;
    let waiting = uploads.get(&name).await.unwrap();
    let phase = waiting.status.as_ref().and_then(|s| s.phase);
    assert!(
        matches!(phase, None | Some(PodVolumePhase::New)),
        "{waiting:#?}"
    );
    let exposing = ListParams::default().labels("velero.io/data-upload");
    let pods = Api::<Pod>::namespaced(client.clone(), ns);
    assert!(pods.list(&exposing).await.unwrap().items.is_empty());

    let off = serde_json::json!({ "metadata": { "labels": { EXPOSE_ON_GOING: null } } });
    restores
        .patch(
            "exposing-elsewhere",
            &PatchParams::default(),
            &Patch::Merge(&off),
        )
        .await
        .unwrap();
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    let terminal = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
    let ended = wait_for(backups, "queued", terminal, WAIT).await.unwrap();
    assert_eq!(
        ended.status.unwrap().phase,
        Some(BackupPhase::Completed),
        "{}",
        ark_ok(&cluster, ns, &["backup", "describe", "queued", "--details"])
    );
    let moved = uploads.get(&name).await.unwrap();
    let phase = moved.status.as_ref().and_then(|s| s.phase);
    assert_eq!(phase, Some(PodVolumePhase::Completed), "{moved:#?}");
    assert_eq!(moved.labels().get(EXPOSE_ON_GOING), None, "{moved:#?}");
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// Velero's node agent settings, in the ConfigMap the agent is installed with: the pod exposing
/// a snapshot runs on the nodes `loadAffinity` selects, with the resources, priority class,
/// labels and annotations the settings give, and the claim made from the snapshot is what
/// `backupPVC` says for its class (read-only, annotated; the pod mounts it read-only); the data is
/// moved all the same, and nothing of the exposure is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_agent_s_settings_place_and_shape_what_exposes_a_snapshot() {
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let priority = ark_tests::unique_name("movers");
    let _priority = cluster.delete_on_drop::<PriorityClass>(&priority);
    let class: PriorityClass = serde_json::from_value(serde_json::json!({
        "metadata": { "name": priority }, "value": 1000,
    }))
    .unwrap();
    Api::<PriorityClass>::all(client.clone())
        .create(&Default::default(), &class)
        .await
        .unwrap();
    let settings = format!(
        r#"{{
        "loadAffinity": [{{ "nodeSelector": {{ "matchLabels": {{ "ark.test/real-node": "true" }} }} }}],
        "backupPVC": {{ "ark-csi": {{ "readOnly": true, "annotations": {{ "ark.test/exposed": "read-only" }} }} }},
        "podResources": {{ "cpuRequest": "20m", "cpuLimit": "0", "memoryRequest": "24Mi", "memoryLimit": "96Mi" }},
        "priorityClassName": "{priority}",
        "podLabels": {{ "ark.test/team": "storage" }},
        "podAnnotations": {{ "ark.test/note": "exposing" }}
    }}"#
    );
    let options = Options {
        agent_settings: Some(&settings),
        ..Options::default()
    };
    let installed = install_with(&cluster, options).await;
    let ns = &installed.ns;
    let app = application(&cluster).await;
    // What exposes the snapshot, caught while it is there.
    let watching = {
        let (claims, pods) = (
            Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns),
            Api::<Pod>::namespaced(client.clone(), ns),
        );
        tokio::spawn(async move {
            let (mut claim, mut pod) = (None, None);
            let exposing = ListParams::default().labels("velero.io/data-upload");
            while claim.is_none() || pod.is_none() {
                let listed = claims.list(&ListParams::default()).await.unwrap().items;
                claim = claim.or(listed.into_iter().next());
                pod = pod.or(pods.list(&exposing).await.unwrap().items.into_iter().next());
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            (claim.unwrap(), pod.unwrap())
        })
    };
    let backup = [
        "backup",
        "create",
        "moved",
        "--include-namespaces",
        &app.name,
    ];
    let flags = ["--snapshot-move-data", "--wait", "--timeout", "3m"];
    let created = ark_ok(&cluster, ns, &[&backup[..], &flags[..]].concat());
    assert!(created.contains("Completed"), "{created}");
    let (claim, pod) = tokio::time::timeout(WAIT, watching)
        .await
        .expect("the exposing claim and pod were seen")
        .unwrap();
    assert_eq!(
        claim.spec.clone().unwrap().access_modes,
        Some(vec!["ReadOnlyMany".to_string()])
    );
    assert_eq!(
        claim
            .annotations()
            .get("ark.test/exposed")
            .map(String::as_str),
        Some("read-only")
    );
    let spec = pod.spec.unwrap();
    let affinity = serde_json::to_value(spec.affinity).unwrap();
    assert_eq!(
        affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
        serde_json::json!([{ "matchExpressions": [
            { "key": "ark.test/real-node", "operator": "In", "values": ["true"] },
        ] }])
    );
    assert_eq!(
        spec.containers[0].volume_mounts.as_ref().unwrap()[0].read_only,
        Some(true)
    );
    // podResources, priorityClassName, podLabels and podAnnotations, as Velero gives its own.
    assert_eq!(
        serde_json::to_value(&spec.containers[0].resources).unwrap(),
        serde_json::json!({ "requests": { "cpu": "20m", "memory": "24Mi" },
            "limits": { "memory": "96Mi" } })
    );
    assert_eq!(spec.priority_class_name.as_deref(), Some(priority.as_str()));
    assert_eq!(spec.priority, Some(1000));
    let label = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("ark.test/team"));
    assert_eq!(label.map(String::as_str), Some("storage"));
    let note = (pod.metadata.annotations.as_ref()).and_then(|a| a.get("ark.test/note"));
    assert_eq!(note.map(String::as_str), Some("exposing"));
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// The round trip of the issue: rows written into PostgreSQL on a CSI claim, a backup that moves
/// the claim's snapshot data into the bucket, after which no snapshot is left in the cluster or
/// in the driver, the namespace and the claim's volume deleted (reclaim policy Delete), and a
/// restore from the bucket alone: the rows are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_whose_claim_s_data_was_moved_comes_back_with_its_rows() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("moved-db").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    claims
        .create(&Default::default(), &database::claim("db-data"))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(
        &Default::default(),
        &database::database(&cluster, "db-data"),
    )
    .await
    .unwrap();
    wait_for(pods.clone(), "db", is_ready(), WAIT)
        .await
        .unwrap();
    database::psql(
        &cluster,
        &app.name,
        "create table orders (id int primary key, item text); \
         insert into orders values (1, 'tea'), (2, 'scones'), (3, 'coffee');",
    );
    // Written to disk before the snapshot: a crash-consistent copy holds what was checkpointed.
    database::psql(&cluster, &app.name, "checkpoint");

    let backup = ["backup", "create", "db", "--include-namespaces", &app.name];
    let flags = ["--snapshot-move-data", "--wait", "--timeout", "3m"];
    let created = ark_ok(&cluster, ns, &[&backup[..], &flags[..]].concat());
    assert!(created.contains("Completed"), "{created}");
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );
    let volume = claims
        .get("db-data")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    let volumes = Api::<PersistentVolume>::all(client.clone());
    let pv = volumes.get(&volume).await.unwrap();
    let handle = pv
        .spec
        .as_ref()
        .unwrap()
        .csi
        .as_ref()
        .unwrap()
        .volume_handle
        .clone();
    assert_eq!(
        driver_snapshots_of(&cluster, &handle),
        Vec::<String>::new(),
        "the driver holds no snapshot of the claim's volume"
    );
    lose(&cluster, &app.name).await;
    ark_tests::wait_deleted(volumes, &pv, WAIT).await;

    let restore = ["restore", "create", "db", "--from-backup", "db"];
    let restored = ark_ok(
        &cluster,
        ns,
        &[&restore[..], &["--wait", "--timeout", "4m"]].concat(),
    );
    assert!(restored.contains("Completed"), "{restored}");
    wait_for(pods, "db", is_ready(), WAIT).await.unwrap();
    assert_eq!(
        database::psql(&cluster, &app.name, "select item from orders order by id"),
        "tea\nscones\ncoffee\n"
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// A block volume (`volumeMode: Block`) backed up with data movement: the pod exposing its
/// snapshot hands the device to the node agent, which snapshots every byte as Velero's uploader
/// shapes a block volume (one file, named as the device in the pod). With the namespace and its
/// snapshots gone, the restore writes those bytes into a new block volume for the claim through
/// a DataDownload: the volume is the original byte for byte (the driver's files compared whole),
/// the restored pod reads its data from the device, and nothing of either exposure is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_volume_s_data_moved_into_the_bucket_comes_back_byte_for_byte() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = block::application(&cluster).await;
    let before = block::volume_bytes(&cluster, &app.name).await;
    block::assert_written(&before);

    let upload = backed_up_moving_data(&cluster, ns, &app.name, "disk").await;
    let upload_status = upload.status.clone().unwrap();
    // Where Velero's data mover reads a block volume: the device's path in its pod.
    assert_eq!(
        upload_status.path,
        Some(format!("/{}", upload.metadata.uid.clone().unwrap()))
    );
    let progress = upload_status.progress.unwrap();
    assert_eq!(
        (progress.total_bytes, progress.bytes_done),
        (Some(block::SIZE as i64), Some(block::SIZE as i64))
    );

    lose(&cluster, &app.name).await;
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new(),
        "no snapshot of the claim, and nothing of its exposure, is left"
    );
    restored_moved_data(&cluster, ns, "disk", "disk").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    wait_for(pods, block::POD, is_ready(), WAIT).await.unwrap();
    block::assert_same(&block::volume_bytes(&cluster, &app.name).await, &before);
    assert_eq!(
        left(&client, &[&app.name, ns], ns).await,
        Vec::<String>::new()
    );
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}

/// The storage snapshots the test ground's driver holds of volume `handle` (its records name
/// their source volume).
fn driver_snapshots_of(cluster: &Cluster, handle: &str) -> Vec<String> {
    let dir = ark_tests::csi::snapshots_dir(cluster);
    let records = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut of_volume: Vec<String> = records
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .filter_map(|path| {
            let record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
            (record["sourceVolume"] == handle).then(|| record["id"].to_string())
        })
        .collect();
    of_volume.sort();
    of_volume
}
