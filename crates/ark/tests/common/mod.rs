//! Running the `ark` binary as users do.

#![allow(dead_code)] // each test file uses its own part of this module

pub mod setup;

use std::process::{Command, Output};

use ark_tests::Cluster;

pub const ARK: &str = env!("CARGO_BIN_EXE_ark");

/// Runs `ark ARGS` against the local cluster (or against no cluster at all), with no settings of
/// `ark client config` (whatever the machine's user keeps).
pub fn ark(cluster: Option<&Cluster>, args: &[&str]) -> Output {
    ark_with_config(cluster, std::path::Path::new("/nonexistent/config"), args)
}

/// Runs `ark ARGS` as [`ark`] does, with `XDG_CONFIG_HOME` at `config_home`: where `ark client
/// config` keeps its settings.
pub fn ark_with_config(
    cluster: Option<&Cluster>,
    config_home: &std::path::Path,
    args: &[&str],
) -> Output {
    let mut command = Command::new(ARK);
    command
        .args(args)
        .env_remove("ARK_NAMESPACE")
        .env("XDG_CONFIG_HOME", config_home);
    match cluster {
        Some(cluster) => command.env("KUBECONFIG", &cluster.kubeconfig),
        None => command.env("KUBECONFIG", "/nonexistent/kubeconfig"),
    };
    command.stdin(std::process::Stdio::null());
    ark_tests::output_within(&mut command, ark_tests::COMMAND_LIMIT)
}

/// Runs ark in namespace `ns` and insists that it succeeds.
pub fn ark_ok(cluster: &Cluster, ns: &str, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["-n", ns]);
    let output = ark(Some(cluster), &all);
    assert!(
        output.status.success(),
        "ark {args:?} failed ({:?}):\n{}{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A `file` backup storage location `default`, made the default, in namespace `ns`; its directory
/// goes when the returned handle drops.
pub fn file_location(cluster: &Cluster, ns: &str) -> tempfile::TempDir {
    let bucket = tempfile::tempdir().unwrap();
    ark_ok(
        cluster,
        ns,
        &[
            "backup-location",
            "create",
            "default",
            "--default",
            "--provider",
            "file",
            "--bucket",
            bucket.path().to_str().unwrap(),
        ],
    );
    bucket
}

/// ark's image, made from this build by scripts/image.sh (the binary the tests run, at /ark) and
/// imported into the real node of `cluster`; its name. Made once per test process.
pub fn ark_image(cluster: &Cluster) -> &'static str {
    static IMAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IMAGE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let tarball = dir.path().join("ark.tar");
        let tag = format!("ark.local/ark:test-{}", std::process::id());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/image.sh");
        let output = Command::new("bash")
            .arg(script)
            .arg(&tarball)
            .args(["--binary", ARK, "--tag", &tag])
            .output()
            .expect("run scripts/image.sh");
        assert!(
            output.status.success(),
            "scripts/image.sh: {}",
            text(&output.stderr)
        );
        cluster.import_image(&tarball);
        tag
    })
}

/// What the test ground adds to an installed Deployment or DaemonSet (`container` its container),
/// and nothing else: its place (the real node) and its way to the API server. The local API server
/// listens on 127.0.0.1 only, which it cannot publish as the `kubernetes` Service's endpoint, and
/// there is no kube-proxy: the pod takes the host's network and is told the API server's address,
/// as in-cluster clients read it.
pub fn test_ground_patch(cluster: &Cluster, container: &str) -> serde_json::Value {
    let api_server = cluster.api_server_address();
    serde_json::json!({ "spec": { "template": { "spec": {
        "hostNetwork": true,
        "nodeSelector": { "ark.test/real-node": "true" },
        "tolerations": [{ "key": "ark.test/real-node", "operator": "Exists", "effect": "NoSchedule" }],
        "containers": [{ "name": container, "env": [
            { "name": "KUBERNETES_SERVICE_HOST", "value": api_server.ip().to_string() },
            { "name": "KUBERNETES_SERVICE_PORT", "value": api_server.port().to_string() },
        ] }],
    } } } })
}

/// The pid of the ark process running `command` (`server`, `node-agent`) for namespace `ns` in a
/// pod on the real node (seen from this host, as every container process there is).
pub fn ark_pid(command: &str, ns: &str) -> Option<u32> {
    let wanted = format!("{command}\0--namespace={ns}\0");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (cmdline.starts_with(b"/ark\0") && String::from_utf8_lossy(&cmdline).contains(&wanted))
                .then_some(pid)
        })
}
