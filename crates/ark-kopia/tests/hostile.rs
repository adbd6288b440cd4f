//! A repository written by someone hostile: every forgery is an error naming what it concerns,
//! never a panic, and nothing is written outside the restore target. The forgeries are made with
//! ark's own writer (the real format, with the repository's keys, as a hostile writer has them).

use std::sync::Arc;

use ark_kopia::Repository;
use ark_kopia::object::ObjectId;
use ark_kopia::snapshot::{self, DirEntry, EntryType, Mode, RestoreCounts, Time};

async fn repository(dir: &std::path::Path) -> Repository {
    std::fs::create_dir_all(dir).unwrap();
    let store = Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir).unwrap());
    Repository::create(store, object_store::path::Path::from("kopia/ns"), "pw")
        .await
        .unwrap()
}

fn entry(name: &str, entry_type: EntryType, object: ObjectId, size: i64) -> DirEntry {
    DirEntry {
        name: name.into(),
        entry_type,
        mode: Mode(0o644),
        size,
        mtime: Time(1_700_000_000_000_000_000),
        uid: 0,
        gid: 0,
        object,
        summary: None,
    }
}

/// A directory object holding `entries`, as a hostile writer would store it.
async fn directory(repo: &Repository, entries: Vec<DirEntry>) -> DirEntry {
    let (id, summary) = snapshot::write_directory(repo.contents(), entries, Time(0))
        .await
        .unwrap();
    repo.contents().flush().await.unwrap();
    let mut dir = entry("root", EntryType::Directory, id, 0);
    dir.mode = Mode(0o755);
    dir.summary = Some(summary);
    dir
}

async fn file(repo: &Repository, bytes: &[u8]) -> ObjectId {
    let mut w = ark_kopia::object::ObjectWriter::new(repo.contents(), None);
    w.write(bytes).await.unwrap();
    let id = w.finish().await.unwrap();
    repo.contents().flush().await.unwrap();
    id
}

#[tokio::test]
async fn names_that_climb_out_of_the_target_are_refused_and_nothing_is_written_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(&dir.path().join("bucket")).await;
    let data = file(&repo, b"pwned").await;
    for name in ["..", ".", "a/../../escape", "/tmp/escape", ""] {
        let root = directory(&repo, vec![entry(name, EntryType::File, data, 5)]).await;
        let target = dir.path().join("target").join(format!("t{}", name.len()));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let e = repo
            .restore(&root, &target, &RestoreCounts::default())
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "directory {} holds the entry {name:?}: not restored",
                root.object
            )
        );
    }
    assert!(!dir.path().join("escape").exists());
    assert!(!std::path::Path::new("/tmp/escape").exists());

    // Two entries of one name (a symlink out, then a directory through it) are refused too.
    let sub = directory(&repo, vec![entry("passwd", EntryType::File, data, 5)]).await;
    let mut through = sub.clone();
    through.name = "a".into();
    let link = file(
        &repo,
        dir.path().join("outside").to_str().unwrap().as_bytes(),
    )
    .await;
    let root = directory(
        &repo,
        vec![entry("a", EntryType::Symlink, link, 0), through],
    )
    .await;
    let target = dir.path().join("twice");
    let e = repo
        .restore(&root, &target, &RestoreCounts::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("holds the entry \"a\""), "{e}");
    assert!(!dir.path().join("outside").exists());
}

#[tokio::test]
async fn a_symlink_already_in_the_target_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(&dir.path().join("bucket")).await;
    let data = file(&repo, b"pwned").await;
    let mut sub = directory(&repo, vec![entry("passwd", EntryType::File, data, 5)]).await;
    sub.name = "etc".into();
    let root = directory(&repo, vec![sub, entry("file", EntryType::File, data, 5)]).await;
    let target = dir.path().join("target");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, target.join("etc")).unwrap();
    std::os::unix::fs::symlink(outside.join("file"), target.join("file")).unwrap();
    let e = repo
        .restore(&root, &target, &RestoreCounts::default())
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("exists and is not a directory: not restored over"),
        "{e}"
    );
    assert!(!outside.join("passwd").exists() && !outside.join("file").exists());
}

#[tokio::test]
async fn a_file_whose_entry_lies_about_its_size_or_type_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(&dir.path().join("bucket")).await;
    let data = file(&repo, b"five!").await;
    let root = directory(&repo, vec![entry("f", EntryType::File, data, 6)]).await;
    let e = repo
        .restore(&root, &dir.path().join("t1"), &RestoreCounts::default())
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with(&format!("object {data} holds 5 bytes, its entry says 6")),
        "{e}"
    );

    // A file's object named as a directory.
    let root = directory(&repo, vec![entry("d", EntryType::Directory, data, 0)]).await;
    let e = repo
        .restore(&root, &dir.path().join("t2"), &RestoreCounts::default())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), format!("object {data} is not a directory"));
}
