//! Hostile input: whoever can write a backup bucket gains nothing they did not already have.

use crate::common;

use ark_api::Backup;
use ark_tests::{ArkServer, Cluster, fixtures, unique_name, wait_for};
use common::setup::WAIT;
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Api;

/// A tarball tampered to hold a ClusterRole under `namespaces/<ns>/`, a ConfigMap that names
/// another namespace than its folder's and a ConfigMap under `cluster/`. A restore of that one
/// namespace without cluster resources creates none of them (before: the ClusterRole was created
/// cluster-wide), names each in its errors and restores the sound item; a restore of everything
/// refuses them too. So is the namespace's own object when it names another namespace than its
/// file (before: taken by its file's name, created under its own).
#[tokio::test]
async fn a_tampered_tarball_creates_nothing_cluster_wide_or_elsewhere() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("tampered").await;
    let other = cluster.namespace("elsewhere").await;
    let bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);

    let role = unique_name("ark-escalated");
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let _remove_role = cluster.delete_on_drop::<ClusterRole>(&role);
    let config_map = |name: &str, namespace: Option<&str>| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "data": { "k": "v" },
            "metadata": { "name": name, "namespace": namespace },
        })
    };
    let cluster_role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": role, "namespace": app.name },
        "rules": [{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }],
    });
    // The namespace's own object, taken with it, naming another namespace.
    let smuggled = unique_name("ark-smuggled");
    let _remove_smuggled = cluster.delete_on_drop::<Namespace>(&smuggled);
    let namespace = serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": smuggled },
    });
    let items = [
        (
            format!("resources/namespaces/cluster/{}.json", app.name),
            namespace,
        ),
        (
            format!(
                "resources/clusterroles.rbac.authorization.k8s.io/namespaces/{}/{role}.json",
                app.name
            ),
            cluster_role,
        ),
        (
            format!("resources/configmaps/namespaces/{}/sound.json", app.name),
            config_map("sound", Some(&app.name)),
        ),
        (
            format!(
                "resources/configmaps/namespaces/{}/elsewhere.json",
                app.name
            ),
            config_map("elsewhere", Some(&other.name)),
        ),
        (
            "resources/configmaps/cluster/loose.json".to_string(),
            config_map("loose", None),
        ),
    ];
    let mut entries = vec![("metadata/version".to_string(), b"1".to_vec())];
    entries.extend(items.map(|(path, item)| (path, serde_json::to_vec(&item).unwrap())));
    fixtures::put_file_backup(
        bucket.path(),
        "tampered",
        serde_json::json!({ "includedNamespaces": [app.name] }),
        &fixtures::tarball(&entries),
    );
    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    wait_for(backups, "tampered", |b: Option<&Backup>| b.is_some(), WAIT)
        .await
        .unwrap();

    let restore = |name: &str, filters: &[&str]| {
        let mut args = vec!["restore", "create", name, "--from-backup", "tampered"];
        args.extend(filters);
        args.extend(["--wait", "-n", &ns.name]);
        let output = ark(Some(&cluster), &args);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
        assert!(
            text(&output.stdout).contains("Restore completed with status: PartiallyFailed."),
            "{}",
            text(&output.stdout)
        );
        ark_ok(
            &cluster,
            &ns.name,
            &["restore", "describe", name, "--details"],
        )
    };
    let misplaced_role = format!(
        "resources/clusterroles.rbac.authorization.k8s.io/namespaces/{}/{role}.json: the resource \
         is cluster-scoped, but the item lies under namespaces/; not restored",
        app.name
    );
    let elsewhere = format!(
        "resources/configmaps/namespaces/{0}/elsewhere.json: the item names namespace \"{1}\", but \
         lies under namespaces/{0}/; not restored",
        app.name, other.name
    );
    let loose = "resources/configmaps/cluster/loose.json: the resource is namespaced, but the item \
                 lies under cluster/; not restored";
    let renamed = format!(
        "resources/namespaces/cluster/{0}.json: the item names \"{smuggled}\", but its file is \
         {0}.json; not restored",
        app.name
    );

    let one_namespace = restore(
        "r1",
        &[
            "--include-namespaces",
            &app.name,
            "--include-cluster-resources=false",
        ],
    );
    for expected in [&misplaced_role, &elsewhere, &renamed] {
        assert!(
            one_namespace.contains(expected.as_str()),
            "{expected:?} not in:\n{one_namespace}"
        );
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(
        namespaces.get_opt(&smuggled).await.unwrap().is_none(),
        "a namespace the restore did not include was created"
    );
    assert!(!one_namespace.contains("loose.json"), "{one_namespace}");
    assert!(
        roles.get_opt(&role).await.unwrap().is_none(),
        "the ClusterRole was created"
    );
    let in_app: Api<ConfigMap> = Api::namespaced(client.clone(), &app.name);
    let in_other: Api<ConfigMap> = Api::namespaced(client.clone(), &other.name);
    assert_eq!(in_app.get("sound").await.unwrap().data.unwrap()["k"], "v");
    assert!(in_app.get_opt("elsewhere").await.unwrap().is_none());
    assert!(in_other.get_opt("elsewhere").await.unwrap().is_none());

    let everything = restore("r2", &["--include-cluster-resources=true"]);
    for expected in [&misplaced_role, &elsewhere, &loose.to_string()] {
        assert!(
            everything.contains(expected.as_str()),
            "{expected:?} not in:\n{everything}"
        );
    }
    assert!(
        roles.get_opt(&role).await.unwrap().is_none(),
        "the ClusterRole was created"
    );
}

/// `s3Url` without `s3ForcePathStyle`: Velero's AWS plugin then puts the bucket in the host name,
/// or in the path when the host is an IP address, as here. The backup lands in the named bucket
/// under its prefix (before: every key went to `<s3Url>/<prefix>/...`, which S3 reads as a bucket
/// named after the prefix, and the backup failed).
#[tokio::test]
async fn an_s3_url_without_path_style_still_names_the_bucket() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let (mut flags, location) =
        fixtures::s3_location(&cluster, &client, &ns.name, None, None).await;
    let config = flags.iter().position(|f| f == "--config").unwrap() + 1;
    flags[config] = format!("s3Url={},region=us-east-1", cluster.s3_endpoint);
    let mut args = vec!["backup-location", "create", "default", "--default"];
    args.extend(flags.iter().map(String::as_str));
    ark_ok(&cluster, &ns.name, &args);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let create = [
        "backup",
        "create",
        "b1",
        "--include-namespaces",
        &ns.name,
        "--wait",
    ];
    let output = ark_ok(&cluster, &ns.name, &create);
    assert!(
        output.contains("Backup completed with status: Completed."),
        "{output}"
    );
    let store = ark_storage::open(&location).unwrap();
    store
        .get(&store.layout.backup_metadata("b1"))
        .await
        .unwrap();
}

/// A bucket written by someone else: `a/velero-backup.json` names backup `b` (an object `b` would
/// lead to `a`'s data, or to none), `big/velero-backup.json` is 5 MiB, and `annotated` carries
/// 300 KiB of annotations, which the API server refuses. None is synced; a sound backup listed
/// after them is (before: `b` was created, the 5 MiB file read whole, and the refused one ended
/// every sync round before `sound`).
#[tokio::test]
async fn a_bucket_s_metadata_naming_another_backup_or_too_large_is_not_synced() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start_with(ARK, &cluster, &ns.name, &["--backup-sync-period", "1s"]);
    let tarball = fixtures::tarball(&[("metadata/version".to_string(), b"1".to_vec())]);
    for name in ["a", "annotated", "big", "sound"] {
        fixtures::put_file_backup(bucket.path(), name, serde_json::json!({}), &tarball);
    }
    let metadata = |name: &str| {
        bucket
            .path()
            .join(format!("backups/{name}/velero-backup.json"))
    };
    let named_b = std::fs::read_to_string(metadata("a"))
        .unwrap()
        .replace("\"a\"", "\"b\"");
    std::fs::write(metadata("a"), named_b).unwrap();
    let mut big: serde_json::Value =
        serde_json::from_slice(&std::fs::read(metadata("big")).unwrap()).unwrap();
    big["metadata"]["annotations"] = serde_json::json!({ "padding": "x".repeat(5 << 20) });
    std::fs::write(metadata("big"), serde_json::to_vec(&big).unwrap()).unwrap();
    big["metadata"]["name"] = "annotated".into();
    big["metadata"]["annotations"] = serde_json::json!({ "padding": "x".repeat(300 << 10) });
    std::fs::write(metadata("annotated"), serde_json::to_vec(&big).unwrap()).unwrap();

    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    wait_for(
        backups.clone(),
        "sound",
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .unwrap();
    for name in ["a", "b", "big", "annotated"] {
        assert!(
            backups.get_opt(name).await.unwrap().is_none(),
            "{name} was synced"
        );
    }
}
