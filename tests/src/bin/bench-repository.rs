//! Volume data in kopia's format, by ark (crates/ark-kopia) and by the kopia CLI v0.16.0 (the
//! one Velero v1.18 links), one after the other into the same SeaweedFS, on the same trees:
//! - 1 GiB in 4 files of random bytes, and 100,000 files of 4 KiB;
//! - the first snapshot, a second one of the unchanged tree, a restore to an empty directory, and
//!   a verification of the latest snapshot: sampled (ark: every content looked up, one file in
//!   64 read; kopia: `--verify-files-percent=0`) and reading every byte (`=100`);
//! - wall time, CPU seconds and peak RSS of each command, under GNU time;
//! - the bytes the second snapshot added to the bucket;
//! - the floor, in the same run: reading the tree (`tar cf /dev/null`) and writing its bytes to
//!   S3 in 20 MiB objects (kopia's pack size), two at a time; for restores, reading those objects
//!   back and writing them to files; for verifications, reading them back only.
//!
//! Each ark operation runs as a process of its own (this program, `--op ...`), so that its peak
//! RSS is its own. kopia keeps its caches in a fresh directory per tree, as a new node would.
//!
//! cargo build --release -p ark-tests --bin bench-repository
//! target/release/bench-repository [--trees large,small] [--scale 1.0]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use ark_kopia::Repository;
use ark_kopia::repository::{Reading, SnapshotOptions, VerifyProgress};
use ark_kopia::snapshot::{RestoreCounts, SourceInfo};
use ark_tests::bench::{CommandCost, make_tree, under_gnu_time};
use ark_tests::kopia::{Kopia, repository_store};
use ark_tests::{Cluster, unique_name};

const PASSWORD: &str = "static-passw0rd";
fn source(kind: &str) -> SourceInfo {
    SourceInfo {
        host: "default".into(),
        user_name: "default".into(),
        path: format!("snapshot-pod-volume/kopia/bench/{kind}/data"),
    }
}

/// `--op snapshot|restore|verify-sampled|verify-data|upload|download|read PREFIX DIR`: one ark
/// operation, in a process of its own.
async fn op(args: &[String]) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (what, prefix, dir) = (&args[0], &args[1], PathBuf::from(&args[2]));
    let kind = dir.file_name().unwrap().to_string_lossy().to_string();
    let cluster = Cluster::get();
    let (store, root) = repository_store(&cluster, prefix);
    match what.as_str() {
        "snapshot" => {
            let repo = match Repository::open(store.clone(), root.clone(), PASSWORD).await {
                Ok(r) => r,
                Err(ark_kopia::Error::NotARepository(_)) => {
                    Repository::create(store, root, PASSWORD).await.unwrap()
                }
                Err(e) => panic!("{e}"),
            };
            let parent = repo.snapshots().await.unwrap().pop().map(|s| s.manifest);
            let options = SnapshotOptions {
                parent,
                ..SnapshotOptions::default()
            };
            repo.create_snapshot(&dir, source(&kind), options)
                .await
                .unwrap();
        }
        "restore" => {
            let repo = Repository::open(store, root, PASSWORD).await.unwrap();
            let latest = repo.snapshots().await.unwrap().pop().unwrap();
            let entry = latest.manifest.root_entry.unwrap();
            repo.restore(&entry, &dir, &RestoreCounts::default())
                .await
                .unwrap();
        }
        "verify-sampled" | "verify-data" => {
            let repo = Repository::open(store, root, PASSWORD).await.unwrap();
            let latest = repo.snapshots().await.unwrap().pop().unwrap();
            let reading = match what.as_str() {
                "verify-data" => Reading::All,
                _ => Reading::Sample { one_in: 64 },
            };
            let errors = repo
                .verify(&[latest], reading, &VerifyProgress::default())
                .await;
            assert_eq!(errors, Vec::<String>::new());
        }
        "upload" => {
            use futures::StreamExt as _;
            use object_store::ObjectStoreExt as _;
            // The tree's bytes, concatenated and cut into 20 MiB objects, two uploads at once.
            let mut files = Vec::new();
            collect_files(&dir, &mut files);
            let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(2);
            let reader = std::thread::spawn(move || {
                let mut buffer = Vec::with_capacity(20 << 20);
                for f in files {
                    buffer.extend_from_slice(&std::fs::read(f).unwrap());
                    if buffer.len() >= 20 << 20 {
                        tx.blocking_send(std::mem::replace(
                            &mut buffer,
                            Vec::with_capacity(20 << 20),
                        ))
                        .unwrap();
                    }
                }
                if !buffer.is_empty() {
                    tx.blocking_send(buffer).unwrap();
                }
            });
            tokio_stream_of(rx)
                .enumerate()
                .map(|(i, bytes)| {
                    let (store, path) = (store.clone(), root.clone().join(format!("floor-{i}")));
                    async move { store.put(&path, bytes.into()).await.unwrap() }
                })
                .buffer_unordered(2)
                .collect::<Vec<_>>()
                .await;
            reader.join().unwrap();
        }
        "download" | "read" => {
            use futures::{StreamExt as _, TryStreamExt as _};
            use object_store::ObjectStoreExt as _;
            // The floor's objects back, each written to a file of DIR (`read`: not written), two
            // at a time.
            let write = what == "download";
            std::fs::create_dir_all(&dir).unwrap();
            let objects: Vec<_> = store.list(Some(&root)).try_collect().await.unwrap();
            futures::stream::iter(objects)
                .map(|meta| {
                    let (store, dir) = (store.clone(), dir.clone());
                    async move {
                        let bytes = store
                            .get(&meta.location)
                            .await
                            .unwrap()
                            .bytes()
                            .await
                            .unwrap();
                        let name = meta.location.filename().unwrap().to_string();
                        if !write {
                            return;
                        }
                        tokio::task::spawn_blocking(move || {
                            std::fs::write(dir.join(name), bytes).unwrap()
                        })
                        .await
                        .unwrap();
                    }
                })
                .buffer_unordered(2)
                .collect::<Vec<_>>()
                .await;
        }
        other => panic!("no op {other:?}"),
    }
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
) -> impl futures::Stream<Item = Vec<u8>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

async fn bucket_bytes(cluster: &Cluster, prefix: &str) -> u64 {
    use futures::TryStreamExt as _;
    let (store, root) = repository_store(cluster, prefix);
    let all: Vec<_> = store.list(Some(&root)).try_collect().await.unwrap();
    all.iter().map(|m| m.size).sum()
}

struct Run {
    first: CommandCost,
    second: CommandCost,
    restore: CommandCost,
    second_bytes: u64,
    verify_sampled: CommandCost,
    verify_data: CommandCost,
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--op") {
        return op(&args[1..]).await;
    }
    let (trees, scale) = ark_tests::bench::tree_args(&args);
    let cluster = Cluster::get();
    let me = std::env::current_exe().unwrap();
    let kopia_bin = ark_tests::kopia::binary();
    let work =
        tempfile::tempdir_in(std::env::var("ARK_BENCH_DIR").unwrap_or_else(|_| "/var/tmp".into()))
            .unwrap();
    let mut lines = vec![
        "| tree | step | ark | kopia | floor |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    for kind in &trees {
        let tree = work.path().join(kind);
        eprint!("bench-repository: making the {kind} tree... ");
        make_tree(kind, &tree, scale);
        let size: u64 = {
            let mut files = Vec::new();
            collect_files(&tree, &mut files);
            files.iter().map(|f| f.metadata().unwrap().len()).sum()
        };
        eprintln!("{} MiB", size >> 20);

        let read_floor = under_gnu_time({
            let mut c = Command::new("tar");
            c.args(["cf", "/dev/null", "-C"]).arg(&tree).arg(".");
            c
        });
        let floor_prefix = unique_name("bench-repository/floor");
        let floor_op = |what: &str, dir: &Path| {
            let mut c = Command::new(&me);
            c.args(["--op", what, &floor_prefix]).arg(dir);
            under_gnu_time(c)
        };
        let write_floor = floor_op("upload", &tree);
        let downloaded = work.path().join(format!("{kind}-floor"));
        let download_floor = floor_op("download", &downloaded);
        std::fs::remove_dir_all(&downloaded).unwrap();
        let read_back_floor = floor_op("read", &downloaded);
        std::fs::remove_dir_all(&downloaded).unwrap();

        let ark_prefix = unique_name("bench-repository/ark");
        let ark_op = |what: &str, dir: &Path| {
            let mut c = Command::new(&me);
            c.args(["--op", what, &ark_prefix]).arg(dir);
            // glibc's allocator as the node agent sets it (`mallopt` in crates/ark/src/main.rs);
            // a verification as `ark backup verify` runs it, with glibc's defaults (the CLI
            // does not set it).
            if !what.starts_with("verify") {
                c.env("MALLOC_MMAP_THRESHOLD_", (128 << 10).to_string());
            }
            under_gnu_time(c)
        };
        let first = ark_op("snapshot", &tree);
        let before = bucket_bytes(&cluster, &ark_prefix).await;
        let second = ark_op("snapshot", &tree);
        let second_bytes = bucket_bytes(&cluster, &ark_prefix).await - before;
        let restored = work.path().join(format!("{kind}-ark-restored"));
        let restore = ark_op("restore", &restored);
        std::fs::remove_dir_all(&restored).unwrap();
        let ark = Run {
            first,
            second,
            restore,
            second_bytes,
            verify_sampled: ark_op("verify-sampled", &tree),
            verify_data: ark_op("verify-data", &tree),
        };

        let kopia_prefix = unique_name("bench-repository/kopia");
        let kopia = Kopia::new(PASSWORD);
        kopia.create(&cluster, &kopia_prefix);
        let kopia_op = |args: &[&str]| {
            let mut c = Command::new(&kopia_bin);
            c.arg(format!("--config-file={}", kopia.config_file().display()));
            c.args(args);
            for (k, v) in kopia.environment() {
                c.env(k, v);
            }
            under_gnu_time(c)
        };
        let tree_arg = tree.display().to_string();
        let first = kopia_op(&["snapshot", "create", &tree_arg]);
        let before = bucket_bytes(&cluster, &kopia_prefix).await;
        let second = kopia_op(&["snapshot", "create", &tree_arg]);
        let second_bytes = bucket_bytes(&cluster, &kopia_prefix).await - before;
        let latest = kopia.snapshots().pop().unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let restored = work.path().join(format!("{kind}-kopia-restored"));
        let restore = kopia_op(&[
            "snapshot",
            "restore",
            &latest,
            &restored.display().to_string(),
        ]);
        std::fs::remove_dir_all(&restored).unwrap();
        let kopia_run = Run {
            first,
            second,
            restore,
            second_bytes,
            verify_sampled: kopia_op(&["snapshot", "verify", "--verify-files-percent=0"]),
            verify_data: kopia_op(&["snapshot", "verify", "--verify-files-percent=100"]),
        };

        let label = format!("{kind} ({} MiB)", size >> 20);
        let cell =
            |c: CommandCost| format!("{:.1} s, {:.1} CPU s, {:.0} MiB", c.wall, c.cpu, c.rss_mib);
        lines.push(format!(
            "| {label} | first snapshot | {} | {} | read {:.1} s + write {:.1} s |",
            cell(ark.first),
            cell(kopia_run.first),
            read_floor.wall,
            write_floor.wall
        ));
        lines.push(format!(
            "| {label} | unchanged snapshot | {} | {} | read {:.1} s |",
            cell(ark.second),
            cell(kopia_run.second),
            read_floor.wall
        ));
        lines.push(format!(
            "| {label} | bytes added by it | {} ({:.3} %) | {} ({:.3} %) | 0 |",
            ark.second_bytes,
            ark.second_bytes as f64 * 100.0 / size as f64,
            kopia_run.second_bytes,
            kopia_run.second_bytes as f64 * 100.0 / size as f64
        ));
        lines.push(format!(
            "| {label} | restore | {} | {} | download and write {:.1} s |",
            cell(ark.restore),
            cell(kopia_run.restore),
            download_floor.wall
        ));
        lines.push(format!(
            "| {label} | verify, sampled (kopia: `--verify-files-percent=0`) | {} | {} | ark's restore {:.1} s |",
            cell(ark.verify_sampled),
            cell(kopia_run.verify_sampled),
            ark.restore.wall
        ));
        lines.push(format!(
            "| {label} | verify, every byte (kopia: `=100`) | {} | {} | read back {:.1} s |",
            cell(ark.verify_data),
            cell(kopia_run.verify_data),
            read_back_floor.wall
        ));
        lines.push(format!(
            "| {label} | ark's verify ÷ ark's restore (sampled), ÷ floor (every byte) | {:.2}, {:.2} | | |",
            ark.verify_sampled.wall / ark.restore.wall.max(0.001),
            ark.verify_data.wall / read_back_floor.wall.max(0.001)
        ));
        lines.push(format!(
            "| {label} | ark ÷ kopia (first, unchanged, restore) | {:.2}, {:.2}, {:.2} | | ark ÷ floor (first): {:.2} |",
            ark.first.wall / kopia_run.first.wall,
            ark.second.wall / kopia_run.second.wall,
            ark.restore.wall / kopia_run.restore.wall,
            ark.first.wall / (read_floor.wall + write_floor.wall).max(0.001)
        ));
        std::fs::remove_dir_all(&tree).unwrap();
    }
    let mut out = std::io::stdout();
    writeln!(out, "{}", lines.join("\n")).unwrap();
}
