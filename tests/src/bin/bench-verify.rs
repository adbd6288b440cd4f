//! `ark backup verify` beside a restore of the same backup, for issue 42's goal: without `--data`
//! at most 0.2× the time of the restore; with `--data` within 1.2× of reading the same bytes back
//! from the location. In one run, ark's release build installed with its node agent on the real
//! node (as bench-pod-volumes installs it), over an S3 location at a fresh prefix:
//! - the application: one namespace of `--objects N` ConfigMaps of 512 bytes (bench-backup-restore's
//!   workload) and a pod whose `emptyDir` holds the `large` tree (1 GiB in 4 files of random bytes,
//!   times `--scale`), filled from the host and backed up by the node agent (file-system backup);
//! - its backup, printed but not a result;
//! - timed: its restore into a new namespace (`namespaceMapping`), from the Restore's creation to
//!   Completed (its pod volume restored too); then `ark backup verify NAME` (sampled) and `ark
//!   backup verify NAME --data`, each a CLI process under GNU time (wall, CPU, peak RSS) with
//!   glibc's default allocator settings, as users run it, which must exit 0;
//! - the floor of `--data`: listing and getting every object of the namespace's kopia repository
//!   (`<prefix>/kopia/<namespace>/`), two at a time (bench-repository's `--op read`).
//!
//! bash scripts/cluster.sh up && export $(cat .cluster/cluster.env)
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-verify --objects 10000 --scale 1.0

use std::path::Path;
use std::process::Command;

use ark_tests::Cluster;
use ark_tests::bench::{
    CommandCost, Workload, create_workload, delete_namespaces, filled_volume, release_ark,
    run_operation, under_gnu_time,
};
use ark_tests::node_agent::Installed;
use ark_tests::unique_name;

/// `--objects N` (default 10,000) and `--scale F` (default 1.0).
fn args() -> (usize, f64) {
    let (mut objects, mut scale) = (10_000, 1.0);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--objects" => objects = value().parse().expect("--objects takes a number"),
            "--scale" => scale = value().parse().expect("--scale takes a number"),
            other => panic!("usage: bench-verify [--objects N] [--scale F] (unknown {other:?})"),
        }
    }
    (objects, scale)
}

/// `ark backup verify bench` and `flags` in `ns`, by the CLI `ark`, under GNU time; it must exit 0.
fn verify(cluster: &Cluster, ark: &Path, ns: &str, flags: &[&str]) -> CommandCost {
    let mut command = Command::new(ark);
    command
        .args(["backup", "verify", "bench"])
        .args(flags)
        .args(["-n", ns])
        .env("KUBECONFIG", &cluster.kubeconfig)
        .env("XDG_CONFIG_HOME", "/nonexistent/config")
        // The CLI keeps glibc's default mmap threshold (the server and the agent fix it): a fixed
        // one costs verification a quarter of its time in page faults (docs/benchmarks.md).
        .env_remove("MALLOC_MMAP_THRESHOLD_");
    under_gnu_time(command)
}

#[tokio::main]
async fn main() {
    let (objects, scale) = args();
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let (ark, image) = release_ark(&cluster);
    let installed = Installed::install(&cluster, &ark, &image, &unique_name("bench-verify")).await;
    let ns = installed.ns.as_str();

    let app = unique_name("bench-verify-app");
    let restored = format!("{app}-restored");
    eprintln!("bench-verify: creating {objects} ConfigMaps");
    create_workload(
        &client,
        Workload::ConfigMaps(objects),
        std::slice::from_ref(&app),
        &app,
    )
    .await;
    let (_, volume_bytes) = filled_volume(&cluster, &app, "large", scale).await;

    let backup = serde_json::json!({ "includedNamespaces": [app] });
    let (took, phase) = run_operation(&client, ns, "Backup", "bench", backup).await;
    assert_eq!(phase, "Completed", "the backup");
    eprintln!("bench-verify: backup: {:.1} s", took.as_secs_f64());

    let restore = serde_json::json!({
        "backupName": "bench",
        "namespaceMapping": { app.as_str(): restored },
    });
    let (took, phase) = run_operation(&client, ns, "Restore", "bench", restore).await;
    assert_eq!(phase, "Completed", "the restore");
    let restore = took.as_secs_f64();
    eprintln!("bench-verify: restore: {restore:.1} s");

    let sampled = verify(&cluster, &ark, ns, &[]);
    let data = verify(&cluster, &ark, ns, &["--data"]);
    // The floor's process writes nothing, but takes a directory.
    let scratch = tempfile::tempdir().unwrap();
    let floor = under_gnu_time({
        let bin = std::env::current_exe().unwrap();
        let mut c = Command::new(bin.with_file_name("bench-repository"));
        let repository = format!("{}/kopia/{app}", installed.prefix);
        c.args(["--op", "read", &repository])
            .arg(scratch.path().join("read"));
        c
    });

    let cell = |c: CommandCost| format!("{:.2} | {:.2} | {:.0}", c.wall, c.cpu, c.rss_mib);
    let lines = [
        format!(
            "| {objects} ConfigMaps, a {} MiB volume | wall (s) | CPU (s) | peak RSS (MiB) |",
            volume_bytes >> 20
        ),
        "|---|---:|---:|---:|".to_string(),
        format!("| restore into a new namespace | {restore:.2} | - | - |"),
        format!("| `ark backup verify` (sampled) | {} |", cell(sampled)),
        format!("| `ark backup verify --data` | {} |", cell(data)),
        format!(
            "| floor: list and GET the namespace's repository | {} |",
            cell(floor)
        ),
        format!(
            "| verify ÷ restore (goal ≤ 0.2) | {:.2} | | |",
            sampled.wall / restore.max(0.001)
        ),
        format!(
            "| verify --data ÷ floor (goal ≤ 1.2) | {:.2} | | |",
            data.wall / floor.wall.max(0.001)
        ),
    ];
    println!("{}", lines.join("\n"));

    delete_namespaces(&client, &[app, restored]).await;
    installed.uninstall(&cluster).await;
}
