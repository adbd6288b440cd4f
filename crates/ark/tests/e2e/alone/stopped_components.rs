//! The test ground heals: a component of the local cluster that stopped is started again by
//! `scripts/cluster.sh up`. Alone (scripts/test.sh): the cluster is without its controller-manager
//! for a while, which every other test would feel.

use std::time::Duration;

use ark_tests::{Cluster, wait_for};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Api;

const WAIT: Duration = Duration::from_secs(120);

/// The pid kwokctl recorded for the first cluster's `component`.
fn pid_of(component: &str) -> i32 {
    let file = ark_tests::state_dir().join(format!("kwok/clusters/ark/pids/{component}.pid"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {text:?}: {e}", file.display()))
}

/// Whether process `pid` runs (exists and is no zombie).
fn runs(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

/// Without its kube-controller-manager (which exits when it loses its leader lease, say while
/// etcd pauses) the cluster makes no ServiceAccounts; `up` notices and starts it again, and a new
/// namespace gets its `default` ServiceAccount.
#[tokio::test]
async fn a_stopped_controller_manager_is_started_again_by_up() {
    let cluster = Cluster::get();
    let stopped = pid_of("kube-controller-manager");
    assert_eq!(unsafe { libc::kill(stopped, libc::SIGKILL) }, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while runs(stopped) {
        assert!(
            std::time::Instant::now() < deadline,
            "pid {stopped} still runs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let script = ark_tests::checkout().join("scripts/cluster.sh");
    let mut up = std::process::Command::new("bash");
    up.arg(&script).arg("up");
    let output = ark_tests::output_within(&mut up, Duration::from_secs(600));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cluster.sh up: {said}");
    assert!(
        said.contains("kube-controller-manager of the cluster stopped; starting it again"),
        "{said}"
    );
    let started = pid_of("kube-controller-manager");
    assert!(
        runs(started),
        "no kube-controller-manager runs after up:\n{said}"
    );

    let ns = cluster.namespace("healed").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(cluster.client().await, &ns.name);
    wait_for(
        accounts,
        "default",
        |sa: Option<&ServiceAccount>| sa.is_some(),
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("namespace {} got no default ServiceAccount: {e:#}", ns.name));
}
