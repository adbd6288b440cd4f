//! A location holding N backups, synced into a fresh namespace by ark's server and by Velero's:
//! the time until every Backup is in the cluster, each server's peak memory once it has lived a
//! while with them (its controllers having looked at each), ark's memory held then (resident, not
//! a passing peak), and `ark backup get` over them; beside
//! the floor measured in the same run: listing the bucket's backups, reading each one's
//! `velero-backup.json` and creating its Backup, 16 at a time.
//!
//! The backups are one real backup (ark's, of 20 ConfigMaps) copied under N names at a fresh
//! prefix; each tool reads that prefix as a read-only location, in a namespace of its own, its
//! server started once the location is there (sync every 2 s, as the tests run both).
//!
//! bash scripts/cluster.sh up && export $(cat .cluster/cluster.env)
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-sync 10 1000 10000 [--velero-up-to 1000]
//!
//! Velero's server syncs about 14 backups a second; above `--velero-up-to` (default: every size)
//! its column is left empty.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ark_api::Backup;
use ark_storage::BackupStore;
use ark_tests::bench::{s3_location_at, wait_available};
use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster, unique_name};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

/// How long a server lives with the synced backups before its peak memory is read: its periodic
/// controllers (garbage collection, schedules) have looked at each by then.
const SETTLE: Duration = Duration::from_secs(20);

struct Args {
    counts: Vec<usize>,
    velero_up_to: usize,
}

fn args() -> Args {
    let mut parsed = Args {
        counts: Vec::new(),
        velero_up_to: usize::MAX,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--velero-up-to" => {
                let value = args.next().expect("--velero-up-to needs a value");
                parsed.velero_up_to = value.parse().expect("--velero-up-to takes a number");
            }
            count => parsed.counts.push(count.parse().unwrap_or_else(|_| {
                panic!("usage: bench-sync COUNT... [--velero-up-to N] (not a count: {count:?})")
            })),
        }
    }
    if parsed.counts.is_empty() {
        parsed.counts = vec![10, 1000];
    }
    parsed
}

/// One tool's sync of N backups.
#[derive(Clone, Copy, Default)]
struct Synced {
    seconds: f64,
    peak_mib: f64,
    /// Resident once settled (ark's server only).
    held_mib: f64,
}

#[tokio::main]
async fn main() {
    let args = args();
    let ark = std::env::current_exe().unwrap().with_file_name("ark");
    assert!(ark.is_file(), "{} is not built", ark.display());
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let source = source_backup(&cluster, &client, &ark).await;

    let mut rows = Vec::new();
    for &count in &args.counts {
        let prefix = unique_name("bench-sync");
        let store = ark_storage::open(&cluster.s3_location(&prefix)).unwrap();
        copies(&source, &store, count).await;
        eprintln!("bench-sync: {count} backups written under {prefix}");

        let ns = cluster.namespace("bench-sync-ark").await;
        s3_location_at(&cluster, &client, &ns.name, &prefix, "ReadOnly").await;
        let started = Instant::now();
        let server = ArkServer::start(ark.to_str().unwrap(), &cluster, &ns.name);
        all_synced(&client, &ns.name, count, &server.log()).await;
        let seconds = started.elapsed().as_secs_f64();
        let get = backup_get(&cluster, &ark, &ns.name, count);
        tokio::time::sleep(SETTLE).await;
        let ark_synced = Synced {
            seconds,
            peak_mib: server.peak_rss_mib(),
            held_mib: server.rss_mib(),
        };
        drop(server);
        drop(ns);

        let velero_synced = match count <= args.velero_up_to {
            false => None,
            true => {
                let ns = cluster.namespace("bench-sync-velero").await;
                s3_location_at(&cluster, &client, &ns.name, &prefix, "ReadOnly").await;
                let started = Instant::now();
                let server = VeleroServer::start(&cluster, &ns.name).await;
                wait_available(&client, &ns.name).await;
                all_synced(&client, &ns.name, count, "").await;
                let seconds = started.elapsed().as_secs_f64();
                tokio::time::sleep(SETTLE).await;
                let synced = Synced {
                    seconds,
                    peak_mib: server.peak_rss_mib(),
                    held_mib: 0.0,
                };
                drop(server);
                Some(synced)
            }
        };

        let floor = floor(&cluster, &client, &store, count).await;
        eprintln!(
            "bench-sync: {count}: ark {:.1} s, {:.0} MiB peak, {:.0} held, get {get:.2} s; Velero {:?}; floor {floor:.1} s",
            ark_synced.seconds,
            ark_synced.peak_mib,
            ark_synced.held_mib,
            velero_synced.map(|v| (v.seconds, v.peak_mib)),
        );
        rows.push((count, ark_synced, get, velero_synced, floor));
    }

    println!(
        "| backups | ark: sync (s) | ark: server peak (MiB) | ark: server held (MiB) | `ark backup get` (s) | Velero: sync (s) | Velero: server peak (MiB) | floor (s) | ark ÷ Velero, time | ark ÷ Velero, memory | ark ÷ floor |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (count, ark, get, velero, floor) in rows {
        let (velero_seconds, velero_peak, time_ratio, memory_ratio) = match velero {
            Some(v) => (
                format!("{:.1}", v.seconds),
                format!("{:.0}", v.peak_mib),
                format!("{:.3}", ark.seconds / v.seconds),
                format!("{:.2}", ark.peak_mib / v.peak_mib),
            ),
            None => Default::default(),
        };
        println!(
            "| {count} | {:.1} | {:.0} | {:.0} | {get:.2} | {velero_seconds} | {velero_peak} | {floor:.1} | {time_ratio} | {memory_ratio} | {:.1} |",
            ark.seconds,
            ark.peak_mib,
            ark.held_mib,
            ark.seconds / floor,
        );
    }
}

/// A real backup's files: ark's backup `source` of a namespace of 20 ConfigMaps, made by its
/// server at a prefix of its own; each file's key and bytes.
async fn source_backup(cluster: &Cluster, client: &Client, ark: &Path) -> Vec<(String, Vec<u8>)> {
    let app = cluster.namespace("bench-sync-app").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &app.name);
    for i in 0..20 {
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("settings-{i}") }, "data": { "color": "blue" },
        }))
        .unwrap();
        config_maps
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
    let ns = cluster.namespace("bench-sync-source").await;
    let prefix = unique_name("bench-sync-source");
    s3_location_at(cluster, client, &ns.name, &prefix, "ReadWrite").await;
    let server = ArkServer::start(ark.to_str().unwrap(), cluster, &ns.name);
    wait_available(client, &ns.name).await;
    let output = ark_tests::output_within(
        Command::new(ark)
            .args(["backup", "create", "source", "--wait", "-n", &ns.name])
            .args(["--include-namespaces", &app.name])
            .env("KUBECONFIG", &cluster.kubeconfig),
        Duration::from_secs(120),
    );
    assert!(
        output.status.success(),
        "the source backup: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        server.log()
    );
    drop(server);
    let store = ark_storage::open(&cluster.s3_location(&prefix)).unwrap();
    let dir = ark_storage::Path::from(format!("{}/source", store.layout.backups_dir()));
    let mut files = Vec::new();
    for key in store.keys_under(&dir).await.unwrap() {
        let file = key.filename().unwrap().to_string();
        files.push((file, store.get(&key).await.unwrap().to_vec()));
    }
    files
}

/// The source backup's files under `count` names (`b-00000`, ...), its `velero-backup.json` naming
/// each; 64 writes at a time.
async fn copies(source: &[(String, Vec<u8>)], store: &BackupStore, count: usize) {
    let mut writes = Vec::new();
    for i in 0..count {
        let name = format!("b-{i:05}");
        for (file, bytes) in source {
            let bytes = match file.as_str() {
                "velero-backup.json" => {
                    let mut backup: serde_json::Value = serde_json::from_slice(bytes).unwrap();
                    backup["metadata"]["name"] = name.clone().into();
                    serde_json::to_vec(&backup).unwrap()
                }
                _ => bytes.clone(),
            };
            let file = file.replacen("source", &name, 1);
            let key =
                ark_storage::Path::from(format!("{}/{name}/{file}", store.layout.backups_dir()));
            writes.push((key, bytes::Bytes::from(bytes)));
        }
    }
    futures::stream::iter(writes)
        .map(|(key, bytes)| async move { store.put(&key, bytes).await })
        .buffer_unordered(64)
        .try_collect::<Vec<_>>()
        .await
        .expect("the copies written");
}

/// Waits until `count` Backups are in `ns` (a watch of their metadata, not a list polled); panics
/// past a deadline that grows with the count, with `log`.
async fn all_synced(client: &Client, ns: &str, count: usize, log: &str) {
    let backups: Api<PartialObjectMeta<Backup>> = Api::namespaced(client.clone(), ns);
    let mut seen = BTreeSet::new();
    let watch = watcher(backups, watcher::Config::default()).touched_objects();
    let counted = async {
        let mut watch = std::pin::pin!(watch);
        while let Some(object) = watch.try_next().await.expect("the watch of Backups") {
            seen.insert(object.metadata.name.unwrap_or_default());
            if seen.len() >= count {
                return;
            }
        }
    };
    let deadline = Duration::from_secs(120) + Duration::from_millis(200) * count as u32;
    if tokio::time::timeout(deadline, counted).await.is_err() {
        panic!("{count} backups were not synced into {ns} within {deadline:?}\n{log}");
    }
}

/// `ark backup get` in `ns`: its wall time; it must list `count` backups.
fn backup_get(cluster: &Cluster, ark: &Path, ns: &str, count: usize) -> f64 {
    let started = Instant::now();
    let output = ark_tests::output_within(
        Command::new(ark)
            .args(["backup", "get", "-n", ns])
            .env("KUBECONFIG", &cluster.kubeconfig),
        Duration::from_secs(120),
    );
    let seconds = started.elapsed().as_secs_f64();
    assert!(output.status.success(), "ark backup get failed");
    let listed = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with("b-"))
        .count();
    assert_eq!(listed, count, "ark backup get listed {listed} backups");
    seconds
}

/// The floor: the bucket's backups listed, each `velero-backup.json` read and its Backup created
/// in a namespace of its own, 16 at a time.
async fn floor(cluster: &Cluster, client: &Client, store: &BackupStore, count: usize) -> f64 {
    let ns = cluster.namespace("bench-sync-floor").await;
    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    let started = Instant::now();
    let names = store.backup_names().await.unwrap();
    assert_eq!(names.len(), count);
    futures::stream::iter(names)
        .map(|name| {
            let backups = backups.clone();
            async move {
                let bytes = store.get_backup_metadata(&name).await.unwrap();
                let mut backup: Backup = serde_json::from_slice(&bytes).unwrap();
                backup.metadata.resource_version = None;
                backup.metadata.uid = None;
                backup.metadata.namespace = None;
                backups.create(&PostParams::default(), &backup).await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("the floor's Backups created");
    let seconds = started.elapsed().as_secs_f64();
    let listed = backups.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), count);
    seconds
}
