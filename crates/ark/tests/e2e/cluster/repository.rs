//! `ark repository`: a namespace's volume snapshots, in the kopia repository of a location,
//! listed, browsed, restored to the local disk and verified, with the location's credentials and
//! the repositories' password read as the server reads them.

use crate::common;

use std::collections::BTreeMap;

use ark_kopia::Repository;
use ark_kopia::repository::{SnapshotOptions, VELERO_DEFAULT_PASSWORD};
use ark_kopia::snapshot::SourceInfo;
use ark_tests::Cluster;
use ark_tests::kopia::{RestoredBy, assert_same_tree, write_volume_tree};
use common::setup::Setup;
use common::{ark, text};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;

async fn volume_snapshot(setup: &Setup, tree: &std::path::Path) -> ark_kopia::repository::Snapshot {
    let store = &setup.store;
    let repo = Repository::create(
        store.object_store(),
        store.layout.kopia_repository(&setup.app.name),
        VELERO_DEFAULT_PASSWORD,
    )
    .await
    .unwrap();
    write_volume_tree(tree, 0);
    let source = SourceInfo {
        host: "default".into(),
        user_name: "default".into(),
        path: format!("snapshot-pod-volume/kopia/{}/db-0/data", setup.app.name),
    };
    let options = SnapshotOptions {
        description: "Kopia Uploader".into(),
        tags: BTreeMap::from([("snapshot-requester".into(), "snapshot-pod-volume".into())]),
        ..SnapshotOptions::default()
    };
    repo.create_snapshot(tree, source, options).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repository_commands_list_browse_restore_and_verify_a_namespace_s_volume_snapshots() {
    let setup = Setup::new(Cluster::get(), None).await;
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("volume");
    let snapshot = volume_snapshot(&setup, &tree).await;
    let app = setup.app.name.clone();
    let repository = ["--volume-namespace", app.as_str()];

    let mut args = vec!["repository", "snapshots"];
    args.extend(repository);
    let time = snapshot
        .manifest
        .start_time
        .timestamp()
        .strftime("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    let source = format!("default@default:snapshot-pod-volume/kopia/{app}/db-0/data");
    assert_eq!(
        setup.ark(&args),
        format!(
            "{:<34}{:<w$}{:<25}SIZE      FILES  DIRS\n{:<34}{source}  {time}  26.1 MiB  249    15\n",
            "ID",
            "SOURCE",
            "TIME",
            snapshot.id,
            w = source.len() + 2
        )
    );
    args.extend(["-o", "json"]);
    let listed: serde_json::Value = serde_json::from_str(&setup.ark(&args)).unwrap();
    assert_eq!(listed[0]["id"], snapshot.id.as_str());
    assert_eq!(listed[0]["files"], 249);
    assert_eq!(
        listed[0]["tags"]["snapshot-requester"],
        "snapshot-pod-volume"
    );

    let mut args = vec!["repository", "ls", &snapshot.id[..8], "src/dir-0/sub"];
    args.extend(repository);
    let listing = setup.ark(&args);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 41, "{listing}");
    assert_eq!(lines[0], "MODE        SIZE   MODIFIED                 NAME");
    assert_eq!(
        lines[1],
        "-rw-r--r--  300 B  2023-11-14 22:13:20 UTC  file-0.c"
    );

    let to = work.path().join("dir-3");
    let mut args = vec!["repository", "restore", &snapshot.id, "--path", "src/dir-3"];
    let target = to.display().to_string();
    args.extend(["--to", &target]);
    args.extend(repository);
    assert_eq!(
        setup.ark(&args),
        format!(
            "Restored 40 files (24.4 KiB), 2 directories and 0 symlinks of snapshot {} to {target}\n",
            snapshot.id
        )
    );
    assert_same_tree(&to, &tree.join("src/dir-3"), RestoredBy::Ark);

    let mut args = vec!["repository", "verify"];
    args.extend(repository);
    assert_eq!(
        setup.ark(&args),
        "Verified 1 snapshots: 267 objects, 26.1 MiB read, 0 errors\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_pack_a_wrong_password_and_an_unknown_snapshot_are_named() {
    let setup = Setup::new(Cluster::get(), None).await;
    let work = tempfile::tempdir().unwrap();
    let snapshot = volume_snapshot(&setup, &work.path().join("volume")).await;
    let app = setup.app.name.clone();
    let ns = setup.ns().to_string();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--volume-namespace", &app, "-n", &ns]);
        ark(Some(&setup.cluster), &all)
    };

    let unknown = run(&["repository", "ls", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown.stderr).contains("no snapshot \"nope\" in the repository"),
        "{}",
        text(&unknown.stderr)
    );

    // Someone overwrites a data pack with bytes of the same length.
    let root = setup.store.layout.kopia_repository(&app);
    let keys = setup.store.keys_under(&root).await.unwrap();
    let pack = keys
        .iter()
        .find(|k| k.filename().is_some_and(|f| f.starts_with('p')))
        .unwrap()
        .clone();
    let length = setup.store.get(&pack).await.unwrap().len();
    setup
        .store
        .put(&pack, vec![0x5a; length].into())
        .await
        .unwrap();
    let verify = run(&["repository", "verify", &snapshot.id]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify.stdout));
    let stderr = text(&verify.stderr);
    let name = pack.filename().unwrap();
    assert!(
        stderr.contains(&format!("blob {name} (content ")),
        "{stderr}"
    );
    assert!(stderr.contains("does not decrypt under its ID"), "{stderr}");
    assert!(
        text(&verify.stdout).ends_with(" errors\n") && !text(&verify.stdout).contains(" 0 errors")
    );

    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "velero-repo-credentials" },
        "stringData": { "repository-password": "not-the-password" },
    }))
    .unwrap();
    Api::<Secret>::namespaced(setup.client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let wrong = run(&["repository", "snapshots"]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong.stderr).contains(
            "does not open with the password in secret \"velero-repo-credentials\": it was made \
             with another"
        ),
        "{}",
        text(&wrong.stderr)
    );
}
