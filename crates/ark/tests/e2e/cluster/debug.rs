//! `ark debug`: the support bundle holds what a person helping asks for, and no credential of the
//! test ground, even where one was planted: in an object's annotation, in a workload's
//! environment, in a DownloadRequest's signed URL.

use crate::common;

use std::io::Read as _;

use ark_api::DownloadRequest;
use ark_tests::{ArkServer, Cluster, wait_for};
use common::ARK;
use common::setup::{Setup, WAIT};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

/// The bundle's files, by path under `ark-debug/`.
fn files(bundle: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let file = std::fs::File::open(bundle).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut files = std::collections::BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(path.trim_start_matches("ark-debug/").to_string(), text);
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_support_bundle_holds_the_objects_outputs_and_listings_and_no_credential() {
    let setup = Setup::new(Cluster::get(), None).await;
    let cluster = &setup.cluster;
    let _server = ArkServer::start(ARK, cluster, setup.ns());
    setup.backup("b1", Some("r1"));
    let _copy = cluster
        .delete_on_drop::<k8s_openapi::api::core::v1::Namespace>(&format!("{}-r1", setup.app.name));
    let secret_key = cluster.s3_secret_key.clone();
    // Planted where a careless bundle would carry them.
    setup
        .backups()
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "metadata": { "annotations": { "note": format!("key {secret_key}") } } })),
        )
        .await
        .unwrap();
    let server: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "ark" },
        "spec": {
            "replicas": 0,
            "selector": { "matchLabels": { "app": "ark" } },
            "template": { "metadata": { "labels": { "app": "ark" } }, "spec": { "containers": [{
                "name": "ark", "image": "ark", "env": [
                    { "name": "AWS_SECRET_ACCESS_KEY", "value": secret_key },
                    { "name": "LOG_FORMAT", "value": "text" },
                ],
            }] } },
        },
    }))
    .unwrap();
    Api::<Deployment>::namespaced(setup.client.clone(), setup.ns())
        .create(&PostParams::default(), &server)
        .await
        .unwrap();
    let requests: Api<DownloadRequest> = Api::namespaced(setup.client.clone(), setup.ns());
    let request: DownloadRequest = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "b1-log" },
        "spec": { "target": { "kind": "BackupLog", "name": "b1" } },
    }))
    .unwrap();
    requests
        .create(&PostParams::default(), &request)
        .await
        .unwrap();
    let signed = wait_for(
        requests,
        "b1-log",
        |r: Option<&DownloadRequest>| {
            r.and_then(|r| r.status.as_ref())
                .and_then(|s| s.download_url.as_ref())
                .is_some()
        },
        WAIT,
    )
    .await
    .unwrap();
    let url = signed.status.unwrap().download_url.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle.tar.gz");
    let written = setup.ark(&[
        "debug",
        "--backup",
        "b1",
        "--restore",
        "r1",
        "--output",
        bundle.to_str().unwrap(),
    ]);
    assert!(written.contains("wrote "), "{written}");
    let files = files(&bundle);
    let has = |path: &str, text: &str| {
        let file = files
            .get(path)
            .unwrap_or_else(|| panic!("no {path} in the bundle: {:?}", files.keys()));
        assert!(file.contains(text), "{text:?} not in {path}:\n{file}");
    };
    has("resources/backups.yaml", "name: b1");
    has("resources/restores.yaml", "name: r1");
    has("resources/backupstoragelocations.yaml", "name: default");
    has("resources/downloadrequests.yaml", "name: b1-log");
    has("get/backups.txt", "b1");
    has("describe/backup-b1.txt", "Completed");
    has("describe/restore-r1.txt", "Completed");
    has("logs/backup-b1.log", "backed up");
    has("locations/default.txt", "b1");
    has("workloads/deployment-ark.yaml", "LOG_FORMAT");
    has("version.txt", "ark");
    // No credential of the test ground, and no signed URL, anywhere.
    let kubeconfig = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
    let mut credentials = vec![
        cluster.s3_access_key.clone(),
        secret_key,
        cluster.azure_key.clone(),
        url.clone(),
    ];
    credentials.extend(
        kubeconfig
            .lines()
            .filter_map(|l| l.trim().split_once(": "))
            .filter(|(k, _)| ["client-key-data", "client-certificate-data", "token"].contains(k))
            .map(|(_, v)| v.to_string()),
    );
    let signature = url
        .split("X-Amz-Signature=")
        .nth(1)
        .unwrap_or("no-signature")
        .to_string();
    credentials.push(signature);
    for (path, text) in &files {
        for credential in &credentials {
            assert!(
                !text.contains(credential.as_str()),
                "{path} holds a credential of the test ground:\n{text}"
            );
        }
    }
}
