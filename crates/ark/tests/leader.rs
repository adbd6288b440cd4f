//! Two server replicas: one leads (holds the Lease) and works; when it dies the other takes over.

mod common;

use std::time::Duration;

use ark_tests::{ArkServer, Cluster, wait_for};
use common::{ARK, ark_ok};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

fn held_by(identity: &'static str) -> impl Fn(Option<&Lease>) -> bool {
    move |lease| {
        lease
            .and_then(|l| l.spec.as_ref())
            .and_then(|s| s.holder_identity.as_deref())
            == Some(identity)
    }
}

#[tokio::test]
async fn one_replica_leads_and_the_other_takes_over_when_it_dies() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let leases: Api<Lease> = Api::namespaced(client, &ns.name);

    let first = ArkServer::start_with(ARK, &cluster, &ns.name, &["--id", "replica-a"]);
    wait_for(
        leases.clone(),
        "ark-server",
        held_by("replica-a"),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let second = ArkServer::start_with(ARK, &cluster, &ns.name, &["--id", "replica-b"]);
    ark_ok(&cluster, &ns.name, &["backup", "create", "b1", "--wait"]);
    assert!(first.log().contains("replica-a leads"), "{}", first.log());
    assert!(
        second.log().contains("ark server replica-b starting"),
        "{}",
        second.log()
    );
    assert!(
        !second.log().contains("replica-b leads"),
        "the second replica led while the first held the lease:\n{}",
        second.log()
    );
    assert_eq!(
        leases
            .get("ark-server")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("replica-a")
    );

    drop(first);
    let lease = wait_for(
        leases,
        "ark-server",
        held_by("replica-b"),
        Duration::from_secs(40),
    )
    .await
    .unwrap();
    assert_eq!(lease.spec.unwrap().lease_transitions, Some(1));
    ark_ok(&cluster, &ns.name, &["backup", "create", "b2", "--wait"]);
    assert!(second.log().contains("replica-b leads"), "{}", second.log());
}
