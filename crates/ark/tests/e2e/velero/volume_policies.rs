//! Volume policies, differentially: the same application and the same policy backed up by
//! Velero's server (with its node agent and `--features=EnableCSI`, driven by Velero's CLI) and by
//! ark's, each claim taken the same way by both: by the node agent, by a CSI snapshot, or skipped
//! with the same reason.

use crate::common;

use ark_tests::Cluster;
use ark_tests::velero::{VeleroWithAgent, velero_ok};
use common::ark_ok;
use common::node_agent::{install, lose};
use common::volume_policies::{POLICY_MAP, application, methods, policy};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_s_and_ark_s_servers_take_each_claim_the_same_way_under_a_volume_policy() {
    let _turn = ark_tests::Turn::fixed_host_ports().await;
    let cluster = Cluster::get();
    let app = application(&cluster).await;

    let prefix = ark_tests::unique_name("velero-policy");
    let velero = VeleroWithAgent::start_with(&cluster, &prefix, &["--features=EnableCSI"]).await;
    policy(&cluster, &velero.ns.name).await;
    velero_ok(
        &cluster,
        &velero.ns.name,
        &[
            "backup",
            "create",
            "vb",
            "--include-namespaces",
            &app.name,
            "--resource-policies-configmap",
            POLICY_MAP,
        ],
    );
    velero.backup_completed(&cluster, "vb").await;
    let by_velero = methods(&cluster, &velero.ns.name, &prefix, "vb").await;
    velero.stop(&cluster).await;

    let installed = install(&cluster).await;
    policy(&cluster, &installed.ns).await;
    ark_ok(
        &cluster,
        &installed.ns,
        &[
            "backup",
            "create",
            "b",
            "--include-namespaces",
            &app.name,
            "--resource-policies-configmap",
            POLICY_MAP,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    let by_ark = methods(&cluster, &installed.ns, &installed.prefix, "b").await;
    assert_eq!(by_ark, by_velero);
    assert_eq!(by_ark.len(), 3, "every claim decided: {by_ark:#?}");
    lose(&cluster, &app.name).await;
    installed.uninstall(&cluster).await;
}
