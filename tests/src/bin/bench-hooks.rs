//! Restore hooks at scale: N pods restored, each with one exec hook that takes a second (run by
//! kwok's Exec on this host), against the same restore without hooks. Pods run their hooks in
//! parallel, so the hooks should add far less than N seconds. Their floor is measured in the same
//! run: the time the plainly restored pods take to be Running (kwok as the kubelet), plus the
//! hook's one second.
//!
//! cargo build --release -p ark -p ark-tests --bins && target/release/bench-hooks 50

use std::process::Command;
use std::time::{Duration, Instant};

use ark_tests::{ArkServer, Cluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};

fn ark(binary: &str, cluster: &Cluster, args: &[&str]) -> f64 {
    let started = Instant::now();
    let status = Command::new(binary)
        .args(args)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ark {args:?} failed");
    started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map_or(50, |a| a.parse().expect("a count"));
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let gvk = GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "ClusterExec");
    let exec: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterExec",
        "metadata": { "name": "ark-tests-local-exec" }, "spec": { "execs": [{ "local": { "workDir": "/tmp" } }] },
    }))
    .unwrap();
    let _ = Api::<DynamicObject>::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
        .create(&PostParams::default(), &exec)
        .await;

    let ark_ns = cluster.namespace("bench-hooks").await;
    let app = cluster.namespace("bench-pods").await;
    let bucket = tempfile::tempdir().unwrap();
    let ns = ark_ns.name.as_str();
    ark(
        &binary,
        &cluster,
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
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    futures::stream::iter(0..count)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let pod: Pod = serde_json::from_value(serde_json::json!({
                    "metadata": { "name": format!("p-{i:03}"), "labels": { "bench": "hooks" } },
                    "spec": { "nodeSelector": { "type": "kwok" }, "containers": [{ "name": "app", "image": "busybox" }] },
                }))
                .unwrap();
                pods.create(&PostParams::default(), &pod).await.map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    let _server = ArkServer::start(&binary, &cluster, ns);
    ark(
        &binary,
        &cluster,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "-n",
            ns,
        ],
    );

    let hooks = bucket.path().join("hooks.yaml");
    std::fs::write(
        &hooks,
        "resources:\n- name: one-second\n  postHooks:\n  - exec: {command: [sh, -c, 'sleep 1']}\n",
    )
    .unwrap();
    let started = Instant::now();
    let without = ark(
        &binary,
        &cluster,
        &[
            "restore",
            "create",
            "plain",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &format!("{}:{}-plain", app.name, app.name),
            "--wait",
            "-n",
            ns,
        ],
    );
    let running = all_running(&client, &format!("{}-plain", app.name), count, started).await;
    let with = ark(
        &binary,
        &cluster,
        &[
            "restore",
            "create",
            "hooked",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &format!("{}:{}-hooked", app.name, app.name),
            "--hooks-file",
            hooks.to_str().unwrap(),
            "--wait",
            "-n",
            ns,
        ],
    );
    let restore: ark_api::Restore = Api::namespaced(client.clone(), ns)
        .get("hooked")
        .await
        .unwrap();
    let status = restore.status.unwrap().hook_status.unwrap();
    assert_eq!(status.hooks_attempted, Some(count as i64));
    // Velero leaves the count out when it is zero, and so does ark.
    assert_eq!(status.hooks_failed.unwrap_or(0), 0);
    for suffix in ["plain", "hooked"] {
        let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .delete(&format!("{}-{suffix}", app.name), &Default::default())
            .await;
    }
    let floor = running + 1.0 - without;
    println!(
        "| pods (1 s hook each) | restore without hooks (s) | its pods Running after (s) | restore with hooks (s) | hooks added (s) | floor: Running + 1 s, less the restore (s) | sequential would add (s) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {count} | {without:.2} | {running:.2} | {with:.2} | {:.2} | {floor:.2} | {count} |",
        with - without
    );
}

/// Seconds from `started` until the `count` pods of `namespace` are all Running (looked at every
/// 10 ms).
async fn all_running(
    client: &kube::Client,
    namespace: &str,
    count: usize,
    started: Instant,
) -> f64 {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    loop {
        let running = pods
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        if running == count {
            return started.elapsed().as_secs_f64();
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the restored pods never all ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
