//! What the benchmarks share: a tool's S3 location, timing a Backup or Restore from its creation
//! to its final phase, on Velero's CRDs (either tool's server runs it), the peak memory of the
//! tools' processes, a command's cost under GNU time, the workloads of objects and the volumes
//! of pods, and the floor's commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};

use crate::velero::VeleroServer;
use crate::{ArkServer, Cluster, TestNamespace, fixtures, is_pod_running, unique_name, wait_for};

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
/// of its own, as both tools read it.
pub async fn s3_location(cluster: &Cluster, client: &Client, ns: &str) {
    s3_location_at(cluster, client, ns, &unique_name("bench"), "ReadWrite").await;
}

/// The same location at `prefix`, in `access_mode` (`ReadWrite`, `ReadOnly`).
pub async fn s3_location_at(
    cluster: &Cluster,
    client: &Client,
    ns: &str,
    prefix: &str,
    access_mode: &str,
) {
    let location = cluster.s3_location(prefix);
    fixtures::credentials_secret(client, ns, fixtures::CREDENTIALS_SECRET, &location).await;
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
        "metadata": { "name": "default" },
        "spec": {
            "provider": "aws",
            "default": true,
            "accessMode": access_mode,
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

/// Pod `kind` in `ns`, on the real node, its volume filled from the host with the tree `kind`
/// ([`make_tree`]): the volume's host directory and its bytes.
pub async fn filled_volume(cluster: &Cluster, ns: &str, kind: &str, scale: f64) -> (PathBuf, u64) {
    let pods: Api<Pod> = Api::namespaced(cluster.client().await, ns);
    pods.create(&PostParams::default(), &volume_pod(cluster, kind))
        .await
        .unwrap();
    let volume = volume_of(cluster, ns, kind).await;
    eprint!("bench: filling the {kind} volume... ");
    make_tree(kind, &volume, scale);
    let size = crate::kopia::tree_bytes(&volume);
    eprintln!("{} MiB", size >> 20);
    (volume, size)
}

/// The pod of volume `kind`: it only sleeps; the volume is filled from the host.
fn volume_pod(cluster: &Cluster, kind: &str) -> Pod {
    cluster.on_real_node(serde_json::json!({
        "metadata": {
            "name": kind,
            "labels": { "tree": kind },
            "annotations": { "backup.velero.io/backup-volumes": "data" },
        },
        "spec": {
            "containers": [{
                "name": "sleep", "image": crate::BUSYBOX,
                "command": ["sleep", "36000"],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }))
}

/// The host directory of volume `data` of pod `name`.
pub async fn volume_of(cluster: &Cluster, ns: &str, name: &str) -> PathBuf {
    let pods: Api<Pod> = Api::namespaced(cluster.client().await, ns);
    let pod = wait_for(pods, name, is_pod_running(), Duration::from_secs(300))
        .await
        .unwrap_or_else(|e| panic!("pod {ns}/{name} not running: {e:#}"));
    cluster
        .real_node_pods
        .as_ref()
        .expect("the real node")
        .join(pod.metadata.uid.unwrap())
        .join("volumes/kubernetes.io~empty-dir/data")
}

/// Kinds of processes, each known by its command line's start (`/ark\0node-agent\0`).
pub type ProcessKinds = [(&'static str, &'static str)];

/// The peak VmHWM (MiB) of each kind of process since the last [`Sampler::reset`], sampled every
/// 100 ms from the host.
#[derive(Clone)]
pub struct Sampler {
    kinds: &'static ProcessKinds,
    peaks: Arc<Mutex<BTreeMap<&'static str, f64>>>,
}

impl Sampler {
    pub fn start(kinds: &'static ProcessKinds) -> Sampler {
        let sampler = Sampler {
            kinds,
            peaks: Arc::default(),
        };
        let peaks = sampler.peaks.clone();
        std::thread::spawn(move || {
            loop {
                for (kind, pid) in processes(kinds) {
                    let mib = crate::peak_rss_mib(pid);
                    let mut peaks = peaks.lock().unwrap();
                    let peak = peaks.entry(kind).or_default();
                    *peak = peak.max(mib);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        sampler
    }

    /// Forgets the peaks, and the long-lived processes' own (`clear_refs` 5 resets VmHWM).
    pub fn reset(&self) {
        for (_, pid) in processes(self.kinds) {
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        }
        self.peaks.lock().unwrap().clear();
    }

    pub fn peak(&self, kind: &str) -> f64 {
        let peaks = self.peaks.lock().unwrap();
        peaks.get(kind).copied().unwrap_or_default()
    }
}

fn processes(kinds: &ProcessKinds) -> Vec<(&'static str, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (kinds.iter())
                .find(|(_, start)| cmdline.starts_with(start.as_bytes()))
                .map(|(kind, _)| (*kind, pid))
        })
        .collect()
}

/// Wall seconds of `command`, which must succeed.
pub fn floor(mut command: std::process::Command) -> f64 {
    let started = Instant::now();
    let output = crate::output_within(&mut command, Duration::from_secs(3600));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    started.elapsed().as_secs_f64()
}

/// One command's cost, as GNU time reports it: a child's peak RSS (`ru_maxrss`) starts from its
/// parent's, and GNU time's is about 1 MiB, where this program's is a runtime and a kube client.
#[derive(Clone, Copy, Default)]
pub struct CommandCost {
    pub wall: f64,
    pub cpu: f64,
    pub rss_mib: f64,
}

const GNU_TIME: &str = "/usr/bin/time";

/// Runs `command` (its environment too, variables it removes included) under GNU time, insisting
/// that it succeeds.
pub fn under_gnu_time(command: std::process::Command) -> CommandCost {
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut timed = std::process::Command::new(GNU_TIME);
    timed
        .arg("-o")
        .arg(report.path())
        .args(["-f", "%e %U %S %M"])
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    let output = crate::output_within(&mut timed, Duration::from_secs(3600));
    assert!(
        output.status.success(),
        "{command:?} failed ({:?}):\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(report.path()).unwrap();
    let f: Vec<f64> = text
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    assert_eq!(f.len(), 4, "GNU time printed {text:?}");
    CommandCost {
        wall: f[0],
        cpu: f[1] + f[2],
        rss_mib: f[3] / 1024.0,
    }
}

pub async fn delete_namespace(cluster: &Cluster, name: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client().await);
    let namespace = namespaces.get(name).await.unwrap();
    namespaces.delete(name, &Default::default()).await.unwrap();
    crate::wait_deleted(namespaces, &namespace, Duration::from_secs(300)).await;
}

/// The release build's `ark`, beside the running benchmark, imported into the real node as an
/// image of its own: its path and the image.
pub fn release_ark(cluster: &Cluster) -> (PathBuf, String) {
    let bin = std::env::current_exe().unwrap();
    let ark = bin.parent().unwrap().join("ark");
    assert!(
        ark.is_file(),
        "{} is not built: cargo build --release -p ark -p ark-tests --bins",
        ark.display()
    );
    let image = format!("ark.local/ark:bench-{}", std::process::id());
    cluster.import_binaries(&[&ark], &image);
    (ark, image)
}

/// One tool in a benchmark of its node agent: its namespace, and the kinds of processes (of a
/// [`Sampler`]) its agent and the helper pods it starts per request are.
pub struct Tool {
    pub name: &'static str,
    pub ns: String,
    pub agent: &'static str,
    pub helper: Option<&'static str>,
}

/// One operation of one tool: its time and the peak memory of its agent and of its helper pods
/// (which run beside the agent) meanwhile.
#[derive(Clone, Copy, Default)]
pub struct Cost {
    pub seconds: f64,
    pub agent_mib: f64,
    pub helper_mib: f64,
}

/// Runs a Backup or Restore to its end with `sampler` watching; it must complete.
pub async fn measured(
    cluster: &Cluster,
    sampler: &Sampler,
    tool: &Tool,
    kind: &str,
    name: &str,
    spec: serde_json::Value,
) -> Cost {
    let client = cluster.client().await;
    sampler.reset();
    let (took, phase) = run_operation(&client, &tool.ns, kind, name, spec).await;
    assert_eq!(phase, "Completed", "{} {kind} {name}", tool.name);
    // The last samples of a helper pod that ended between two.
    std::thread::sleep(Duration::from_millis(150));
    let agent = sampler.peak(tool.agent);
    let helper = tool.helper.map_or(0.0, |helper| sampler.peak(helper));
    eprintln!(
        "bench: {} {kind} {name}: {:.1} s, agent {agent:.0} MiB, helper pods {helper:.0} MiB",
        tool.name,
        took.as_secs_f64()
    );
    Cost {
        seconds: took.as_secs_f64(),
        agent_mib: agent,
        helper_mib: helper,
    }
}

/// `--trees large,small` (the default: both) and `--scale F` (default 1.0), the benchmarks' trees
/// as [`make_tree`] makes them.
pub fn tree_args(args: &[String]) -> (Vec<String>, f64) {
    let mut trees = vec!["large".to_string(), "small".to_string()];
    let mut scale = 1.0;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--trees" => trees = it.next().unwrap().split(',').map(str::to_string).collect(),
            "--scale" => scale = it.next().unwrap().parse().unwrap(),
            other => panic!("unknown argument {other:?}"),
        }
    }
    (trees, scale)
}

/// The floor of a volume's backup and restore (s): reading it (`tar cf /dev/null`), writing its
/// bytes to S3 in 20 MiB objects, two at a time, reading them back into files (bench-repository's
/// `--op upload|download`, beside the running benchmark), and making its files again (`cp -a` of
/// the volume, whose bytes are in the page cache by then).
pub struct VolumeFloor {
    pub read: f64,
    pub write: f64,
    pub download: f64,
    pub files: f64,
}

/// One step's floor: its parts, named, in seconds.
pub struct StepFloor(pub Vec<(&'static str, f64)>);

impl StepFloor {
    pub fn seconds(&self) -> f64 {
        self.0.iter().map(|(_, s)| s).sum()
    }
}

impl std::fmt::Display for StepFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = (self.0.iter())
            .map(|(part, s)| format!("{part} {s:.1}"))
            .collect();
        write!(f, "{}", parts.join(" + "))
    }
}

impl VolumeFloor {
    pub fn measure(volume: &Path, prefix: &str) -> VolumeFloor {
        let read = floor({
            let mut c = std::process::Command::new("tar");
            c.args(["cf", "/dev/null", "-C"]).arg(volume).arg(".");
            c
        });
        let bin = std::env::current_exe().unwrap();
        let op = |what: &str, dir: &Path| {
            let mut c = std::process::Command::new(bin.with_file_name("bench-repository"));
            c.args(["--op", what, prefix]).arg(dir);
            floor(c)
        };
        let write = op("upload", volume);
        let scratch = tempfile::tempdir_in("/var/tmp").unwrap();
        let download = op("download", &scratch.path().join("volume"));
        let files = floor({
            let mut c = std::process::Command::new("cp");
            c.arg("-a").arg(volume).arg(scratch.path().join("files"));
            c
        });
        VolumeFloor {
            read,
            write,
            download,
            files,
        }
    }

    /// The data's part of each step: the first backup, the unchanged backup, the restore.
    pub fn steps(&self) -> [StepFloor; 3] {
        [
            StepFloor(vec![("read", self.read), ("write", self.write)]),
            StepFloor(vec![("read", self.read)]),
            StepFloor(vec![("download", self.download), ("files", self.files)]),
        ]
    }
}

/// A node agent benchmark's table: per volume (`kind`, its bytes and the floor of each step), the
/// first backup, the unchanged backup and the restore of each tool, with the agents' peak memory
/// (Velero's agent and its `helper` pods together).
pub fn agents_table(
    volume: &str,
    helper: &str,
    volumes: &BTreeMap<String, (u64, [StepFloor; 3])>,
    costs: &BTreeMap<(String, &str), [Cost; 3]>,
) -> String {
    let mut lines = vec![
        format!(
            "| {volume} | step | ark (s) | Velero (s) | ark ÷ Velero | floor (s) | ark ÷ floor | ark agent peak RSS (MiB) | Velero agent + {helper} peak RSS (MiB) |"
        ),
        "|---|---|---:|---:|---:|---|---:|---:|---:|".to_string(),
    ];
    for (kind, (size, floors)) in volumes {
        let ark = costs[&(kind.clone(), "ark")];
        let velero = costs[&(kind.clone(), "Velero")];
        let steps = ["first backup", "unchanged backup", "restore"];
        for (i, (step, floor)) in steps.iter().zip(floors).enumerate() {
            lines.push(format!(
                "| {kind} ({} MiB) | {step} | {:.1} | {:.1} | {:.2} | {floor} | {:.2} | {:.0} | {:.0} + {:.0} |",
                size >> 20,
                ark[i].seconds,
                velero[i].seconds,
                ark[i].seconds / velero[i].seconds,
                ark[i].seconds / floor.seconds(),
                ark[i].agent_mib,
                velero[i].agent_mib,
                velero[i].helper_mib,
            ));
        }
    }
    lines.join("\n")
}

/// Each tool in turn, ark's first (installed with its node agent from `ark` and `image`), then
/// Velero's (its server and node agent, with `velero_flags`), each over a bucket prefix of its
/// own under `what`: `run` on each volume (`kind` and its host directory) with the tool; the
/// costs by volume and tool.
pub async fn each_tool(
    cluster: &Cluster,
    (ark, image): (&Path, &str),
    what: &str,
    velero_flags: &[&str],
    helper: &'static str,
    volumes: &BTreeMap<String, (PathBuf, u64)>,
    run: impl AsyncFn(&Tool, &str, &Path) -> [Cost; 3],
) -> BTreeMap<(String, &'static str), [Cost; 3]> {
    let mut costs = BTreeMap::new();
    let prefix = unique_name(&format!("{what}/ark"));
    let installed = crate::node_agent::Installed::install(cluster, ark, image, &prefix).await;
    let tool = Tool {
        name: "ark",
        ns: installed.ns.clone(),
        agent: "ark agent",
        helper: None,
    };
    for (kind, (volume, _)) in volumes {
        costs.insert((kind.clone(), "ark"), run(&tool, kind, volume).await);
    }
    installed.uninstall(cluster).await;
    let prefix = unique_name(&format!("{what}/velero"));
    let velero = crate::velero::VeleroWithAgent::start_with(cluster, &prefix, velero_flags).await;
    let tool = Tool {
        name: "Velero",
        ns: velero.ns.name.clone(),
        agent: "Velero agent",
        helper: Some(helper),
    };
    for (kind, (volume, _)) in volumes {
        costs.insert((kind.clone(), "Velero"), run(&tool, kind, volume).await);
    }
    velero.stop(cluster).await;
    costs
}

/// The data's floor of each volume, with its bytes.
pub fn floors(
    what: &str,
    volumes: &BTreeMap<String, (PathBuf, u64)>,
) -> BTreeMap<String, (u64, VolumeFloor)> {
    let prefix = unique_name(&format!("{what}/floor"));
    (volumes.iter())
        .map(|(kind, (volume, size))| {
            let floor = VolumeFloor::measure(volume, &format!("{prefix}/{kind}"));
            (kind.clone(), (*size, floor))
        })
        .collect()
}

/// A benchmark's application: objects of one kind, in namespaces the benchmark makes.
#[derive(Clone, Copy)]
pub enum Workload {
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
    pub fn parse(arg: &str) -> Workload {
        let (kind, count) = arg.split_once(':').unwrap_or(("configmaps", arg));
        let count = count.parse().expect("a workload's count is a number");
        match kind {
            "configmaps" => Workload::ConfigMaps(count),
            "namespaces" => Workload::Namespaces(count),
            "secrets" => Workload::Secrets(count),
            other => panic!("unknown workload {other:?}: configmaps, namespaces or secrets"),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Workload::ConfigMaps(n) => format!("{n} ConfigMaps"),
            Workload::Namespaces(n) => {
                format!("{n} namespaces x {CONFIG_MAPS_PER_NAMESPACE} ConfigMaps")
            }
            Workload::Secrets(n) => format!("{n} Secrets of 1 MiB"),
        }
    }

    pub fn namespaces(self) -> usize {
        match self {
            Workload::Namespaces(n) => n,
            _ => 1,
        }
    }

    pub fn objects(self) -> usize {
        match self {
            Workload::ConfigMaps(n) | Workload::Secrets(n) => n,
            Workload::Namespaces(n) => n * CONFIG_MAPS_PER_NAMESPACE,
        }
    }

    pub fn resource(self) -> ApiResource {
        let kind = match self {
            Workload::Secrets(_) => "Secret",
            _ => "ConfigMap",
        };
        ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", kind))
    }

    /// Object `i` of the workload, labelled `run`, and the namespace it goes in.
    pub fn object(self, namespaces: &[String], run: &str, i: usize) -> (String, DynamicObject) {
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
pub async fn create_workload(
    client: &Client,
    workload: Workload,
    namespaces: &[String],
    run: &str,
) {
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
pub async fn delete_namespaces(client: &Client, names: &[String]) {
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
