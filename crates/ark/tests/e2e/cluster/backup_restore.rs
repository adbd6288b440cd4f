//! Backups and restores that really move data, end to end on the local cluster: a namespace with a
//! Deployment, its ReplicaSet and Running pods, a ConfigMap, a Secret, a Service and a
//! ServiceAccount goes to the bucket in Velero's file set and comes back, with a file location and
//! with SeaweedFS S3.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use ark_api::{Backup, Restore};
use ark_storage::BackupStore;
use ark_tests::{ArkServer, Cluster, fixtures, gunzip, wait_for};
use common::{ARK, ark_ok};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use kube::api::{DeleteParams, PostParams};
use kube::runtime::wait::conditions;
use kube::{Api, Client};

const WAIT: Duration = Duration::from_secs(90);

/// Where a test's backups go: the location's `ark backup-location create` flags, and the same
/// store opened directly to look at the bucket.
struct TestLocation {
    flags: Vec<String>,
    store: BackupStore,
    _dir: Option<tempfile::TempDir>,
}

fn file_location() -> TestLocation {
    let dir = tempfile::tempdir().unwrap();
    let bucket = dir.path().to_str().unwrap().to_string();
    let store = ark_storage::open(&ark_storage::Location {
        name: "default".into(),
        provider: "file".into(),
        bucket: bucket.clone(),
        ..Default::default()
    })
    .unwrap();
    TestLocation {
        flags: vec![
            "--provider".into(),
            "file".into(),
            "--bucket".into(),
            bucket,
        ],
        store,
        _dir: Some(dir),
    }
}

async fn delete_namespace(client: &Client, ns: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let uid = api.get(ns).await.unwrap().metadata.uid.unwrap();
    api.delete(ns, &DeleteParams::default()).await.unwrap();
    wait_for(api, ns, conditions::is_deleted(&uid), WAIT)
        .await
        .ok();
}

async fn file_names_under(store: &BackupStore, dir: &ark_storage::Path) -> Vec<String> {
    let mut names: Vec<String> = store
        .keys_under(dir)
        .await
        .unwrap()
        .iter()
        .map(|k| k.filename().unwrap().to_string())
        .collect();
    names.sort();
    names
}

async fn round_trip(
    cluster: Cluster,
    location: impl AsyncFnOnce(&Cluster, &Client, &str) -> TestLocation,
) {
    let client = cluster.client().await;
    let ark_ns = cluster.namespace("ark").await;
    let app = cluster.namespace("shop").await;
    let location = location(&cluster, &client, &ark_ns.name).await;
    let server = ArkServer::start(ARK, &cluster, &ark_ns.name);

    let mut create = vec!["backup-location", "create", "default", "--default"];
    create.extend(location.flags.iter().map(String::as_str));
    assert_eq!(
        ark_ok(&cluster, &ark_ns.name, &create),
        "Backup storage location \"default\" configured successfully.\n"
    );
    fixtures::deploy_shop(&client, &app.name).await;
    Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .create(&PostParams::default(), &fixtures::large_config_map())
        .await
        .unwrap();

    // Backup.
    let stdout = ark_ok(
        &cluster,
        &ark_ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    assert_eq!(
        stdout,
        "Backup request \"b1\" submitted successfully.\n\
         Backup completed with status: Completed. You may check for more information using the commands `ark backup describe b1` and `ark backup logs b1`.\n"
    );
    let store = &location.store;
    assert_eq!(
        file_names_under(store, &store.layout.backup_dir("b1")).await,
        [
            "b1-logs.gz",
            "b1-resource-list.json.gz",
            "b1-results.gz",
            "b1-volumeinfo.json.gz",
            "b1-volumesnapshots.json.gz",
            "b1.tar.gz",
            "velero-backup.json"
        ]
    );
    let uploaded: Backup = serde_json::from_slice(
        &store
            .get(&store.layout.backup_metadata("b1"))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(uploaded.phase(), ark_api::BackupPhase::Completed);
    let tarball = gunzip(
        &store
            .get(&store.layout.backup_contents("b1"))
            .await
            .unwrap(),
    );
    let mut entries = BTreeMap::new();
    for entry in tar::Archive::new(tarball.as_slice()).entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        let mut content = String::new();
        entry.read_to_string(&mut content).unwrap();
        entries.insert(path, content);
    }
    assert_eq!(entries["metadata/version"], "1.1.0");
    let ns = &app.name;
    for path in [
        format!("resources/namespaces/cluster/{ns}.json"),
        format!("resources/configmaps/namespaces/{ns}/settings.json"),
        format!("resources/configmaps/v1-preferredversion/namespaces/{ns}/settings.json"),
        format!("resources/secrets/namespaces/{ns}/db.json"),
        format!("resources/serviceaccounts/namespaces/{ns}/shop.json"),
        format!("resources/services/namespaces/{ns}/web.json"),
        format!("resources/deployments.apps/namespaces/{ns}/web.json"),
        format!("resources/deployments.apps/v1-preferredversion/namespaces/{ns}/web.json"),
    ] {
        assert!(
            entries.contains_key(&path),
            "{path} missing from the tarball: {:?}",
            entries.keys()
        );
    }
    assert_eq!(
        entries
            .keys()
            .filter(|p| p.starts_with("resources/replicasets.apps/namespaces/"))
            .count(),
        1
    );
    assert_eq!(
        entries
            .keys()
            .filter(|p| p.starts_with("resources/pods/namespaces/"))
            .count(),
        2
    );
    let settings: serde_json::Value = serde_json::from_str(
        &entries[&format!("resources/configmaps/namespaces/{ns}/settings.json")],
    )
    .unwrap();
    assert_eq!(settings["kind"], "ConfigMap");
    assert_eq!(settings["data"]["color"], "blue");

    // The namespace is lost; the restore brings everything back, pods Running again.
    delete_namespace(&client, ns).await;
    let stdout = ark_ok(
        &cluster,
        &ark_ns.name,
        &["restore", "create", "r1", "--from-backup", "b1", "--wait"],
    );
    assert!(stdout.ends_with("Restore completed with status: Completed. You may check for more information using the commands `ark restore describe r1` and `ark restore logs r1`.\n"), "{stdout}");
    let settings = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(settings.data.unwrap()["color"], "blue");
    let large = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get("large")
        .await
        .unwrap();
    assert!(large.data.unwrap()["text"] == fixtures::large_text());
    let labels = settings.metadata.labels.unwrap();
    assert_eq!(labels["velero.io/backup-name"], "b1");
    assert_eq!(labels["velero.io/restore-name"], "r1");
    let secret = Api::<Secret>::namespaced(client.clone(), ns)
        .get("db")
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["password"].0, b"hunter2");
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .get("shop")
        .await
        .unwrap();
    let service = Api::<Service>::namespaced(client.clone(), ns)
        .get("web")
        .await
        .unwrap();
    assert!(
        service
            .spec
            .unwrap()
            .cluster_ip
            .is_some_and(|ip| !ip.is_empty())
    );
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns)
        .get("web")
        .await
        .unwrap();
    assert_eq!(deployment.spec.unwrap().replicas, Some(2));
    fixtures::wait_for_running_pods(&client, ns, 2).await;
    let restore = Api::<Restore>::namespaced(client.clone(), &ark_ns.name)
        .get("r1")
        .await
        .unwrap();
    let status = restore.status.unwrap();
    assert_eq!((status.errors, status.warnings), (Some(0), Some(0)));
    assert_eq!(
        file_names_under(store, &store.layout.restore_dir("r1")).await,
        [
            "restore-r1-logs.gz",
            "restore-r1-resource-list.json.gz",
            "restore-r1-results.gz"
        ]
    );

    // A restore into a mapped namespace.
    let copy = format!("{ns}-copy");
    let mapping = format!("{ns}:{copy}");
    ark_ok(
        &cluster,
        &ark_ns.name,
        &[
            "restore",
            "create",
            "r2",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &mapping,
            "--wait",
        ],
    );
    let copied = Api::<ConfigMap>::namespaced(client.clone(), &copy)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(copied.data.unwrap()["color"], "blue");
    fixtures::wait_for_running_pods(&client, &copy, 2).await;
    Api::<Namespace>::all(client.clone())
        .delete(&copy, &DeleteParams::default())
        .await
        .unwrap();

    // What happened is visible.
    let get = ark_ok(&cluster, &ark_ns.name, &["restore", "get"]);
    assert!(
        get.lines()
            .nth(1)
            .unwrap()
            .starts_with("r1    b1      Completed"),
        "{get}"
    );
    let describe = ark_ok(
        &cluster,
        &ark_ns.name,
        &["backup", "describe", "b1", "--details"],
    );
    assert!(
        describe.contains(&format!("    - {ns}/settings\n")),
        "{describe}"
    );
    assert!(
        describe.contains("Items backed up:              "),
        "{describe}"
    );
    let logs = ark_ok(&cluster, &ark_ns.name, &["backup", "logs", "b1"]);
    assert!(
        logs.contains(&format!(
            "level=info msg=\"backed up 1 deployments.apps in namespace {ns}\" backup={}/b1",
            ark_ns.name
        )),
        "{logs}"
    );
    let logs = ark_ok(&cluster, &ark_ns.name, &["restore", "logs", "r1"]);
    assert!(logs.contains("msg=\"restored deployments.apps\""), "{logs}");
    drop(server);
}

#[tokio::test]
async fn round_trip_with_a_file_location() {
    round_trip(Cluster::get(), async |_, _, _| file_location()).await;
}

/// On the second cluster, which runs Velero's own CRDs.
#[tokio::test]
async fn round_trip_with_s3_on_velero_crds() {
    round_trip(Cluster::second(), async |cluster, client, ark_ns| {
        let (flags, location) = fixtures::s3_location(cluster, client, ark_ns, None, None).await;
        TestLocation {
            flags,
            store: ark_storage::open(&location).unwrap(),
            _dir: None,
        }
    })
    .await;
}

/// A backup that includes most namespaces lists each resource once across the cluster: what it
/// keeps must still be exactly the included namespaces' items.
#[tokio::test]
async fn a_backup_of_most_namespaces_keeps_only_the_included_namespaces_items() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("most").await;
    let kept = cluster.namespace("most-kept").await;
    let left = cluster.namespace("most-left").await;
    for (namespace, name) in [(&kept.name, "kept"), (&left.name, "left")] {
        let config: ConfigMap =
            fixtures::object(serde_json::json!({ "metadata": { "name": name } }));
        Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .create(&Default::default(), &config)
            .await
            .unwrap();
    }
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let excluded = format!("{},kube-system", left.name);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "most",
            "--exclude-namespaces",
            &excluded,
            "--include-resources",
            "configmaps",
            "--wait",
        ],
    );
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["backup", "describe", "most", "--details"],
    );
    assert!(
        described.contains(&format!("    - {}/kept\n", kept.name)),
        "{described}"
    );
    assert!(
        !described.contains(&format!("    - {}/", left.name)),
        "{described}"
    );
    assert!(!described.contains("    - kube-system/"), "{described}");
    let logs = ark_ok(&cluster, &ns.name, &["backup", "logs", "most"]);
    assert!(
        // Its own and the namespace's kube-root-ca.crt.
        logs.contains(&format!(
            "backed up 2 configmaps in namespace {}",
            kept.name
        )),
        "{logs}"
    );
}

/// A server started with `--restore-resource-priorities` restores in that order: secrets first,
/// config maps last, the rest by name between; a list naming a resource twice is refused at start.
#[tokio::test]
async fn the_server_s_restore_resource_priorities_set_the_order_of_a_restore() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("priorities").await;
    let app = cluster.namespace("priorities-app").await;
    let config: ConfigMap = fixtures::object(serde_json::json!({ "metadata": { "name": "c" } }));
    Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .create(&Default::default(), &config)
        .await
        .unwrap();
    let secret: Secret = fixtures::object(serde_json::json!({ "metadata": { "name": "s" } }));
    Api::<Secret>::namespaced(client.clone(), &app.name)
        .create(&Default::default(), &secret)
        .await
        .unwrap();
    let _bucket = common::file_location(&cluster, &ns.name);
    let refused = common::ark(
        Some(&cluster),
        &[
            "server",
            "-n",
            &ns.name,
            "--restore-resource-priorities",
            "secrets,-,configmaps,secrets",
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        common::text(&refused.stderr).contains("\"secrets\" is named twice"),
        "{}",
        common::text(&refused.stderr)
    );
    let _server = ArkServer::start_with(
        ARK,
        &cluster,
        &ns.name,
        &["--restore-resource-priorities", "secrets,-,configmaps"],
    );
    let namespaces = app.name.as_str();
    let include = ["--include-namespaces", namespaces];
    ark_ok(
        &cluster,
        &ns.name,
        &[&["backup", "create", "b", "--wait"][..], &include].concat(),
    );
    let mapping = format!("{namespaces}:{namespaces}-copy");
    let _copy = cluster.delete_on_drop::<Namespace>(&format!("{namespaces}-copy"));
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "r",
            "--from-backup",
            "b",
            "--namespace-mappings",
            &mapping,
            "--wait",
        ],
    );
    let logs = ark_ok(&cluster, &ns.name, &["restore", "logs", "r"]);
    let at = |line: &str| {
        logs.find(line)
            .unwrap_or_else(|| panic!("{line:?} not in the restore's log:\n{logs}"))
    };
    let order = [
        at("restored secrets"),
        at("restored namespaces"),
        at("restored serviceaccounts"),
        at("restored configmaps"),
    ];
    assert!(order.is_sorted(), "{order:?}:\n{logs}");
}

/// Velero's status restore: `--status-include-resources` puts the backed-up status back on the
/// objects of that resource a restore creates (through their status subresource), an object
/// annotated `velero.io/restore-status: "false"` keeps none, and without the flag only an object
/// annotated `"true"` gets its status back.
#[tokio::test]
async fn a_restored_object_gets_its_status_back_as_restore_status_and_its_annotation_say() {
    use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("status").await;
    let app = cluster.namespace("status-app").await;
    let group = format!("{}.ark.test", ark_tests::unique_name("status"));
    let definition = format!("gauges.{group}");
    let _definition = cluster.delete_on_drop::<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >(&definition);
    let definitions: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    definitions
        .create(&PostParams::default(), &fixtures::object(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": { "name": definition },
            "spec": { "group": group, "scope": "Namespaced",
                "names": { "plural": "gauges", "singular": "gauge", "kind": "Gauge" },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "subresources": { "status": {} },
                    "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }] },
        })))
        .await
        .unwrap();
    let gauges = |namespace: &str| -> Api<DynamicObject> {
        Api::namespaced_with(
            client.clone(),
            namespace,
            &ApiResource {
                group: group.clone(),
                version: "v1".into(),
                api_version: format!("{group}/v1"),
                kind: "Gauge".into(),
                plural: "gauges".into(),
            },
        )
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while gauges(&app.name).list(&Default::default()).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{definition} was never served"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (name, annotation) in [
        ("plain", None),
        ("opted-out", Some("false")),
        ("opted-in", Some("true")),
    ] {
        let annotations = annotation
            .map(|value| serde_json::json!({ "velero.io/restore-status": value }))
            .unwrap_or_default();
        gauges(&app.name)
            .create(
                &PostParams::default(),
                &fixtures::object(serde_json::json!({
                    "apiVersion": format!("{group}/v1"), "kind": "Gauge",
                    "metadata": { "name": name, "annotations": annotations }, "spec": { "max": 10 },
                })),
            )
            .await
            .unwrap();
        gauges(&app.name)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "status": { "reading": 7, "by": name } })),
            )
            .await
            .unwrap();
    }
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let status_of = |namespace: String| {
        let gauges = gauges(&namespace);
        async move {
            let mut found = Vec::new();
            for name in ["plain", "opted-out", "opted-in"] {
                let gauge = gauges.get(name).await.unwrap();
                found.push((name, gauge.data.get("status").cloned()));
            }
            found
        }
    };
    let with = |name: &str| Some(serde_json::json!({ "reading": 7, "by": name }));
    for (restore, flags, expected) in [
        (
            "with-flag",
            &["--status-include-resources", &definition][..],
            [
                ("plain", with("plain")),
                ("opted-out", None),
                ("opted-in", with("opted-in")),
            ],
        ),
        (
            "without",
            &[][..],
            [
                ("plain", None),
                ("opted-out", None),
                ("opted-in", with("opted-in")),
            ],
        ),
    ] {
        let target = format!("{}-{restore}", app.name);
        let _target = cluster.delete_on_drop::<Namespace>(&target);
        let mapping = format!("{}:{target}", app.name);
        let args = [
            &[
                "restore",
                "create",
                restore,
                "--from-backup",
                "b",
                "--namespace-mappings",
                &mapping,
                "--wait",
            ][..],
            flags,
        ]
        .concat();
        let restored = ark_ok(&cluster, &ns.name, &args);
        assert!(restored.contains("Completed"), "{restored}");
        assert_eq!(status_of(target).await, expected, "restore {restore}");
    }
}

/// A restored object keeps the field managers it was backed up with, as Velero puts them back
/// (`pkg/restore/restore.go`: "restore the managedFields"): the tool that applied it applies it
/// again without a conflict, instead of finding every field owned by the restore.
#[tokio::test]
async fn a_restored_object_keeps_its_field_managers_and_its_owner_applies_it_again() {
    use kube::api::{Patch, PatchParams};
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("managers").await;
    let app = cluster.namespace("managers-app").await;
    let applied = |value: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "owned" }, "data": { "setting": value },
        })
    };
    let config_maps = |namespace: &str| Api::<ConfigMap>::namespaced(client.clone(), namespace);
    config_maps(&app.name)
        .patch(
            "owned",
            &PatchParams::apply("deployer"),
            &Patch::Apply(applied("1")),
        )
        .await
        .unwrap();
    let edited = PatchParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    config_maps(&app.name)
        .patch(
            "owned",
            &edited,
            &Patch::Merge(serde_json::json!({ "data": { "note": "by hand" } })),
        )
        .await
        .unwrap();
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let backup = [
        "backup",
        "create",
        "b",
        "--include-namespaces",
        &app.name,
        "--wait",
        "--timeout",
        "2m",
    ];
    ark_ok(&cluster, &ns.name, &backup);
    let target = format!("{}-restored", app.name);
    let _target = cluster.delete_on_drop::<Namespace>(&target);
    let mapping = format!("{}:{target}", app.name);
    let restore = [
        "restore",
        "create",
        "r",
        "--from-backup",
        "b",
        "--namespace-mappings",
    ];
    let restored = ark_ok(
        &cluster,
        &ns.name,
        &[&restore[..], &[&mapping, "--wait", "--timeout", "2m"]].concat(),
    );
    assert!(restored.contains("Completed"), "{restored}");

    let managers = |config_map: ConfigMap| -> Vec<(String, String)> {
        let mut managers: Vec<(String, String)> = (config_map.metadata.managed_fields)
            .into_iter()
            .flatten()
            .map(|entry| {
                (
                    entry.manager.unwrap_or_default(),
                    entry.operation.unwrap_or_default(),
                )
            })
            .collect();
        managers.sort();
        managers
    };
    let restored = config_maps(&target).get("owned").await.unwrap();
    assert_eq!(
        managers(restored),
        [
            ("deployer".to_string(), "Apply".to_string()),
            ("editor".to_string(), "Update".to_string())
        ]
    );
    // Its owner's next apply, without --force-conflicts: nobody else owns its field.
    let reapplied = config_maps(&target)
        .patch(
            "owned",
            &PatchParams::apply("deployer"),
            &Patch::Apply(applied("2")),
        )
        .await
        .unwrap();
    assert_eq!(reapplied.data.unwrap()["setting"], "2");
}

/// Velero's `orderedResources`: the pods it names are backed up first and in that order, each
/// one's pre hook ended before the next one's starts (kwok runs the hooks on this host, each
/// appending the pod's name to one file); a name that does not exist is a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_resources_back_pods_up_in_the_order_given_one_hook_after_another() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    ark_tests::allow_local_exec(&client).await;
    let ns = cluster.namespace("ordered").await;
    let app = cluster.namespace("ordered-app").await;
    let written = tempfile::NamedTempFile::new().unwrap();
    let file = written.path().to_str().unwrap().to_string();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), &app.name);
    for name in ["a", "b", "c", "d"] {
        let mut pod = ark_tests::kwok_pod(name, &["app"]);
        // The first pods take longest: unordered, they would end last.
        let pause = match name {
            "a" => "0.6",
            "b" => "0.4",
            _ => "0",
        };
        pod.metadata.annotations = Some(std::collections::BTreeMap::from([(
            "pre.hook.backup.velero.io/command".to_string(),
            serde_json::json!(["sh", "-c", format!("sleep {pause}; echo {name} >> {file}")])
                .to_string(),
        )]));
        pods.create(&PostParams::default(), &pod).await.unwrap();
        wait_for(pods.clone(), name, ark_tests::is_pod_running(), WAIT)
            .await
            .unwrap();
    }
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    let order = format!("{0}/a,{0}/b,{0}/missing,{0}/c", app.name);
    let backup: Backup = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "ordered" },
        "spec": {
            "includedNamespaces": [app.name],
            "orderedResources": { "pods": order },
        },
    }))
    .unwrap();
    backups
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    let ended = wait_for(
        backups,
        "ordered",
        |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal()),
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(
        ended.phase(),
        ark_api::BackupPhase::Completed,
        "{:#?}",
        ended.status
    );
    let hooks_ran = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = hooks_ran.lines().collect();
    assert_eq!(lines[..3], ["a", "b", "c"], "{hooks_ran}");
    assert_eq!(lines.len(), 4, "d's hook ran too: {hooks_ran}");
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["backup", "describe", "ordered", "--details"],
    );
    assert!(
        described.contains(&format!(
            "orderedResources names pods {}/missing, which does not exist",
            app.name
        )),
        "{described}"
    );
}

/// `/metrics` after one backup, one restore and one deletion counts each under Velero's names and
/// labels, so that Velero's dashboards and alerts read an ark server as they read Velero.
#[tokio::test]
async fn metrics_count_a_backup_a_restore_and_a_deletion_under_velero_names() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("metered").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let address = ark_tests::free_local_address();
    let _server = ArkServer::start_with(ARK, &cluster, &ns.name, &["--metrics-address", &address]);
    Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .create(
            &PostParams::default(),
            &fixtures::object(
                serde_json::json!({ "metadata": { "name": "settings" }, "data": { "a": "1" } }),
            ),
        )
        .await
        .unwrap();
    let copy = format!("{}-copy", app.name);
    let _copy = cluster.delete_on_drop::<Namespace>(&copy);
    let mapping = format!("{}:{copy}", app.name);
    for args in [
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ][..],
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
        &["backup", "delete", "b1", "--confirm", "--wait"],
    ] {
        ark_ok(&cluster, &ns.name, args);
    }
    // The deletion is counted once its requests are removed, a moment after the Backup is gone
    // (which is what `--wait` waits for).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let scraped = loop {
        let scraped = ark_tests::scrape(&address, "/metrics");
        if scraped.contains("velero_backup_deletion_success_total{schedule=\"\"} 1\n")
            || std::time::Instant::now() > deadline
        {
            break scraped;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    for line in [
        "velero_backup_attempt_total{schedule=\"\"} 1\n",
        "velero_backup_success_total{schedule=\"\"} 1\n",
        "velero_backup_partial_failure_total{schedule=\"\"} 0\n",
        "velero_backup_failure_total{schedule=\"\"} 0\n",
        "velero_backup_duration_seconds_count{schedule=\"\"} 1\n",
        "velero_restore_attempt_total{schedule=\"\"} 1\n",
        "velero_restore_success_total{schedule=\"\"} 1\n",
        "velero_restore_failed_total{schedule=\"\"} 0\n",
        "velero_backup_deletion_attempt_total{schedule=\"\"} 1\n",
        "velero_backup_deletion_success_total{schedule=\"\"} 1\n",
        "velero_backup_deletion_failure_total{schedule=\"\"} 0\n",
        "velero_backup_location_status_gauge{backup_location_name=\"default\"} 1\n",
    ] {
        assert!(
            scraped.contains(line),
            "{line:?} is not in /metrics:\n{scraped}"
        );
    }
    // The items gauge holds what the backup took: the namespace, its two ConfigMaps (one is the
    // cluster's root CA) and its default ServiceAccount.
    assert!(
        scraped.contains("velero_backup_items_total{schedule=\"\"} 4\n"),
        "{scraped}"
    );
    for controller in ["Backup", "Restore", "DeleteBackupRequest"] {
        assert!(
            scraped.contains(&format!(
                "ark_reconcile_duration_seconds_count{{controller=\"{controller}\"}}"
            )),
            "no reconcile histogram of {controller}:\n{scraped}"
        );
    }
}
