//! The fault suite: the server killed (SIGKILL) at random points of backups, restores and
//! deletions and started again, and S3 gone for a moment in the middle of a backup and of a
//! deletion. After each fault every operation ends in a final phase and the bucket agrees with the
//! cluster: no backup Completed without its tarball, no Backup object gone while its data remains,
//! nothing left of a deleted backup.
//!
//! Repeatable: `ARK_FAULT_SEED` (printed by each test) replays the same kill points;
//! `ARK_FAULT_ROUNDS` sets the rounds per test (5 in CI; `docs/reliability.md` runs 20).

use crate::common;

use std::time::Duration;

use ark_api::{Backup, BackupPhase, DeleteBackupRequestPhase, Restore, RestorePhase};
use ark_tests::proxy::PausableProxy;
use ark_tests::{ArkServer, Cluster, wait_for};
use common::ARK;
use common::setup::{Setup, WAIT};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::DeleteParams;

/// splitmix64: enough randomness for kill points, and the same for the same seed.
struct Kills(u64);

impl Kills {
    fn from_env(test: &str) -> Kills {
        let seed = std::env::var("ARK_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{test}: ARK_FAULT_SEED={seed}");
        Kills(seed)
    }

    /// A kill point within the first `range` of an operation.
    fn within(&mut self, range: Duration) -> Duration {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        range.mul_f64((z % 10_000) as f64 / 10_000.0)
    }
}

fn rounds() -> usize {
    std::env::var("ARK_FAULT_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
}

/// A server with a fixed identity, so that the one started after a kill leads at once (as a
/// restarted pod would, rather than waiting out the lease of the killed one).
fn server(setup: &Setup) -> ArkServer {
    ArkServer::start_with(ARK, &setup.cluster, setup.ns(), &["--id", "fault-suite"])
}

async fn backup_ends(setup: &Setup, name: &str) -> Backup {
    let done = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
    wait_for(setup.backups(), name, done, WAIT).await.unwrap()
}

/// The bucket agrees with the backup's phase.
async fn assert_consistent(setup: &Setup, backup: &Backup) {
    let name = backup.metadata.name.as_deref().unwrap();
    let layout = &setup.store.layout;
    let metadata = setup
        .store
        .exists(&layout.backup_metadata(name))
        .await
        .unwrap();
    let tarball = setup
        .store
        .exists(&layout.backup_contents(name))
        .await
        .unwrap();
    match backup.phase() {
        BackupPhase::Completed | BackupPhase::PartiallyFailed => {
            assert!(
                metadata && tarball,
                "{name} is {:?} without its files",
                backup.phase()
            )
        }
        _ => assert!(
            !metadata,
            "{name} is {:?} but exists in the bucket",
            backup.phase()
        ),
    }
    if metadata {
        assert!(tarball, "{name} exists in the bucket without its tarball");
    }
}

#[tokio::test]
async fn backups_end_and_agree_with_the_bucket_whenever_the_server_is_killed() {
    let setup = Setup::new(Cluster::get(), None).await;
    let mut kills = Kills::from_env("backups");
    for round in 0..rounds() {
        let name = format!("b{round}");
        let running = server(&setup);
        setup.ark(&[
            "backup",
            "create",
            &name,
            "--include-namespaces",
            &setup.app.name,
        ]);
        tokio::time::sleep(kills.within(Duration::from_millis(1500))).await;
        drop(running); // SIGKILL
        let _restarted = server(&setup);
        let ended = backup_ends(&setup, &name).await;
        assert_consistent(&setup, &ended).await;
    }
}

#[tokio::test]
async fn restores_end_whenever_the_server_is_killed() {
    let setup = Setup::new(Cluster::get(), None).await;
    let mut kills = Kills::from_env("restores");
    {
        let _server = server(&setup);
        setup.backup("b1", None);
    }
    let restores: Api<Restore> = setup.restores();
    for round in 0..rounds() {
        let name = format!("r{round}");
        let target = format!("{}-{name}", setup.app.name);
        let mapping = format!("{}:{target}", setup.app.name);
        let running = server(&setup);
        setup.ark(&[
            "restore",
            "create",
            &name,
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &mapping,
        ]);
        tokio::time::sleep(kills.within(Duration::from_millis(1500))).await;
        drop(running);
        let _restarted = server(&setup);
        let done = |r: Option<&Restore>| {
            r.is_some_and(|r| {
                matches!(
                    r.phase(),
                    RestorePhase::Completed
                        | RestorePhase::PartiallyFailed
                        | RestorePhase::Failed
                        | RestorePhase::FailedValidation
                )
            })
        };
        wait_for(restores.clone(), &name, done, WAIT).await.unwrap();
        let _ = Api::<Namespace>::all(setup.client.clone())
            .delete(&target, &DeleteParams::default())
            .await;
    }
}

#[tokio::test]
async fn deletions_finish_whenever_the_server_is_killed() {
    let setup = Setup::new(Cluster::get(), None).await;
    let mut kills = Kills::from_env("deletions");
    for round in 0..rounds() {
        let name = format!("d{round}");
        let running = server(&setup);
        setup.backup(&name, None);
        let backup = setup.backups().get(&name).await.unwrap();
        setup.ark(&["backup", "delete", &name, "--confirm"]);
        tokio::time::sleep(kills.within(Duration::from_millis(800))).await;
        drop(running);
        let _restarted = server(&setup);
        // A request left New or InProgress is carried on by the next server.
        setup.gone(&backup).await;
        assert_eq!(
            setup.keys(&setup.store.layout.backup_dir(&name)).await,
            0,
            "{name} is gone but its data remains"
        );
    }
}

/// S3 refuses every connection for two seconds at a random point of a backup and of a deletion:
/// each ends, and the bucket agrees with the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_and_deletions_end_when_s3_is_gone_for_a_moment() {
    let cluster = Cluster::get();
    let s3 = PausableProxy::start(cluster.s3_address()).await;
    let setup = Setup::new(cluster, Some(&s3.url())).await;
    let _server = server(&setup);
    let mut kills = Kills::from_env("s3 outages");
    let outage = || async {
        s3.take_down();
        tokio::time::sleep(Duration::from_secs(2)).await;
        s3.resume();
    };
    for round in 0..rounds() {
        let backup = format!("b{round}");
        setup.ark(&[
            "backup",
            "create",
            &backup,
            "--include-namespaces",
            &setup.app.name,
        ]);
        tokio::time::sleep(kills.within(Duration::from_millis(500))).await;
        outage().await;
        let ended = backup_ends(&setup, &backup).await;
        assert_consistent(&setup, &ended).await;

        let deleted = format!("d{round}");
        setup.backup(&deleted, None);
        setup.ark(&["backup", "delete", &deleted, "--confirm"]);
        tokio::time::sleep(kills.within(Duration::from_millis(300))).await;
        outage().await;
        // Deleted; or refused, the backup whole (Completed) or half-deleted (Deleting): as its
        // user would, ask again once the request is Processed, and the next request finishes it.
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let Some(backup) = setup.backups().get_opt(&deleted).await.unwrap() else {
                break;
            };
            if backup.phase() == BackupPhase::Completed {
                assert_consistent(&setup, &backup).await;
            }
            let pending = setup
                .requests()
                .list(&Default::default())
                .await
                .unwrap()
                .iter()
                .any(|r| r.phase() != Some(DeleteBackupRequestPhase::Processed));
            if !pending {
                setup.ark(&["backup", "delete", &deleted, "--confirm"]);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{deleted} was never deleted"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        assert_eq!(
            setup.keys(&setup.store.layout.backup_dir(&deleted)).await,
            0
        );
    }
}
