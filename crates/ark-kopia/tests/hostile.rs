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

/// Swaps each `d<i>` of `root` for a symlink to `outside` and back, in a loop, until `stop`:
/// what a pod can do to its volume while the node agent reads or writes it.
fn swap_directories_for_symlinks(
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    dirs: usize,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            for i in 0..dirs {
                let (dir, aside) = (root.join(format!("d{i}")), root.join(format!(".d{i}")));
                if std::fs::rename(&dir, &aside).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, &dir);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&dir);
                    let _ = std::fs::rename(&aside, &dir);
                    swaps += 1;
                }
            }
        }
        swaps
    })
}

/// Every entry name of a snapshot's tree.
async fn names_in(repo: &Repository, dir: ObjectId, names: &mut Vec<String>) {
    for e in snapshot::read_directory(repo.contents(), dir)
        .await
        .unwrap()
    {
        if e.entry_type == EntryType::Directory {
            Box::pin(names_in(repo, e.object, names)).await;
        }
        names.push(e.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_whose_directories_turn_into_symlinks_while_it_is_read_yields_nothing_from_outside()
 {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(&dir.path().join("bucket")).await;
    let (volume, outside) = (dir.path().join("volume"), dir.path().join("outside"));
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("host-secret"), b"of the host").unwrap();
    for i in 0..20 {
        let d = volume.join(format!("d{i}"));
        std::fs::create_dir_all(&d).unwrap();
        for j in 0..20 {
            std::fs::write(d.join(format!("f{j}")), format!("{i}/{j}")).unwrap();
        }
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = swap_directories_for_symlinks(volume.clone(), outside, 20, stop.clone());
    let (mut taken, mut refused) = (0, 0);
    for _ in 0..40 {
        let source = snapshot::SourceInfo {
            host: "h".into(),
            user_name: "u".into(),
            path: "/v".into(),
        };
        match repo
            .create_snapshot(&volume, source, Default::default())
            .await
        {
            Ok((s, _)) => {
                let mut names = Vec::new();
                let root = s.manifest.root_entry.unwrap();
                names_in(&repo, root.object, &mut names).await;
                assert!(!names.contains(&"host-secret".to_string()), "{names:?}");
                taken += 1;
            }
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains(volume.to_str().unwrap()), "{e}");
                refused += 1;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 0, "the swaps ran");
    assert_eq!(taken + refused, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_whose_directories_turn_into_symlinks_while_it_is_written_gets_nothing_outside() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(&dir.path().join("bucket")).await;
    let data = file(&repo, b"pwned").await;
    let mut dirs = Vec::new();
    for i in 0..20 {
        let files = (0..20)
            .map(|j| entry(&format!("f{j}"), EntryType::File, data, 5))
            .collect();
        let mut sub = directory(&repo, files).await;
        sub.name = format!("d{i}");
        dirs.push(sub);
    }
    let root = directory(&repo, dirs).await;
    let (target, outside) = (dir.path().join("target"), dir.path().join("outside"));
    std::fs::create_dir_all(&outside).unwrap();
    for i in 0..20 {
        std::fs::create_dir_all(target.join(format!("d{i}"))).unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = swap_directories_for_symlinks(target.clone(), outside.clone(), 20, stop.clone());
    for _ in 0..40 {
        if let Err(e) = repo
            .restore(&root, &target, &RestoreCounts::default())
            .await
        {
            assert!(e.to_string().contains(target.to_str().unwrap()), "{e}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 0, "the swaps ran");
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().collect();
    assert!(
        written.is_empty(),
        "written outside the target: {written:?}"
    );
}
