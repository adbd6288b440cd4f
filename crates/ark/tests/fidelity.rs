//! Restores come out the way Velero's do: a bound claim and its volume bind again, binding
//! subjects follow the namespace mapping, and each object is created at the API version it was
//! backed up in. (A group whose discovery fails: tests/discovery.rs.)

mod common;

use std::time::Duration;

use ark_api::Backup;
use ark_tests::fixtures::object;
use ark_tests::{ArkServer, Cluster, fixtures, unique_name, wait_deleted, wait_for};
use common::{ARK, ark_ok};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Service};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Api;
use kube::api::{DeleteParams, PostParams};

const WAIT: Duration = Duration::from_secs(90);

fn claim_bound(claim: Option<&PersistentVolumeClaim>) -> bool {
    claim
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.phase.as_deref())
        == Some("Bound")
}

async fn delete_and_wait<K>(api: Api<K>, name: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let object = api.get(name).await.unwrap();
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_deleted(api, &object, WAIT).await;
}

/// A claim bound to a retained volume, backed up with the volume, both deleted, restored: the
/// PV controller binds the restored pair again (the claim keeps `volumeName`, the volume's
/// `claimRef` loses the old claim's uid and the bind annotations go, as Velero restores them).
#[tokio::test]
async fn a_bound_claim_and_its_volume_restore_bound() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("pvc").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let volume_name = unique_name("pv");
    let class = unique_name("manual");
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    volumes
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": { "name": volume_name },
                "spec": {
                    "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain", "storageClassName": class,
                    "hostPath": { "path": format!("/tmp/{volume_name}") },
                },
            })),
        )
        .await
        .unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    claims
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": { "name": "data" },
                "spec": {
                    "accessModes": ["ReadWriteOnce"], "storageClassName": class,
                    "resources": { "requests": { "storage": "1Gi" } },
                },
            })),
        )
        .await
        .unwrap();
    wait_for(claims.clone(), "data", claim_bound, WAIT)
        .await
        .unwrap();
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--include-resources",
            "namespaces,persistentvolumes,persistentvolumeclaims",
            "--include-cluster-resources",
            "true",
            "--wait",
        ],
    );

    delete_and_wait(Api::<Namespace>::all(client.clone()), &app.name).await;
    delete_and_wait(volumes.clone(), &volume_name).await;
    ark_ok(
        &cluster,
        &ns.name,
        &["restore", "create", "r1", "--from-backup", "b1", "--wait"],
    );
    let claim = wait_for(claims, "data", claim_bound, WAIT)
        .await
        .unwrap_or_else(|e| panic!("the restored claim did not bind again: {e:#}"));
    assert_eq!(
        claim.spec.unwrap().volume_name.as_deref(),
        Some(volume_name.as_str())
    );
    let volume = volumes.get(&volume_name).await.unwrap();
    assert_eq!(
        volume.status.unwrap().phase.as_deref(),
        Some("Bound"),
        "the restored volume"
    );
    let claim_ref = volume.spec.unwrap().claim_ref.unwrap();
    assert_eq!(claim_ref.namespace.as_deref(), Some(app.name.as_str()));
    let _ = volumes.delete(&volume_name, &DeleteParams::default()).await;
}

/// A backup written by another tool or version: a HorizontalPodAutoscaler in `autoscaling/v1`
/// (the cluster prefers v2) and a RoleBinding whose subject is in the backed-up namespace. The
/// autoscaler is created through the v1 endpoint, and the subject follows the namespace mapping.
#[tokio::test]
async fn objects_are_created_at_their_backed_up_version_and_binding_subjects_are_mapped() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let target = cluster.namespace("mapped").await;
    let source = unique_name("gone");
    let bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let item = |value: serde_json::Value| serde_json::to_vec(&value).unwrap();
    let tar_gz = fixtures::tarball(&[
        ("metadata/version".into(), b"1.1.0".to_vec()),
        (
            format!("resources/horizontalpodautoscalers.autoscaling/namespaces/{source}/web.json"),
            item(serde_json::json!({
                "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                "metadata": { "name": "web", "namespace": source },
                "spec": {
                    "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
                    "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 70,
                },
            })),
        ),
        (
            format!(
                "resources/rolebindings.rbac.authorization.k8s.io/namespaces/{source}/web-view.json"
            ),
            item(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": "web-view", "namespace": source },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view" },
                "subjects": [{ "kind": "ServiceAccount", "name": "web", "namespace": source }],
            })),
        ),
    ]);
    fixtures::put_file_backup(
        bucket.path(),
        "crafted",
        serde_json::json!({ "includedNamespaces": [source] }),
        &tar_gz,
    );
    wait_for(
        Api::<Backup>::namespaced(client.clone(), &ns.name),
        "crafted",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .unwrap();
    let mapping = format!("{source}:{}", target.name);
    let out = ark_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "crafted",
            "--namespace-mappings",
            &mapping,
            "--wait",
        ],
    );
    assert!(
        out.contains("Restore completed with status: Completed."),
        "{out}"
    );
    let autoscaler = Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), &target.name)
        .get("web")
        .await
        .unwrap();
    assert_eq!(autoscaler.spec.unwrap().max_replicas, 3);
    let binding = Api::<RoleBinding>::namespaced(client.clone(), &target.name)
        .get("web-view")
        .await
        .unwrap();
    assert_eq!(
        binding.subjects.unwrap()[0].namespace.as_deref(),
        Some(target.name.as_str())
    );
}

/// The regression behind `ApiError: 404 page not found: Failed to parse error data`: an item at a
/// version of its resource that the cluster does not serve (a HorizontalPodAutoscaler of
/// `autoscaling/v2beta2`, gone since Kubernetes 1.26) fails, named by group, version and resource.
#[tokio::test]
async fn an_item_at_a_version_the_cluster_does_not_serve_is_named_by_group_version_and_resource() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let target = cluster.namespace("unserved").await;
    let bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let source = &target.name;
    let item = serde_json::to_vec(&serde_json::json!({
        "apiVersion": "autoscaling/v2beta2", "kind": "HorizontalPodAutoscaler",
        "metadata": { "name": "web", "namespace": source },
        "spec": {
            "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
            "minReplicas": 1, "maxReplicas": 3,
        },
    }))
    .unwrap();
    let tar_gz = fixtures::tarball(&[
        ("metadata/version".into(), b"1.1.0".to_vec()),
        (
            format!("resources/horizontalpodautoscalers.autoscaling/namespaces/{source}/web.json"),
            item,
        ),
    ]);
    fixtures::put_file_backup(
        bucket.path(),
        "old",
        serde_json::json!({ "includedNamespaces": [source] }),
        &tar_gz,
    );
    wait_for(
        Api::<Backup>::namespaced(client.clone(), &ns.name),
        "old",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .unwrap();
    let out = common::ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "old",
            "--wait",
            "-n",
            &ns.name,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    let named = format!(
        "error restoring horizontalpodautoscalers.autoscaling {source}/web: the cluster does not \
         serve autoscaling/v2beta2 (group \"autoscaling\", version \"v2beta2\", resource \
         \"horizontalpodautoscalers\")"
    );
    assert!(described.contains(&named), "{named:?} not in:\n{described}");
}

/// `preserveNodePorts` (`--preserve-nodeports`), as Velero's users rely on it: a NodePort Service
/// comes back with its node port; restored again beside itself, the port is taken, and that
/// Service fails the restore (PartiallyFailed) with the API server's reason; without the flag it
/// gets a new port.
#[tokio::test]
async fn node_ports_are_kept_when_the_restore_preserves_them_and_a_taken_one_fails_that_service() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("ports").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    // A port of the NodePort range few tests would pick, from this process's id.
    let port = 30000 + (std::process::id() % 2700) as i32;
    let services: Api<Service> = Api::namespaced(client.clone(), &app.name);
    services
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": { "name": "web" },
                "spec": { "type": "NodePort", "selector": { "app": "web" },
                          "ports": [{ "port": 80, "nodePort": port }] },
            })),
        )
        .await
        .unwrap();
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "1m",
        ],
    );
    delete_and_wait(Api::<Namespace>::all(client.clone()), &app.name).await;
    let restore = |name: &str, more: &[&str]| {
        let mut args = vec![
            "restore",
            "create",
            name,
            "--from-backup",
            "b1",
            "--wait",
            "--timeout",
            "1m",
        ];
        args.extend(more);
        common::ark(Some(&cluster), &[&args[..], &["-n", &ns.name]].concat())
    };
    let kept = restore("r1", &["--preserve-nodeports"]);
    assert!(kept.status.success(), "{}", common::text(&kept.stderr));
    let node_port = |svc: Service| svc.spec.unwrap().ports.unwrap()[0].node_port;
    assert_eq!(node_port(services.get("web").await.unwrap()), Some(port));

    let beside = format!("{}-beside", app.name);
    let _beside = cluster.delete_on_drop::<Namespace>(&beside);
    let mapping = format!("{}:{beside}", app.name);
    let taken = restore(
        "r2",
        &["--preserve-nodeports", "--namespace-mappings", &mapping],
    );
    assert_eq!(taken.status.code(), Some(1));
    assert!(
        common::text(&taken.stdout).contains("Restore completed with status: PartiallyFailed."),
        "{}",
        common::text(&taken.stdout)
    );
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r2", "--details"],
    );
    assert!(
        described.contains("provided port is already allocated"),
        "{described}"
    );

    let fresh = format!("{}-fresh", app.name);
    let _fresh = cluster.delete_on_drop::<Namespace>(&fresh);
    let mapping = format!("{}:{fresh}", app.name);
    let moved = restore("r3", &["--namespace-mappings", &mapping]);
    assert!(moved.status.success(), "{}", common::text(&moved.stderr));
    let again = Api::<Service>::namespaced(client.clone(), &fresh)
        .get("web")
        .await
        .unwrap();
    let assigned = node_port(again);
    assert!(assigned.is_some() && assigned != Some(port), "{assigned:?}");
}
