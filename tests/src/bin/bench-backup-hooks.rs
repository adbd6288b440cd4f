//! Backup hooks at scale: N pods (kwok), each with a pre hook that takes a second (`sleep 1`, run
//! by kwok's Exec on this host), backed up by ark and, with `--velero DIR`, by Velero (its server
//! and AWS plugin from DIR), one tool after the other, each with a server and an S3 location of
//! its own. The floor is measured in the same run, by each tool: the same backup without hooks,
//! plus the hook's one second. Prints a Markdown table (docs/benchmarks.md says how to run it).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-backup-hooks [--velero DIR] 50

use std::path::PathBuf;
use std::time::Duration;

use ark_tests::bench::{run_operation, tool, velero_api};
use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster, allow_local_exec};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};

/// One tool's two backups of the pods.
struct Measured {
    plain: Duration,
    hooked: Duration,
}

async fn measure(
    cluster: &Cluster,
    client: &Client,
    app: &str,
    count: usize,
    start: impl AsyncFnOnce(&str) -> Box<dyn std::any::Any>,
) -> Measured {
    let (tool_ns, server) = tool(cluster, client, start).await;
    let ns = tool_ns.name.as_str();
    let (plain, phase) = run_operation(
        client,
        ns,
        "Backup",
        "plain",
        serde_json::json!({ "includedNamespaces": [app], "storageLocation": "default" }),
    )
    .await;
    assert_eq!(phase, "Completed", "the backup without hooks");
    let hooks = serde_json::json!({ "resources": [{ "name": "one-second",
        "pre": [{ "exec": { "command": ["sh", "-c", "sleep 1"] } }] }] });
    let (hooked, phase) = run_operation(
        client,
        ns,
        "Backup",
        "hooked",
        serde_json::json!({ "includedNamespaces": [app], "storageLocation": "default", "hooks": hooks }),
    )
    .await;
    assert_eq!(phase, "Completed", "the backup with hooks");
    let backup = velero_api(client, ns, "Backup")
        .get("hooked")
        .await
        .unwrap();
    assert_eq!(
        backup.data["status"]["hookStatus"]["hooksAttempted"], count,
        "every pod's hook ran"
    );
    drop(server);
    Measured { plain, hooked }
}

#[tokio::main]
async fn main() {
    let mut velero: Option<PathBuf> = None;
    let mut count = 50;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--velero" => velero = Some(args.next().expect("--velero DIR").into()),
            n => count = n.parse().expect("a count of pods"),
        }
    }
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    allow_local_exec(&client).await;
    let app = cluster.namespace("bench-pods").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    futures::stream::iter(0..count)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let mut pod = ark_tests::kwok_pod(&format!("p-{i:03}"), &["app"]);
                pod.metadata.labels = Some([("bench".to_string(), "hooks".to_string())].into());
                pods.create(&PostParams::default(), &pod).await.map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    for i in 0..count {
        ark_tests::wait_for(
            pods.clone(),
            &format!("p-{i:03}"),
            ark_tests::is_pod_running(),
            Duration::from_secs(300),
        )
        .await
        .unwrap();
    }

    let mut rows = vec![(
        "ark",
        measure(&cluster, &client, &app.name, count, async |ns: &str| {
            Box::new(ArkServer::start(&binary, &cluster, ns)) as Box<dyn std::any::Any>
        })
        .await,
    )];
    if let Some(dir) = &velero {
        rows.push((
            "Velero v1.18.3",
            measure(&cluster, &client, &app.name, count, async |ns: &str| {
                Box::new(VeleroServer::start_from(dir, &cluster, ns).await)
                    as Box<dyn std::any::Any>
            })
            .await,
        ));
    }
    println!(
        "| tool | pods (1 s pre hook each) | backup without hooks (s) | backup with hooks (s) | floor: without hooks + 1 s (s) | above the floor (s) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (tool, measured) in rows {
        let (plain, hooked) = (measured.plain.as_secs_f64(), measured.hooked.as_secs_f64());
        let floor = plain + 1.0;
        println!(
            "| {tool} | {count} | {plain:.2} | {hooked:.2} | {floor:.2} | {:.2} |",
            hooked - floor
        );
    }
}
