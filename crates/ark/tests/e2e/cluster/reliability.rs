//! Nothing lost, nothing stuck: the cases where an odd object, a crash, a second writer of the
//! bucket or a misconfigured location could lose a backup or leave an operation hanging, each on
//! the real cluster and bucket.

use crate::common;

use std::time::Duration;

use ark_api::{Backup, BackupPhase, DeleteBackupRequest, Restore, labels};
use ark_tests::proxy::PausableProxy;
use ark_tests::{ArkServer, Cluster, fixtures, wait_for};
use common::setup::{Setup, WAIT};
use common::{ARK, ark};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, ResourceExt};

fn untyped<K: kube::Resource<DynamicType = ()>>(setup: &Setup) -> Api<DynamicObject> {
    Api::namespaced_with(
        setup.client.clone(),
        setup.ns(),
        &ApiResource::erase::<K>(&()),
    )
}

/// Waits until `status.phase` of an object read untyped (it may not fit ark's types) is `phase`.
async fn phase_of(api: &Api<DynamicObject>, name: &str, phase: &str) -> DynamicObject {
    let reached = |o: Option<&DynamicObject>| {
        o.is_some_and(|o| o.data.pointer("/status/phase").and_then(|p| p.as_str()) == Some(phase))
    };
    wait_for(api.clone(), name, reached, WAIT).await.unwrap()
}

/// A Restore that Velero's CRD accepts (init containers are free-form there) and ark's types
/// cannot read: it ends FailedValidation naming the field, and every other restore and the
/// deletion of its backup go on.
#[tokio::test]
async fn an_odd_restore_on_velero_crds_fails_alone_and_restores_and_deletions_go_on() {
    let setup = Setup::new(Cluster::second(), None).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", None);
    let restores = untyped::<Restore>(&setup);
    let odd: DynamicObject = fixtures::object(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": { "name": "r-odd" },
        "spec": { "backupName": "b1", "hooks": { "resources": [{ "name": "h",
            "postHooks": [{ "init": { "initContainers": [
                { "name": "c", "image": "busybox", "command": "restore.sh" }
            ] } }] }] } },
    }));
    restores.create(&PostParams::default(), &odd).await.unwrap();

    let failed = phase_of(&restores, "r-odd", "FailedValidation").await;
    assert_eq!(
        failed.data["status"]["validationErrors"],
        serde_json::json!([
            "spec.hooks.resources[0].postHooks[0].init.initContainers[0].command: invalid type: string \"restore.sh\", expected a sequence"
        ])
    );
    let mapping = format!("{}:{}-copy", setup.app.name, setup.app.name);
    setup.ark(&[
        "restore",
        "create",
        "r-ok",
        "--from-backup",
        "b1",
        "--namespace-mappings",
        &mapping,
        "--wait",
    ]);
    // The CLI names the odd one and shows the rest.
    let get = ark(Some(&setup.cluster), &["restore", "get", "-n", setup.ns()]);
    assert_eq!(get.status.code(), Some(1));
    assert_eq!(
        common::text(&get.stderr),
        "restore \"r-odd\" cannot be read: spec.hooks.resources[0].postHooks[0].init.initContainers[0].command: invalid type: string \"restore.sh\", expected a sequence\n"
    );
    assert!(common::text(&get.stdout).contains("r-ok"));

    let b1 = setup.backups().get("b1").await.unwrap();
    let deleted_with_b1 = [
        restores.get("r-ok").await.unwrap(),
        restores.get("r-odd").await.unwrap(),
    ];
    setup.ark(&["backup", "delete", "b1", "--confirm", "--wait"]);
    setup.gone(&b1).await;
    // Each gone once the server's restore finalizer has let it go, a moment after the backup.
    for restore in &deleted_with_b1 {
        ark_tests::wait_deleted(restores.clone(), restore, WAIT).await;
    }
    let _ = Api::<Namespace>::all(setup.client.clone())
        .delete(
            &format!("{}-copy", setup.app.name),
            &DeleteParams::default(),
        )
        .await;
}

/// A backup whose name is already taken in the bucket (its object deleted and not synced back
/// yet) is refused before anything is written: the backup there is kept byte for byte.
#[tokio::test]
async fn a_backup_whose_name_is_taken_in_the_bucket_is_refused_and_the_old_one_kept() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start_with(
        ARK,
        &setup.cluster,
        setup.ns(),
        &["--backup-sync-period", "1h"],
    );
    setup.backup("b1", None);
    let before = files_of_b1(&setup).await;
    let old = setup.backups().get("b1").await.unwrap();
    // As `kubectl delete backup` does: the object goes, the data stays (Velero's rule).
    setup
        .backups()
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    setup.gone(&old).await;

    let output = ark(
        Some(&setup.cluster),
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &setup.app.name,
            "--wait",
            "-n",
            setup.ns(),
        ],
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        common::text(&output.stdout)
    );
    let refused = setup.backups().get("b1").await.unwrap();
    assert_eq!(refused.phase(), BackupPhase::Failed);
    assert_eq!(
        refused.status.unwrap().failure_reason.as_deref(),
        Some("backup already exists in object storage")
    );
    let after = files_of_b1(&setup).await;
    assert_eq!(before, after, "the backup in the bucket is untouched");
}

/// The answer to every upload of b1's `velero-backup.json` is lost (the bucket stores it, the
/// server never hears so, and its retries meet the same fate): the backup exists in the bucket,
/// so it ends Completed with every file kept, not Failed beside a backup the bucket holds whole
/// and every other cluster syncing the bucket would show.
#[tokio::test]
async fn a_backup_whose_metadata_upload_lost_its_answer_but_landed_ends_completed() {
    let cluster = Cluster::get();
    let s3 = PausableProxy::start(cluster.s3_address()).await;
    let setup = Setup::new(cluster, Some(&s3.url())).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    let metadata = setup.store.layout.backup_metadata("b1");
    s3.lose_answers_to("PUT", metadata.as_ref());

    setup.start_backup("b1");
    let ended = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
    let backup = wait_for(setup.backups(), "b1", ended, WAIT).await.unwrap();
    let status = backup.status.clone().unwrap_or_default();
    assert_eq!(
        status.phase,
        Some(BackupPhase::Completed),
        "{:?}",
        status.failure_reason
    );
    // velero-backup.json, the tarball, log, resource list, results, volume snapshots and info.
    assert_eq!(
        setup.keys(&setup.store.layout.backup_dir("b1")).await,
        7,
        "every file of the backup is in the bucket"
    );
}

/// Every listing of restore r1's folder loses its answer: the deletion of its backup cannot know
/// what of r1 there is to delete, so it deletes nothing, and the backup stays whole and usable
/// (before, the backup's data went first and the deletion failed on r1 after it, leaving the
/// backup Deleting with nothing left to restore from).
// Multi-threaded: the proxy runs on the test's runtime while the test blocks on the ark CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_that_cannot_list_a_restores_data_deletes_nothing() {
    let cluster = Cluster::get();
    let s3 = PausableProxy::start(cluster.s3_address()).await;
    let setup = Setup::new(cluster, Some(&s3.url())).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", Some("r1"));
    let layout = &setup.store.layout;
    let backup_keys = setup.keys(&layout.backup_dir("b1")).await;
    let restore_keys = setup.keys(&layout.restore_dir("r1")).await;
    assert!(backup_keys > 0 && restore_keys > 0);
    // The bucket read past the proxy, whose answers to these listings are lost from now on (a
    // listing asks for its prefix in the query, its slashes encoded).
    let prefix = layout.prefix().unwrap();
    let direct = ark_storage::open(&setup.cluster.s3_location(prefix)).unwrap();
    let keys = async |dir: ark_storage::Path| direct.keys_under(&dir).await.unwrap().len();
    let listing = format!(
        "prefix={}",
        layout.restore_dir("r1").as_ref().replace('/', "%2F")
    );
    s3.lose_answers_to("GET", &listing);

    let request = setup.request("b1", None).await;
    let processed = setup.processed(&request).await;
    let errors = processed.errors().join("; ");
    let backup = setup.backups().get("b1").await.unwrap();
    assert_eq!(backup.phase(), BackupPhase::Completed, "{errors}");
    assert_eq!(keys(layout.backup_dir("b1")).await, backup_keys);
    assert_eq!(keys(layout.restore_dir("r1")).await, restore_keys);
    assert!(setup.restores().get_opt("r1").await.unwrap().is_some());
    assert!(
        errors.starts_with("listing data of restore r1: "),
        "{errors}"
    );
    let _ = Api::<Namespace>::all(setup.client.clone())
        .delete(&format!("{}-r1", setup.app.name), &DeleteParams::default())
        .await;
}

/// b1's metadata, log and tarball, as they are in the bucket.
async fn files_of_b1(setup: &Setup) -> Vec<Vec<u8>> {
    let layout = &setup.store.layout;
    let mut files = Vec::new();
    for key in [
        layout.backup_metadata("b1"),
        layout.backup_log("b1"),
        layout.backup_contents("b1"),
    ] {
        files.push(setup.store.get(&key).await.unwrap().to_vec());
    }
    files
}

/// A Backup a stopped server left InProgress, as it would be found at start-up.
async fn left_in_progress(setup: &Setup, name: &str) -> Backup {
    let backup: Backup = fixtures::object(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": { "name": name },
        "spec": { "storageLocation": "default", "includedNamespaces": [setup.app.name] },
        "status": { "phase": "InProgress", "startTimestamp": "2026-01-01T00:00:00Z" },
    }));
    setup
        .backups()
        .create(&PostParams::default(), &backup)
        .await
        .unwrap()
}

/// `velero-backup.json` is written last, so a server stopped mid-upload leaves keys without it:
/// the next server removes them and fails the backup; one whose upload had finished takes the
/// status uploaded with it.
#[tokio::test]
async fn a_backup_left_in_progress_is_cleaned_up_or_completed_from_the_bucket_at_start_up() {
    let setup = Setup::new(Cluster::get(), None).await;
    let layout = &setup.store.layout;
    left_in_progress(&setup, "half-uploaded").await;
    setup
        .store
        .put(&layout.backup_log("half-uploaded"), b"log".to_vec().into())
        .await
        .unwrap();
    setup
        .store
        .put(
            &layout.backup_contents("half-uploaded"),
            fixtures::tarball(&[]).into(),
        )
        .await
        .unwrap();
    let whole = left_in_progress(&setup, "whole").await;
    let mut uploaded = serde_json::to_value(&whole).unwrap();
    uploaded["status"] = serde_json::json!({
        "phase": "Completed", "startTimestamp": "2026-01-01T00:00:00Z",
        "completionTimestamp": "2026-01-01T00:00:05Z", "progress": { "itemsBackedUp": 3, "totalItems": 3 },
    });
    setup
        .store
        .put(
            &layout.backup_contents("whole"),
            fixtures::tarball(&[]).into(),
        )
        .await
        .unwrap();
    setup
        .store
        .put(
            &layout.backup_metadata("whole"),
            serde_json::to_vec(&uploaded).unwrap().into(),
        )
        .await
        .unwrap();

    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    let failed = wait_for(
        setup.backups(),
        "half-uploaded",
        |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Failed),
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(
        failed.status.unwrap().failure_reason.as_deref(),
        Some("found a backup with status InProgress during the server starting, mark it as Failed")
    );
    assert_eq!(setup.keys(&layout.backup_dir("half-uploaded")).await, 0);
    let completed = wait_for(
        setup.backups(),
        "whole",
        |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Completed),
        WAIT,
    )
    .await
    .unwrap();
    let progress = completed.status.unwrap().progress.unwrap();
    assert_eq!(progress.items_backed_up, Some(3));
    assert_eq!(setup.keys(&layout.backup_dir("whole")).await, 2);
}

/// A backup another server ended (marked Failed at its start-up) while this one was still
/// uploading stays Failed, and what this one uploaded does not make it exist in the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_ended_elsewhere_while_it_uploads_stays_failed_and_is_not_in_the_bucket() {
    let cluster = Cluster::get();
    let proxy = PausableProxy::start(cluster.s3_address()).await;
    let setup = Setup::new(cluster, Some(&proxy.url())).await;
    proxy.pause();
    let server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.start_backup("b1");
    setup.backup_in("b1", BackupPhase::InProgress).await;
    let failed = serde_json::json!({ "status": { "phase": "Failed", "failureReason": "ended by another server" } });
    setup
        .backups()
        .patch("b1", &PatchParams::default(), &Patch::Merge(&failed))
        .await
        .unwrap();
    proxy.resume();
    server
        .wait_for_log("backup b1 was no longer InProgress when it ended", WAIT)
        .await;
    let backup = setup.backups().get("b1").await.unwrap();
    assert_eq!(backup.phase(), BackupPhase::Failed);
    let layout = &setup.store.layout;
    assert!(
        !setup
            .store
            .exists(&layout.backup_metadata("b1"))
            .await
            .unwrap()
    );
    assert!(
        !setup
            .store
            .exists(&layout.backup_contents("b1"))
            .await
            .unwrap()
    );
}

/// A deletion that keeps failing (here: provider snapshots and no snapshotter) is asked again
/// once a garbage-collection period, and each new request replaces the earlier ones.
#[tokio::test]
async fn a_deletion_that_keeps_failing_keeps_one_request() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start_with(
        ARK,
        &setup.cluster,
        setup.ns(),
        &["--garbage-collection-frequency", "1s"],
    );
    setup.ark(&[
        "backup",
        "create",
        "b1",
        "--include-namespaces",
        &setup.app.name,
        "--ttl",
        "1s",
        "--wait",
    ]);
    setup
        .put_gz(
            &setup.store.layout.backup_volume_snapshots("b1"),
            r#"[{"spec":{"location":"aws-default"},"status":{"providerSnapshotID":"snap-1"}}]"#,
        )
        .await;
    let selector = labels::selector_for_backup(
        "b1",
        setup
            .backups()
            .get("b1")
            .await
            .unwrap()
            .uid()
            .as_deref()
            .unwrap_or_default(),
    );
    let requests = || async {
        setup
            .requests()
            .list(&ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
    };
    // Ten garbage-collection periods.
    let mut most = 0;
    let mut processed = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now: Vec<DeleteBackupRequest> = requests().await;
        most = most.max(now.len());
        processed += now
            .iter()
            .filter(|r| r.phase() == Some(ark_api::DeleteBackupRequestPhase::Processed))
            .count()
            .min(1);
    }
    assert!(most <= 2, "{most} requests at once for one backup");
    assert!(processed > 0, "the deletion was attempted");
    // Each attempt marks the backup Deleting for a moment and gives its phase back when nothing
    // was deleted; attempts go on, so it is seen whole between two (not at one chosen instant,
    // which fell inside an attempt in a full run on 2026-12-06).
    let whole = |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Completed);
    wait_for(setup.backups(), "b1", whole, WAIT).await.unwrap();
}

/// A location pointed at a wrong prefix lacks every backup it had: sync deletes none of them and
/// says so on the location.
#[tokio::test]
async fn a_location_pointed_at_a_wrong_prefix_deletes_no_backup() {
    let setup = Setup::new(Cluster::get(), None).await;
    let server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    setup.backup("b1", None);
    setup.backup("b2", None);
    let wrong = serde_json::json!({ "spec": { "objectStorage": { "prefix": "a-wrong-prefix" } } });
    Api::<ark_api::BackupStorageLocation>::namespaced(setup.client.clone(), setup.ns())
        .patch("default", &PatchParams::default(), &Patch::Merge(&wrong))
        .await
        .unwrap();

    let event = ark_tests::warning_event(&setup.client, setup.ns(), "AllBackupsMissing", WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", server.log()));
    let note = event.note.unwrap_or_default();
    assert_eq!(
        note,
        "the bucket of location default lacks all 2 of its backups: is its bucket or prefix wrong? Nothing is deleted"
    );
    // Several more sync periods: still nothing asked, nothing deleted.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(
        setup
            .requests()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    for name in ["b1", "b2"] {
        assert_eq!(
            setup.backups().get(name).await.unwrap().phase(),
            BackupPhase::Completed
        );
        assert!(
            setup
                .store
                .exists(&setup.store.layout.backup_metadata(name))
                .await
                .unwrap()
        );
    }
}

/// A request naming no possible object ends Processed instead of being retried forever, and a
/// backup that fails validation expires like any other.
#[tokio::test]
async fn a_request_for_an_impossible_name_ends_and_a_failed_validation_backup_expires() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start(ARK, &setup.cluster, setup.ns());
    let request = setup.request("Not A Valid/Name", None).await;
    let processed = setup.processed(&request).await;
    assert_eq!(
        processed.status.unwrap().errors.unwrap(),
        ["backup not found"]
    );

    let invalid: Backup = fixtures::object(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": { "name": "invalid" },
        "spec": { "storageLocation": "no-such-location" },
    }));
    setup
        .backups()
        .create(&PostParams::default(), &invalid)
        .await
        .unwrap();
    let failed = wait_for(
        setup.backups(),
        "invalid",
        |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::FailedValidation),
        WAIT,
    )
    .await
    .unwrap();
    assert!(failed.status.unwrap().expiration.is_some());
}

/// The API server goes away just as a backup ends: its final status cannot be written at first,
/// and is written once the API server is back, never left InProgress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_status_is_written_once_the_api_server_is_back() {
    let cluster = Cluster::get();
    let s3 = PausableProxy::start(cluster.s3_address()).await;
    let api = PausableProxy::start(cluster.api_server_address()).await;
    let setup = Setup::new(cluster.clone(), Some(&s3.url())).await;
    let dir = tempfile::tempdir().unwrap();
    let server_view = cluster.through(api.address, dir.path());
    s3.pause();
    let server = ArkServer::start(ARK, &server_view, setup.ns());
    setup.start_backup("b1");
    // Its first request to the bucket about b1 comes once the server has its claim's answer:
    // taken down between the claim and its answer, the API server would leave the claim unknown
    // (decided from the object once it is back) and no final status to write.
    s3.wait_for_request("/backups/b1/", WAIT).await;
    api.take_down();
    s3.resume();
    server
        .wait_for_log("b1: writing its final status", WAIT)
        .await;
    api.resume();
    let ended = wait_for(
        setup.backups(),
        "b1",
        |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal()),
        WAIT,
    )
    .await
    .unwrap();
    assert_ne!(ended.phase(), BackupPhase::InProgress, "{}", server.log());
}

/// A backup left Deleting whose request is gone (removed by hand, or its server stopped before
/// writing InProgress) gets a new request from garbage collection, which finishes the deletion.
#[tokio::test]
async fn a_backup_left_deleting_without_a_request_is_deleted_by_a_new_one() {
    let setup = Setup::new(Cluster::get(), None).await;
    let _server = ArkServer::start_with(
        ARK,
        &setup.cluster,
        setup.ns(),
        &["--garbage-collection-frequency", "1s"],
    );
    setup.backup("b1", None);
    let deleting = serde_json::json!({ "status": { "phase": "Deleting" } });
    let b1 = setup
        .backups()
        .patch("b1", &PatchParams::default(), &Patch::Merge(&deleting))
        .await
        .unwrap();
    setup.gone(&b1).await;
    assert_eq!(setup.keys(&setup.store.layout.backup_dir("b1")).await, 0);
}
