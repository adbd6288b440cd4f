//! kopia itself is the oracle of ark's kopia format: the kopia CLI v0.16.0 (Velero v1.18's) and
//! ark write and read one repository in SeaweedFS, and each reads, restores and verifies what the
//! other wrote, byte for byte.

use std::collections::BTreeMap;

use ark_kopia::Repository;
use ark_kopia::repository::SnapshotOptions;
use ark_kopia::snapshot::SourceInfo;
use ark_tests::kopia::{
    Kopia, RestoredBy, assert_same_tree, blob_counts, oracle_scale, repository_store, tree_bytes,
    tree_files, write_volume_tree_scaled,
};
use ark_tests::{Cluster, unique_name};

const PASSWORD: &str = "static-passw0rd";

fn velero_source(pod: &str) -> SourceInfo {
    SourceInfo {
        host: "default".into(),
        user_name: "default".into(),
        path: format!("snapshot-pod-volume/kopia/ns/{pod}/data"),
    }
}

fn velero_options() -> SnapshotOptions {
    SnapshotOptions {
        description: "Kopia Uploader".into(),
        tags: BTreeMap::from([
            ("snapshot-requester".into(), "snapshot-pod-volume".into()),
            ("snapshot-uploader".into(), "kopia".into()),
        ]),
        pins: vec!["velero-pin".into()],
        ..SnapshotOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_lists_and_restores_byte_for_byte_what_kopia_wrote() {
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/by-kopia");
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("volume");
    write_volume_tree_scaled(&tree, 0, oracle_scale());

    let kopia = Kopia::new(PASSWORD);
    kopia.create(&cluster, &prefix);
    let written = kopia.snapshot(&tree);

    let (store, root) = repository_store(&cluster, &prefix);
    let repo = Repository::open(store, root, PASSWORD).await.unwrap();
    let snapshots = repo.snapshots().await.unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    let snapshot = &snapshots[0];
    assert_eq!(snapshot.id, written["id"].as_str().unwrap());
    assert_eq!(snapshot.manifest.source.path, tree.display().to_string());
    assert_eq!(snapshot.manifest.source.user_name, "default");
    assert_eq!(
        snapshot
            .manifest
            .root_entry
            .as_ref()
            .unwrap()
            .object
            .to_string(),
        written["rootEntry"]["obj"].as_str().unwrap()
    );

    let restored = work.path().join("restored-by-ark");
    let root_entry = snapshot.manifest.root_entry.clone().unwrap();
    let counts = ark_kopia::snapshot::RestoreCounts::default();
    repo.restore(&root_entry, &restored, &counts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_same_tree(&restored, &tree, RestoredBy::Ark);
    assert_eq!(
        counts.files.load(std::sync::atomic::Ordering::Relaxed),
        tree_files(&tree)
    );

    let progress = ark_kopia::repository::VerifyProgress::default();
    assert_eq!(
        repo.verify(&snapshots, ark_kopia::repository::Reading::All, &progress)
            .await,
        Vec::<String>::new()
    );
    assert_eq!(
        progress.bytes.load(std::sync::atomic::Ordering::Relaxed),
        tree_bytes(&tree)
    );

    // One file, by its path in the snapshot.
    let one = repo
        .entry_at(&snapshot.manifest, "src/dir-3/sub/file-7.c")
        .await
        .unwrap();
    let file = work.path().join("one-file.c");
    repo.restore(&one, &file, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(tree.join("src/dir-3/sub/file-7.c")).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kopia_lists_restores_and_verifies_what_ark_wrote() {
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/by-ark");
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("volume");
    write_volume_tree_scaled(&tree, 0, oracle_scale());

    let (store, root) = repository_store(&cluster, &prefix);
    let repo = Repository::create(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let (snapshot, _) = repo
        .create_snapshot(&tree, velero_source("db-0"), velero_options())
        .await
        .unwrap();
    let blobs = blob_counts(&store, &root).await;
    assert!(
        blobs.contains_key(&'u'),
        "Velero's marker udmrepo.Repository: {blobs:?}"
    );
    assert!(
        !blobs.contains_key(&'s'),
        "no session marker is left behind: {blobs:?}"
    );

    let kopia = Kopia::new(PASSWORD);
    kopia.connect(&cluster, &prefix);
    let listed = kopia.snapshots();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], snapshot.id.as_str());
    assert_eq!(
        listed[0]["source"]["path"],
        "snapshot-pod-volume/kopia/ns/db-0/data"
    );
    assert_eq!(listed[0]["source"]["host"], "default");
    assert_eq!(
        listed[0]["tags"]["snapshot-requester"],
        "snapshot-pod-volume"
    );
    assert_eq!(listed[0]["pins"], serde_json::json!(["velero-pin"]));
    assert_eq!(listed[0]["description"], "Kopia Uploader");

    let restored = work.path().join("restored-by-kopia");
    kopia.ok(&[
        "snapshot",
        "restore",
        &snapshot.id,
        &restored.display().to_string(),
    ]);
    assert_same_tree(&restored, &tree, RestoredBy::Kopia);

    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
    kopia.ok(&["content", "verify", "--full"]);
    kopia.ok(&["index", "inspect", "--all"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_and_kopia_deduplicate_against_each_other_and_read_each_other_s_snapshots() {
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/shared");
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("volume");
    write_volume_tree_scaled(&tree, 0, oracle_scale());

    let kopia = Kopia::new(PASSWORD);
    kopia.create(&cluster, &prefix);
    kopia.snapshot(&tree);
    let (store, root) = repository_store(&cluster, &prefix);
    let before = blob_counts(&store, &root).await;

    // ark snapshots the same tree: every file's chunks are already there.
    let repo = Repository::open(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let (first, _) = repo
        .create_snapshot(&tree, velero_source("app-0"), velero_options())
        .await
        .unwrap();
    let after = blob_counts(&store, &root).await;
    assert_eq!(
        after.get(&'p'),
        before.get(&'p'),
        "ark wrote data packs for data kopia had stored: {before:?} then {after:?}"
    );

    // The tree changes a little; ark snapshots it with the first as parent, then kopia does.
    write_volume_tree_scaled(&tree, 1, oracle_scale());
    let options = SnapshotOptions {
        parent: Some(first.manifest.clone()),
        ..velero_options()
    };
    let (second, counts) = repo
        .create_snapshot(&tree, velero_source("app-0"), options)
        .await
        .unwrap();
    let uploaded = counts.bytes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        uploaded > 0 && uploaded < 12 << 20,
        "read {uploaded} bytes of changed files"
    );
    let grown = blob_counts(&store, &root).await;
    let new_data = grown[&'p'].1 - after[&'p'].1;
    assert!(
        new_data < 9 << 20,
        "{new_data} bytes of new packs for a few changed chunks"
    );

    kopia.snapshot(&tree);
    let listed = kopia.snapshots();
    assert_eq!(listed.len(), 4, "{listed:?}");
    let restored = work.path().join("second-by-kopia");
    kopia.ok(&[
        "snapshot",
        "restore",
        &second.id,
        &restored.display().to_string(),
    ]);
    assert_same_tree(&restored, &tree, RestoredBy::Kopia);

    let repo = Repository::open(store, root, PASSWORD).await.unwrap();
    let latest = repo.snapshots().await.unwrap().pop().unwrap();
    assert_eq!(latest.manifest.source.path, tree.display().to_string());
    let by_ark = work.path().join("kopia-s-by-ark");
    repo.restore(
        latest.manifest.root_entry.as_ref().unwrap(),
        &by_ark,
        &Default::default(),
    )
    .await
    .unwrap();
    assert_same_tree(&by_ark, &tree, RestoredBy::Ark);
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_and_a_missing_repository_are_named() {
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/password");
    let kopia = Kopia::new(PASSWORD);
    kopia.create(&cluster, &prefix);
    let (store, root) = repository_store(&cluster, &prefix);
    let e = Repository::open(store.clone(), root, "not-the-password")
        .await
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "invalid repository password");
    let e = Repository::open(
        store,
        ark_storage::Path::from(format!("{prefix}-none")),
        PASSWORD,
    )
    .await
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        format!("no kopia repository: {prefix}-none has no kopia.repository")
    );
}

/// A second tree, of data no other snapshot holds: 10 MiB.
fn other_tree(dir: &std::path::Path) {
    random_tree(dir, 10 << 20);
}

/// One file of `size` random bytes.
fn random_tree(dir: &std::path::Path, size: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let mut x = 0x1234_5678_9abc_def1_u64;
    let data: Vec<u8> = (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.join("only-here.bin"), data).unwrap();
}

async fn pack_bytes(
    store: &std::sync::Arc<dyn ark_storage::ObjectStore>,
    root: &ark_storage::Path,
) -> u64 {
    blob_counts(store, root).await.get(&'p').map_or(0, |c| c.1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_ark_forgets_a_snapshot_and_runs_maintenance_kopia_verifies_the_rest_and_the_bucket_shrinks()
 {
    use ark_kopia::maintenance::{Safety, VELERO_OWNER};
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/maintenance");
    let work = tempfile::tempdir().unwrap();
    let (kept_tree, gone_tree) = (work.path().join("kept"), work.path().join("gone"));
    write_volume_tree_scaled(&kept_tree, 0, oracle_scale());
    other_tree(&gone_tree);

    let (store, root) = repository_store(&cluster, &prefix);
    let repo = Repository::create(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let (kept, _) = repo
        .create_snapshot(&kept_tree, velero_source("kept-0"), velero_options())
        .await
        .unwrap();
    let (gone, _) = repo
        .create_snapshot(&gone_tree, velero_source("gone-0"), velero_options())
        .await
        .unwrap();
    let before = pack_bytes(&store, &root).await;

    // With kopia's full safety, nothing written within the day is touched.
    repo.forget(&gone.id).await.unwrap();
    let safe = repo
        .run_maintenance(VELERO_OWNER, Safety::Full)
        .await
        .unwrap();
    assert_eq!(
        (safe.marked_deleted, safe.deleted_blobs, safe.watermark),
        (0, 0, None),
        "{safe:?}"
    );
    assert!(safe.kept_too_recent > 0, "{safe:?}");
    assert_eq!(pack_bytes(&store, &root).await, before);

    // Without margins (nothing else writes here), what only the forgotten snapshot held goes.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let report = repo
        .run_maintenance(VELERO_OWNER, Safety::None)
        .await
        .unwrap();
    assert!(
        report.marked_deleted >= 3 && report.deleted_blobs >= 1,
        "{report:?}"
    );
    let after = pack_bytes(&store, &root).await;
    assert!(
        after + (9 << 20) < before,
        "packs of {before} bytes, then {after}: {report:?}"
    );

    let kopia = Kopia::new(PASSWORD);
    kopia.connect(&cluster, &prefix);
    let listed = kopia.snapshots();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], kept.id.as_str());
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
    kopia.ok(&["content", "verify", "--full"]);
    let info: serde_json::Value =
        serde_json::from_str(&kopia.ok(&["maintenance", "info", "--json"])).unwrap();
    assert_eq!(info["owner"], "default@default");
    assert_eq!(
        info["schedule"]["runs"]["full-delete-blobs"][0]["success"], true,
        "{info}"
    );
    let gc_runs = info["schedule"]["runs"]["snapshot-gc"].as_array().unwrap();
    assert_eq!(gc_runs.len(), 2, "{info}");
    assert_eq!(gc_runs[0]["success"], true);

    let restored = work.path().join("kept-restored");
    let repo = Repository::open(store, root, PASSWORD).await.unwrap();
    repo.restore(
        kept.manifest.root_entry.as_ref().unwrap(),
        &restored,
        &Default::default(),
    )
    .await
    .unwrap();
    assert_same_tree(&restored, &kept_tree, RestoredBy::Ark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_is_refused_while_another_owner_holds_it() {
    use ark_kopia::maintenance::{Safety, VELERO_OWNER};
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/owner");
    let kopia = Kopia::new(PASSWORD);
    kopia.create_as(&cluster, &prefix, "someone", "elsewhere");
    let (store, root) = repository_store(&cluster, &prefix);
    let before = blob_counts(&store, &root).await;
    let repo = Repository::open(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let e = repo
        .run_maintenance(VELERO_OWNER, Safety::None)
        .await
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "the repository's maintenance is owned by someone@elsewhere: not run"
    );
    assert_eq!(blob_counts(&store, &root).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_at_once_and_one_killed_mid_upload_leave_a_repository_kopia_verifies() {
    use ark_kopia::maintenance::{Safety, VELERO_OWNER};
    let cluster = Cluster::get();
    let prefix = unique_name("kopia-oracle/writers");
    let work = tempfile::tempdir().unwrap();
    let (first, second, killed) = (
        work.path().join("a"),
        work.path().join("b"),
        work.path().join("c"),
    );
    write_volume_tree_scaled(&first, 0, oracle_scale());
    write_volume_tree_scaled(&second, 1, oracle_scale());
    // Three packs' worth: the first is in the bucket long before the snapshot could end.
    random_tree(&killed, 64 << 20);

    let (store, root) = repository_store(&cluster, &prefix);
    Repository::create(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let a = Repository::open(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let b = Repository::open(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let (one, two) = tokio::join!(
        a.create_snapshot(&first, velero_source("a-0"), velero_options()),
        b.create_snapshot(&second, velero_source("b-0"), velero_options()),
    );
    let (one, two) = (one.unwrap().0, two.unwrap().0);

    // A third writer dies once its first pack is in the bucket: its packs stay, unindexed, with
    // its session's marker; nothing it wrote is visible.
    let packs_before = blob_counts(&store, &root)
        .await
        .get(&'p')
        .map_or(0, |c| c.0);
    let c = Repository::open(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let writer = tokio::spawn(async move {
        c.create_snapshot(&killed, velero_source("c-0"), velero_options())
            .await
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while blob_counts(&store, &root)
        .await
        .get(&'p')
        .map_or(0, |c| c.0)
        == packs_before
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the third writer wrote no pack in 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    writer.abort();
    assert!(writer.await.unwrap_err().is_cancelled());
    let left = blob_counts(&store, &root).await;
    assert_eq!(
        left.get(&'s').map(|c| c.0),
        Some(1),
        "the dead writer's session marker: {left:?}"
    );

    let kopia = Kopia::new(PASSWORD);
    kopia.connect(&cluster, &prefix);
    let mut ids: Vec<String> = kopia
        .snapshots()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    let mut expected = vec![one.id.clone(), two.id.clone()];
    expected.sort();
    assert_eq!(ids, expected);
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
    kopia.ok(&["content", "verify", "--full"]);

    // Maintenance keeps the dead writer's packs: they are young and their session is live. They
    // are counted again here: an upload the writer had sent when it was killed can land after it
    // (as when a process is killed), and the checks above take seconds.
    let packs = blob_counts(&store, &root).await.get(&'p').copied();
    let repo = Repository::open(store.clone(), root.clone(), PASSWORD)
        .await
        .unwrap();
    let report = repo
        .run_maintenance(VELERO_OWNER, Safety::Full)
        .await
        .unwrap();
    assert_eq!(report.deleted_blobs, 0, "{report:?}");
    assert_eq!(blob_counts(&store, &root).await.get(&'p').copied(), packs);
    let restored = work.path().join("b-restored");
    repo.restore(
        two.manifest.root_entry.as_ref().unwrap(),
        &restored,
        &Default::default(),
    )
    .await
    .unwrap();
    assert_same_tree(&restored, &second, RestoredBy::Ark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_filesystem_repository_each_reads_restores_and_verifies_the_other_s_snapshots() {
    let work = tempfile::tempdir().unwrap();
    let (tree, repository) = (work.path().join("volume"), work.path().join("repository"));
    write_volume_tree_scaled(&tree, 0, oracle_scale());
    let kopia = Kopia::new(PASSWORD);
    kopia.create_filesystem(&repository);
    let by_kopia = kopia.snapshot(&tree);

    let store = std::sync::Arc::new(
        object_store::local::LocalFileSystem::new_with_prefix(&repository).unwrap(),
    );
    let blobs = ark_kopia::blobs::Blobs::filesystem(store, ark_storage::Path::from(""), false)
        .await
        .unwrap();
    let repo = Repository::open_blobs(blobs, PASSWORD).await.unwrap();
    let found = repo
        .snapshot(by_kopia["id"].as_str().unwrap())
        .await
        .unwrap();
    let restored = work.path().join("by-ark");
    repo.restore(
        found.manifest.root_entry.as_ref().unwrap(),
        &restored,
        &Default::default(),
    )
    .await
    .unwrap();
    assert_same_tree(&restored, &tree, RestoredBy::Ark);
    let progress = ark_kopia::repository::VerifyProgress::default();
    assert_eq!(
        repo.verify(&[found], ark_kopia::repository::Reading::All, &progress)
            .await,
        Vec::<String>::new()
    );

    write_volume_tree_scaled(&tree, 1, oracle_scale());
    let (by_ark, _) = repo
        .create_snapshot(&tree, velero_source("fs-0"), velero_options())
        .await
        .unwrap();
    let listed = kopia.snapshots();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let restored = work.path().join("by-kopia");
    kopia.ok(&[
        "snapshot",
        "restore",
        &by_ark.id,
        &restored.display().to_string(),
    ]);
    assert_same_tree(&restored, &tree, RestoredBy::Kopia);
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
    kopia.ok(&["content", "verify", "--full"]);
}
