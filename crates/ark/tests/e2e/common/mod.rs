//! Running the `ark` binary as users do.

#![allow(dead_code)] // each test file uses its own part of this module

pub mod block;
pub mod database;
pub mod node_agent;
pub mod setup;
pub mod volume_policies;

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

/// Delegates `namespace` to the ark serving `ark_ns` (its people's requests are mirrored there),
/// and has Pod Security enforce the `baseline` level in it.
pub async fn delegate(cluster: &Cluster, namespace: &str, ark_ns: &str) {
    let label = serde_json::json!({ "metadata": { "labels": {
        "ark.io/tenant-of": ark_ns,
        "pod-security.kubernetes.io/enforce": "baseline",
    } } });
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(cluster.client().await)
        .patch(
            namespace,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(label),
        )
        .await
        .unwrap();
}

/// ark's image, made from this build by scripts/image.sh (the binary the tests run, at /ark) and
/// imported into the real node of `cluster`; its name. Made once per test process.
pub fn ark_image(cluster: &Cluster) -> &'static str {
    static IMAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IMAGE.get_or_init(|| {
        let tag = format!("ark.local/ark:test-{}", std::process::id());
        cluster.import_binaries(&[std::path::Path::new(ARK)], &tag);
        tag
    })
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
