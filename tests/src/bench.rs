//! What the benchmarks share: a tool's S3 location, and timing a Backup or Restore from its
//! creation to its final phase, on Velero's CRDs (either tool's server runs it).

use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Api, Client};

use crate::{Cluster, TestNamespace, fixtures, unique_name};

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
