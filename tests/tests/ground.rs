//! The ground every capability is tested on is real: the API server enforces RBAC, ark's CRDs are
//! served, kwok runs pods and exec, and SeaweedFS stores and refuses.

use std::time::Duration;

use ark_api::{Backup, BackupSpec, DeleteBackupRequest, DeleteBackupRequestSpec};
use ark_tests::{Cluster, is_pod_running, kwok_pod, unique_name, wait_for};
use bytes::Bytes;
use k8s_openapi::api::core::v1::{Pod, Secret, ServiceAccount};
use kube::api::{ApiResource, AttachParams, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client, discovery};

#[tokio::test]
async fn api_server_answers_and_enforces_rbac() {
    let cluster = Cluster::get();
    let admin = cluster.client().await;
    let version = admin.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");

    let ns = cluster.namespace("rbac").await;
    let account: ServiceAccount =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "nobody" } })).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name)
        .create(&PostParams::default(), &account)
        .await
        .unwrap();

    let mut config = cluster.config().await;
    config.auth_info.impersonate = Some(format!("system:serviceaccount:{}:nobody", ns.name));
    let nobody = Client::try_from(config).unwrap();
    let error = Api::<Secret>::namespaced(nobody, &ns.name)
        .list(&Default::default())
        .await
        .expect_err("a service account without rights must not list secrets");
    match error {
        kube::Error::Api(status) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn ark_crds_are_served() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let group = discovery::group(&client, "velero.io").await.unwrap();
    let mut kinds: Vec<String> = group
        .recommended_resources()
        .into_iter()
        .map(|(resource, _)| resource.kind)
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        // Velero's v1 kinds, as `velero install --crds-only` installs them (v2alpha1 has
        // DataUpload and DataDownload).
        [
            "Backup",
            "BackupRepository",
            "BackupStorageLocation",
            "DeleteBackupRequest",
            "DownloadRequest",
            "PodVolumeBackup",
            "PodVolumeRestore",
            "Restore",
            "Schedule",
            "ServerStatusRequest",
            "VolumeSnapshotLocation"
        ]
    );

    let ns = cluster.namespace("crds").await;
    let backups: Api<Backup> = Api::namespaced(client.clone(), &ns.name);
    let backup = Backup::new(
        "nightly",
        BackupSpec {
            included_namespaces: Some(vec!["shop".into()]),
            ttl: Some("720h0m0s".into()),
            ..Default::default()
        },
    );
    backups
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    let stored = backups.get("nightly").await.unwrap();
    assert_eq!(stored.spec, backup.spec);

    let requests: Api<DeleteBackupRequest> = Api::namespaced(client, &ns.name);
    let mut request = DeleteBackupRequest::new(
        "",
        DeleteBackupRequestSpec {
            backup_name: "nightly".into(),
            ..Default::default()
        },
    );
    request.metadata.name = None;
    request.metadata.generate_name = Some("nightly-".into());
    let created = requests
        .create(&PostParams::default(), &request)
        .await
        .unwrap();
    assert!(created.metadata.name.unwrap().starts_with("nightly-"));
}

/// kwok's Exec object: `pods/exec` into this pod's containers runs the command on the host.
async fn enable_exec(client: &Client, namespace: &str, pod: &str, containers: &[&str]) {
    let gvk = GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "Exec");
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk));
    let exec: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Exec",
        "metadata": { "name": pod, "namespace": namespace },
        "spec": { "execs": [{ "containers": containers, "local": { "workDir": "/tmp" } }] },
    }))
    .unwrap();
    api.create(&PostParams::default(), &exec).await.unwrap();
}

#[tokio::test]
async fn pods_run_on_the_kwok_node_and_exec_runs_a_real_command() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("exec").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    pods.create(&PostParams::default(), &kwok_pod("app", &["main"]))
        .await
        .unwrap();
    let pod = wait_for(
        pods.clone(),
        "app",
        is_pod_running(),
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    // Scheduled onto one of the cluster's kwok nodes.
    let node_name = pod.spec.unwrap().node_name.unwrap();
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let kwok_nodes = nodes
        .list(&kube::api::ListParams::default().labels("type=kwok"))
        .await
        .unwrap()
        .items;
    assert_eq!(kwok_nodes.len(), cluster.kwok_nodes);
    assert!(
        kwok_nodes
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some(&node_name)),
        "{node_name}"
    );

    enable_exec(&client, &ns.name, "app", &["main"]).await;
    let marker = unique_name("marker");
    let script = format!("echo {marker}; echo oops >&2; exit 3");
    // kwok picks the Exec object up through a watch: retry briefly until it has seen it.
    let mut attempt = 0;
    let (stdout, status) = loop {
        attempt += 1;
        let mut process = pods
            .exec(
                "app",
                ["sh", "-c", script.as_str()],
                &AttachParams::default().container("main").stderr(true),
            )
            .await
            .unwrap();
        let stdout = tokio_util_read(process.stdout().unwrap()).await;
        let status = process.take_status().unwrap().await.unwrap();
        if !stdout.is_empty() || attempt == 20 {
            break (stdout, status);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(stdout, format!("{marker}\n"));
    // A kubelet reports a non-zero exit as an `ExitCode` cause; kwok's exec reports it in the
    // message ("...: exit status 3"). Either way the code reaches the caller.
    assert_eq!(status.status.as_deref(), Some("Failure"));
    let message = status.message.unwrap_or_default();
    assert!(message.ends_with("exit status 3"), "{message}");
}

async fn tokio_util_read(mut reader: impl tokio::io::AsyncRead + Unpin) -> String {
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    reader.read_to_string(&mut text).await.unwrap();
    text
}

#[tokio::test]
async fn seaweedfs_stores_lists_and_deletes_keys() {
    let cluster = Cluster::get();
    let prefix = unique_name("ground");
    let store = ark_storage::open(&cluster.s3_location(&prefix)).unwrap();
    let layout = store.layout.clone();
    for key in [layout.backup_metadata("b1"), layout.backup_contents("b1")] {
        store.put(&key, Bytes::from_static(b"{}")).await.unwrap();
    }
    let mut listed: Vec<String> = store
        .keys_under(&layout.backup_dir("b1"))
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            format!("{prefix}/backups/b1/b1.tar.gz"),
            format!("{prefix}/backups/b1/velero-backup.json"),
        ]
    );
    assert_eq!(
        store.backup_names().await.unwrap(),
        std::collections::BTreeSet::from(["b1".to_string()])
    );
    assert_eq!(
        store.delete_under(&layout.backup_dir("b1")).await.unwrap(),
        2
    );
    assert!(
        store
            .keys_under(&layout.backup_dir("b1"))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn seaweedfs_refuses_a_wrong_secret() {
    let cluster = Cluster::get();
    let mut location = cluster.s3_location(&unique_name("ground"));
    location.credentials = Some(ark_tests::aws_credentials_file(
        &cluster.s3_access_key,
        "not-the-secret",
    ));
    let store = ark_storage::open(&location).unwrap();
    let error = store
        .put(
            &store.layout.backup_metadata("b1"),
            Bytes::from_static(b"{}"),
        )
        .await
        .expect_err("a wrong secret must be refused");
    let text = error.to_string();
    assert!(
        text.contains("SignatureDoesNotMatch")
            || text.contains("403")
            || text.contains("Access Denied"),
        "unexpected error: {text}"
    );
}
