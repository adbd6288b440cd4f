//! The `ark` binary as users run it, against the local cluster: exact output and exit codes.

use crate::common;

use ark_api::{Backup, BackupSpec};
use ark_tests::Cluster;
use common::{ark, ark_with_config, text};
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
fn completion_scripts_are_printed_as_committed() {
    for (shell, file) in [
        ("bash", "ark.bash"),
        ("zsh", "_ark"),
        ("fish", "ark.fish"),
        ("powershell", "_ark.ps1"),
        ("elvish", "ark.elv"),
    ] {
        let output = ark(None, &["completion", shell]);
        assert!(output.status.success());
        let committed =
            std::fs::read(ark_tests::checkout().join("completions").join(file)).unwrap();
        assert_eq!(text(&output.stdout), text(&committed), "{shell}");
    }
    let bash = text(&ark(None, &["completion", "bash"]).stdout);
    assert!(bash.contains("-F _clap_complete_ark ark\n"), "{bash}");
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
async fn version_reports_the_cluster_and_says_when_no_server_answers() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("version").await;
    let output = ark(
        Some(&cluster),
        &["version", "-n", &ns.name, "--timeout", "1s"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!(
            "Client: ark {}\nKubernetes: v1.35.4\nServer: none answered within 1s in namespace \
             {} (`ark install` runs one)\n",
            env!("CARGO_PKG_VERSION"),
            ns.name
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
        .create(&PostParams::default(), &{
            let mut backup = Backup::new("nightly", spec);
            backup.metadata.labels = Some(
                [("tier", "gold"), ("app", "shop")]
                    .map(|(k, v)| (k.into(), v.into()))
                    .into(),
            );
            backup
        })
        .await
        .unwrap();

    let output = ark(Some(&cluster), &["backup", "get", "-n", &ns.name]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let filters = vec![
        (
            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC",
            "YYYY-MM-DD hh:mm:ss +0000 UTC",
        ),
        // Just created: an age of seconds, as three characters whether it has one digit or two.
        (r"(?m)\b(\ds |\d\ds|\ds$)", "[s]"),
    ];
    insta::with_settings!({ filters => filters.clone() }, {
        insta::assert_snapshot!(text(&output.stdout), @r"
        NAME     STATUS  ERRORS  WARNINGS  CREATED                        EXPIRES  STORAGE LOCATION  AGE
        nightly  New     0       0         YYYY-MM-DD hh:mm:ss +0000 UTC  <none>   default           [s]
        ");
    });
    let output = ark(
        Some(&cluster),
        &["backup", "get", "-n", &ns.name, "--show-labels"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(text(&output.stdout), @r"
        NAME     STATUS  ERRORS  WARNINGS  CREATED                        EXPIRES  STORAGE LOCATION  AGE  LABELS
        nightly  New     0       0         YYYY-MM-DD hh:mm:ss +0000 UTC  <none>   default           [s]  app=shop,tier=gold
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

/// `--limit N` lists the first N by name and says how to ask for the next ones; `--continue`
/// takes up where it stopped, and the last page says nothing more.
#[tokio::test]
async fn backup_get_pages_with_limit_and_continue() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("cli-pages").await;
    let backups: Api<Backup> = Api::namespaced(client, &ns.name);
    for name in ["c", "a", "e", "b", "d"] {
        let backup = Backup::new(name, BackupSpec::default());
        backups
            .create(&PostParams::default(), &backup)
            .await
            .unwrap();
    }
    let names = |output: &std::process::Output| -> Vec<String> {
        (text(&output.stdout).lines().skip(1))
            .map(|line| {
                line.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    // The token the note on stderr gives for the next page of two.
    let next_token = |output: &std::process::Output| -> String {
        let note = text(&output.stderr);
        note.strip_prefix("More backups follow: the next 2 with --limit 2 --continue ")
            .and_then(|rest| rest.strip_suffix('\n'))
            .unwrap_or_else(|| panic!("no note of the next page: {note:?}"))
            .to_string()
    };
    let get = |extra: &[&str]| {
        let mut args = vec!["backup", "get", "-n", &ns.name];
        args.extend(extra);
        ark(Some(&cluster), &args)
    };
    let first = get(&["--limit", "2"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert_eq!(names(&first), ["a", "b"]);
    let token = next_token(&first);
    let second = get(&["--limit", "2", "--continue", &token]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(names(&second), ["c", "d"]);
    let token = next_token(&second);
    let last = get(&["--limit", "2", "--continue", &token]);
    assert!(last.status.success(), "{}", text(&last.stderr));
    assert_eq!(names(&last), ["e"]);
    assert_eq!(text(&last.stderr), "");
    // Without --limit, every backup, read in pages all the same.
    assert_eq!(names(&get(&[])), ["a", "b", "c", "d", "e"]);
    // A token alone, or a limit with names, is a mistake said as such.
    assert_eq!(get(&["--continue", &token]).status.code(), Some(2));
    let named = get(&["a", "--limit", "1"]);
    assert_eq!(named.status.code(), Some(1));
    assert_eq!(
        text(&named.stderr),
        "error: --limit and --continue are for a listing, not for named backups\n"
    );
}

#[test]
fn client_config_refuses_unknown_keys_and_bad_values_by_name() {
    let home = tempfile::tempdir().unwrap();
    for (args, expected) in [
        (
            &["client", "config", "set", "colour=red"][..],
            "invalid value 'colour=red' for '<KEY=VALUE>...': unknown key \"colour\"",
        ),
        (
            &["client", "config", "set", "namespace=Not_A_Label"],
            "invalid value 'namespace=Not_A_Label' for '<KEY=VALUE>...': namespace \"Not_A_Label\" \
             is not a DNS-1123 label",
        ),
        (
            &["client", "config", "get", "colour"],
            "invalid value 'colour' for '[KEY]...'",
        ),
    ] {
        let output = ark_with_config(None, home.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Nothing was written.
    assert!(!home.path().join("ark").exists());

    // A file that cannot be read is named, by every command that would use it.
    std::fs::create_dir(home.path().join("ark")).unwrap();
    let path = home.path().join("ark/config.yaml");
    std::fs::write(&path, "namespcae: backups\n").unwrap();
    for args in [&["client", "config", "get"][..], &["backup", "get"]] {
        let output = ark_with_config(None, home.path(), args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.starts_with(&format!(
                "error: invalid ark config file {}: unknown field `namespcae`",
                path.display()
            )),
            "{args:?}: {stderr}"
        );
    }
}

#[tokio::test]
async fn the_configured_namespace_is_used_unless_the_flag_or_environment_gives_one() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let configured = cluster.namespace("cli-config").await;
    let other = cluster.namespace("cli-other").await;
    for (ns, name) in [(&configured, "configured"), (&other, "other")] {
        Api::<Backup>::namespaced(client.clone(), &ns.name)
            .create(
                &PostParams::default(),
                &Backup::new(name, BackupSpec::default()),
            )
            .await
            .unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = ark_with_config(Some(&cluster), home.path(), args);
        assert!(
            output.status.success(),
            "ark {args:?} failed ({:?}): {}",
            output.status.code(),
            text(&output.stderr)
        );
        text(&output.stdout)
    };
    let names = |stdout: String| -> Vec<String> {
        let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };

    assert_eq!(run(&["client", "config", "get"]), "namespace: <unset>\n");
    let setting = format!("namespace={}", configured.name);
    assert_eq!(run(&["client", "config", "set", &setting]), "");
    assert_eq!(
        std::fs::read_to_string(home.path().join("ark/config.yaml")).unwrap(),
        format!("namespace: {}\n", configured.name)
    );
    let expected = format!("namespace: {}\n", configured.name);
    assert_eq!(run(&["client", "config", "get"]), expected);
    assert_eq!(run(&["client", "config", "get", "namespace"]), expected);

    // The configured namespace, when neither -n nor $ARK_NAMESPACE gives one.
    assert_eq!(names(run(&["backup", "get", "-o", "json"])), ["configured"]);
    // -n wins.
    assert_eq!(
        names(run(&["backup", "get", "-o", "json", "-n", &other.name])),
        ["other"]
    );
    assert_eq!(
        names(run(&[
            "backup",
            "get",
            "-o",
            "json",
            "--namespace",
            &other.name
        ])),
        ["other"]
    );
    // So does $ARK_NAMESPACE, and -n wins over it.
    let with_env = |args: &[&str]| {
        let output = std::process::Command::new(common::ARK)
            .args(args)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .env("XDG_CONFIG_HOME", home.path())
            .env("ARK_NAMESPACE", &other.name)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        names(text(&output.stdout))
    };
    assert_eq!(with_env(&["backup", "get", "-o", "json"]), ["other"]);
    assert_eq!(
        with_env(&["backup", "get", "-o", "json", "-n", &configured.name]),
        ["configured"]
    );

    // Unset: back to the default namespace, velero.
    assert_eq!(run(&["client", "config", "set", "namespace="]), "");
    assert_eq!(run(&["client", "config", "get"]), "namespace: <unset>\n");
}

#[test]
fn output_piped_into_head_ends_quietly() {
    let output = std::process::Command::new("bash")
        .args([
            "-c",
            &format!(
                "{} install --provider file --bucket /b --dry-run -o yaml | head -1",
                common::ARK
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(text(&output.stdout), "apiVersion: v1\n");
    assert_eq!(text(&output.stderr), "");
}
