//! Pod volume data on the real node, by ark's node agent and by Velero's, one after the other (both
//! take the host's network), each with its server and its own bucket prefix, on the same volumes:
//! - `large`, 1 GiB in 4 files of random bytes, and `small`, 100,000 files of 4 KiB, each the
//!   `emptyDir` of a pod of its own, filled from the host;
//! - per tool and volume: a first backup, a second of the unchanged volume, and a restore of the
//!   second into a namespace of its own (the pod made anew, its data written before it starts),
//!   each timed from the creation of its Backup or Restore to its final phase, and each restored
//!   volume compared with the original;
//! - the agents' peak RSS: VmHWM sampled every 100 ms from the host, for ark's agent, Velero's
//!   agent and the pod Velero's agent makes per request (`velero pod-volume backup|restore`);
//! - the floor, in the same run: reading the volume (`tar cf /dev/null`), then writing its bytes to
//!   S3 in 20 MiB objects, two at a time, and reading them back into files (bench-repository's
//!   `--op upload|download`).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-pod-volumes [--trees large,small] [--scale 1.0]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ark_tests::bench::{make_tree, run_operation};
use ark_tests::kopia::{RestoredBy, assert_same_tree};
use ark_tests::node_agent::Installed;
use ark_tests::velero::VeleroWithAgent;
use ark_tests::{Cluster, is_pod_running, unique_name, wait_for};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;

/// The processes whose memory is sampled, by their command line's first two words.
const AGENTS: [(&str, &str); 3] = [
    ("ark agent", "/ark\0node-agent\0"),
    ("Velero agent", "/velero\0node-agent\0"),
    ("Velero per-request pod", "/velero\0pod-volume\0"),
];

/// The peak VmHWM (MiB) of each kind of agent process since the last [`Sampler::reset`].
#[derive(Clone, Default)]
struct Sampler {
    peaks: Arc<Mutex<BTreeMap<&'static str, f64>>>,
}

impl Sampler {
    fn start() -> Sampler {
        let sampler = Sampler::default();
        let peaks = sampler.peaks.clone();
        std::thread::spawn(move || {
            loop {
                for (kind, pid) in agent_processes() {
                    let mib = ark_tests::peak_rss_mib(pid);
                    let mut peaks = peaks.lock().unwrap();
                    let peak = peaks.entry(kind).or_default();
                    *peak = peak.max(mib);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        sampler
    }

    /// Forgets the peaks, and the long-lived agents' own (`clear_refs` 5 resets VmHWM).
    fn reset(&self) {
        for (_, pid) in agent_processes() {
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        }
        self.peaks.lock().unwrap().clear();
    }

    fn peak(&self, kind: &str) -> f64 {
        self.peaks
            .lock()
            .unwrap()
            .get(kind)
            .copied()
            .unwrap_or_default()
    }
}

fn agent_processes() -> Vec<(&'static str, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            AGENTS
                .iter()
                .find(|(_, start)| cmdline.starts_with(start.as_bytes()))
                .map(|(kind, _)| (*kind, pid))
        })
        .collect()
}

/// One operation of one tool: its time and the agents' peak memory meanwhile.
#[derive(Clone, Copy, Default)]
struct Cost {
    seconds: f64,
    /// The tool's agent; for Velero, its agent and the pod it made for the request, which run
    /// together.
    agent_mib: f64,
    request_pod_mib: f64,
}

struct Tool {
    name: &'static str,
    ns: String,
}

/// Runs a Backup or Restore to its end with `sampler` watching; it must complete.
async fn measured(
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
    // The last samples of a request pod that ended between two.
    std::thread::sleep(Duration::from_millis(150));
    let (agent, request_pod) = match tool.name {
        "ark" => (sampler.peak("ark agent"), 0.0),
        _ => (
            sampler.peak("Velero agent"),
            sampler.peak("Velero per-request pod"),
        ),
    };
    eprintln!(
        "bench-pod-volumes: {} {kind} {name}: {:.1} s, agent {agent:.0} MiB, request pod {request_pod:.0} MiB",
        tool.name,
        took.as_secs_f64()
    );
    Cost {
        seconds: took.as_secs_f64(),
        agent_mib: agent,
        request_pod_mib: request_pod,
    }
}

/// The host directory of volume `data` of pod `name`.
async fn volume_of(cluster: &Cluster, ns: &str, name: &str) -> PathBuf {
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

/// The three operations of `tool` on the volume of pod `kind` in `app`, each restored volume
/// compared with `original`.
async fn run_tool(
    cluster: &Cluster,
    sampler: &Sampler,
    tool: &Tool,
    app: &str,
    kind: &str,
    original: &Path,
) -> [Cost; 3] {
    let backup = serde_json::json!({
        "includedNamespaces": [app],
        "labelSelector": { "matchLabels": { "tree": kind } },
        "ttl": "24h0m0s",
    });
    let first = measured(
        cluster,
        sampler,
        tool,
        "Backup",
        &format!("{kind}-1"),
        backup.clone(),
    )
    .await;
    let second = measured(
        cluster,
        sampler,
        tool,
        "Backup",
        &format!("{kind}-2"),
        backup,
    )
    .await;
    let target = unique_name(&format!("restored-{}", tool.name.to_lowercase()));
    let restore = measured(
        cluster,
        sampler,
        tool,
        "Restore",
        &format!("{kind}-restore"),
        serde_json::json!({
            "backupName": format!("{kind}-2"),
            "namespaceMapping": { app: target },
        }),
    )
    .await;
    let restored = volume_of(cluster, &target, kind).await;
    if tool.name == "Velero" {
        // Velero's agent writes its done mark as root; its helper (user 1000) cannot remove it.
        std::fs::remove_dir_all(restored.join(".velero")).unwrap();
    }
    assert_same_tree(
        &restored,
        original,
        if tool.name == "ark" {
            RestoredBy::Ark
        } else {
            RestoredBy::Kopia
        },
    );
    delete_namespace(cluster, &target).await;
    [first, second, restore]
}

async fn delete_namespace(cluster: &Cluster, name: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.client().await);
    let namespace = namespaces.get(name).await.unwrap();
    namespaces.delete(name, &Default::default()).await.unwrap();
    ark_tests::wait_deleted(namespaces, &namespace, Duration::from_secs(300)).await;
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
                "name": "sleep", "image": ark_tests::BUSYBOX,
                "command": ["sleep", "36000"],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }))
}

/// Wall seconds of `command`, which must succeed.
fn floor(mut command: std::process::Command) -> f64 {
    let started = Instant::now();
    let output = ark_tests::output_within(&mut command, Duration::from_secs(3600));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let bin = std::env::current_exe().unwrap();
    let bin = bin.parent().unwrap();
    let ark = bin.join("ark");
    assert!(
        ark.is_file(),
        "{} is not built: cargo build --release -p ark -p ark-tests --bins",
        ark.display()
    );
    let image = format!("ark.local/ark:bench-{}", std::process::id());
    cluster.import_binaries(&[&ark], &image);
    let sampler = Sampler::start();

    // The volumes, filled once from the host; both tools read the same bytes.
    let app = cluster.namespace("bench-volumes").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    let mut volumes = BTreeMap::new();
    for kind in &trees {
        pods.create(&PostParams::default(), &volume_pod(&cluster, kind))
            .await
            .unwrap();
        let volume = volume_of(&cluster, &app.name, kind).await;
        eprint!("bench-pod-volumes: filling the {kind} volume... ");
        make_tree(kind, &volume, scale);
        let size = ark_tests::kopia::tree_bytes(&volume);
        eprintln!("{} MiB", size >> 20);
        volumes.insert(kind.clone(), (volume, size));
    }

    // The floor of each volume.
    let mut floors = BTreeMap::new();
    for (kind, (volume, _)) in &volumes {
        let read = floor({
            let mut c = std::process::Command::new("tar");
            c.args(["cf", "/dev/null", "-C"]).arg(volume).arg(".");
            c
        });
        let prefix = unique_name("bench-pod-volumes/floor");
        let op = |what: &str, dir: &Path| {
            let mut c = std::process::Command::new(bin.join("bench-repository"));
            c.args(["--op", what, &prefix]).arg(dir);
            floor(c)
        };
        let write = op("upload", volume);
        let scratch = tempfile::tempdir_in("/var/tmp").unwrap();
        let download = op("download", &scratch.path().join(kind));
        floors.insert(kind.clone(), (read, write, download));
    }

    let mut costs: BTreeMap<(String, &str), [Cost; 3]> = BTreeMap::new();
    // ark first.
    let prefix = unique_name("bench-pod-volumes/ark");
    let installed = Installed::install(&cluster, &ark, &image, &prefix, None).await;
    let tool = Tool {
        name: "ark",
        ns: installed.ns.clone(),
    };
    for (kind, (volume, _)) in &volumes {
        let run = run_tool(&cluster, &sampler, &tool, &app.name, kind, volume).await;
        costs.insert((kind.clone(), "ark"), run);
    }
    installed.uninstall(&cluster).await;
    // Then Velero.
    let prefix = unique_name("bench-pod-volumes/velero");
    let velero = VeleroWithAgent::start(&cluster, &prefix).await;
    let tool = Tool {
        name: "Velero",
        ns: velero.ns.name.clone(),
    };
    for (kind, (volume, _)) in &volumes {
        let run = run_tool(&cluster, &sampler, &tool, &app.name, kind, volume).await;
        costs.insert((kind.clone(), "Velero"), run);
    }
    velero.stop(&cluster).await;

    let mut lines = vec![
        "| volume | step | ark (s) | Velero (s) | ark ÷ Velero | floor (s) | ark agent peak RSS (MiB) | Velero agent + request pod peak RSS (MiB) |".to_string(),
        "|---|---|---:|---:|---:|---|---:|---:|".to_string(),
    ];
    for (kind, (_, size)) in &volumes {
        let (read, write, download) = floors[kind];
        let ark = costs[&(kind.clone(), "ark")];
        let velero = costs[&(kind.clone(), "Velero")];
        let steps = [
            ("first backup", format!("read {read:.1} + write {write:.1}")),
            ("unchanged backup", format!("read {read:.1}")),
            ("restore", format!("download and write {download:.1}")),
        ];
        for (i, (step, floor)) in steps.iter().enumerate() {
            lines.push(format!(
                "| {kind} ({} MiB) | {step} | {:.1} | {:.1} | {:.2} | {floor} | {:.0} | {:.0} + {:.0} |",
                size >> 20,
                ark[i].seconds,
                velero[i].seconds,
                ark[i].seconds / velero[i].seconds,
                ark[i].agent_mib,
                velero[i].agent_mib,
                velero[i].request_pod_mib,
            ));
        }
    }
    println!("{}", lines.join("\n"));
}
