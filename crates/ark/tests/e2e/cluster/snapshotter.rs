//! Provider snapshots through the VolumeSnapshotter interface, with an in-process test double that
//! injects what a cloud provider can answer: deleted, already gone, refused.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ark_api::{Backup, BackupPhase, DeleteBackupRequest};
use ark_server::snapshots::{Deleted, VolumeSnapshotter};
use ark_tests::{Cluster, wait_deleted, wait_for};
use common::{ark, ark_ok, text};
use futures::future::BoxFuture;
use kube::Api;

/// Answers each snapshot id as told, and records every call.
struct FakeSnapshotter {
    answers: Mutex<BTreeMap<&'static str, Result<Deleted, String>>>,
    calls: Mutex<Vec<(String, String)>>,
}

impl VolumeSnapshotter for FakeSnapshotter {
    fn delete<'a>(
        &'a self,
        location: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Deleted, String>> {
        self.calls
            .lock()
            .unwrap()
            .push((location.to_string(), id.to_string()));
        let answer = self
            .answers
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .unwrap_or(Ok(Deleted::Now));
        Box::pin(async move { answer })
    }
}

fn snapshots_json(ids: &[&str]) -> Vec<u8> {
    let records: Vec<_> = ids
        .iter()
        .map(|id| serde_json::json!({ "spec": { "location": "aws-default" }, "status": { "providerSnapshotID": id } }))
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&serde_json::to_vec(&records).unwrap())
        .unwrap();
    gz.finish().unwrap()
}

/// An in-process server with `snapshotter`, short periods and no garbage collection to speak of.
fn options(
    namespace: &str,
    scratch: &std::path::Path,
    snapshotter: Arc<FakeSnapshotter>,
) -> ark_server::ServerOptions {
    ark_server::ServerOptions {
        namespace: namespace.to_string(),
        scratch_dir: scratch.to_path_buf(),
        identity: "in-process".into(),
        metrics_address: None,
        velero_answer_timeout: Duration::from_secs(2),
        shutdown_grace: Duration::from_secs(5),
        backup: ark_server::BackupConfig {
            workers: 2,
            default_ttl: Duration::from_secs(3600),
            default_item_operation_timeout: Duration::from_secs(4 * 3600),
            hook_pods_at_once: 16,
            max_hook_timeout: Duration::from_secs(3600),
            default_volumes_to_fs_backup: false,
            default_snapshot_move_data: false,
            pod_volume_timeout: Duration::from_secs(4 * 3600),
            every_api_version: false,
        },
        restore: ark_server::RestoreConfig {
            workers: 2,
            default_item_operation_timeout: Duration::from_secs(4 * 3600),
            hooks_timeout: Duration::from_secs(60),
            hook_execs_at_once: 16,
            items_at_once: 32,
            helper_image: None,
            pod_volume_timeout: Duration::from_secs(4 * 3600),
            priorities: Default::default(),
            every_api_version: false,
        },
        deletion: ark_server::DeletionConfig {
            workers: 2,
            request_ttl: Duration::from_secs(3600),
        },
        volume_snapshotter: Some(snapshotter),
        gc_frequency: Duration::from_secs(3600),
        item_operation_sync_frequency: Duration::from_secs(1),
        sync_period: Duration::from_secs(2),
        validation_period: Duration::from_secs(2),
        schedule_skip_immediately: false,
        verify_new_backups: ark_server::VerifyNewBackups::Off,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_are_deleted_already_gone_ones_count_and_a_refusal_keeps_the_backup() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let bucket = common::file_location(&cluster, &ns.name);

    let snapshotter = Arc::new(FakeSnapshotter {
        answers: Mutex::new(BTreeMap::from([
            ("snap-gone", Ok(Deleted::AlreadyGone)),
            (
                "snap-refused",
                Err("provider refused: snapshot in use".to_string()),
            ),
        ])),
        calls: Mutex::default(),
    });
    let scratch = tempfile::tempdir().unwrap();
    let options = options(&ns.name, scratch.path(), snapshotter.clone());
    let server = tokio::spawn(ark_server::run(client.clone(), options));

    for name in ["b-ok", "b-refused"] {
        ark_ok(
            &cluster,
            &ns.name,
            &[
                "backup",
                "create",
                name,
                "--include-namespaces",
                &app.name,
                "--wait",
            ],
        );
    }
    let layout = ark_storage::layout::Layout::new(None);
    std::fs::write(
        bucket
            .path()
            .join(layout.backup_volume_snapshots("b-ok").as_ref()),
        snapshots_json(&["snap-1", "snap-gone"]),
    )
    .unwrap();
    std::fs::write(
        bucket
            .path()
            .join(layout.backup_volume_snapshots("b-refused").as_ref()),
        snapshots_json(&["snap-refused"]),
    )
    .unwrap();

    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    let ok = backups.get("b-ok").await.unwrap();
    ark_ok(
        &cluster,
        &ns.name,
        &["backup", "delete", "b-ok", "--confirm", "--wait"],
    );
    wait_deleted(backups.clone(), &ok, Duration::from_secs(60)).await;

    let output = ark(
        Some(&cluster),
        &[
            "backup",
            "delete",
            "b-refused",
            "--confirm",
            "--wait",
            "-n",
            &ns.name,
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "error: deleting backup \"b-refused\": deleting volume snapshot snap-refused: provider refused: snapshot in use\n"
    );
    let kept = wait_for(
        backups,
        "b-refused",
        |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Completed),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    assert!(
        bucket
            .path()
            .join(layout.backup_contents("b-refused").as_ref())
            .exists(),
        "nothing of a refused backup is deleted"
    );
    assert_eq!(kept.phase(), BackupPhase::Completed);
    let requests: Api<DeleteBackupRequest> = Api::namespaced(client, &ns.name);
    assert_eq!(
        requests
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    let calls = snapshotter.calls.lock().unwrap().clone();
    let to = |id: &str| ("aws-default".to_string(), id.to_string());
    assert_eq!(calls, [to("snap-1"), to("snap-gone"), to("snap-refused")]);
    server.abort();
}

/// Once a deletion has deleted anything (here one of two snapshots), the backup is no longer
/// whole: it stays Deleting, restores refuse it, and a new request finishes the deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_that_failed_halfway_leaves_the_backup_deleting_and_a_new_request_finishes_it() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let bucket = common::file_location(&cluster, &ns.name);
    let snapshotter = Arc::new(FakeSnapshotter {
        answers: Mutex::new(BTreeMap::from([(
            "snap-refused",
            Err("provider refused: snapshot in use".to_string()),
        )])),
        calls: Mutex::default(),
    });
    let scratch = tempfile::tempdir().unwrap();
    let server = tokio::spawn(ark_server::run(
        client.clone(),
        options(&ns.name, scratch.path(), snapshotter.clone()),
    ));
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let layout = ark_storage::layout::Layout::new(None);
    std::fs::write(
        bucket
            .path()
            .join(layout.backup_volume_snapshots("b1").as_ref()),
        snapshots_json(&["snap-deleted", "snap-refused"]),
    )
    .unwrap();

    let delete = ["backup", "delete", "b1", "--confirm", "--wait"];
    let output = ark(Some(&cluster), &[&delete[..], &["-n", &ns.name]].concat());
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    let half_deleted = backups.get("b1").await.unwrap();
    assert_eq!(half_deleted.phase(), BackupPhase::Deleting);

    let restore = ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--wait",
            "-n",
            &ns.name,
        ],
    );
    assert_ne!(restore.status.code(), Some(0));
    let restores: Api<ark_api::Restore> = Api::namespaced(client.clone(), &ns.name);
    let refused = restores.get("r1").await.unwrap();
    assert_eq!(
        refused.status.unwrap().validation_errors.unwrap(),
        ["backup \"b1\" is Deleting: only Completed or PartiallyFailed backups can be restored"]
    );

    // The provider lets go of the snapshot: a new request deletes what is left.
    snapshotter.answers.lock().unwrap().clear();
    ark_ok(&cluster, &ns.name, &delete);
    wait_deleted(backups, &half_deleted, Duration::from_secs(60)).await;
    for key in [layout.backup_metadata("b1"), layout.backup_contents("b1")] {
        assert!(!bucket.path().join(key.as_ref()).exists(), "{key} is gone");
    }
    server.abort();
}
