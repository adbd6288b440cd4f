//! CSI snapshots on the real node: claims of the test ground's CSI driver (`hostpath.csi.ark.test`,
//! driven by the real external-provisioner, csi-snapshotter and snapshot-controller, its volumes
//! published into pods by the real kubelet) snapshotted at backup and restored from their
//! snapshots, with PostgreSQL's rows as the data.

use crate::common;

use std::time::Duration;

use ark_api::{Backup, BackupPhase, BackupVolumeInfo};
use ark_tests::{ArkServer, Cluster, wait_for};
use common::ARK;
use common::database::{claim, database, psql};
use common::setup::Setup;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::runtime::wait::Condition;
use kube::{Api, Client, ResourceExt};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(120);
const DRIVER: &str = "hostpath.csi.ark.test";

fn snapshot_api(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "snapshot.storage.k8s.io",
        "v1",
        kind,
    ))
}

/// Waits until no VolumeSnapshot is left in `namespace`, nor a content of one (the snapshot
/// controller removes them a moment after they are deleted); what is left when the wait ends.
async fn left_in(client: &Client, namespace: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let left = snapshots_in(client, namespace).await;
        if left.is_empty() || tokio::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The VolumeSnapshots in `namespace`, and the contents of snapshots there.
async fn snapshots_in(client: &Client, namespace: &str) -> Vec<String> {
    let mut found = Vec::new();
    let snapshots: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &snapshot_api("VolumeSnapshot"));
    for snapshot in snapshots.list(&ListParams::default()).await.unwrap().items {
        found.push(format!("VolumeSnapshot {}", snapshot.name_any()));
    }
    let contents: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotContent"));
    for content in contents.list(&ListParams::default()).await.unwrap().items {
        if content.data["spec"]["volumeSnapshotRef"]["namespace"] == namespace {
            found.push(format!("VolumeSnapshotContent {}", content.name_any()));
        }
    }
    found
}

/// A VolumeSnapshotClass a test made, deleted however the test ends: a class left behind would
/// change which class other claims of the driver get.
struct ClassDeletedOnDrop(Cluster, String);

impl Drop for ClassDeletedOnDrop {
    fn drop(&mut self) {
        let (cluster, name) = (self.0.clone(), self.1.clone());
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let api: Api<DynamicObject> =
                        Api::all_with(cluster.client().await, &snapshot_api("VolumeSnapshotClass"));
                    let _ = api.delete(&name, &Default::default()).await;
                })
        })
        .join();
    }
}

/// `kubectl ARGS`, whatever its exit: what it printed on both streams.
fn kubectl_outcome(cluster: &Cluster, args: &[&str]) -> String {
    let mut command = std::process::Command::new("kubectl");
    command.args(args).env("KUBECONFIG", &cluster.kubeconfig);
    let output = ark_tests::output_within(&mut command, WAIT);
    format!(
        "{}{}",
        common::text(&output.stdout),
        common::text(&output.stderr)
    )
}

fn is_ready() -> impl Condition<Pod> {
    |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }
}

/// Condition: the claim is bound to a volume.
fn is_bound() -> impl Condition<PersistentVolumeClaim> {
    |claim: Option<&PersistentVolumeClaim>| {
        claim
            .and_then(|c| c.status.as_ref())
            .is_some_and(|s| s.phase.as_deref() == Some("Bound"))
    }
}

async fn ended(backups: &Api<Backup>, name: &str) -> Backup {
    wait_for(
        backups.clone(),
        name,
        |b: Option<&Backup>| {
            b.and_then(|b| b.status.as_ref())
                .and_then(|s| s.phase)
                .is_some_and(BackupPhase::is_terminal)
        },
        WAIT,
    )
    .await
    .unwrap();
    backups.get(name).await.unwrap()
}

async fn volume_info(setup: &Setup, backup: &str) -> Vec<BackupVolumeInfo> {
    let bytes = setup
        .store
        .get_volume_info(backup)
        .await
        .unwrap()
        .expect("the backup's volume information");
    serde_json::from_slice(&ark_tests::gunzip(&bytes)).unwrap()
}

/// The round trip of the issue: rows written into PostgreSQL on a CSI claim, a backup that
/// snapshots the claim (and leaves no VolumeSnapshot behind), the namespace lost, a restore that
/// provisions the claim from the snapshot: the rows are back. A second restore with
/// `--restore-volumes=false` brings the claim back empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_on_a_csi_claim_comes_back_from_its_snapshot_with_its_rows() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let _server = ArkServer::start_with(
        ARK,
        cluster,
        setup.ns(),
        &["--item-operation-sync-frequency", "1s"],
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    claims
        .create(&PostParams::default(), &claim("db-data"))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), app);
    pods.create(&PostParams::default(), &database(cluster, "db-data"))
        .await
        .unwrap();
    wait_for(pods.clone(), "db", is_ready(), WAIT)
        .await
        .unwrap();
    psql(
        cluster,
        app,
        "create table orders (id int primary key, item text); \
         insert into orders values (1, 'tea'), (2, 'scones'), (3, 'coffee');",
    );
    // Written to disk before the snapshot: a crash-consistent copy holds what was checkpointed.
    psql(cluster, app, "checkpoint");
    let bound = claims.get("db-data").await.unwrap();
    let volume = bound.spec.unwrap().volume_name.unwrap();

    let created = setup.ark(&[
        "backup",
        "create",
        "b1",
        "--include-namespaces",
        app,
        "--wait",
        "--timeout",
        "2m",
    ]);
    assert!(created.contains("Completed"), "{created}");
    let backup = setup.backups().get("b1").await.unwrap();
    let status = backup.status.unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Completed));
    assert_eq!(
        (
            status.csi_volume_snapshots_attempted,
            status.csi_volume_snapshots_completed,
            status.backup_item_operations_attempted,
            status.backup_item_operations_completed,
        ),
        (Some(1), Some(1), Some(1), Some(1))
    );
    assert_eq!(left_in(client, app).await, Vec::<String>::new());

    // The bucket: the claim as its snapshot names it, the snapshot with its handle, and the
    // volume as Velero records a CSI snapshot.
    let info = volume_info(&setup, "b1").await;
    let [db] = info.as_slice() else {
        panic!("one volume, not {info:#?}")
    };
    assert_eq!(
        (db.pvc_namespace.as_str(), db.pvc_name.as_str()),
        (app.as_str(), "db-data")
    );
    assert_eq!(db.pv_name, volume);
    assert_eq!(db.result, "succeeded");
    assert!(db.preserve_local_snapshot && !db.snapshot_data_moved && !db.skipped);
    let csi = db.csi_snapshot_info.as_ref().unwrap();
    assert_eq!(csi.driver, DRIVER);
    assert_eq!(csi.ready_to_use, Some(true));
    assert!(!csi.snapshot_handle.is_empty());
    let described = setup.ark(&["backup", "describe", "b1"]);
    assert!(
        described.contains(&format!("CSI Snapshots:\n  {app}/db-data:\n")),
        "{described}"
    );
    assert!(
        described.contains("Result:                 ready to use"),
        "{described}"
    );
    assert!(
        described.contains(&format!("Storage Snapshot ID:    {}", csi.snapshot_handle)),
        "{described}"
    );

    // Verification asks the driver whether the snapshot is there: it is; while the storage
    // system has lost it, verification says so; no probe is left behind either way.
    let verify = || common::ark(Some(cluster), &["backup", "verify", "b1", "-n", setup.ns()]);
    let whole = verify();
    let stdout = common::text(&whole.stdout);
    assert_eq!(whole.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("  CSI snapshots:  1 of 1 present and ready, as their drivers say\n"),
        "{stdout}"
    );
    let kept = ark_tests::state_dir().join("csi/data/snapshots");
    let record = kept.join(format!("{}.json", csi.snapshot_handle));
    let aside = kept.join("aside.json.moved");
    std::fs::rename(&record, &aside).unwrap();
    let lost = verify();
    std::fs::rename(&aside, &record).unwrap();
    let stdout = common::text(&lost.stdout);
    assert_eq!(lost.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  - CSI snapshot {} (VolumeSnapshotContent ",
            csi.snapshot_handle
        )) && stdout.contains("its driver says: "),
        "{stdout}"
    );
    let contents: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotContent"));
    let probes: Vec<String> = (contents.list(&ListParams::default()).await.unwrap().items)
        .iter()
        .map(|c| c.name_any())
        .filter(|name| name.starts_with("ark-verify-"))
        .collect();
    assert_eq!(probes, Vec::<String>::new());

    let volumes = Api::<PersistentVolume>::all(client.clone());
    let pv = volumes.get(&volume).await.unwrap();
    common::node_agent::lose(cluster, app).await;
    // The claim's volume went with it (reclaim policy Delete): the data is only in the snapshot.
    ark_tests::wait_deleted(volumes, &pv, WAIT).await;

    let restored = setup.ark(&[
        "restore",
        "create",
        "r1",
        "--from-backup",
        "b1",
        "--wait",
        "--timeout",
        "2m",
    ]);
    assert!(restored.contains("Completed"), "{restored}");
    wait_for(pods.clone(), "db", is_ready(), WAIT)
        .await
        .unwrap();
    assert_eq!(
        psql(
            cluster,
            app,
            "select string_agg(item, ',' order by id) from orders"
        )
        .trim(),
        "tea,scones,coffee"
    );
    let claim = claims.get("db-data").await.unwrap();
    let source = claim.spec.unwrap().data_source.unwrap();
    assert_eq!(source.kind, "VolumeSnapshot");
    let uid = setup
        .restores()
        .get("r1")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let snapshots: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotContent"));
    let content = snapshots.get(&source.name).await.unwrap();
    assert_eq!(content.data["spec"]["deletionPolicy"], "Retain");
    assert_eq!(
        content.data["spec"]["source"]["snapshotHandle"],
        csi.snapshot_handle.as_str()
    );
    assert_eq!(source.name.len(), 64, "named from the restore's uid {uid}");

    // Without restorePVs the claim comes back, empty.
    let mapping = format!("{app}:{app}-empty");
    let empty = setup.ark(&[
        "restore",
        "create",
        "r2",
        "--from-backup",
        "b1",
        "--namespace-mappings",
        &mapping,
        "--restore-volumes=false",
        "--wait",
        "--timeout",
        "2m",
    ]);
    assert!(empty.contains("Completed"), "{empty}");
    let copy = format!("{app}-empty");
    let empty_pods: Api<Pod> = Api::namespaced(client.clone(), &copy);
    wait_for(empty_pods, "db", is_ready(), WAIT).await.unwrap();
    let missing = kubectl_outcome(
        cluster,
        &[
            "-n",
            &copy,
            "exec",
            "db",
            "-c",
            "postgres",
            "--",
            "psql",
            "-q",
            "-h",
            "/tmp",
            "-U",
            "postgres",
            "-Atc",
            "select count(*) from orders",
        ],
    );
    assert!(
        missing.contains("relation \"orders\" does not exist"),
        "an empty volume, a new database: {missing}"
    );
    let empty_claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &copy)
        .get("db-data")
        .await
        .unwrap();
    assert_eq!(empty_claim.spec.unwrap().data_source, None);
    common::node_agent::lose(cluster, &copy).await;

    // Deleting the backup deletes its storage snapshot, through the driver.
    let stored = cluster
        .kubeconfig
        .parent()
        .unwrap()
        .join("csi/data/snapshots")
        .join(&csi.snapshot_handle);
    assert!(stored.is_dir(), "{stored:?}");
    setup.ark(&[
        "backup",
        "delete",
        "b1",
        "--confirm",
        "--wait",
        "--timeout",
        "2m",
    ]);
    let deadline = tokio::time::Instant::now() + WAIT;
    while stored.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the driver still holds {stored:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A driver that never makes its snapshot ready: the backup waits for it until its
/// itemOperationTimeout, then ends PartiallyFailed naming the claim, and nothing of the snapshot
/// stays in the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_never_ready_fails_its_backup_naming_the_claim_and_leaves_nothing_behind() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let _server = ArkServer::start_with(
        ARK,
        cluster,
        setup.ns(),
        &["--item-operation-sync-frequency", "1s"],
    );
    // A class of the driver that never becomes ready, chosen through the claim's annotation.
    let class_name = ark_tests::unique_name("never");
    let classes: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotClass"));
    let class: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
        "metadata": { "name": class_name },
        "driver": DRIVER, "deletionPolicy": "Delete",
        "parameters": { "readyAfter": "never" },
    }))
    .unwrap();
    classes
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let _class = ClassDeletedOnDrop(cluster.clone(), class_name.clone());
    let mut stuck = claim("stuck");
    stuck.annotations_mut().insert(
        "velero.io/csi-volumesnapshot-class".into(),
        class_name.clone(),
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    claims.create(&PostParams::default(), &stuck).await.unwrap();
    wait_for(claims.clone(), "stuck", is_bound(), WAIT)
        .await
        .unwrap();

    let backup: Backup = serde_json::from_value(json!({
        "metadata": { "name": "b1", "namespace": setup.ns() },
        "spec": { "includedNamespaces": [app], "itemOperationTimeout": "5s" },
    }))
    .unwrap();
    setup
        .backups()
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    let ended = ended(&setup.backups(), "b1").await;
    let status = ended.status.unwrap();
    assert_eq!(
        status.phase,
        Some(BackupPhase::PartiallyFailed),
        "{status:#?}"
    );
    assert_eq!(
        (
            status.csi_volume_snapshots_attempted,
            status.csi_volume_snapshots_completed,
            status.backup_item_operations_failed,
        ),
        (Some(1), None, Some(1))
    );
    assert_eq!(left_in(client, app).await, Vec::<String>::new());
    let described = setup.ark(&["backup", "describe", "b1", "--details"]);
    assert!(
        described.contains(&format!(
            "claim {app}/stuck: VolumeSnapshot {app}/velero-stuck-"
        )) && described
            .contains("was not ready to use within the backup's itemOperationTimeout of 5s"),
        "{described}"
    );
}

/// A backup moving its snapshots' data with no node agent to take the DataUpload does not wait
/// forever: at its `itemOperationTimeout` the DataUpload is canceled, the backup ends
/// PartiallyFailed naming the claim, and the snapshot whose data was not moved is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_upload_no_node_agent_takes_is_canceled_at_the_timeout_and_its_snapshot_removed() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let _server = ArkServer::start_with(
        ARK,
        cluster,
        setup.ns(),
        &["--item-operation-sync-frequency", "1s"],
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    claims
        .create(&PostParams::default(), &claim("data"))
        .await
        .unwrap();
    wait_for(claims.clone(), "data", is_bound(), WAIT)
        .await
        .unwrap();

    let backup: Backup = serde_json::from_value(json!({
        "metadata": { "name": "b1", "namespace": setup.ns() },
        "spec": { "includedNamespaces": [app], "itemOperationTimeout": "5s",
            "snapshotMoveData": true },
    }))
    .unwrap();
    setup
        .backups()
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    let ended = ended(&setup.backups(), "b1").await;
    let status = ended.status.unwrap();
    assert_eq!(
        status.phase,
        Some(BackupPhase::PartiallyFailed),
        "{status:#?}"
    );
    assert_eq!(
        (
            status.csi_volume_snapshots_attempted,
            status.backup_item_operations_attempted,
            status.backup_item_operations_failed,
        ),
        (None, Some(1), Some(1))
    );
    assert_eq!(left_in(client, app).await, Vec::<String>::new());
    let uploads = Api::<ark_api::DataUpload>::namespaced(client.clone(), setup.ns())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let [upload] = uploads.as_slice() else {
        panic!("one DataUpload, not {uploads:#?}")
    };
    assert_eq!(upload.spec.cancel, Some(true));
    let described = setup.ark(&["backup", "describe", "b1", "--details"]);
    let words = described.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = format!(
        "claim {app}/data: DataUpload {} did not end within the backup's itemOperationTimeout of 5s: canceled",
        upload.name_any()
    );
    assert!(words.contains(&said), "{said:?} not in:\n{described}");
}

/// A CSI claim whose driver has no VolumeSnapshotClass is not passed over in silence: the backup
/// warns, naming it, and `describe` lists it among the volumes whose data the backup does not
/// hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csi_claim_without_a_snapshot_class_is_named_in_the_warnings_and_in_describe() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let _server = ArkServer::start(ARK, cluster, setup.ns());
    // A volume of a driver with no class, bound statically: nothing mounts it.
    let volume_name = ark_tests::unique_name("classless");
    let volume: PersistentVolume = serde_json::from_value(json!({
        "metadata": { "name": volume_name },
        "spec": {
            "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "classless",
            "csi": { "driver": "classless.csi.ark.test", "volumeHandle": volume_name },
            "claimRef": { "namespace": app, "name": "data" },
        },
    }))
    .unwrap();
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    volumes
        .create(&PostParams::default(), &volume)
        .await
        .unwrap();
    let _volume = cluster.delete_on_drop::<PersistentVolume>(&volume_name);
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": "data" },
        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "classless",
            "volumeName": volume_name, "resources": { "requests": { "storage": "1Gi" } } },
    }))
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), app)
        .create(&PostParams::default(), &claim)
        .await
        .unwrap();

    let created = setup.ark(&[
        "backup",
        "create",
        "b1",
        "--include-namespaces",
        app,
        "--wait",
        "--timeout",
        "2m",
    ]);
    assert!(created.contains("Completed"), "{created}");
    let status = setup.backups().get("b1").await.unwrap().status.unwrap();
    assert_eq!(status.warnings, Some(1), "{status:#?}");
    assert_eq!(status.csi_volume_snapshots_attempted, None);
    let described = setup.ark(&["backup", "describe", "b1", "--details"]);
    assert!(
        described.contains(&format!(
            "claim {app}/data (driver classless.csi.ark.test) is not snapshotted: no VolumeSnapshotClass for its driver; its data is not in this backup"
        )),
        "{described}"
    );
    assert!(
        described.contains(&format!(
            "Volumes Without Data In This Backup:\n  {app}/data:  no VolumeSnapshotClass for its driver\n"
        )),
        "{described}"
    );
}

/// The server killed while a backup waits for its snapshot to become ready: the next server
/// takes the wait up from the bucket and the cluster. It does not cut the snapshot again; the
/// backup ends Completed with the snapshot the first server cut, and nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_while_a_snapshot_becomes_ready_is_followed_by_one_that_finishes_the_backup()
 {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let class_name = ark_tests::unique_name("late");
    let classes: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotClass"));
    let class: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
        "metadata": { "name": class_name },
        "driver": DRIVER, "deletionPolicy": "Delete",
        "parameters": { "readyAfter": "15s" },
    }))
    .unwrap();
    classes
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let _class = ClassDeletedOnDrop(cluster.clone(), class_name.clone());
    let mut late = claim("late");
    late.annotations_mut().insert(
        "velero.io/csi-volumesnapshot-class".into(),
        class_name.clone(),
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    claims.create(&PostParams::default(), &late).await.unwrap();

    let mut first = ArkServer::start_with(
        ARK,
        cluster,
        setup.ns(),
        &["--item-operation-sync-frequency", "1s"],
    );
    let backup: Backup = serde_json::from_value(json!({
        "metadata": { "name": "b1", "namespace": setup.ns() },
        "spec": { "includedNamespaces": [app] },
    }))
    .unwrap();
    setup
        .backups()
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    wait_for(
        setup.backups(),
        "b1",
        |b: Option<&Backup>| {
            b.and_then(|b| b.status.as_ref()).and_then(|s| s.phase)
                == Some(BackupPhase::WaitingForPluginOperations)
        },
        WAIT,
    )
    .await
    .unwrap();
    let cut = snapshots_in(client, app).await;
    assert_eq!(cut.len(), 2, "one snapshot and its content: {cut:?}");
    first.signal("KILL");
    assert!(first.wait_exit(Duration::from_secs(10)).is_some());

    let _second = ArkServer::start_with(
        ARK,
        cluster,
        setup.ns(),
        &["--item-operation-sync-frequency", "1s"],
    );
    let ended = ended(&setup.backups(), "b1").await;
    let status = ended.status.unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Completed), "{status:#?}");
    assert_eq!(status.csi_volume_snapshots_completed, Some(1));
    let info = volume_info(&setup, "b1").await;
    let operations: Vec<ark_api::BackupOperation> = serde_json::from_slice(&ark_tests::gunzip(
        &setup
            .store
            .get_item_operations("b1")
            .await
            .unwrap()
            .unwrap(),
    ))
    .unwrap();
    let [operation] = operations.as_slice() else {
        panic!("one operation, not {operations:#?}")
    };
    assert_eq!(
        format!("VolumeSnapshot {}", operation.spec.resource_identifier.name),
        cut[0],
        "the snapshot the first server cut"
    );
    assert_eq!(
        info[0].csi_snapshot_info.as_ref().unwrap().ready_to_use,
        Some(true)
    );
    assert_eq!(left_in(client, app).await, Vec::<String>::new());
}

/// A backup that never gets uploaded keeps no snapshot in the cluster: the server killed while
/// a pod's post hook runs (after its claim was cut), the next server fails the interrupted backup
/// and deletes the VolumeSnapshot it had cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_backup_s_snapshots_are_removed_when_it_is_failed() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    claims
        .create(&PostParams::default(), &claim("data"))
        .await
        .unwrap();
    let pod = cluster.on_real_node(json!({
        "metadata": { "name": "slow", "annotations": {
            "post.hook.backup.velero.io/command": "[\"sleep\", \"600\"]",
            "post.hook.backup.velero.io/timeout": "15m" } },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{ "name": "slow", "image": "ark.local/busybox:1",
                "imagePullPolicy": "Never", "command": ["sleep", "3600"],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }] }],
            "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }],
        },
    }));
    let pods: Api<Pod> = Api::namespaced(client.clone(), app);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods, "slow", is_ready(), WAIT).await.unwrap();

    let mut first = ArkServer::start(ARK, cluster, setup.ns());
    setup.ark(&["backup", "create", "b1", "--include-namespaces", app]);
    // The claim is cut before the pod's post hook starts, and the hook holds the backup.
    let deadline = tokio::time::Instant::now() + WAIT;
    while snapshots_in(client, app).await.len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no snapshot was cut"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    first.signal("KILL");
    assert!(first.wait_exit(Duration::from_secs(10)).is_some());

    let _second = ArkServer::start(ARK, cluster, setup.ns());
    let ended = ended(&setup.backups(), "b1").await;
    assert_eq!(ended.status.unwrap().phase, Some(BackupPhase::Failed));
    assert_eq!(left_in(client, app).await, Vec::<String>::new());
}

/// A failed backup's snapshots are found by its uid as well as its name: another install's
/// backup of the same name (Velero's, a second ark's, each with its own namespace) keeps its
/// VolumeSnapshots when this install fails its own interrupted backup. Before, it lost them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_install_s_snapshots_of_a_backup_of_the_same_name_stay_when_one_is_failed() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (client, app) = (&setup.client, &setup.app.name);
    let interrupted: Backup = serde_json::from_value(json!({
        "metadata": { "name": "b1", "namespace": setup.ns() },
        "spec": { "storageLocation": "default", "includedNamespaces": [app] },
        "status": { "phase": "InProgress", "startTimestamp": "2026-01-01T00:00:00Z" },
    }))
    .unwrap();
    let interrupted = setup
        .backups()
        .create(&PostParams::default(), &interrupted)
        .await
        .unwrap();
    let snapshots: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), app, &snapshot_api("VolumeSnapshot"));
    for (name, uid) in [
        ("cut-by-this-backup", interrupted.uid().unwrap()),
        (
            "cut-by-another-install",
            "another-install-s-uid".to_string(),
        ),
    ] {
        let snapshot: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            "metadata": { "name": name, "labels": {
                "velero.io/backup-name": "b1", "velero.io/backup-uid": uid } },
            "spec": { "source": { "persistentVolumeClaimName": "data" } },
        }))
        .unwrap();
        snapshots
            .create(&PostParams::default(), &snapshot)
            .await
            .unwrap();
    }

    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    let ended = ended(&setup.backups(), "b1").await;
    assert_eq!(ended.status.unwrap().phase, Some(BackupPhase::Failed));
    // Deleted: the snapshot controller may hold one a moment longer with its finalizers.
    let left: Vec<String> = snapshots
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .map(|s| s.name_any())
        .collect();
    assert_eq!(left, ["cut-by-another-install"]);
}

/// A storage snapshot deleted behind the backup's back (in the cloud's console, say): the restore
/// recreates the claim's snapshot from its handle, the driver cannot find it, and the restore
/// ends PartiallyFailed naming the claim and the driver's answer, within its bound, rather than
/// Completed over a claim that stays Pending in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_storage_snapshot_is_gone_is_named_in_the_restore_s_errors() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let _server = ArkServer::start_with(
        ARK,
        cluster,
        setup.ns(),
        &["--item-operation-sync-frequency", "1s"],
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), app);
    claims
        .create(&PostParams::default(), &claim("data"))
        .await
        .unwrap();
    wait_for(claims.clone(), "data", is_bound(), WAIT)
        .await
        .unwrap();
    let created = setup.ark(&[
        "backup",
        "create",
        "b1",
        "--include-namespaces",
        app,
        "--wait",
        "--timeout",
        "2m",
    ]);
    assert!(created.contains("Completed"), "{created}");
    let info = volume_info(&setup, "b1").await;
    let handle = info[0]
        .csi_snapshot_info
        .as_ref()
        .unwrap()
        .snapshot_handle
        .clone();
    let stored = ark_tests::csi::snapshots_dir(cluster);
    std::fs::remove_dir_all(stored.join(&handle)).unwrap();
    std::fs::remove_file(stored.join(format!("{handle}.json"))).unwrap();
    common::node_agent::lose(cluster, app).await;

    let mut args = vec![
        "restore",
        "create",
        "r1",
        "--from-backup",
        "b1",
        "--wait",
        "--timeout",
        "3m",
        "-n",
    ];
    args.push(setup.ns());
    let output = common::ark(Some(cluster), &args);
    let said = common::text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("Restore completed with status: PartiallyFailed."),
        "{said}"
    );
    let described = setup.ark(&["restore", "describe", "r1", "--details"]);
    let pending = claims.get("data").await.unwrap();
    let snapshot = pending.spec.unwrap().data_source.unwrap().name;
    assert_eq!(
        pending.status.and_then(|s| s.phase).as_deref(),
        Some("Pending")
    );
    let expected =
        format!("claim {app}/data: its VolumeSnapshot {snapshot} is not usable: the driver said: ");
    assert!(
        described.contains(&expected),
        "{expected:?} not in:\n{described}"
    );
    assert!(described.contains("the claim stays Pending"), "{described}");
    // Cleaning up as a user would: the claim first, then its snapshot (the snapshot controller
    // keeps a snapshot that a Pending claim names), then the content, kept (Retain) by design.
    let gone = claims.get("data").await.unwrap();
    claims.delete("data", &Default::default()).await.unwrap();
    ark_tests::wait_deleted(claims, &gone, WAIT).await;
    let snapshots: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), app, &snapshot_api("VolumeSnapshot"));
    let restored = snapshots.get(&snapshot).await.unwrap();
    snapshots
        .delete(&snapshot, &Default::default())
        .await
        .unwrap();
    ark_tests::wait_deleted(snapshots, &restored, WAIT).await;
    let contents: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_api("VolumeSnapshotContent"));
    contents
        .delete(&snapshot, &Default::default())
        .await
        .unwrap();
}
