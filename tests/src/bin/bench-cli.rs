//! The CLI's own cost, beside kubectl's: `ark --help` and `ark backup describe` (wall time and
//! peak memory), and the latency of dynamic completion of backup names, with the cluster up, out
//! of reach (a closed port) and hung (a port that accepts and never answers).
//!
//! Wall time is measured here, from spawn to reaped, with output to /dev/null. Peak memory comes
//! from separate runs under GNU time (`/usr/bin/time -f %M`): a child's `ru_maxrss` (what `wait4`
//! or GNU time reads) starts from the RSS of the process that forked it, so measured from this
//! program (tokio, a kube client) it would be this program's size; GNU time forks from itself,
//! about 1 MiB, below anything measured here.
//!
//! cargo build --release -p ark -p ark-tests --bins && target/release/bench-cli --runs 20

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use ark_api::Backup;
use ark_tests::Cluster;
use kube::Api;
use kube::api::PostParams;

/// The Backups the benchmark creates: `describe` goes through all of them, and completing `ni`
/// must give exactly the nightly ones.
const BACKUPS: [&str; 4] = ["nightly-1", "nightly-2", "nightly-3", "weekly-1"];

/// The completion goal: a shell waits on it at every key press.
const COMPLETION_GOAL_MS: f64 = 300.0;

struct Options {
    ark: PathBuf,
    runs: usize,
}

fn options() -> Options {
    let mut options = Options {
        ark: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/release/ark"
        )),
        runs: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .unwrap_or_else(|| panic!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--ark" => options.ark = PathBuf::from(value()),
            "--runs" => {
                options.runs = value().parse().expect("--runs takes a number");
                assert!(options.runs > 0, "--runs takes at least 1");
            }
            _ => panic!("usage: bench-cli [--ark PATH] [--runs N] (unknown argument {arg:?})"),
        }
    }
    assert!(
        options.ark.is_file(),
        "no ark binary at {}: build it with `cargo build --release -p ark -p ark-tests --bins`, or pass --ark PATH",
        options.ark.display()
    );
    assert!(
        std::path::Path::new(GNU_TIME).is_file(),
        "{GNU_TIME} (GNU time) is needed to measure peak memory"
    );
    options
}

const GNU_TIME: &str = "/usr/bin/time";

/// One command line, with its environment.
#[derive(Clone, Debug)]
struct Probe {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, OsString)>,
}

impl Probe {
    fn new(program: impl Into<PathBuf>, args: &[&str], env: &[(&str, OsString)]) -> Probe {
        Probe {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    fn command(&self, program: &std::ffi::OsStr) -> Command {
        let mut command = Command::new(program);
        command
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        command
    }

    /// One run with its output kept, to check it does what it should.
    fn output(&self) -> Output {
        let output = self
            .command(self.program.as_os_str())
            .args(&self.args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {self:?}: {e}"));
        assert!(
            output.status.success(),
            "{self:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Wall time of one run in ms, from spawn to reaped, output to /dev/null.
    fn wall_ms(&self) -> f64 {
        let mut command = self.command(self.program.as_os_str());
        command
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let started = Instant::now();
        let status = command
            .status()
            .unwrap_or_else(|e| panic!("cannot run {self:?}: {e}"));
        let elapsed = started.elapsed();
        assert!(status.success(), "{self:?} failed");
        elapsed.as_secs_f64() * 1000.0
    }

    /// Peak RSS of one run in KiB, as GNU time reports it (its `ru_maxrss`).
    fn peak_kib(&self) -> u64 {
        let report = tempfile::NamedTempFile::new().expect("temporary file");
        let status = self
            .command(GNU_TIME.as_ref())
            .arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(report.path())
            .arg(&self.program)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("cannot run {GNU_TIME}: {e}"));
        assert!(status.success(), "{self:?} failed under {GNU_TIME}");
        let text = std::fs::read_to_string(report.path()).expect("GNU time's report");
        text.lines()
            .rev()
            .find_map(|line| line.trim().parse().ok())
            .unwrap_or_else(|| panic!("no %M in GNU time's report: {text:?}"))
    }
}

/// What N runs of one command gave.
struct Figures {
    wall_ms: Vec<f64>,
    peak_kib: u64,
}

impl Figures {
    fn median_ms(&self) -> f64 {
        let mut sorted = self.wall_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        if sorted.len().is_multiple_of(2) {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        } else {
            sorted[middle]
        }
    }

    fn max_ms(&self) -> f64 {
        self.wall_ms.iter().copied().fold(0.0, f64::max)
    }

    fn peak_mib(&self) -> f64 {
        self.peak_kib as f64 / 1024.0
    }

    fn cell(&self) -> String {
        format!("{:.1} ms / {:.1} MiB", self.median_ms(), self.peak_mib())
    }
}

/// Runs each command `runs` times for wall time, then `runs` times under GNU time for memory, the
/// commands taking turns so that a disturbance of the machine falls on all of them. Each command
/// is a list of variants (the same command on different objects), run i taking variant i.
fn measure(commands: &[Vec<Probe>], runs: usize) -> Vec<Figures> {
    // Once each, untimed: caches (the page cache, kubectl's discovery cache) are warm for all.
    for variants in commands {
        for probe in variants {
            probe.output();
        }
    }
    let mut figures: Vec<Figures> = commands
        .iter()
        .map(|_| Figures {
            wall_ms: Vec::with_capacity(runs),
            peak_kib: 0,
        })
        .collect();
    for run in 0..runs {
        for (variants, figures) in commands.iter().zip(&mut figures) {
            figures
                .wall_ms
                .push(variants[run % variants.len()].wall_ms());
        }
    }
    for run in 0..runs {
        for (variants, figures) in commands.iter().zip(&mut figures) {
            figures.peak_kib = figures
                .peak_kib
                .max(variants[run % variants.len()].peak_kib());
        }
    }
    figures
}

/// A row of ark against kubectl with a goal of ark under `1/divisor` of kubectl, in time and memory.
fn versus_row(what: &str, ark: &Figures, kubectl: &Figures, divisor: f64) -> String {
    let time = ark.median_ms() / kubectl.median_ms();
    let memory = ark.peak_mib() / kubectl.peak_mib();
    let goal = 1.0 / divisor;
    let met = match (time < goal, memory < goal) {
        (true, true) => "yes".to_string(),
        (false, false) => "no".to_string(),
        (true, false) => "no (memory)".to_string(),
        (false, true) => "no (time)".to_string(),
    };
    format!(
        "| {what} | {} | {} | {time:.2} / {memory:.2} | < 1/{divisor} of kubectl's time and memory | {met} |",
        ark.cell(),
        kubectl.cell(),
    )
}

fn completion_row(what: &str, ark: &Figures) -> String {
    let met = if ark.max_ms() <= COMPLETION_GOAL_MS {
        "yes"
    } else {
        "no"
    };
    format!(
        "| {what} | {:.1} ms (max {:.1}) / {:.1} MiB | | | ≤ {COMPLETION_GOAL_MS} ms, slowest run | {met} |",
        ark.median_ms(),
        ark.max_ms(),
        ark.peak_mib()
    )
}

/// A port of 127.0.0.1 nothing listens on: bound by the system, then closed.
fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    listener.local_addr().unwrap()
}

/// A server that accepts connections and never says a word: a cluster that hangs (the TLS
/// handshake never completes). The connections are held until the program exits.
fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    address
}

#[tokio::main]
async fn main() {
    let options = options();
    let runs = options.runs;
    let ark = options.ark.as_path();
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let namespace = cluster.namespace("bench-cli").await;
    let ns = namespace.name.as_str();

    // A few Backups, as `ark backup create` would leave them with no server to take them: New.
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    for name in BACKUPS {
        let backup: Backup = serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": { "name": name, "labels": { "team": "shop" } },
            "spec": {
                "includedNamespaces": ["shop"], "excludedResources": ["events"],
                "storageLocation": "default", "ttl": "720h0m0s",
            },
        }))
        .unwrap();
        backups
            .create(&PostParams::default(), &backup)
            .await
            .unwrap_or_else(|e| panic!("create Backup {name}: {e}"));
    }

    let kubeconfig = [("KUBECONFIG", cluster.kubeconfig.clone().into_os_string())];
    let mut table = Vec::new();

    // 1. --help: the process's start, the command tree, the text.
    let help = measure(
        &[
            vec![Probe::new(ark, &["--help"], &kubeconfig)],
            vec![Probe::new("kubectl", &["--help"], &kubeconfig)],
        ],
        runs,
    );
    table.push(versus_row(
        "`ark --help` vs `kubectl --help`",
        &help[0],
        &help[1],
        5.0,
    ));

    // 2. One Backup read from the API server and printed, over the same objects.
    let ark_describe: Vec<Probe> = BACKUPS
        .iter()
        .map(|name| Probe::new(ark, &["backup", "describe", name, "-n", ns], &kubeconfig))
        .collect();
    let kubectl_get: Vec<Probe> = BACKUPS
        .iter()
        .map(|name| {
            Probe::new(
                "kubectl",
                &["get", "backup", name, "-n", ns, "-o", "yaml"],
                &kubeconfig,
            )
        })
        .collect();
    for (name, (ark, kubectl)) in BACKUPS.iter().zip(ark_describe.iter().zip(&kubectl_get)) {
        let described = String::from_utf8_lossy(&ark.output().stdout).into_owned();
        assert!(
            described.contains(name) && described.contains("New"),
            "ark backup describe {name} printed:\n{described}"
        );
        let got = String::from_utf8_lossy(&kubectl.output().stdout).into_owned();
        assert!(
            got.contains("apiVersion: velero.io/v1") && got.contains(&format!("name: {name}")),
            "kubectl get backup {name} printed:\n{got}"
        );
    }
    let describe = measure(&[ark_describe, kubectl_get], runs);
    table.push(versus_row(
        "`ark backup describe NAME` vs `kubectl get backup NAME -o yaml`",
        &describe[0],
        &describe[1],
        3.0,
    ));

    // 3. Completing `ark -n NS backup describe ni<TAB>`: the names from the API server, or nothing.
    let completing = |kubeconfig: PathBuf| {
        Probe::new(
            ark,
            &["--", "ark", "-n", ns, "backup", "describe", "ni"],
            &[
                ("COMPLETE", "bash".into()),
                ("_CLAP_COMPLETE_INDEX", "5".into()),
                ("KUBECONFIG", kubeconfig.into_os_string()),
            ],
        )
    };
    let unreachable_dir = tempfile::tempdir().unwrap();
    let hung_dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "completion of `ark -n NS backup describe ni`, cluster up",
            completing(cluster.kubeconfig.clone()),
            vec!["nightly-1", "nightly-2", "nightly-3"],
        ),
        (
            "the same, cluster out of reach (closed port on 127.0.0.1)",
            completing(
                cluster
                    .through(closed_port(), unreachable_dir.path())
                    .kubeconfig,
            ),
            vec![],
        ),
        (
            "the same, cluster hung (a port that accepts and never answers)",
            completing(cluster.through(silent_server(), hung_dir.path()).kubeconfig),
            vec![],
        ),
    ];
    for (what, probe, expected) in &cases {
        let output = String::from_utf8_lossy(&probe.output().stdout).into_owned();
        let mut names: Vec<&str> = output.split_whitespace().collect();
        names.sort_unstable();
        assert_eq!(
            &names, expected,
            "{what}: the completion printed {output:?}"
        );
    }
    let completion = measure(
        &cases
            .iter()
            .map(|(_, probe, _)| vec![probe.clone()])
            .collect::<Vec<_>>(),
        runs,
    );
    for ((what, _, _), figures) in cases.iter().zip(&completion) {
        table.push(completion_row(what, figures));
    }

    drop(namespace);
    println!(
        "{runs} runs of each; wall time is the median, memory the highest peak RSS of the runs."
    );
    println!();
    println!(
        "| what | ark (median ms / peak MiB) | kubectl (median ms / peak MiB) | ratio ark/kubectl (time / memory) | goal | met? |"
    );
    println!("|---|---:|---:|---:|---|---|");
    for row in table {
        println!("{row}");
    }
}
