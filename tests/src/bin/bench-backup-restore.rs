//! Backup and restore of a workload by ark and, with `--velero DIR`, by Velero (its server and AWS
//! plugin from DIR, as local processes), on the same local cluster, the same SeaweedFS bucket and
//! the same workload, one tool after the other. Each tool is timed from the creation of its Backup
//! or Restore object to its final phase (no CLI in between); each server's peak memory is its
//! VmHWM. The floor of a restore is measured in the same run: the benchmark creating the same
//! objects itself, 32 at a time, once at the start and once right after deleting them, as a
//! restore does. Prints a Markdown table (docs/benchmarks.md says how to run it).
//!
//! Workloads: `N` or `configmaps:N` (N ConfigMaps of 512 bytes in one namespace),
//! `namespaces:N` (N namespaces of 10 such ConfigMaps each), `secrets:N` (N Secrets of 1 MiB in
//! one namespace).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-backup-restore [--velero DIR] 100 1000 10000 namespaces:1000 secrets:200

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ark_tests::bench::{Server, Workload, create_workload, delete_namespaces, run_operation, tool};
use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster, unique_name};
use kube::Client;
use kube::api::{Api, DynamicObject};

/// What one tool's backup and restore of the application came to.
struct Measured {
    backup: Duration,
    restore: Duration,
    /// ark's: `ark restore create --dry-run` of the same backup once restored (every item is
    /// asked of the API server, found, compared and planned as skipped).
    dry_run: Option<Duration>,
    peak_mib: f64,
}

/// `ark restore create --dry-run` of backup `bench` in `ns`, by the CLI `binary`: how long it took;
/// every item must be planned as skipped (the restore put them all back).
fn dry_run(cluster: &Cluster, binary: &str, ns: &str) -> Duration {
    let started = Instant::now();
    let mut command = std::process::Command::new(binary);
    command
        .args(["restore", "create", "--from-backup", "bench", "--dry-run"])
        .args(["-o", "json", "-n", ns])
        .env("KUBECONFIG", &cluster.kubeconfig);
    let output = ark_tests::output_within(&mut command, Duration::from_secs(600));
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "the dry run: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let items = plan["items"].as_array().unwrap();
    let not_skipped: Vec<_> = items.iter().filter(|i| i["action"] != "skip").collect();
    assert!(not_skipped.is_empty(), "planned otherwise: {not_skipped:?}");
    took
}

/// Backs the application namespaces up, deletes them and restores them, with the server `start`
/// starts in a namespace of its own; checks that every object is back. With `preview` (ark's CLI),
/// previews the same restore once it is done.
async fn measure(
    cluster: &Cluster,
    client: &Client,
    workload: Workload,
    namespaces: &[String],
    run: &str,
    start: impl AsyncFnOnce(&str) -> Server,
    preview: Option<&str>,
) -> Measured {
    let (tool_ns, server) = tool(cluster, client, start).await;
    let ns = tool_ns.name.as_str();
    let (backup, phase) = run_operation(
        client,
        ns,
        "Backup",
        "bench",
        serde_json::json!({ "includedNamespaces": namespaces, "storageLocation": "default" }),
    )
    .await;
    assert_eq!(phase, "Completed", "the backup");
    delete_namespaces(client, namespaces).await;
    let (restore, phase) = run_operation(
        client,
        ns,
        "Restore",
        "bench",
        serde_json::json!({ "backupName": "bench" }),
    )
    .await;
    assert_eq!(phase, "Completed", "the restore");
    let restored = Api::<DynamicObject>::all_with(client.clone(), &workload.resource())
        .list_metadata(&kube::api::ListParams::default().labels(&format!("bench={run}")))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(restored, workload.objects(), "every object restored");
    let dry_run = preview.map(|binary| dry_run(cluster, binary, ns));
    let peak_mib = server.peak_rss_mib();
    // Once the server is stopped, Velero's finalizer would keep the tool's namespace Terminating
    // (and the next runs busier).
    drop(server);
    ark_tests::velero::release_restores(client, ns).await;
    Measured {
        backup,
        restore,
        dry_run,
        peak_mib,
    }
}

#[tokio::main]
async fn main() {
    let mut velero: Option<PathBuf> = None;
    let mut workloads: Vec<Workload> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--velero" => velero = Some(args.next().expect("--velero DIR").into()),
            workload => workloads.push(Workload::parse(workload)),
        }
    }
    if workloads.is_empty() {
        workloads = [100, 1000, 10000].map(Workload::ConfigMaps).to_vec();
    }
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    println!(
        "| workload | floor: create them, 32 at a time, first / after a deletion (s) | ark backup (s) | Velero backup (s) \
         | ark restore (s) | Velero restore (s) | ark restore --dry-run (s) | server peak RSS ark / Velero (MiB) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for workload in workloads {
        let run = unique_name("bench-app");
        let namespaces: Vec<String> = (0..workload.namespaces())
            .map(|i| format!("{run}-{i:04}"))
            .collect();
        let started = Instant::now();
        create_workload(&client, workload, &namespaces, &run).await;
        let first = started.elapsed();
        let ark = measure(
            &cluster,
            &client,
            workload,
            &namespaces,
            &run,
            async |ns: &str| Server::Ark(ArkServer::start(&binary, &cluster, ns)),
            Some(&binary),
        )
        .await;
        // The floor in a restore's conditions: right after the namespaces' deletion (the API
        // server and etcd still settling from it), as both tools' restores run.
        delete_namespaces(&client, &namespaces).await;
        let started = Instant::now();
        create_workload(&client, workload, &namespaces, &run).await;
        let floor = started.elapsed();
        let velero = match &velero {
            Some(dir) => Some(
                measure(
                    &cluster,
                    &client,
                    workload,
                    &namespaces,
                    &run,
                    async |ns: &str| {
                        Server::Velero(VeleroServer::start_from(dir, &cluster, ns).await)
                    },
                    None,
                )
                .await,
            ),
            None => None,
        };
        delete_namespaces(&client, &namespaces).await;
        let seconds = |d: Duration| format!("{:.2}", d.as_secs_f64());
        println!(
            "| {} | {} / {} | {} | {} | {} | {} | {} | {:.0} / {} |",
            workload.describe(),
            seconds(first),
            seconds(floor),
            seconds(ark.backup),
            velero.as_ref().map_or("-".into(), |v| seconds(v.backup)),
            seconds(ark.restore),
            velero.as_ref().map_or("-".into(), |v| seconds(v.restore)),
            ark.dry_run.map_or("-".into(), seconds),
            ark.peak_mib,
            velero
                .as_ref()
                .map_or("-".into(), |v| format!("{:.0}", v.peak_mib)),
        );
    }
}
