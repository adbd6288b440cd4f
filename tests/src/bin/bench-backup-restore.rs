//! Backup and restore of N ConfigMaps by ark and, with `--velero DIR`, by Velero (its server and
//! AWS plugin from DIR, as local processes), on the same local cluster, the same SeaweedFS bucket
//! and the same workload, one tool after the other. Each tool is timed from the creation of its
//! Backup or Restore object to its final phase (no CLI in between); each server's peak memory is
//! its VmHWM. The floor of a restore is measured in the same run: the benchmark creating the same
//! ConfigMaps itself, 32 at a time. Prints a Markdown table (docs/benchmarks.md says how to run
//! it).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-backup-restore [--velero DIR] 100 1000 10000

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster, fixtures, unique_name};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};

const FINAL: [&str; 4] = ["Completed", "PartiallyFailed", "Failed", "FailedValidation"];

fn velero_api(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("velero.io", "v1", kind));
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// Creates a `kind` object (`Backup`, `Restore`) and waits for its final phase: the time it took
/// and that phase.
async fn run_operation(
    client: &Client,
    ns: &str,
    kind: &str,
    spec: serde_json::Value,
) -> (Duration, String) {
    let api = velero_api(client, ns, kind);
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": kind,
        "metadata": { "name": "bench" }, "spec": spec,
    }))
    .unwrap();
    let started = Instant::now();
    api.create(&PostParams::default(), &object).await.unwrap();
    let done = await_condition(api, "bench", |o: Option<&DynamicObject>| {
        o.and_then(|o| o.data["status"]["phase"].as_str())
            .is_some_and(|phase| FINAL.contains(&phase))
    });
    let finished = tokio::time::timeout(Duration::from_secs(3600), done)
        .await
        .expect("finished within an hour")
        .expect("watch")
        .expect("the object");
    let phase = finished.data["status"]["phase"]
        .as_str()
        .unwrap_or_default();
    (started.elapsed(), phase.to_string())
}

/// The default S3 location (credentials in the Secret `cloud-credentials`) in `ns`, under a prefix
/// of its own, as both tools read it; waits until the tool's server finds it Available.
async fn s3_location(cluster: &Cluster, client: &Client, ns: &str) {
    let location = cluster.s3_location(&unique_name("bench"));
    fixtures::credentials_secret(client, ns, fixtures::CREDENTIALS_SECRET, &location).await;
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
        "metadata": { "name": "default" },
        "spec": {
            "provider": "aws",
            "default": true,
            "objectStorage": { "bucket": location.bucket, "prefix": location.prefix },
            "config": location.config,
            "credential": { "name": fixtures::CREDENTIALS_SECRET, "key": "cloud" },
        },
    }))
    .unwrap();
    velero_api(client, ns, "BackupStorageLocation")
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

async fn wait_available(client: &Client, ns: &str) {
    let available = await_condition(
        velero_api(client, ns, "BackupStorageLocation"),
        "default",
        |o: Option<&DynamicObject>| o.is_some_and(|o| o.data["status"]["phase"] == "Available"),
    );
    tokio::time::timeout(Duration::from_secs(120), available)
        .await
        .expect("the location is Available within 2 minutes")
        .unwrap();
}

async fn delete_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let uid = namespaces.get(name).await.unwrap().metadata.uid.unwrap();
    namespaces
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(600),
        await_condition(namespaces, name, conditions::is_deleted(&uid)),
    )
    .await
    .expect("namespace deleted")
    .unwrap();
}

/// What one tool's backup and restore of the application came to.
struct Measured {
    backup: Duration,
    restore: Duration,
    peak_mib: f64,
}

enum Server {
    Ark(ArkServer),
    Velero(VeleroServer),
}

impl Server {
    fn peak_rss_mib(&self) -> f64 {
        match self {
            Server::Ark(server) => server.peak_rss_mib(),
            Server::Velero(server) => server.peak_rss_mib(),
        }
    }
}

/// Backs the application namespace up, deletes it and restores it, with the server `start` starts
/// in a namespace of its own; checks that all `count` ConfigMaps are back.
async fn measure(
    cluster: &Cluster,
    client: &Client,
    app: &str,
    count: usize,
    start: impl AsyncFnOnce(&str) -> Server,
) -> Measured {
    let tool_ns = cluster.namespace("bench-tool").await;
    let ns = tool_ns.name.as_str();
    s3_location(cluster, client, ns).await;
    let server = start(ns).await;
    wait_available(client, ns).await;
    let (backup, phase) = run_operation(
        client,
        ns,
        "Backup",
        serde_json::json!({ "includedNamespaces": [app], "storageLocation": "default" }),
    )
    .await;
    assert_eq!(phase, "Completed", "the backup");
    delete_namespace(client, app).await;
    let (restore, phase) = run_operation(
        client,
        ns,
        "Restore",
        serde_json::json!({ "backupName": "bench" }),
    )
    .await;
    assert_eq!(phase, "Completed", "the restore");
    let restored = Api::<ConfigMap>::namespaced(client.clone(), app)
        .list(&kube::api::ListParams::default().labels("bench=true"))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(restored, count, "every ConfigMap restored");
    Measured {
        backup,
        restore,
        peak_mib: server.peak_rss_mib(),
    }
}

#[tokio::main]
async fn main() {
    let mut velero: Option<PathBuf> = None;
    let mut counts: Vec<usize> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--velero" => velero = Some(args.next().expect("--velero DIR").into()),
            count => counts.push(count.parse().expect("counts are numbers")),
        }
    }
    if counts.is_empty() {
        counts = vec![100, 1000, 10000];
    }
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    println!(
        "| ConfigMaps | floor: create them, 32 at a time (s) | ark backup (s) | Velero backup (s) \
         | ark restore (s) | Velero restore (s) | server peak RSS ark / Velero (MiB) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for count in counts {
        let app = cluster.namespace("bench-app").await;
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &app.name);
        let started = Instant::now();
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
        let floor = started.elapsed();

        let ark = measure(&cluster, &client, &app.name, count, async |ns: &str| {
            Server::Ark(ArkServer::start(&binary, &cluster, ns))
        })
        .await;
        let velero = match &velero {
            Some(dir) => Some(
                measure(&cluster, &client, &app.name, count, async |ns: &str| {
                    Server::Velero(VeleroServer::start_from(dir, &cluster, ns).await)
                })
                .await,
            ),
            None => None,
        };
        let seconds = |d: Duration| format!("{:.2}", d.as_secs_f64());
        println!(
            "| {count} | {} | {} | {} | {} | {} | {:.0} / {} |",
            seconds(floor),
            seconds(ark.backup),
            velero.as_ref().map_or("-".into(), |v| seconds(v.backup)),
            seconds(ark.restore),
            velero.as_ref().map_or("-".into(), |v| seconds(v.restore)),
            ark.peak_mib,
            velero
                .as_ref()
                .map_or("-".into(), |v| format!("{:.0}", v.peak_mib)),
        );
    }
}
