//! What ark prints, pinned with insta (`cargo insta review` after a deliberate change): every
//! command's `--help`, and `get` and `describe` of the same objects as a table, as text and as
//! JSON; and the JSON and YAML `get` prints applied back with kubectl, unchanged.

use crate::common;

use std::io::Write as _;

use ark_tests::Cluster;
use clap::CommandFactory as _;
use common::{ark, ark_ok, text};

/// Every command path: `[]`, `["backup"]`, `["backup", "create"]`, ...
fn command_paths(command: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(path.clone());
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut deeper = path.clone();
        deeper.push(sub.get_name().to_string());
        command_paths(sub, deeper, out);
    }
}

#[test]
fn every_command_s_help() {
    let mut paths = Vec::new();
    command_paths(&ark::cli::Cli::command(), Vec::new(), &mut paths);
    assert!(paths.len() > 20, "{paths:?}");
    for path in paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let output = ark(None, &args);
        assert!(output.status.success(), "{args:?}");
        let name = match path.is_empty() {
            true => "help-ark".to_string(),
            false => format!("help-ark-{}", path.join("-")),
        };
        insta::assert_snapshot!(name, text(&output.stdout));
    }
}

/// What varies from run to run in the test's objects, replaced by placeholders.
fn stable(text: &str, ns: &str) -> String {
    let mut out = text.replace(ns, "NS");
    for (pattern, placeholder) in [
        (
            r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z| \+0000 UTC)",
            "[time]",
        ),
        (r#""uid": "[0-9a-f-]+""#, r#""uid": "[uid]""#),
        (
            r#""resourceVersion": "\d+""#,
            r#""resourceVersion": "[rv]""#,
        ),
        // An age in a table (`0s`, `1s`): the time the test took.
        (r"  \d+s  ", "  [age]  "),
    ] {
        out = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&out, placeholder)
            .into_owned();
    }
    out
}

#[tokio::test]
async fn get_and_describe_as_table_text_and_json() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("snapshot").await;
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "nightly",
            "--include-namespaces",
            "shop",
            "--ttl",
            "24h",
            "-l",
            "app=web",
        ],
    );
    for (name, args) in [
        ("get-table", vec!["backup", "get", "--show-labels"]),
        ("get-json", vec!["backup", "get", "nightly", "-o", "json"]),
        ("describe-text", vec!["backup", "describe", "nightly"]),
        (
            "describe-json",
            vec!["backup", "describe", "nightly", "-o", "json"],
        ),
    ] {
        let printed = ark_ok(&cluster, &ns.name, &args);
        insta::assert_snapshot!(name, stable(&printed, &ns.name));
    }
}

/// `kubectl apply -f -` of `input`; its stdout.
fn kubectl_apply(cluster: &Cluster, input: &str) -> String {
    let mut kubectl = std::process::Command::new("kubectl")
        .args(["apply", "-f", "-", "--kubeconfig"])
        .arg(&cluster.kubeconfig)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    kubectl
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = kubectl.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout)
}

#[tokio::test]
async fn json_and_yaml_output_apply_back_unchanged() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("roundtrip").await;
    ark_ok(
        &cluster,
        &ns.name,
        &["backup", "create", "nightly", "--ttl", "24h"],
    );
    let spec = |ns: &str| {
        let printed = ark_ok(&cluster, ns, &["backup", "get", "nightly", "-o", "json"]);
        serde_json::from_str::<serde_json::Value>(&printed).unwrap()["spec"].clone()
    };
    let before = spec(&ns.name);
    for format in ["json", "yaml"] {
        let one = ark_ok(
            &cluster,
            &ns.name,
            &["backup", "get", "nightly", "-o", format],
        );
        assert!(
            kubectl_apply(&cluster, &one).contains("backup.velero.io/nightly"),
            "{format}"
        );
        let list = ark_ok(&cluster, &ns.name, &["backup", "get", "-o", format]);
        assert!(
            kubectl_apply(&cluster, &list).contains("backup.velero.io/nightly"),
            "{format} list"
        );
    }
    assert_eq!(spec(&ns.name), before);
    assert_eq!(before["ttl"], "24h0m0s");
}
