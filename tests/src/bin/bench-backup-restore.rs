//! Backup and restore time and the server's peak memory for namespaces of N ConfigMaps, on the
//! local cluster. Prints a Markdown table (docs/benchmarks.md says how to run it).
//!
//! cargo build --release -p ark && cargo run --release -p ark-tests --bin bench-backup-restore -- 100 1000 10000

use std::process::Command;
use std::time::{Duration, Instant};

use ark_api::{Backup, Restore};
use ark_tests::{ArkServer, Cluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};

fn ark(cluster: &Cluster, binary: &str, args: &[&str]) {
    let status = Command::new(binary)
        .args(args)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run ark");
    assert!(status.success(), "ark {args:?} failed");
}

async fn wait_done<K>(api: Api<K>, name: &str, done: impl Fn(&K) -> bool)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::time::timeout(
        Duration::from_secs(1800),
        await_condition(api, name, move |o: Option<&K>| o.is_some_and(&done)),
    )
    .await
    .expect("finished within 30 minutes")
    .expect("watch");
}

#[tokio::main]
async fn main() {
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("counts are numbers"))
        .collect();
    let counts = if counts.is_empty() {
        vec![100, 1000, 10000]
    } else {
        counts
    };
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    println!("| ConfigMaps | backup (s) | restore (s) | server peak RSS (MiB) | tarball (KiB) |");
    println!("|---:|---:|---:|---:|---:|");
    for count in counts {
        let ark_ns = cluster.namespace("bench-ark").await;
        let app = cluster.namespace("bench-app").await;
        let bucket = tempfile::tempdir().unwrap();
        let ns = ark_ns.name.as_str();
        ark(
            &cluster,
            &binary,
            &[
                "backup-location",
                "create",
                "default",
                "--default",
                "--provider",
                "file",
                "--bucket",
                bucket.path().to_str().unwrap(),
                "-n",
                ns,
            ],
        );
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &app.name);
        futures::stream::iter(0..count)
            .map(|i| {
                let api = config_maps.clone();
                async move {
                    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                        "metadata": { "name": format!("cm-{i:05}"), "labels": { "bench": "true" } },
                        "data": { "payload": "x".repeat(512) },
                    }))
                    .unwrap();
                    api.create(&PostParams::default(), &cm).await.map(|_| ())
                }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<_>>()
            .await
            .expect("create config maps");

        let server = ArkServer::start(&binary, &cluster, ns);
        let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
        let started = Instant::now();
        ark(
            &cluster,
            &binary,
            &[
                "backup",
                "create",
                "b1",
                "--include-namespaces",
                &app.name,
                "-n",
                ns,
            ],
        );
        wait_done(backups, "b1", |b: &Backup| b.phase().is_terminal()).await;
        let backup_time = started.elapsed();

        let namespaces: Api<Namespace> = Api::all(client.clone());
        let uid = namespaces
            .get(&app.name)
            .await
            .unwrap()
            .metadata
            .uid
            .unwrap();
        namespaces
            .delete(&app.name, &DeleteParams::default())
            .await
            .unwrap();
        tokio::time::timeout(
            Duration::from_secs(600),
            await_condition(namespaces, &app.name, conditions::is_deleted(&uid)),
        )
        .await
        .expect("namespace deleted")
        .unwrap();

        let restores: Api<Restore> = Api::namespaced(client.clone(), ns);
        let started = Instant::now();
        ark(
            &cluster,
            &binary,
            &["restore", "create", "r1", "--from-backup", "b1", "-n", ns],
        );
        wait_done(restores, "r1", |r: &Restore| r.phase().is_terminal()).await;
        let restore_time = started.elapsed();
        let restored = config_maps
            .list(&kube::api::ListParams::default().labels("bench=true"))
            .await
            .unwrap()
            .items
            .len();
        assert_eq!(restored, count, "every ConfigMap restored");

        let peak = server.peak_rss_mib();
        let tarball = std::fs::metadata(bucket.path().join("backups/b1/b1.tar.gz"))
            .map_or(0, |m| m.len())
            / 1024;
        println!(
            "| {count} | {:.1} | {:.1} | {peak:.0} | {tarball} |",
            backup_time.as_secs_f64(),
            restore_time.as_secs_f64()
        );
    }
}
