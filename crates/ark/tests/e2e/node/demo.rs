//! The README's first command, `bash scripts/demo.sh`, run as a user runs it (with this build's
//! `ark`), so that it cannot break unnoticed: it must end with exit code 0 and show what the
//! README says it shows.

use crate::common;

use std::time::Duration;

#[tokio::test]
async fn the_demo_runs_end_to_end_on_the_real_node() {
    // The demo installs ark and its node agent on the real node's host network.
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let script = ark_tests::checkout().join("scripts/demo.sh");
    let mut command = std::process::Command::new("bash");
    command
        .arg(script)
        .env("ARK_BIN", common::ARK)
        .env_remove("ARK_NAMESPACE")
        .stdin(std::process::Stdio::null());
    let output = ark_tests::output_within(&mut command, Duration::from_secs(600));
    let said = format!(
        "{}{}",
        common::text(&output.stdout),
        common::text(&output.stderr)
    );
    assert!(output.status.success(), "the demo failed:\n{said}");
    for expected in [
        "ark is running in namespace ark-demo\n",
        "   127.0.0.1   127.0.0.1   ",
        "Backup completed with status: Completed.",
        "Restore completed with status: Completed.",
        "restored the shop database from its dump\n",
        "    init containers injected: restore-data\n",
        "      | 3 orders, 2 customers\n",
        // The schedule's restore test of nightly-1 passed, psql's count in its output.
        "  Last result:  Passed at ",
        " (backup nightly-1, restore nightly-1-test-",
        "    | 3\n",
        // The database's dump went through the node agent: backed up, then back before the pod
        // started (restore-wait first).
        "Pod Volume Backups - kopia:\n  Completed:\n    shop/db: dump (",
        "Pod Volume Restores - kopia:\n  Completed:\n    shop/db: dump (",
        "restore-wait restore-data\n",
        "cannot delete backup because backup storage location default is currently in read-only mode",
        "$ find ",
        "the bucket was not touched\n",
    ] {
        assert!(said.contains(expected), "{expected:?} not in:\n{said}");
    }
    let files = said
        .split_once("| wc -l\n")
        .map(|(_, rest)| rest.lines().next().unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(
        files, "0",
        "the bucket is empty after the deletion:\n{said}"
    );
}
