//! Deleting backups through DeleteBackupRequests, end to end with SeaweedFS: Velero's own cases,
//! and where ark goes further (resumed deletions, snapshots, describe by name and uid).

use crate::common;

use std::time::Duration;

use ark_api::{
    Backup, BackupPhase, BackupStorageLocation, DeleteBackupRequest, DeleteBackupRequestPhase,
    Restore, labels,
};
use ark_tests::proxy::PausableProxy;
use ark_tests::{ArkServer, Cluster, fixtures, unique_name, wait_deleted, wait_for};
use common::setup::{Setup, WAIT};
use common::{ARK, ark, text};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::runtime::wait::conditions;
use kube::{Api, Client, ResourceExt};

async fn install_volume_snapshot_content_crd(client: &Client) {
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        // As the external-snapshotter's CRDs: *.k8s.io groups need the API approval annotation.
        "metadata": {
            "name": "volumesnapshotcontents.snapshot.storage.k8s.io",
            "annotations": { "api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/419" },
        },
        "spec": {
            "group": "snapshot.storage.k8s.io",
            "names": { "kind": "VolumeSnapshotContent", "plural": "volumesnapshotcontents", "singular": "volumesnapshotcontent" },
            "scope": "Cluster",
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }],
        },
    }))
    .unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("{error}"),
    }
    wait_for(
        api,
        "volumesnapshotcontents.snapshot.storage.k8s.io",
        conditions::is_crd_established(),
        WAIT,
    )
    .await
    .unwrap();
}

fn volume_snapshot_contents(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("snapshot.storage.k8s.io", "v1", "VolumeSnapshotContent");
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

/// On the second cluster, which runs Velero's own CRDs: every status this deletion writes (the
/// request's, the location's, the backup's) goes through the object, as those CRDs serve it.
#[tokio::test]
async fn a_full_delete_on_velero_crds_removes_backup_restores_data_requests_and_snapshots_and_keeps_the_rest()
 {
    let setup = Setup::new(Cluster::second(), None).await;
    let metrics_address = ark_tests::free_local_address();
    let _server = ArkServer::start_with(
        ARK,
        &setup.cluster,
        setup.ns(),
        &["--metrics-address", &metrics_address],
    );
    setup.backup("b1", Some("r1"));
    setup.backup("b2", Some("r2"));

    // b1 has a CSI snapshot as Velero before v1.15 kept it: a VolumeSnapshotContent left in the
    // cluster (labelled with its backup) and recorded beside the backup.
    install_volume_snapshot_content_crd(&setup.client).await;
    let content = unique_name("snapcontent");
    let vsc: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
        "metadata": { "name": content, "labels": { "velero.io/backup-name": "b1" } },
        "spec": { "deletionPolicy": "Retain", "driver": "test.csi" },
    }))
    .unwrap();
    volume_snapshot_contents(&setup.client)
        .create(&PostParams::default(), &vsc)
        .await
        .unwrap();
    let layout = &setup.store.layout;
    setup
        .put_gz(
            &layout.backup_csi_snapshot_contents("b1"),
            &format!(
                r#"[{{"metadata":{{"name":"{content}","labels":{{"velero.io/backup-name":"b1"}}}}}}]"#
            ),
        )
        .await;

    let b1 = setup.backups().get("b1").await.unwrap();
    let r1 = setup.restores().get("r1").await.unwrap();
    let stdout = setup.ark(&["backup", "delete", "b1", "--confirm", "--wait"]);
    assert_eq!(
        stdout,
        "Request to delete backup \"b1\" submitted successfully.\nThe backup will be fully deleted after all associated data (disk snapshots, backup files, restores) are removed.\n"
    );
    setup.gone(&b1).await;
    // Deleted with it, and gone once the server's restore finalizer has let it go (Velero's too
    // deletes a backup's restores without waiting for them).
    wait_deleted(setup.restores(), &r1, WAIT).await;
    assert!(
        setup.restores().get_opt("r2").await.unwrap().is_some(),
        "another backup's restore is kept"
    );
    assert_eq!(setup.keys(&layout.backup_dir("b1")).await, 0);
    assert_eq!(setup.keys(&layout.restore_dir("r1")).await, 0);
    assert_eq!(setup.keys(&layout.backup_dir("b2")).await, 7);
    assert_eq!(setup.keys(&layout.restore_dir("r2")).await, 3);
    setup.requests_removed("").await;
    assert!(
        volume_snapshot_contents(&setup.client)
            .get_opt(&content)
            .await
            .unwrap()
            .is_none()
    );
    let scraped = ark_tests::scrape(&metrics_address, "/metrics");
    assert!(
        scraped.contains("velero_backup_deletion_attempt_total{schedule=\"\"} 1\n"),
        "{scraped}"
    );
    assert!(
        scraped.contains("velero_backup_deletion_success_total{schedule=\"\"} 1\n"),
        "{scraped}"
    );
    assert!(
        scraped.contains("velero_backup_deletion_failure_total{schedule=\"\"} 0\n"),
        "{scraped}"
    );
    for ns in [
        format!("{}-r1", setup.app.name),
        format!("{}-r2", setup.app.name),
    ] {
        let _ = Api::<Namespace>::all(setup.client.clone())
            .delete(&ns, &DeleteParams::default())
            .await;
    }
}

#[tokio::test]
async fn requests_that_cannot_proceed_are_processed_with_the_reason_and_delete_nothing() {
    let setup = Setup::new(Cluster::get(), None).await;
    let bucket = tempfile::tempdir().unwrap();
    setup.ark(&[
        "backup-location",
        "create",
        "ro",
        "--provider",
        "file",
        "--bucket",
        bucket.path().to_str().unwrap(),
        "--access-mode",
        "ReadOnly",
    ]);
    // Backups whose location is missing or read-only (as sync would create them).
    for (name, location) in [("lost", "nowhere"), ("frozen", "ro")] {
        let backup: Backup = serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup", "metadata": { "name": name },
            "spec": { "storageLocation": location }, "status": { "phase": "Completed" },
        }))
        .unwrap();
        setup
            .backups()
            .create(&PostParams::default(), &backup)
            .await
            .unwrap();
    }
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());

    let cases = [
        ("", "spec.backupName is required".to_string()),
        ("unknown", "backup not found".to_string()),
        ("lost", "backup storage location nowhere not found".to_string()),
        ("frozen", "cannot delete backup because backup storage location ro is currently in read-only mode".to_string()),
    ];
    for (backup, error) in cases {
        let request = setup.request(backup, None).await;
        let processed = setup.processed(&request).await;
        assert_eq!(processed.errors(), [error], "request for {backup:?}");
    }
    for name in ["lost", "frozen"] {
        assert_eq!(
            setup.backups().get(name).await.unwrap().phase(),
            BackupPhase::Completed
        );
    }
}

#[tokio::test]
async fn provider_snapshots_without_a_snapshotter_keep_the_backup_and_describe_shows_the_attempt() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", None);
    let layout = &setup.store.layout;
    setup
        .put_gz(
            &layout.backup_volume_snapshots("b1"),
            r#"[{"spec":{"location":"aws-default","persistentVolumeName":"pv-1"},"status":{"providerSnapshotID":"snap-1","phase":"Completed"}}]"#,
        )
        .await;
    // A failed request left by an earlier backup of the same name (another uid): not this backup's.
    let earlier = setup
        .request("b1", Some(("b1", "uid-of-an-earlier-b1")))
        .await;
    setup.processed(&earlier).await;

    let output = ark(
        Some(&setup.cluster),
        &[
            "backup",
            "delete",
            "b1",
            "--confirm",
            "--wait",
            "-n",
            setup.ns(),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let expected = "unable to delete backup because it includes 1 volume snapshots and this server has no volume snapshotter configured; nothing was deleted";
    assert_eq!(
        text(&output.stderr),
        format!("error: deleting backup \"b1\": {expected}\n")
    );
    let backup = setup.backups().get("b1").await.unwrap();
    assert_eq!(backup.phase(), BackupPhase::Completed);
    assert_eq!(setup.keys(&layout.backup_dir("b1")).await, 7);

    let describe = setup.ark(&["backup", "describe", "b1"]);
    let section = describe
        .split("\nDeletion Attempts")
        .nth(1)
        .expect("a Deletion Attempts section");
    assert!(section.starts_with(" (1 failed):\n  "), "{describe}");
    assert!(
        section.ends_with(&format!(": Processed\n  Errors:\n    {expected}\n")),
        "{describe}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&setup.ark(&["backup", "describe", "b1", "-o", "json"])).unwrap();
    assert_eq!(json["deletionAttempts"]["failed"], 1);
    assert_eq!(
        json["deletionAttempts"]["deleteBackupRequests"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// A storage snapshot of the CSI test ground's driver with nothing of it left in the cluster, as
/// Velero since v1.15 (and ark) leave a backup's snapshots: a claim of `name` in `ns`, a
/// VolumeSnapshot of it, ready, its content set to `Retain` and both deleted. The snapshot's
/// handle, and where the driver keeps its copy.
async fn storage_snapshot(setup: &Setup, ns: &str, name: &str) -> (String, std::path::PathBuf) {
    let client = &setup.client;
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), ns);
    let claim = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": ark_tests::csi::CLASS,
            "resources": { "requests": { "storage": "16Mi" } } },
    }))
    .unwrap();
    claims.create(&PostParams::default(), &claim).await.unwrap();
    let snapshots = ark_tests::csi::api(client, Some(ns), "VolumeSnapshot");
    snapshots
        .create(
            &PostParams::default(),
            &ark_tests::csi::volume_snapshot(name, name),
        )
        .await
        .unwrap();
    let ready = wait_for(
        snapshots.clone(),
        name,
        |s: Option<&DynamicObject>| s.is_some_and(|s| s.data["status"]["readyToUse"] == true),
        WAIT,
    )
    .await
    .unwrap();
    let content_name = ready.data["status"]["boundVolumeSnapshotContentName"]
        .as_str()
        .unwrap()
        .to_string();
    let contents = volume_snapshot_contents(client);
    let content = contents.get(&content_name).await.unwrap();
    let handle = content.data["status"]["snapshotHandle"]
        .as_str()
        .unwrap()
        .to_string();
    contents
        .patch(
            &content_name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "deletionPolicy": "Retain" } })),
        )
        .await
        .unwrap();
    snapshots
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(snapshots, &ready, WAIT).await;
    contents
        .delete(&content_name, &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(contents, &content, WAIT).await;
    let copy = setup
        .cluster
        .kubeconfig
        .parent()
        .unwrap()
        .join("csi/data/snapshots")
        .join(&handle);
    assert!(copy.is_dir(), "the driver keeps {copy:?}");
    (handle, copy)
}

/// Velero since v1.15 removes a backup's VolumeSnapshotContents once the backup is done and keeps
/// them only as items of the tarball: deleting the backup recreates each of this backup's contents
/// from its snapshot handle, for the driver to delete the snapshot. On the real snapshot
/// controller, csi-snapshotter and driver of the CSI test ground: the driver's copy of this
/// backup's snapshot goes, another backup's stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csi_snapshots_of_a_velero_1_15_backup_are_deleted_through_contents_recreated_from_their_handles()
 {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", None);
    let app = setup.app.name.clone();
    let (ours, our_copy) = storage_snapshot(&setup, &app, "ours").await;
    let (foreign, foreign_copy) = storage_snapshot(&setup, &app, "foreign").await;

    // The tarball as Velero writes it: the contents among the items, none left in the cluster.
    let content = |name: &str, backup: &str, handle: Option<&str>| {
        let status = handle.map(|h| serde_json::json!({ "snapshotHandle": h, "readyToUse": true }));
        let object = serde_json::json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
            "metadata": { "name": name, "uid": format!("uid-{name}"), "labels": { "velero.io/backup-name": backup } },
            "spec": { "deletionPolicy": "Retain", "driver": "hostpath.csi.ark.test", "source": { "volumeHandle": "vol-1" },
                      "volumeSnapshotClassName": "ark-csi", "volumeSnapshotRef": { "namespace": "app", "name": "data" } },
            "status": status,
        });
        (
            format!("resources/volumesnapshotcontents.snapshot.storage.k8s.io/cluster/{name}.json"),
            serde_json::to_vec(&object).unwrap(),
        )
    };
    let tarball = fixtures::tarball(&[
        ("metadata/version".into(), b"1.1.0".to_vec()),
        content("vsc-with-handle", "b1", Some(&ours)),
        content("vsc-without-handle", "b1", None),
        content("vsc-of-another-backup", "b0", Some(&foreign)),
    ]);
    let layout = &setup.store.layout;
    setup
        .store
        .put(&layout.backup_contents("b1"), tarball.into())
        .await
        .unwrap();
    setup
        .put_gz(
            &layout.backup_volume_info("b1"),
            &format!(
                r#"[{{"pvcName":"data","pvcNamespace":"app","pvName":"pv-1","backupMethod":"CSISnapshot","csiSnapshotInfo":{{"snapshotHandle":"{ours}","size":1,"driver":"hostpath.csi.ark.test","vscName":"vsc-with-handle"}}}}]"#
            ),
        )
        .await;

    let b1 = setup.backups().get("b1").await.unwrap();
    setup.ark(&["backup", "delete", "b1", "--confirm", "--wait"]);
    setup.gone(&b1).await;
    assert_eq!(setup.keys(&layout.backup_dir("b1")).await, 0);
    // The driver deletes the snapshot of a deleted content on its own time: the backup can be
    // gone before it has.
    let deadline = tokio::time::Instant::now() + WAIT;
    while our_copy.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the driver still holds {our_copy:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Only this backup's snapshot.
    assert!(foreign_copy.is_dir(), "{foreign_copy:?} was deleted");
    let left: Vec<String> = volume_snapshot_contents(&setup.client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .iter()
        .filter(|c| c.data["spec"]["source"]["snapshotHandle"] == foreign.as_str())
        .map(|c| c.name_any())
        .collect();
    assert!(
        left.is_empty(),
        "another backup's content was recreated: {left:?}"
    );
    // The test's own leftover: the driver's copy of the other snapshot.
    std::fs::remove_dir_all(&foreign_copy).unwrap();
    std::fs::remove_file(foreign_copy.with_extension("json")).unwrap();

    // What could not be deleted is said on the request, where `kubectl describe` shows it.
    let events: Api<Event> = Api::namespaced(setup.client.clone(), setup.ns());
    let notes: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("SnapshotNotDeleted"))
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes.contains(&"VolumeSnapshotContent vsc-without-handle of backup b1 is gone and the backup recorded no snapshot handle: no snapshot was deleted for it".to_string()),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"VolumeSnapshotContent vsc-of-another-backup is not labelled velero.io/backup-name=b1: left alone".to_string()),
        "{notes:?}"
    );
}

#[tokio::test]
async fn long_names_missing_tarballs_and_duplicate_requests() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    // Object names are DNS subdomains of up to 253 characters, with no cap on the part between
    // dots: a 100-character name is created, described, restored and deleted like any other (its
    // labels carry Velero's hashed form).
    let long = "l".repeat(100);
    setup.backup(&long, Some("from-long"));
    let described = setup.ark(&["backup", "describe", &long]);
    assert!(
        described.contains(&format!("Name:         {long}\n")),
        "{described}"
    );
    assert!(described.contains("Phase:  Completed"), "{described}");
    setup.backup("no-tarball", None);
    setup.backup("dup", None);
    let layout = &setup.store.layout;
    setup
        .store
        .delete(&layout.backup_contents("no-tarball"))
        .await
        .unwrap();

    let long_backup = setup.backups().get(&long).await.unwrap();
    let no_tarball = setup.backups().get("no-tarball").await.unwrap();
    setup.ark(&[
        "backup",
        "delete",
        &long,
        "no-tarball",
        "--confirm",
        "--wait",
    ]);
    setup.gone(&long_backup).await;
    setup.gone(&no_tarball).await;
    assert_eq!(setup.keys(&layout.backup_dir(&long)).await, 0);
    assert_eq!(setup.keys(&layout.backup_dir("no-tarball")).await, 0);

    let dup = setup.backups().get("dup").await.unwrap();
    let uid = dup.metadata.uid.clone().unwrap();
    for _ in 0..3 {
        setup.request("dup", Some(("dup", &uid))).await;
    }
    setup.gone(&dup).await;
    setup
        .requests_removed(&labels::selector_for_backup("dup", &uid))
        .await;
}

#[tokio::test]
async fn processed_requests_expire() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start_with(
        ARK,
        &setup.cluster,
        setup.ns(),
        &["--deletion-request-ttl", "3s"],
    );
    let request = setup.request("unknown", None).await;
    let processed = setup.processed(&request).await;
    wait_deleted(setup.requests(), &processed, Duration::from_secs(30)).await;
}

/// The pausable proxy makes the bucket stop answering in the middle: a backup then stays
/// InProgress (a request for it is refused), and a deletion stays InProgress until the server is
/// killed; the next server finishes it.
// Multi-threaded: the proxy runs on the test's runtime while the test blocks on the ark CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_progress_backups_are_refused_and_an_interrupted_deletion_is_finished_after_a_restart() {
    let cluster = Cluster::get();
    let proxy = PausableProxy::start(cluster.s3_address()).await;
    let setup = Setup::new(cluster.clone(), Some(&proxy.url())).await;
    let server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", Some("r1"));

    proxy.pause();
    setup.ark(&[
        "backup",
        "create",
        "stuck",
        "--include-namespaces",
        &setup.app.name,
    ]);
    let in_progress = |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::InProgress);
    wait_for(setup.backups(), "stuck", in_progress, WAIT)
        .await
        .unwrap();
    let refused = setup.request("stuck", None).await;
    assert_eq!(
        setup.processed(&refused).await.errors(),
        ["backup is still in progress"]
    );

    setup.ark(&["backup", "delete", "b1", "--confirm"]);
    let request = setup
        .requests()
        .list(&ListParams::default().labels(&format!("{}=b1", labels::BACKUP_NAME)))
        .await
        .unwrap()
        .items[0]
        .name_any();
    let started = |r: Option<&DeleteBackupRequest>| {
        r.is_some_and(|r| r.phase() == Some(DeleteBackupRequestPhase::InProgress))
    };
    wait_for(setup.requests(), &request, started, WAIT)
        .await
        .unwrap();
    // The request is marked InProgress one write before the backup is claimed Deleting.
    setup.backup_in("b1", BackupPhase::Deleting).await;
    drop(server);

    proxy.resume();
    let b1 = setup.backups().get("b1").await.unwrap();
    let r1 = setup.restores().get("r1").await.unwrap();
    let _restarted = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.gone(&b1).await;
    let layout = &setup.store.layout;
    assert_eq!(setup.keys(&layout.backup_dir("b1")).await, 0);
    assert_eq!(setup.keys(&layout.restore_dir("r1")).await, 0);
    // Gone once the restore finalizer has let it go, a moment after the backup.
    wait_deleted(setup.restores(), &r1, WAIT).await;
    let _ = Api::<Namespace>::all(setup.client.clone())
        .delete(&format!("{}-r1", setup.app.name), &DeleteParams::default())
        .await;
}

#[tokio::test]
async fn deleting_the_namespace_keeps_the_bucket_and_sync_brings_the_backups_back() {
    let setup = Setup::new(Cluster::get(), None).await;
    let server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", None);
    setup.backup("b2", None);
    drop(server);
    let namespaces: Api<Namespace> = Api::all(setup.client.clone());
    let namespace = namespaces.get(setup.ns()).await.unwrap();
    namespaces
        .delete(setup.ns(), &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(namespaces.clone(), &namespace, WAIT).await;
    assert_eq!(
        setup.keys(&setup.store.layout.backup_dir("b1")).await,
        7,
        "deleting the namespace deleted no data"
    );

    // The namespace again, with its location: sync finds the backup.
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": setup.ns() } })).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let (flags, _) = fixtures::s3_location(
        &setup.cluster,
        &setup.client,
        setup.ns(),
        setup.store.layout.prefix(),
        None,
    )
    .await;
    let mut create = vec!["backup-location", "create", "default", "--default"];
    create.extend(flags.iter().map(String::as_str));
    setup.ark(&create);
    let address = ark_tests::free_local_address();
    let flags = ["--metrics-address", &address];
    let _server = ArkServer::start_with(ARK, &setup.cluster, setup.ns(), &flags);
    let completed = |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Completed);
    for name in ["b1", "b2"] {
        (wait_for(setup.backups(), name, completed, WAIT).await).unwrap();
    }
    // Sync's progress, as its metrics show it (counted just after each Backup is created).
    let lines = [
        "ark_backup_sync_created_total{backup_location_name=\"default\"} 2\n",
        "ark_backup_sync_remaining{backup_location_name=\"default\"} 0\n",
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let scraped = ark_tests::scrape(&address, "/metrics");
        if lines.iter().all(|line| scraped.contains(line)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{lines:?} not all in:\n{scraped}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A location's own `backupSyncPeriod` and `validationFrequency`, as Velero reads them: 0 syncs the
/// location not at all and checks it once; a period of its own replaces the server's (which the
/// test server sets to 2 s). The server's periods are shorter than the waits here, so a sync or
/// check that should not happen would have.
#[tokio::test]
async fn a_location_s_own_sync_period_and_validation_frequency_of_zero_are_honoured() {
    let setup = Setup::new(Cluster::get(), None).await;
    let locations: Api<BackupStorageLocation> = Api::namespaced(setup.client.clone(), setup.ns());
    let set = |fields: serde_json::Value| {
        let locations = locations.clone();
        async move {
            locations
                .patch(
                    "default",
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({ "spec": fields })),
                )
                .await
                .unwrap()
        }
    };
    set(serde_json::json!({ "backupSyncPeriod": "0s", "validationFrequency": "0s" })).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", None);
    let checked = |l: &BackupStorageLocation| {
        l.status
            .as_ref()
            .and_then(|s| s.last_validation_time.clone())
    };
    let first = checked(&locations.get("default").await.unwrap()).expect("checked once");

    // The Backup object deleted (not the backup): a location that syncs would bring it back.
    let backup = setup.backups().get("b1").await.unwrap();
    setup
        .backups()
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(setup.backups(), &backup, WAIT).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(
        setup.backups().get_opt("b1").await.unwrap().is_none(),
        "synced"
    );
    assert_eq!(
        checked(&locations.get("default").await.unwrap()),
        Some(first.clone()),
        "checked again"
    );

    // Periods of its own: synced and checked again.
    set(serde_json::json!({ "backupSyncPeriod": "1s", "validationFrequency": "1s" })).await;
    let completed = |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Completed);
    wait_for(setup.backups(), "b1", completed, WAIT)
        .await
        .expect("synced once the location has a period");
    let rechecked =
        |l: Option<&BackupStorageLocation>| l.and_then(checked).is_some_and(|at| at.0 > first.0);
    wait_for(locations.clone(), "default", rechecked, WAIT)
        .await
        .expect("checked again once the location has a frequency");
}

#[tokio::test]
async fn expired_backups_and_backups_gone_from_the_bucket_are_deleted_through_requests() {
    let setup = Setup::new(Cluster::get(), None).await;
    let backup: Backup = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": { "name": "legacy", "finalizers": ["gc.ark.heptio.com"] },
        "spec": { "storageLocation": "nowhere" },
        "status": { "phase": "Completed", "expiration": "2020-01-01T00:00:00Z" },
    }))
    .unwrap();
    setup
        .backups()
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    let _server = ArkServer::start_with(
        ARK,
        &setup.cluster,
        setup.ns(),
        &["--garbage-collection-frequency", "2s"],
    );

    // The legacy finalizer goes at start-up; GC cannot act on a backup without its location.
    let labelled = |b: Option<&Backup>| {
        b.is_some_and(|b| {
            b.labels().get(labels::GC_FAILURE).map(String::as_str) == Some("BSLNotFound")
        })
    };
    let legacy = wait_for(setup.backups(), "legacy", labelled, WAIT)
        .await
        .unwrap();
    assert_eq!(legacy.metadata.finalizers, None);

    // A backup past its TTL is deleted by a request GC creates.
    setup.ark(&[
        "backup",
        "create",
        "short",
        "--include-namespaces",
        &setup.app.name,
        "--ttl",
        "1s",
        "--wait",
    ]);
    let short = setup.backups().get("short").await.unwrap();
    setup.gone(&short).await;
    assert_eq!(setup.keys(&setup.store.layout.backup_dir("short")).await, 0);

    // A backup whose data left the bucket goes through a request too, with its restore (once two
    // listings lack it, and while the bucket still has the location's other backups).
    setup.backup("kept", None);
    setup.backup("orphan", Some("r-orphan"));
    let orphan = setup.backups().get("orphan").await.unwrap();
    let orphan_restore = setup.restores().get("r-orphan").await.unwrap();
    setup
        .store
        .delete_under(&setup.store.layout.backup_dir("orphan"))
        .await
        .unwrap();
    setup.gone(&orphan).await;
    // The restore finalizer lets the restore go a moment after its backup.
    wait_deleted(setup.restores(), &orphan_restore, WAIT).await;
    let _ = Api::<Namespace>::all(setup.client.clone())
        .delete(
            &format!("{}-r-orphan", setup.app.name),
            &DeleteParams::default(),
        )
        .await;
}

/// `ark restore delete`: the server holds every Restore with Velero's finalizer; deleting one
/// removes its files from the bucket (`restores/<name>/`), then lets it go, and the backup's own
/// files stay. A name that does not exist is named, with the exit code saying so.
#[tokio::test]
async fn ark_restore_delete_removes_the_restore_and_its_files_and_keeps_the_backup() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", Some("r1"));
    let _copy = setup
        .cluster
        .delete_on_drop::<Namespace>(&format!("{}-r1", setup.app.name));
    let restores = setup.restores();
    let held = wait_for(
        restores.clone(),
        "r1",
        |r: Option<&Restore>| {
            r.and_then(|r| r.metadata.finalizers.as_ref())
                .is_some_and(|f| f.iter().any(|f| f == ark_api::RESTORE_FINALIZER))
        },
        WAIT,
    )
    .await
    .expect("the server holds the restore with Velero's finalizer");
    let layout = &setup.store.layout;
    let backup_keys = setup.keys(&layout.backup_dir("b1")).await;
    assert!(setup.keys(&layout.restore_dir("r1")).await > 0);

    let deleted = setup.ark(&[
        "restore",
        "delete",
        "r1",
        "--confirm",
        "--wait",
        "--timeout",
        "1m",
    ]);
    assert!(
        deleted.contains("Request to delete restore \"r1\" submitted successfully."),
        "{deleted}"
    );
    wait_deleted(restores, &held, WAIT).await;
    assert_eq!(setup.keys(&layout.restore_dir("r1")).await, 0);
    assert_eq!(setup.keys(&layout.backup_dir("b1")).await, backup_keys);

    let missing = ark(
        Some(&setup.cluster),
        &["restore", "delete", "r2", "--confirm", "-n", setup.ns()],
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("restore \"r2\" not found"),
        "{}",
        text(&missing.stderr)
    );
}

/// A schedule's newest Completed backup outlives its TTL while the schedule exists, so a schedule
/// whose later backups all failed still has one to restore: the older Completed one, the failed
/// and partly failed ones and a backup of no schedule go at their TTL; the newest Completed one is
/// kept (marked, with a Normal event saying why), goes once a later one completes, and the next
/// last good one once the schedule is deleted. The backups are real (in the bucket, so that sync
/// leaves them be), then given a schedule's label and the phases and times of past days.
#[tokio::test]
async fn a_schedules_last_good_backup_outlives_its_ttl_until_a_later_one_completes_or_the_schedule_goes()
 {
    let setup = Setup::new(Cluster::get(), None).await;
    let app = setup.app.name.clone();
    let _server = collecting_every_2s(&setup);
    setup.ark(&[
        "schedule",
        "create",
        "daily",
        "--schedule",
        "@daily",
        "--include-namespaces",
        &app,
        "--paused",
    ]);
    let backups = setup.backups();
    let made = async |name: &str, schedule: Option<&str>, phase: &str, started, expired| {
        aged_backup(&setup, name, schedule, phase, started, expired).await
    };
    // The newest Completed one first: no older one is ever the newest meanwhile.
    let last_good = made("daily-2", Some("daily"), "Completed", 48, 24).await;
    let mut expiring = Vec::new();
    expiring.push(made("daily-3", Some("daily"), "Failed", 24, 2).await);
    expiring.push(made("daily-4", Some("daily"), "PartiallyFailed", 12, 1).await);
    expiring.push(made("daily-1", Some("daily"), "Completed", 72, 48).await);
    expiring.push(made("by-hand", None, "Completed", 6, 1).await);
    for gone in &expiring {
        setup.gone(gone).await;
    }
    let marked = |b: Option<&Backup>| {
        b.is_some_and(|b| {
            b.annotations()
                .get("ark.io/kept-as-last-good-of")
                .map(String::as_str)
                == Some("daily")
        })
    };
    let kept = wait_for(backups.clone(), "daily-2", marked, WAIT)
        .await
        .unwrap();
    assert_eq!(kept.phase(), BackupPhase::Completed);
    let events: Api<Event> = Api::namespaced(setup.client.clone(), setup.ns());
    let said = "backup daily-2 expired, and is kept: it is the newest Completed backup of schedule \
                daily, which still exists";
    let event = (events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter())
    .find(|e| e.note.as_deref().is_some_and(|n| n.starts_with(said)))
    .expect("an event saying why daily-2 is kept");
    assert_eq!(
        (event.type_.as_deref(), event.reason.as_deref()),
        (Some("Normal"), Some("KeptAsLastGood"))
    );
    let described = setup.ark(&["schedule", "describe", "daily"]);
    assert!(
        described.contains("Kept past its TTL:  daily-2 (the last good backup)\n"),
        "{described}"
    );

    // A later backup completes: the kept one goes, and the later one is kept past its own TTL.
    let later = made("daily-5", Some("daily"), "Completed", 1, -24).await;
    setup.gone(&last_good).await;
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let expired = serde_json::json!({ "status": { "expiration": now } });
    backups
        .patch("daily-5", &PatchParams::default(), &Patch::Merge(&expired))
        .await
        .unwrap();
    wait_for(backups.clone(), "daily-5", marked, WAIT)
        .await
        .unwrap();

    // The schedule goes: so does the protection.
    setup.ark(&["schedule", "delete", "daily", "--confirm"]);
    setup.gone(&later).await;
}

/// A schedule's retention rules decide for its Completed backups instead of their TTL: unreadable
/// rules delete nothing of the schedule's (a Warning event on the schedule names the fault);
/// `last=2` keeps the two newest Completed backups and deletes the others, expired or not, while
/// a failed backup still goes by its TTL only. `schedule describe` shows the rules and what they
/// keep; `schedule create --retention` refuses bad rules before making anything.
#[tokio::test]
async fn a_schedules_retention_rules_keep_exactly_their_backups_and_unreadable_rules_delete_nothing()
 {
    let setup = Setup::new(Cluster::get(), None).await;
    let app = setup.app.name.clone();
    let refused = ark(
        Some(&setup.cluster),
        &[
            "schedule",
            "create",
            "bad",
            "--schedule",
            "@daily",
            "--retention",
            "lst=2",
            "-n",
            setup.ns(),
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains(
            "\"lst=2\" is not RULE=COUNT (RULE one of last, hourly, daily, weekly, monthly, yearly)"
        ),
        "{}",
        text(&refused.stderr)
    );
    let _server = collecting_every_2s(&setup);
    setup.ark(&[
        "schedule",
        "create",
        "kept",
        "--schedule",
        "@daily",
        "--include-namespaces",
        &app,
        "--paused",
        "--retention",
        "last=2",
    ]);
    let schedules: Api<ark_api::Schedule> = Api::namespaced(setup.client.clone(), setup.ns());
    let set_rules = async |rules: &str| {
        let patch =
            serde_json::json!({ "metadata": { "annotations": { "ark.io/retention": rules } } });
        schedules
            .patch("kept", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    };
    set_rules("lst=2").await;
    let backups = setup.backups();
    let made = async |name: &str, phase: &str, started, expired| {
        aged_backup(&setup, name, Some("kept"), phase, started, expired).await
    };
    let r5 = made("kept-5", "Completed", 1, -720).await;
    let r4 = made("kept-4", "Failed", 24, -720).await;
    let r3 = made("kept-3", "Completed", 48, -720).await;
    let r2 = made("kept-2", "Completed", 72, -720).await;
    let r1 = made("kept-1", "Completed", 96, -720).await;
    let r0 = made("kept-0", "Completed", 240, 120).await;

    // Unreadable rules: nothing of the schedule's goes, not even the backup past its TTL.
    let said = warning_event_about(&setup, "RetentionUnreadable").await;
    assert!(
        said.contains("schedule kept: annotation ark.io/retention: \"lst=2\" is not RULE=COUNT"),
        "{said}"
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    for backup in [&r0, &r1, &r2, &r3, &r4, &r5] {
        assert!(backups.get_opt(&backup.name_any()).await.unwrap().is_some());
    }
    let described = setup.ark(&["schedule", "describe", "kept"]);
    assert!(
        described.contains("Retention:  lst=2 (unreadable: "),
        "{described}"
    );

    // Read: the two newest Completed backups stay, the older ones go, expired or not; the failed
    // one waits for its TTL.
    set_rules("last=2").await;
    for gone in [&r0, &r1, &r2] {
        setup.gone(gone).await;
    }
    for kept in [&r3, &r4, &r5] {
        assert!(backups.get_opt(&kept.name_any()).await.unwrap().is_some());
    }
    let described = setup.ark(&["schedule", "describe", "kept"]);
    assert!(
        described.contains(
            "Retention:  last=2\nKept by it (and when each goes, if every run until then \
             completes):\n  kept-5  (last; kept until later backups are made)\n  kept-3  (last; \
             kept until later backups are made)\n"
        ),
        "{described}"
    );
}

/// The note of the first event in the server's namespace with `reason`, once there is one.
async fn warning_event_about(setup: &Setup, reason: &str) -> String {
    let event = ark_tests::warning_event(&setup.client, setup.ns(), reason, WAIT)
        .await
        .unwrap();
    event.note.unwrap_or_default()
}

/// A server of `setup`'s namespace whose garbage collection looks every 2 s.
fn collecting_every_2s(setup: &Setup) -> ArkServer {
    let every_2s = ["--garbage-collection-frequency", "2s"];
    ArkServer::start_with(ARK, &setup.cluster, setup.ns(), &every_2s)
}

/// A backup of `setup`'s application made now (real, in the bucket, so that sync leaves it be),
/// then made to look as if `schedule` had made it `started` hours ago, ending in `phase` and
/// expiring `expired` hours ago (negative: ahead).
async fn aged_backup(
    setup: &Setup,
    name: &str,
    schedule: Option<&str>,
    phase: &str,
    started: i64,
    expired: i64,
) -> Backup {
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    let hours_ago = |h: i64| (Timestamp::now() - SignedDuration::from_hours(h)).to_string();
    setup.ark(&[
        "backup",
        "create",
        name,
        "--include-namespaces",
        &setup.app.name,
        "--wait",
    ]);
    let labels = schedule.map(|s| serde_json::json!({ labels::SCHEDULE_NAME: s }));
    let aged = serde_json::json!({
        "metadata": { "labels": labels },
        "status": { "phase": phase, "startTimestamp": hours_ago(started),
                    "expiration": hours_ago(expired) },
    });
    let patch = Patch::Merge(&aged);
    let backups = setup.backups();
    backups
        .patch(name, &PatchParams::default(), &patch)
        .await
        .unwrap()
}
