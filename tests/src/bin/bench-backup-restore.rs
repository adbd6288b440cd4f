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

use ark_tests::bench::{Server, run_operation, tool};
use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster, unique_name};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};

/// What one tool's backup and restore of the application came to.
struct Measured {
    backup: Duration,
    restore: Duration,
    /// ark's: `ark restore create --dry-run` of the same backup once restored (every item is
    /// asked of the API server, found, compared and planned as skipped).
    dry_run: Option<Duration>,
    peak_mib: f64,
}

#[derive(Clone, Copy)]
enum Workload {
    /// N ConfigMaps of 512 bytes in one namespace.
    ConfigMaps(usize),
    /// N namespaces of `CONFIG_MAPS_PER_NAMESPACE` such ConfigMaps each.
    Namespaces(usize),
    /// N Secrets of `SECRET_BYTES` in one namespace.
    Secrets(usize),
}

const CONFIG_MAPS_PER_NAMESPACE: usize = 10;
/// A Secret's largest size (1 MiB) less room for its key.
const SECRET_BYTES: usize = (1 << 20) - 1024;

impl Workload {
    fn parse(arg: &str) -> Workload {
        let (kind, count) = arg.split_once(':').unwrap_or(("configmaps", arg));
        let count = count.parse().expect("a workload's count is a number");
        match kind {
            "configmaps" => Workload::ConfigMaps(count),
            "namespaces" => Workload::Namespaces(count),
            "secrets" => Workload::Secrets(count),
            other => panic!("unknown workload {other:?}: configmaps, namespaces or secrets"),
        }
    }

    fn describe(self) -> String {
        match self {
            Workload::ConfigMaps(n) => format!("{n} ConfigMaps"),
            Workload::Namespaces(n) => {
                format!("{n} namespaces x {CONFIG_MAPS_PER_NAMESPACE} ConfigMaps")
            }
            Workload::Secrets(n) => format!("{n} Secrets of 1 MiB"),
        }
    }

    fn namespaces(self) -> usize {
        match self {
            Workload::Namespaces(n) => n,
            _ => 1,
        }
    }

    fn objects(self) -> usize {
        match self {
            Workload::ConfigMaps(n) | Workload::Secrets(n) => n,
            Workload::Namespaces(n) => n * CONFIG_MAPS_PER_NAMESPACE,
        }
    }

    fn resource(self) -> ApiResource {
        let kind = match self {
            Workload::Secrets(_) => "Secret",
            _ => "ConfigMap",
        };
        ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", kind))
    }

    /// Object `i` of the workload, labelled `run`, and the namespace it goes in.
    fn object(self, namespaces: &[String], run: &str, i: usize) -> (String, DynamicObject) {
        let per_namespace = self.objects() / namespaces.len();
        let namespace = namespaces[i / per_namespace].clone();
        let metadata =
            serde_json::json!({ "name": format!("item-{i:05}"), "labels": { "bench": run } });
        let object = match self {
            Workload::Secrets(_) => serde_json::json!({
                "apiVersion": "v1", "kind": "Secret", "metadata": metadata,
                "stringData": { "payload": noise(SECRET_BYTES, i as u64) },
            }),
            _ => serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
                "data": { "payload": "x".repeat(512) },
            }),
        };
        (namespace, serde_json::from_value(object).unwrap())
    }
}

/// `len` letters and digits that do not compress much (xorshift), different for each `seed`.
fn noise(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// Runs `work` over `items`, 32 at a time, as the floor's client does.
async fn at_32_at_a_time<T, F>(items: impl IntoIterator<Item = T>, work: impl FnMut(T) -> F)
where
    F: std::future::Future<Output = Result<(), kube::Error>>,
{
    futures::stream::iter(items)
        .map(work)
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await
        .expect("the benchmark's own requests");
}

/// Creates the workload's namespaces and objects, 32 requests at a time: the floor of a restore.
async fn create_workload(client: &Client, workload: Workload, namespaces: &[String], run: &str) {
    at_32_at_a_time(namespaces, |name| {
        let api: Api<Namespace> = Api::all(client.clone());
        async move {
            let namespace: Namespace = serde_json::from_value(serde_json::json!({
                "metadata": { "name": name, "labels": { "ark.test/e2e": "true", "bench": run } }
            }))
            .unwrap();
            api.create(&PostParams::default(), &namespace)
                .await
                .map(|_| ())
        }
    })
    .await;
    let resource = workload.resource();
    at_32_at_a_time(0..workload.objects(), |i| {
        let (namespace, object) = workload.object(namespaces, run, i);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
        async move {
            api.create(&PostParams::default(), &object)
                .await
                .map(|_| ())
        }
    })
    .await;
}

/// Deletes the namespaces, 32 requests at a time, and waits until they are gone.
async fn delete_namespaces(client: &Client, names: &[String]) {
    at_32_at_a_time(names, |name| async move {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let Some(namespace) = namespaces.get_opt(name).await? else {
            return Ok(());
        };
        let uid = namespace.metadata.uid.unwrap_or_default();
        namespaces.delete(name, &DeleteParams::default()).await?;
        tokio::time::timeout(
            Duration::from_secs(600),
            await_condition(namespaces, name, conditions::is_deleted(&uid)),
        )
        .await
        .expect("namespace deleted within 10 minutes")
        .map(|_| ())
        .map_err(|e| kube::Error::Service(Box::new(e)))
    })
    .await;
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
