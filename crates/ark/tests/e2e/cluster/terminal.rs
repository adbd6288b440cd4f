//! What a person at a terminal meets, through a real pseudo-terminal: the confirmations of backup
//! and schedule deletion (answered y, then n) and bash completing backup names from the cluster.

use crate::common;

use std::process::Command;

use ark_api::{Backup, DeleteBackupRequest};
use ark_tests::Cluster;
use common::{ARK, ark, ark_ok, text};
use kube::Api;
use kube::api::ListParams;
use rexpect::session::{PtySession, spawn_command};

const TIMEOUT_MS: u64 = 20_000;

/// `ark ARGS` on a terminal of its own, against the local cluster.
fn on_terminal(cluster: &Cluster, args: &[&str]) -> PtySession {
    let mut command = Command::new(ARK);
    command
        .args(args)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .env_remove("ARK_NAMESPACE")
        .env("XDG_CONFIG_HOME", "/nonexistent");
    spawn_command(command, Some(TIMEOUT_MS)).expect("spawn ark on a pty")
}

/// Waits until the prompt reads a key press: it hides the cursor first (a key sent before that
/// would sit in the terminal's line buffer, waiting for Enter).
fn reading_a_key(session: &mut PtySession) {
    session.exp_string("\u{1b}[?25l").unwrap();
}

async fn requests_for(cluster: &Cluster, ns: &str, backup: &str) -> usize {
    let requests: Api<DeleteBackupRequest> = Api::namespaced(cluster.client().await, ns);
    requests
        .list(&ListParams::default().labels(&format!("velero.io/backup-name={backup}")))
        .await
        .unwrap()
        .items
        .len()
}

#[tokio::test]
async fn the_deletion_asks_first_and_goes_ahead_on_y_only() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("confirm").await;
    for name in ["drop", "keep"] {
        ark_ok(&cluster, &ns.name, &["backup", "create", name]);
    }

    let mut yes = on_terminal(&cluster, &["backup", "delete", "drop", "-n", &ns.name]);
    yes.exp_string("You are about to delete these backups and all their data")
        .unwrap();
    yes.exp_string("  drop").unwrap();
    yes.exp_string("Are you sure you want to continue? [y/N] ")
        .unwrap();
    reading_a_key(&mut yes);
    yes.send("y").unwrap();
    yes.flush().unwrap();
    yes.exp_string("Request to delete backup \"drop\" submitted successfully.")
        .unwrap();
    yes.exp_eof().unwrap();
    assert_eq!(requests_for(&cluster, &ns.name, "drop").await, 1);

    let mut no = on_terminal(&cluster, &["backup", "delete", "keep", "-n", &ns.name]);
    no.exp_string("Are you sure you want to continue? [y/N] ")
        .unwrap();
    reading_a_key(&mut no);
    no.send("n").unwrap();
    no.flush().unwrap();
    no.exp_string("Cancelled.").unwrap();
    no.exp_eof().unwrap();
    assert_eq!(requests_for(&cluster, &ns.name, "keep").await, 0);
    let backups: Api<Backup> = Api::namespaced(cluster.client().await, &ns.name);
    assert!(backups.get_opt("keep").await.unwrap().is_some());
}

/// `ark schedule delete` asks first, says that no backup or data goes with the schedule, and keeps
/// the schedule's backups when it does delete it.
#[tokio::test]
async fn the_schedule_deletion_asks_first_and_keeps_the_schedule_s_backups() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("confirm").await;
    for name in ["drop", "keep"] {
        ark_ok(
            &cluster,
            &ns.name,
            &[
                "schedule",
                "create",
                name,
                "--schedule",
                "0 3 * * *",
                "--paused",
            ],
        );
    }
    // A backup made from the schedule, labelled with it as the server labels them.
    ark_ok(
        &cluster,
        &ns.name,
        &["backup", "create", "--from-schedule", "drop"],
    );
    let client = cluster.client().await;
    let schedules: Api<ark_api::Schedule> = Api::namespaced(client.clone(), &ns.name);
    let backups: Api<Backup> = Api::namespaced(client, &ns.name);
    let of_drop = || ListParams::default().labels("velero.io/schedule-name=drop");
    assert_eq!(backups.list(&of_drop()).await.unwrap().items.len(), 1);

    let mut yes = on_terminal(&cluster, &["schedule", "delete", "drop", "-n", &ns.name]);
    yes.exp_string("Deleting 1 schedule(s). No backup is deleted with them, and no data")
        .unwrap();
    yes.exp_string("  drop").unwrap();
    yes.exp_string("Are you sure you want to continue? [y/N] ")
        .unwrap();
    reading_a_key(&mut yes);
    yes.send("y").unwrap();
    yes.flush().unwrap();
    yes.exp_string("Schedule \"drop\" deleted; its backups are kept.")
        .unwrap();
    yes.exp_eof().unwrap();
    assert!(schedules.get_opt("drop").await.unwrap().is_none());
    assert_eq!(backups.list(&of_drop()).await.unwrap().items.len(), 1);

    let mut no = on_terminal(&cluster, &["schedule", "delete", "keep", "-n", &ns.name]);
    no.exp_string("Are you sure you want to continue? [y/N] ")
        .unwrap();
    reading_a_key(&mut no);
    no.send("n").unwrap();
    no.flush().unwrap();
    no.exp_string("Cancelled.").unwrap();
    no.exp_eof().unwrap();
    assert!(schedules.get_opt("keep").await.unwrap().is_some());
}

#[tokio::test]
async fn bash_completes_backup_names_from_the_cluster() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("complete").await;
    for name in ["nightly", "weekly"] {
        ark_ok(&cluster, &ns.name, &["backup", "create", name]);
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("ark.bash");
    let printed = ark(None, &["completion", "bash"]);
    std::fs::write(&script, &printed.stdout).unwrap();
    let bin = std::path::Path::new(ARK).parent().unwrap();
    let mut command = Command::new("bash");
    command
        .args(["--norc", "--noprofile", "-i"])
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("KUBECONFIG", &cluster.kubeconfig)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("PS1", "ready> ")
        .env("TERM", "dumb");
    let mut bash = spawn_command(command, Some(TIMEOUT_MS)).unwrap();
    bash.exp_string("ready> ").unwrap();
    bash.send_line(&format!("source {}", script.display()))
        .unwrap();
    bash.exp_string("ready> ").unwrap();
    // `ni` + TAB: the only backup it can begin is completed; Enter runs the command.
    bash.send(&format!("ark -n {} backup describe ni\t", ns.name))
        .unwrap();
    // Readline completes the name before it reads the Enter that follows (the terminal has echo
    // off, so the line itself is not shown: what `describe` prints is the proof).
    bash.send_line("").unwrap();
    bash.exp_string("Name:         nightly").unwrap();
    bash.exp_string("ready> ").unwrap();
    bash.send_line("exit").unwrap();
    bash.exp_eof().unwrap();
}

#[test]
fn completion_answers_nothing_and_no_error_when_the_cluster_is_out_of_reach() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let unreachable = Cluster::get().through(closed, dir.path());
    let output = Command::new(ARK)
        .args(["--", "ark", "backup", "describe", "ni"])
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "3")
        .env("KUBECONFIG", &unreachable.kubeconfig)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "");
    assert_eq!(text(&output.stderr), "");
}
