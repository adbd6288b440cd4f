//! Two server replicas: one leads (holds the Lease) and works; when it dies the other takes over,
//! when it is told to stop it finishes its work and hands over at once, and when it is paused
//! past its lease it cannot complete what its successor has ended. A replica that loses its lease
//! stops its work and stands by; the process lives on and leads again when it may.

use crate::common;

use std::time::Duration;

use ark_api::BackupPhase;
use ark_tests::proxy::PausableProxy;
use ark_tests::{ArkServer, Cluster, wait_for};
use common::setup::{Setup, WAIT};
use common::{ARK, ark_ok};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

fn held_by(identity: &'static str) -> impl Fn(Option<&Lease>) -> bool {
    move |lease| {
        lease
            .and_then(|l| l.spec.as_ref())
            .and_then(|s| s.holder_identity.as_deref())
            == Some(identity)
    }
}

#[tokio::test]
async fn one_replica_leads_and_the_other_takes_over_when_it_dies() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let leases: Api<Lease> = Api::namespaced(client, &ns.name);

    let first = ArkServer::start_with(ARK, &cluster, &ns.name, &["--id", "replica-a"]);
    wait_for(
        leases.clone(),
        "ark-server",
        held_by("replica-a"),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let second = ArkServer::start_with(ARK, &cluster, &ns.name, &["--id", "replica-b"]);
    // Up to its start-up check for Velero's server (2 s), then waiting for the lease.
    second
        .wait_for_log("ark server replica-b starting", Duration::from_secs(30))
        .await;
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--wait",
            "--include-namespaces",
            &ns.name,
        ],
    );
    assert!(first.log().contains("replica-a leads"), "{}", first.log());
    assert!(
        !second.log().contains("replica-b leads"),
        "the second replica led while the first held the lease:\n{}",
        second.log()
    );
    assert_eq!(
        leases
            .get("ark-server")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("replica-a")
    );

    drop(first);
    let lease = wait_for(
        leases,
        "ark-server",
        held_by("replica-b"),
        Duration::from_secs(40),
    )
    .await
    .unwrap();
    assert_eq!(lease.spec.unwrap().lease_transitions, Some(1));
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b2",
            "--wait",
            "--include-namespaces",
            &ns.name,
        ],
    );
    assert!(second.log().contains("replica-b leads"), "{}", second.log());
}

struct Replicas {
    s3: PausableProxy,
    setup: Setup,
    leases: Api<Lease>,
    /// The leader, replica-a.
    first: ArkServer,
    second: ArkServer,
}

/// Two replicas, replica-a leading, and backup b1 InProgress on it, held by a paused S3.
async fn two_replicas_with_a_backup_held_by_s3() -> Replicas {
    let cluster = Cluster::get();
    let s3 = PausableProxy::start(cluster.s3_address()).await;
    let setup = Setup::new(cluster, Some(&s3.url())).await;
    let leases: Api<Lease> = Api::namespaced(setup.client.clone(), setup.ns());
    let first = ArkServer::start_with(ARK, &setup.cluster, setup.ns(), &["--id", "replica-a"]);
    wait_for(leases.clone(), "ark-server", held_by("replica-a"), WAIT)
        .await
        .unwrap();
    let second = ArkServer::start_with(ARK, &setup.cluster, setup.ns(), &["--id", "replica-b"]);
    s3.pause();
    setup.start_backup("b1");
    setup.backup_in("b1", BackupPhase::InProgress).await;
    Replicas {
        s3,
        setup,
        leases,
        first,
        second,
    }
}

/// SIGTERM: the leader takes no new work, finishes the backup it runs, releases the lease and
/// exits; the other replica leads at once instead of after the lease's 15 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_running_backup_and_hands_the_lease_over_at_once() {
    let Replicas {
        s3,
        setup,
        leases,
        mut first,
        second,
    } = two_replicas_with_a_backup_held_by_s3().await;
    first.signal("TERM");
    tokio::time::sleep(Duration::from_millis(500)).await;
    s3.resume();
    let status = first
        .wait_exit(Duration::from_secs(30))
        .expect("replica-a exits");
    assert!(status.success(), "{status:?}\n{}", first.log());
    assert!(first.log().contains("all work finished"), "{}", first.log());
    setup.backup_in("b1", BackupPhase::Completed).await;
    let handed_over = std::time::Instant::now();
    wait_for(leases, "ark-server", held_by("replica-b"), WAIT)
        .await
        .unwrap();
    assert!(
        handed_over.elapsed() < Duration::from_secs(10),
        "replica-b waited {:?} for a released lease",
        handed_over.elapsed()
    );
    drop(second);
}

/// The leader is paused (SIGSTOP) in the middle of a backup for longer than its lease: the other
/// replica takes over and fails the backup; the old leader, resumed, stops leading, and what it
/// goes on to write cannot make the backup Completed or put it in the bucket; it stands by, alive.
/// Once in the README's test command; `ARK_FAULT_PAUSES=20` repeats it (`docs/reliability.md`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_paused_past_its_lease_cannot_complete_what_its_successor_failed() {
    let pauses = std::env::var("ARK_FAULT_PAUSES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(1);
    for _ in 0..pauses {
        pause_the_leader_during_a_backup().await;
    }
}

async fn pause_the_leader_during_a_backup() {
    let Replicas {
        s3,
        setup,
        leases,
        mut first,
        second,
    } = two_replicas_with_a_backup_held_by_s3().await;
    first.signal("STOP");
    wait_for(leases.clone(), "ark-server", held_by("replica-b"), WAIT)
        .await
        .unwrap();
    let failed = setup.backup_in("b1", BackupPhase::Failed).await;
    assert_eq!(
        failed.status.unwrap().failure_reason.as_deref(),
        Some("found a backup with status InProgress during the server starting, mark it as Failed")
    );
    // The old leader wakes up with its upload able to finish: it stops its work and stands by.
    // (Before, the process exited; a server started by hand stayed dead.)
    s3.resume();
    first.signal("CONT");
    first
        .wait_for_log("standing by to lead again", Duration::from_secs(30))
        .await;
    assert_eq!(
        first.wait_exit(Duration::from_secs(1)),
        None,
        "replica-a exited:\n{}",
        first.log()
    );
    let lease = leases.get("ark-server").await.unwrap();
    assert_eq!(
        lease.spec.unwrap().holder_identity.as_deref(),
        Some("replica-b")
    );
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
    drop(second);
}

/// The regression behind a server that died of an API hiccup: the API server gone for longer
/// than the renew deadline (10 s) made the only replica exit ("lost the leader lease ...:
/// stopping"), and a server started by hand stayed dead. Now it stops its work, stands by (its
/// readiness says so), campaigns while the API server is gone, leads again once it answers, and
/// takes a new backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_api_server_is_gone_past_its_renew_deadline_stands_by_and_leads_again() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("ark").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let api = PausableProxy::start(cluster.api_server_address()).await;
    let dir = tempfile::tempdir().unwrap();
    let through = cluster.through(api.address, dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics = format!("127.0.0.1:{port}");
    let mut server = ArkServer::start_with(
        ARK,
        &through,
        &ns.name,
        &["--id", "alone", "--metrics-address", &metrics],
    );
    server.wait_for_log("alone leads", WAIT).await;
    assert_eq!(readiness(port), "ok: leading");

    api.take_down();
    server
        .wait_for_log("standing by to lead again", Duration::from_secs(40))
        .await;
    assert_eq!(readiness(port), "ok: standing by, not leading");
    assert_eq!(server.wait_exit(Duration::from_secs(2)), None);
    api.resume();
    let deadline = std::time::Instant::now() + WAIT;
    while server.log().matches("alone leads").count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not lead again:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(readiness(port), "ok: leading");
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "after",
            "--wait",
            "--timeout",
            "1m",
            "--include-namespaces",
            &ns.name,
        ],
    );
}

/// The body of the server's `/readyz`, on 127.0.0.1:port.
fn readiness(port: u16) -> String {
    ark_tests::scrape(&format!("127.0.0.1:{port}"), "/readyz")
        .trim()
        .to_string()
}
