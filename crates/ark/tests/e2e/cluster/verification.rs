//! `ark backup verify`: a backup read back from the bucket and checked whole, the outcome on the
//! Backup (annotation, `get`, `describe`, an event); a damaged one named defect by defect.

use crate::common;

use std::collections::BTreeMap;

use ark_api::verification::{Outcome, Verification};
use ark_tests::{ArkServer, Cluster, wait_for};
use common::setup::{Setup, WAIT};
use common::{ARK, ark, text};
use k8s_openapi::api::events::v1::Event;
use kube::Api;

/// The backup's last event of `reason`, waited for: the server publishes it once the outcome is
/// recorded on the backup, which is what a test waits on first.
async fn event(setup: &Setup, backup: &str, reason: &str) -> Event {
    let events: Api<Event> = Api::namespaced(setup.client.clone(), setup.ns());
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = events.list(&Default::default()).await.unwrap().items;
        let found = listed.into_iter().rev().find(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(backup)
        });
        if let Some(event) = found {
            return event;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {reason} event on backup {backup}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn recorded(setup: &Setup, backup: &str) -> Verification {
    let backup = setup.backups().get(backup).await.unwrap();
    Verification::of(&backup)
        .expect("a verification recorded")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_backup_verifies_and_a_damaged_one_names_each_defect() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (ns, app) = (setup.ns().to_string(), setup.app.name.clone());
    let _server = ArkServer::start(ARK, &setup.cluster, &ns);
    setup.backup("b1", None);
    let verify = |name: &str| ark(Some(&setup.cluster), &["backup", "verify", name, "-n", &ns]);

    // What the bucket holds, as the verification must have read it.
    let layout = &setup.store.layout;
    let files = setup.keys(&layout.backup_dir("b1")).await - 1;
    let list_key = layout.backup_resource_list("b1");
    let list_bytes = setup.store.get(&list_key).await.unwrap();
    let list: BTreeMap<String, Vec<String>> =
        serde_json::from_reader(flate2::read::GzDecoder::new(&list_bytes[..])).unwrap();
    let items: usize = list.values().map(Vec::len).sum();
    assert!(
        list["v1/ConfigMap"].contains(&format!("{app}/settings")),
        "{list:?}"
    );

    let whole = verify("b1");
    assert_eq!(
        (
            whole.status.code(),
            text(&whole.stdout),
            text(&whole.stderr)
        ),
        (
            Some(0),
            format!(
                "Backup b1:\n  Files:          {files} of the backup's folder read and parsed\n  \
                 Objects:        {items} items in the tarball, against the resource list\n  \
                 Volume data:    none recorded\n  CSI snapshots:  none recorded\nNo defects.\n\
                 Recorded on backup b1.\n"
            ),
            String::new()
        )
    );
    let passed = recorded(&setup, "b1").await;
    assert_eq!(
        (
            passed.outcome,
            passed.defects,
            passed.data,
            passed.by.as_str()
        ),
        (Outcome::Passed, 0, false, "ark backup verify")
    );
    assert!(
        setup
            .ark(&["backup", "get", "b1"])
            .contains(" Completed, verified ")
    );
    let described = setup.ark(&["backup", "describe", "b1"]);
    let line = format!(
        "Verified:  Passed at {} by ark backup verify (its volume data sampled)\n",
        passed.at
    );
    assert!(described.contains(&line), "{described}");
    let verified = event(&setup, "b1", "Verified").await;
    assert_eq!(verified.type_.as_deref(), Some("Normal"));

    // The log is lost, and the resource list is rewritten: it names an item the tarball lacks,
    // and leaves out one it has.
    setup.store.delete(&layout.backup_log("b1")).await.unwrap();
    let mut damaged = list.clone();
    let config_maps = damaged.get_mut("v1/ConfigMap").unwrap();
    config_maps.retain(|entry| *entry != format!("{app}/settings"));
    config_maps.push(format!("{app}/ghost"));
    setup
        .put_gz(&list_key, &serde_json::to_string(&damaged).unwrap())
        .await;
    let failed = verify("b1");
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    let stdout = text(&failed.stdout);
    let defects = format!(
        "Defects (3):\n  - b1-logs.gz is missing\n  - the resource list names v1/ConfigMap \
         {app}/ghost, which the tarball does not hold\n  - the tarball holds v1/ConfigMap \
         {app}/settings, which the resource list does not name\nRecorded on backup b1.\n"
    );
    assert!(stdout.ends_with(&defects), "{stdout}");
    let record = recorded(&setup, "b1").await;
    assert_eq!(
        (
            record.outcome,
            record.defects,
            record.first_defect.as_deref()
        ),
        (Outcome::Failed, 3, Some("b1-logs.gz is missing"))
    );
    assert!(
        setup
            .ark(&["backup", "get", "b1"])
            .contains(" Completed, verification failed "),
    );
    let warning = event(&setup, "b1", "VerificationFailed").await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        warning.note.as_deref(),
        Some(
            "verified by ark backup verify, its volume data sampled: 3 defects; the first: \
             b1-logs.gz is missing"
        )
    );

    // A tarball cut short is named, and nothing panics.
    let tarball = layout.backup_contents("b1");
    let bytes = setup.store.get(&tarball).await.unwrap();
    setup
        .store
        .put(&tarball, bytes.slice(..bytes.len() / 2))
        .await
        .unwrap();
    let cut = text(&verify("b1").stdout);
    assert!(cut.contains("  - b1.tar.gz: not a gzip tar"), "{cut}");

    let unknown = verify("nope");
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        text(&unknown.stderr),
        format!("error: backup \"nope\" not found in namespace \"{ns}\"\n")
    );
    assert_eq!(
        text(&verify("b").stderr),
        format!("error: backup \"b\" not found in namespace \"{ns}\"; did you mean \"b1\"?\n")
    );
}

/// `ark server --verify-new-backups sampled`: each backup is verified once it ends, recorded as by
/// `ark backup verify` (named the server's), and counted; one whose files are damaged before the
/// server reads it is recorded Failed, with a Warning event and its failure counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_verifies_each_new_backup_once_and_counts_the_outcomes() {
    let setup = Setup::new(Cluster::get(), None).await;
    let ns = setup.ns().to_string();
    let address = ark_tests::free_local_address();
    let flags = [
        "--verify-new-backups",
        "sampled",
        "--metrics-address",
        &address,
    ];
    let server = ArkServer::start_with(ARK, &setup.cluster, &ns, &flags);
    setup.backup("b1", None);
    let by_server = |b: Option<&ark_api::Backup>| {
        b.and_then(Verification::of)
            .is_some_and(|v| v.is_ok_and(|v| v.by == "ark-server"))
    };
    wait_for(setup.backups(), "b1", by_server, WAIT)
        .await
        .unwrap();
    let record = recorded(&setup, "b1").await;
    assert_eq!(
        (record.outcome, record.defects, record.data),
        (Outcome::Passed, 0, false)
    );
    assert_eq!(
        event(&setup, "b1", "Verified").await.note.as_deref(),
        Some("verified by ark-server, its volume data sampled: no defect")
    );
    let scraped = ark_tests::scrape(&address, "/metrics");
    let line = "ark_backup_verification_success_total{schedule=\"\"} 1\n";
    assert!(scraped.contains(line), "{line} not in:\n{scraped}");
    drop(server);

    // The next backup is made by a server that verifies nothing, and its log is lost before a
    // server that verifies reads it back.
    let plain = ArkServer::start(ARK, &setup.cluster, &ns);
    setup.backup("b2", None);
    drop(plain);
    let log = setup.store.layout.backup_log("b2");
    setup.store.delete(&log).await.unwrap();
    let first = recorded(&setup, "b1").await;
    let _server = ArkServer::start_with(ARK, &setup.cluster, &ns, &flags);
    wait_for(setup.backups(), "b2", by_server, WAIT)
        .await
        .unwrap();
    let record = recorded(&setup, "b2").await;
    assert_eq!(
        (record.outcome, record.first_defect.as_deref()),
        (Outcome::Failed, Some("b2-logs.gz is missing"))
    );
    let warning = event(&setup, "b2", "VerificationFailed").await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    // b1 was verified by the first server: the second leaves it as it is.
    assert_eq!(recorded(&setup, "b1").await, first);
    let scraped = ark_tests::scrape(&address, "/metrics");
    for line in [
        "ark_backup_verification_success_total{schedule=\"\"} 0\n",
        "ark_backup_verification_failure_total{schedule=\"\"} 1\n",
    ] {
        assert!(scraped.contains(line), "{line} not in:\n{scraped}");
    }
}
