//! What the benchmarks share: a tool's S3 location, and timing a Backup or Restore from its
//! creation to its final phase, on Velero's CRDs (either tool's server runs it).

use std::path::Path;
use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Api, Client};

use crate::velero::VeleroServer;
use crate::{ArkServer, Cluster, TestNamespace, fixtures, unique_name};

/// One tool's server in a benchmark, whose peak memory is one of the figures.
pub enum Server {
    Ark(ArkServer),
    Velero(VeleroServer),
}

impl Server {
    pub fn peak_rss_mib(&self) -> f64 {
        match self {
            Server::Ark(server) => server.peak_rss_mib(),
            Server::Velero(server) => server.peak_rss_mib(),
        }
    }
}

const FINAL: [&str; 4] = ["Completed", "PartiallyFailed", "Failed", "FailedValidation"];

pub fn velero_api(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("velero.io", "v1", kind));
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// Creates a `kind` object (`Backup`, `Restore`) named `name` and waits for its final phase: the time it took
/// and that phase.
pub async fn run_operation(
    client: &Client,
    ns: &str,
    kind: &str,
    name: &str,
    spec: serde_json::Value,
) -> (Duration, String) {
    let api = velero_api(client, ns, kind);
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": kind,
        "metadata": { "name": name }, "spec": spec,
    }))
    .unwrap();
    let started = Instant::now();
    api.create(&PostParams::default(), &object).await.unwrap();
    let done = await_condition(api, name, |o: Option<&DynamicObject>| {
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
pub async fn s3_location(cluster: &Cluster, client: &Client, ns: &str) {
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

pub async fn wait_available(client: &Client, ns: &str) {
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

/// A namespace of one tool's own, with its default S3 location, and the tool's server started
/// there by `start`, returned once the location is Available.
pub async fn tool<S>(
    cluster: &Cluster,
    client: &Client,
    start: impl AsyncFnOnce(&str) -> S,
) -> (TestNamespace, S) {
    let tool_ns = cluster.namespace("bench-tool").await;
    s3_location(cluster, client, &tool_ns.name).await;
    let server = start(&tool_ns.name).await;
    wait_available(client, &tool_ns.name).await;
    (tool_ns, server)
}

/// `n` bytes that do not compress, the same for the same `seed`.
pub fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = vec![0u8; n];
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    out
}

/// The benchmarks' trees: `large`, 1 GiB in 4 files of random bytes; `small`, 100,000 files of
/// 4 KiB in 100 directories (both times `scale`).
pub fn make_tree(kind: &str, root: &Path, scale: f64) {
    std::fs::create_dir_all(root).unwrap();
    match kind {
        "large" => {
            for i in 0..4u64 {
                let bytes = ((256 << 20) as f64 * scale) as usize;
                std::fs::write(
                    root.join(format!("disk-{i}.img")),
                    random_bytes(i + 7, bytes),
                )
                .unwrap();
            }
        }
        "small" => {
            let files = (100_000.0 * scale) as usize;
            for i in 0..files {
                let dir = root.join(format!("d{:03}", i / 1000));
                if i % 1000 == 0 {
                    std::fs::create_dir_all(&dir).unwrap();
                }
                std::fs::write(
                    dir.join(format!("f{i:06}")),
                    random_bytes(i as u64 + 1, 4096),
                )
                .unwrap();
            }
        }
        other => panic!("no tree {other:?}: large or small"),
    }
}
