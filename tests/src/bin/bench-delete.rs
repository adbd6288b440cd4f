//! `ark backup delete --all --confirm --wait` of N backups, each with Velero's full file set in
//! SeaweedFS and one restore (objects and data): total time and the server's peak memory, beside
//! the floor measured in the same run: the same S3 server batch-deleting the same keys, plus the
//! API server deleting the same objects with one `deletecollection` request per kind.
//!
//! cargo build --release -p ark -p ark-tests --bins && target/release/bench-delete 1000

use std::process::Command;
use std::time::{Duration, Instant};

use ark_api::{Backup, Restore};
use ark_storage::BackupStore;
use ark_tests::{ArkServer, Cluster, fixtures};
use futures::{StreamExt, TryStreamExt};
use kube::api::PostParams;
use kube::{Api, Client};

/// N backups, each with Velero's six files and a restore with its three, written straight to the
/// bucket and the API (as sync and earlier restores would have left them).
async fn populate(client: &Client, ns: &str, store: &BackupStore, count: usize) {
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    let restores: Api<Restore> = Api::namespaced(client.clone(), ns);
    futures::stream::iter(0..count)
        .map(|i| {
            let (backups, restores, store) = (backups.clone(), restores.clone(), store.clone());
            async move {
                let backup = format!("b-{i:05}");
                let restore = format!("r-{i:05}");
                let layout = &store.layout;
                let object: Backup = serde_json::from_value(serde_json::json!({
                    "apiVersion": "velero.io/v1", "kind": "Backup", "metadata": { "name": backup },
                    "spec": { "storageLocation": "default" }, "status": { "phase": "Completed" },
                }))
                .unwrap();
                let metadata = bytes::Bytes::from(serde_json::to_vec(&object).unwrap());
                let files = [
                    (layout.backup_metadata(&backup), metadata),
                    (layout.backup_contents(&backup), gzip(&tar_with_version())),
                    (layout.backup_log(&backup), gzip(b"time=\"2026-01-01T00:00:00Z\" level=info msg=\"done\"\n")),
                    (layout.backup_resource_list(&backup), gzip(b"{}")),
                    (layout.backup_results(&backup), gzip(b"{}")),
                    (layout.backup_volume_snapshots(&backup), gzip(b"null")),
                    (layout.backup_volume_info(&backup), gzip(b"[]")),
                    (layout.restore_log(&restore), gzip(b"")),
                    (layout.restore_results(&restore), gzip(b"{}")),
                    (layout.restore_resource_list(&restore), gzip(b"{}")),
                ];
                for (key, body) in files {
                    store.put(&key, body).await.map_err(|e| e.to_string())?;
                }
                backups.create(&PostParams::default(), &object).await.map_err(|e| e.to_string())?;
                let restore_object: Restore = serde_json::from_value(serde_json::json!({
                    "apiVersion": "velero.io/v1", "kind": "Restore", "metadata": { "name": restore },
                    "spec": { "backupName": backup }, "status": { "phase": "Completed" },
                }))
                .unwrap();
                restores.create(&PostParams::default(), &restore_object).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(())
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await
        .expect("populate");
}

fn gzip(data: &[u8]) -> bytes::Bytes {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap().into()
}

/// A tarball holding only `metadata/version`, as an empty backup's.
fn tar_with_version() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(5);
    header.set_mode(0o644);
    builder
        .append_data(&mut header, "metadata/version", &b"1.1.0"[..])
        .unwrap();
    builder.into_inner().unwrap()
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map_or(1000, |a| a.parse().expect("a count"));
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;

    // ark: the whole command, the server doing the work.
    let ark_ns = cluster.namespace("bench-del").await;
    let (flags, location) =
        fixtures::s3_location(&cluster, &client, &ark_ns.name, None, None).await;
    let store = ark_storage::open(&location).unwrap();
    let mut create = vec![
        "backup-location",
        "create",
        "default",
        "--default",
        "-n",
        &ark_ns.name,
    ];
    create.extend(flags.iter().map(String::as_str));
    assert!(
        Command::new(&binary)
            .args(&create)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .status()
            .unwrap()
            .success()
    );
    populate(&client, &ark_ns.name, &store, count).await;
    let server = ArkServer::start_with(
        &binary,
        &cluster,
        &ark_ns.name,
        &["--backup-sync-period", "1h"],
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests_before = api_requests(&client).await;
    let cpu_before = cpu(&server);
    let started = Instant::now();
    let status = Command::new(&binary)
        .args([
            "backup",
            "delete",
            "--all",
            "--confirm",
            "--wait",
            "-n",
            &ark_ns.name,
        ])
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    let ark_time = started.elapsed();
    let cpu_used: Vec<f64> = cpu(&server)
        .iter()
        .zip(cpu_before)
        .map(|(after, before)| after - before)
        .collect();
    let requests_per_backup = (api_requests(&client).await - requests_before) / count as f64;
    assert!(
        status.success(),
        "ark backup delete failed; server log:\n{}",
        server.log()
    );
    let peak = server.peak_rss_mib();
    drop(server);
    let left = store
        .keys_under(&store.layout.backups_dir())
        .await
        .unwrap()
        .len()
        + store
            .keys_under(&ark_storage::Path::from(format!(
                "{}/restores",
                location.prefix.clone().unwrap()
            )))
            .await
            .unwrap()
            .len();
    assert_eq!(left, 0, "keys left in the bucket");

    // The floor: the same keys deleted by S3 batch deletes, the same objects by the API server's
    // fastest path, one deletecollection request per kind.
    let collection_ns = cluster.namespace("bench-coll").await;
    let (_, collection_location) =
        fixtures::s3_location(&cluster, &client, &collection_ns.name, None, None).await;
    let collection_store = ark_storage::open(&collection_location).unwrap();
    populate(&client, &collection_ns.name, &collection_store, count).await;
    let floor_cpu_before = cluster_cpu();
    let started = Instant::now();
    collection_store
        .delete_under(&ark_storage::Path::from(
            collection_location.prefix.clone().unwrap(),
        ))
        .await
        .unwrap();
    let s3_time = started.elapsed();
    let started = Instant::now();
    let params = kube::api::DeleteParams::default();
    let list = kube::api::ListParams::default();
    Api::<Backup>::namespaced(client.clone(), &collection_ns.name)
        .delete_collection(&params, &list)
        .await
        .unwrap();
    Api::<Restore>::namespaced(client.clone(), &collection_ns.name)
        .delete_collection(&params, &list)
        .await
        .unwrap();
    let collection_time = started.elapsed();

    let floor = s3_time + collection_time;
    let floor_cpu: Vec<f64> = cluster_cpu()
        .iter()
        .zip(floor_cpu_before)
        .map(|(after, before)| after - before)
        .collect();
    let seconds = |cpu: &[f64]| Vec::from_iter(cpu.iter().map(|s| format!("{s:.1}"))).join(" / ");
    println!(
        "| backups (+1 restore each) | ark delete --all --wait (s) | server peak RSS (MiB) | floor: S3 batch delete (s) | floor: deletecollection per kind (s) | floor (s) | ark / floor | API requests per backup | CPU s, ark: {} | CPU s, floor: {} |",
        CPU_OF.join(" / "),
        CPU_OF[..3].join(" / ")
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|");
    println!(
        "| {count} | {:.1} | {peak:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {requests_per_backup:.1} | {} | {} |",
        ark_time.as_secs_f64(),
        s3_time.as_secs_f64(),
        collection_time.as_secs_f64(),
        floor.as_secs_f64(),
        ark_time.as_secs_f64() / floor.as_secs_f64(),
        seconds(&cpu_used),
        seconds(&floor_cpu),
    );
}

/// Whose CPU time the table shows while the command runs, besides the ark server's (the last
/// column): the cluster's processes, which share the machine's cores with it.
const CPU_OF: [&str; 4] = ["kube-apiserver", "etcd", "weed", "ark server"];

fn cpu(server: &ArkServer) -> Vec<f64> {
    let mut cpu = cluster_cpu();
    cpu.push(server.cpu_seconds());
    cpu
}

fn cluster_cpu() -> Vec<f64> {
    CPU_OF[..3]
        .iter()
        .map(|name| ark_tests::cpu_seconds_of(name))
        .collect()
}

/// Every request the API server has answered so far (`apiserver_request_total`).
async fn api_requests(client: &Client) -> f64 {
    let metrics = client
        .request_text(http::Request::get("/metrics").body(vec![]).unwrap())
        .await
        .expect("the API server's metrics");
    metrics
        .lines()
        .filter(|line| line.starts_with("apiserver_request_total{"))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}
