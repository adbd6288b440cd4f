//! Restores come out the way Velero's do: a bound claim and its volume bind again, binding
//! subjects follow the namespace mapping, and each object is created at the API version it was
//! backed up in. (A group whose discovery fails: cluster/discovery.rs.)

use crate::common;

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

/// A retained hostPath volume named `volume_name`, of a class of its own, and the claim `data` in
/// `namespace` bound to it (by the PV controller).
async fn bound_claim(
    client: &kube::Client,
    namespace: &str,
    volume_name: &str,
) -> (Api<PersistentVolume>, Api<PersistentVolumeClaim>) {
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
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
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
    (volumes, claims)
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
    let (volumes, claims) = bound_claim(&client, &app.name, &volume_name).await;
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

/// A namespace backup takes the cluster-scoped items its items depend on, as Velero's backup item
/// actions do: the service account's cluster role binding and cluster role, the claim's volume,
/// the custom resource's definition; and, with a label selector on pods, the pod's claim too.
/// Restored after all of them are gone (as into a fresh cluster), the application has its RBAC,
/// its bound storage and its custom resource.
#[tokio::test]
async fn a_namespace_backup_takes_the_cluster_scoped_items_its_items_need_and_restores_them() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("related").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let id = unique_name("rel");
    let group = format!("{id}.ark.test");
    let definition = format!("widgets.{group}");
    let (role, binding, volume_name) = (
        format!("{id}-reader"),
        format!("{id}-web"),
        format!("{id}-pv"),
    );
    let create = |api: Api<kube::api::DynamicObject>, body: serde_json::Value| async move {
        api.create(&PostParams::default(), &object(body))
            .await
            .unwrap();
    };
    let dynamic = |api_version: &str, kind: &str, plural: &str, namespace: Option<&str>| {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let resource = kube::api::ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        }
    };
    let definitions = dynamic(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
    );
    let roles = dynamic(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        None,
    );
    let bindings = dynamic(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        None,
    );
    let _cleanup = (
        cluster.delete_on_drop::<k8s_openapi::api::rbac::v1::ClusterRole>(&role),
        cluster.delete_on_drop::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>(&binding),
        cluster.delete_on_drop::<PersistentVolume>(&volume_name),
        cluster.delete_on_drop::<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >(&definition),
    );
    create(definitions.clone(), serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": definition },
        "spec": { "group": group, "scope": "Namespaced",
                  "names": { "plural": "widgets", "singular": "widget", "kind": "Widget" },
                  "versions": [{ "name": "v1", "served": true, "storage": true,
                                 "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }] },
    }))
    .await;
    let widgets = dynamic(&format!("{group}/v1"), "Widget", "widgets", Some(&app.name));
    // The definition is served once established.
    let deadline = tokio::time::Instant::now() + WAIT;
    while widgets.list(&Default::default()).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{definition} was never served"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    create(
        widgets.clone(),
        serde_json::json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": { "name": "gear" }, "size": 3,
        }),
    )
    .await;
    create(
        dynamic("v1", "ServiceAccount", "serviceaccounts", Some(&app.name)),
        serde_json::json!({
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "web" },
        }),
    )
    .await;
    create(roles.clone(), serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": { "name": role },
        "rules": [{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["get"] }],
    }))
    .await;
    create(bindings.clone(), serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": { "name": binding },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "kind": "ServiceAccount", "name": "web", "namespace": app.name }],
    }))
    .await;
    let (volumes, claims) = bound_claim(&client, &app.name, &volume_name).await;
    create(dynamic("v1", "Pod", "pods", Some(&app.name)), serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "web", "labels": { "app": "web" } },
        "spec": { "serviceAccountName": "web",
                  "containers": [{ "name": "web", "image": "busybox", "volumeMounts": [{ "name": "data", "mountPath": "/data" }] }],
                  "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }] },
    }))
    .await;

    let backup = |name: &str, more: &[&str]| {
        let mut args = vec![
            "backup",
            "create",
            name,
            "--include-namespaces",
            &app.name,
            "--wait",
        ];
        args.extend(more);
        ark_ok(&cluster, &ns.name, &args);
        ark_ok(
            &cluster,
            &ns.name,
            &["backup", "describe", name, "--details"],
        )
    };
    let listed = |described: &str, key: &str, entry: &str| {
        let block = described
            .split(&format!("  {key}:\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("{key} is not in the resource list:\n{described}"));
        let entries: Vec<&str> = block
            .lines()
            .map_while(|l| l.strip_prefix("    - "))
            .collect();
        assert!(
            entries.contains(&entry),
            "{key} {entry} is not in {entries:?}:\n{described}"
        );
    };
    let whole = backup("b1", &[]);
    listed(
        &whole,
        "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
        &binding,
    );
    listed(&whole, "rbac.authorization.k8s.io/v1/ClusterRole", &role);
    listed(&whole, "v1/PersistentVolume", &volume_name);
    listed(
        &whole,
        "apiextensions.k8s.io/v1/CustomResourceDefinition",
        &definition,
    );
    listed(
        &whole,
        &format!("{group}/v1/Widget"),
        &format!("{}/gear", app.name),
    );
    // The selector takes the pod; its claim and the claim's volume come with it.
    let selected = backup("b2", &["--selector", "app=web"]);
    listed(&selected, "v1/Pod", &format!("{}/web", app.name));
    listed(
        &selected,
        "v1/PersistentVolumeClaim",
        &format!("{}/data", app.name),
    );
    listed(&selected, "v1/PersistentVolume", &volume_name);
    assert!(!selected.contains("v1/ServiceAccount:"), "{selected}");
    // includeClusterResources: false keeps every cluster-scoped item out, related ones too.
    let namespaced = backup("b3", &["--include-cluster-resources=false"]);
    for key in [
        "v1/PersistentVolume:",
        "ClusterRoleBinding:",
        "CustomResourceDefinition:",
    ] {
        assert!(!namespaced.contains(key), "{key} in {namespaced}");
    }

    delete_and_wait(Api::<Namespace>::all(client.clone()), &app.name).await;
    for (api, name) in [
        (bindings.clone(), &binding),
        (roles.clone(), &role),
        (definitions.clone(), &definition),
    ] {
        delete_and_wait(api, name).await;
    }
    delete_and_wait(volumes.clone(), &volume_name).await;
    ark_ok(
        &cluster,
        &ns.name,
        &["restore", "create", "r1", "--from-backup", "b1", "--wait"],
    );
    let restored = bindings.get(&binding).await.unwrap();
    assert_eq!(restored.data["subjects"][0]["namespace"], app.name.as_str());
    roles.get(&role).await.unwrap();
    definitions.get(&definition).await.unwrap();
    let widget = widgets.get("gear").await.unwrap();
    assert_eq!(widget.data["size"], 3);
    let claim = wait_for(claims, "data", claim_bound, WAIT)
        .await
        .unwrap_or_else(|e| panic!("the restored claim did not bind again: {e:#}"));
    assert_eq!(
        claim.spec.unwrap().volume_name.as_deref(),
        Some(volume_name.as_str())
    );
}

/// Restore resource modifiers in Velero's format, from a ConfigMap in the server's namespace: a
/// JSON patch with conditions (group-resource, namespace, name regex, labels, a value at a path),
/// a merge patch and a strategic-merge patch change the restored items and nothing else; rules
/// that cannot be read fail the restore's validation, naming the ConfigMap and the fault.
#[tokio::test]
async fn resource_modifiers_change_restored_items_and_broken_rules_fail_validation() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("modified").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), &app.name);
    for name in ["web", "worker"] {
        deployments
            .create(
                &PostParams::default(),
                &object(serde_json::json!({
                    "metadata": { "name": name, "labels": { "tier": "front" } },
                    "spec": { "replicas": 3, "selector": { "matchLabels": { "app": name } },
                              "template": { "metadata": { "labels": { "app": name } },
                                            "spec": { "containers": [
                                                { "name": "main", "image": "nginx:1.25" },
                                                { "name": "side", "image": "busybox" }] } } },
                })),
            )
            .await
            .unwrap();
    }
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &app.name);
    maps.create(
        &PostParams::default(),
        &object(serde_json::json!({ "metadata": { "name": "settings" }, "data": { "mode": "prod", "old": "x" } })),
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
        ],
    );
    let rules = format!(
        r#"version: v1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
    namespaces: ["{app}"]
    resourceNameRegex: "^web$"
    labelSelector: {{ matchLabels: {{ tier: front }} }}
    matches: [{{ path: /spec/replicas, value: "3" }}]
  patches:
  - {{ operation: replace, path: /spec/replicas, value: "1" }}
- conditions: {{ groupResource: configmaps, resourceNameRegex: settings }}
  mergePatches:
  - patchData: |
      data: {{ mode: staging, old: null }}
- conditions: {{ groupResource: "*.apps", resourceNameRegex: "^worker$" }}
  strategicPatches:
  - patchData: |
      spec: {{ template: {{ spec: {{ containers: [{{ name: main, image: "nginx:1.27" }}] }} }} }}
"#,
        app = app.name
    );
    let rule_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &ns.name);
    for (name, text) in [
        ("rules", rules.as_str()),
        ("broken", "version: v1\nresourceModifierRules: []\n"),
    ] {
        rule_maps
            .create(
                &PostParams::default(),
                &object(serde_json::json!({ "metadata": { "name": name }, "data": { "rules.yaml": text } })),
            )
            .await
            .unwrap();
    }
    let mut broken = vec![];
    for (restore, config_map) in [("r-broken", "broken"), ("r-missing", "absent")] {
        let out = common::ark(
            Some(&cluster),
            &[
                "restore",
                "create",
                restore,
                "--from-backup",
                "b1",
                "--resource-modifier-configmap",
                config_map,
                "--wait",
                "-n",
                &ns.name,
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{}", common::text(&out.stderr));
        broken.push(ark_ok(
            &cluster,
            &ns.name,
            &["restore", "describe", restore],
        ));
    }
    let shown = |name: &str| format!("{}/{name}", ns.name);
    assert!(broken[0].contains("FailedValidation"), "{}", broken[0]);
    assert!(
        broken[0].contains(&format!(
            "resource modifiers configmap {}: resource modifier rules cannot be empty",
            shown("broken")
        )),
        "{}",
        broken[0]
    );
    assert!(
        broken[1].contains(&format!(
            "failed to get resource modifiers configmap {}: not found",
            shown("absent")
        )),
        "{}",
        broken[1]
    );
    // Nothing was restored by a restore that failed validation.
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(3)
    );

    delete_and_wait(Api::<Namespace>::all(client.clone()), &app.name).await;
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--resource-modifier-configmap",
            "rules",
            "--wait",
        ],
    );
    let spec = |name: &str| {
        let deployments = deployments.clone();
        let name = name.to_string();
        async move { deployments.get(&name).await.unwrap().spec.unwrap() }
    };
    let web = spec("web").await;
    assert_eq!(web.replicas, Some(1));
    let images =
        |spec: k8s_openapi::api::apps::v1::DeploymentSpec| -> Vec<(String, Option<String>)> {
            spec.template
                .spec
                .unwrap()
                .containers
                .into_iter()
                .map(|c| (c.name, c.image))
                .collect()
        };
    assert_eq!(
        images(web),
        [
            ("main".into(), Some("nginx:1.25".into())),
            ("side".into(), Some("busybox".into()))
        ]
    );
    let worker = spec("worker").await;
    assert_eq!(
        worker.replicas,
        Some(3),
        "the JSON patch's name regex leaves worker alone"
    );
    assert_eq!(
        images(worker),
        [
            ("main".into(), Some("nginx:1.27".into())),
            ("side".into(), Some("busybox".into()))
        ]
    );
    let settings = maps.get("settings").await.unwrap().data.unwrap();
    assert_eq!(
        settings,
        [("mode".to_string(), "staging".to_string())].into()
    );
}
