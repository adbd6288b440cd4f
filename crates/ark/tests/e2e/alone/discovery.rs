//! An API group whose discovery fails (an aggregated API whose backend is down) is skipped by
//! backups and restores with a warning naming it. A test binary of its own: while such an
//! APIService exists, the cluster cannot delete namespaces (its namespace controller cannot
//! discover every resource), which would stall other tests running beside it.

use crate::common;

use ark_tests::fixtures::object;
use ark_tests::{ArkServer, Cluster, unique_name};
use common::{ARK, ark_ok};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::Api;
use kube::api::{DeleteParams, PostParams};

/// An aggregated API whose backend is down fails discovery of its group: backups and restores
/// skip that group with a warning naming it, and complete.
#[tokio::test]
async fn a_group_whose_discovery_fails_is_skipped_with_a_warning() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let group = format!("{}.ark-tests.io", unique_name("broken"));
    // An APIService whose backend does not exist, removed again when dropped.
    let broken = cluster.delete_on_drop::<APIService>(&format!("v1.{group}"));
    Api::<APIService>::all(client.clone())
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": { "name": broken.name },
                "spec": {
                    "group": group, "version": "v1", "groupPriorityMinimum": 1000,
                    "versionPriority": 10, "insecureSkipTLSVerify": true,
                    "service": { "namespace": "default", "name": "ark-tests-no-such-service" },
                },
            })),
        )
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .create(
            &PostParams::default(),
            &object(
                serde_json::json!({ "metadata": { "name": "settings" }, "data": { "k": "v" } }),
            ),
        )
        .await
        .unwrap();
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let out = ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    assert!(
        out.contains("Backup completed with status: Completed."),
        "{out}"
    );
    let warning = format!("API group \"{group}\" could not be discovered");
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["backup", "describe", "b1", "--details"],
    );
    assert!(
        described.contains(&warning),
        "{warning:?} not in:\n{described}"
    );

    let mapping = format!("{}:{}-copy", app.name, app.name);
    let out = ark_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &mapping,
            "--wait",
        ],
    );
    assert!(
        out.contains("Restore completed with status: Completed."),
        "{out}"
    );
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    assert!(
        described.contains(&warning),
        "{warning:?} not in:\n{described}"
    );
    let copied = Api::<ConfigMap>::namespaced(client.clone(), &format!("{}-copy", app.name))
        .get("settings")
        .await
        .unwrap();
    assert_eq!(copied.data.unwrap()["k"], "v");
    let _ = Api::<Namespace>::all(client)
        .delete(&format!("{}-copy", app.name), &DeleteParams::default())
        .await;
    drop(broken);
}
