//! The `ark` binary as users run it, against the local cluster: exact output and exit codes.

mod common;

use ark_api::{Backup, BackupSpec};
use ark_tests::Cluster;
use common::{ark, text};
use kube::Api;
use kube::api::PostParams;

#[test]
fn a_mistyped_command_is_a_usage_error_with_a_suggestion() {
    let output = ark(None, &["bakup", "get"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("unrecognized subcommand 'bakup'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("some similar subcommands exist: 'backup-location', 'backup'"),
        "{stderr}"
    );
}

#[test]
fn backup_delete_needs_exactly_one_way_of_choosing() {
    for args in [
        &["backup", "delete"][..],
        &["backup", "delete", "nightly", "--all"],
        &["backup", "delete", "--all", "-l", "a=b"],
    ] {
        let output = ark(None, args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn completion_scripts_are_printed() {
    let output = ark(None, &["completion", "bash"]);
    assert!(output.status.success());
    assert!(text(&output.stdout).contains("complete -F _ark"));
}

#[test]
fn no_kubeconfig_says_where_it_was_looked_for_and_what_to_do() {
    let output = ark(None, &["backup", "get"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "error: no cluster to talk to: there is no kubeconfig at /nonexistent/kubeconfig and ark \
         is not running in a pod; set KUBECONFIG or pass --kubeconfig FILE\n"
    );
}

#[test]
fn an_unreachable_cluster_is_named_by_its_url() {
    let cluster = Cluster::get();
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let unreachable = cluster.through(closed, dir.path());
    let output = ark(Some(&unreachable), &["backup", "get"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: cannot list backups: cannot reach the cluster at https://{closed}/: \
             Connection refused (os error 111)\n"
        )
    );
}

#[tokio::test]
async fn version_reports_the_cluster() {
    let cluster = Cluster::get();
    let output = ark(Some(&cluster), &["version"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!(
            "Client: ark {}\nKubernetes: v1.35.4\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[tokio::test]
async fn backup_get_lists_backups_and_names_missing_ones() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("cli").await;
    let backups: Api<Backup> = Api::namespaced(client, &ns.name);
    let spec = BackupSpec {
        storage_location: Some("default".into()),
        ..Default::default()
    };
    backups
        .create(&PostParams::default(), &Backup::new("nightly", spec))
        .await
        .unwrap();

    let output = ark(Some(&cluster), &["backup", "get", "-n", &ns.name]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    insta::with_settings!({ filters => vec![(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC", "YYYY-MM-DD hh:mm:ss +0000 UTC")] }, {
        insta::assert_snapshot!(text(&output.stdout), @r"
        NAME     STATUS  ERRORS  WARNINGS  CREATED                        EXPIRES  STORAGE LOCATION
        nightly  New     0       0         YYYY-MM-DD hh:mm:ss +0000 UTC  <none>   default
        ");
    });

    let output = ark(
        Some(&cluster),
        &[
            "backup", "get", "nightly", "weekly", "-n", &ns.name, "-o", "json",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stderr), "backup \"weekly\" not found\n");
    // A typo is answered with the closest name.
    let typo = ark(
        Some(&cluster),
        &["backup", "get", "nightyl", "-n", &ns.name],
    );
    assert_eq!(typo.status.code(), Some(1));
    assert_eq!(
        text(&typo.stderr),
        "backup \"nightyl\" not found; did you mean \"nightly\"?\n"
    );
    let listed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed["kind"], "List");
    assert_eq!(listed["items"][0]["metadata"]["name"], "nightly");

    let output = ark(
        Some(&cluster),
        &["backup", "get", "nightly", "-n", &ns.name, "-o", "yaml"],
    );
    assert!(output.status.success());
    let single: serde_json::Value = serde_saphyr::from_str(&text(&output.stdout)).unwrap();
    assert_eq!(single["kind"], "Backup");
    assert_eq!(single["spec"]["storageLocation"], "default");
}
