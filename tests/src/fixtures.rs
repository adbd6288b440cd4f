//! The application and storage the end-to-end tests share.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount};
use kube::api::{ListParams, PostParams};
use kube::runtime::wait::Condition;
use kube::{Api, Client};

use crate::{Cluster, is_pod_running, unique_name};

const WAIT: Duration = Duration::from_secs(90);

/// `ark backup-location create` flags for an S3 location on SeaweedFS under a prefix of its own
/// (or `prefix`), reached at `endpoint` (default: the server itself), with the credentials in a
/// Secret (`cloud-credentials`, key `cloud`) as Velero users keep them, created here; and the
/// location as the test opens it directly (always at the server itself).
pub async fn s3_location(
    cluster: &Cluster,
    client: &Client,
    ark_ns: &str,
    prefix: Option<&str>,
    endpoint: Option<&str>,
) -> (Vec<String>, ark_storage::Location) {
    let prefix = prefix.map_or_else(|| unique_name("e2e"), str::to_string);
    let (flags, location) = s3_location_flags(cluster, &prefix, endpoint);
    credentials_secret(client, ark_ns, CREDENTIALS_SECRET, &location).await;
    (flags, location)
}

/// The Secret Velero's users keep their credentials in, as the tests name it.
pub const CREDENTIALS_SECRET: &str = "cloud-credentials";

/// The Secret `name` (key `cloud`) with a location's credentials, in `namespace`.
pub async fn credentials_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    location: &ark_storage::Location,
) {
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "stringData": { "cloud": location.credentials.clone().unwrap() },
    }))
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

/// The same flags and location, for a namespace that has the `cloud-credentials` Secret already.
pub fn s3_location_flags(
    cluster: &Cluster,
    prefix: &str,
    endpoint: Option<&str>,
) -> (Vec<String>, ark_storage::Location) {
    let location = cluster.s3_location(prefix);
    let mut shown = location.clone();
    if let Some(endpoint) = endpoint {
        shown.config.insert("s3Url".into(), endpoint.to_string());
    }
    (location_flags(&shown, CREDENTIALS_SECRET), location)
}

/// `ark backup-location create` flags for `location`, its credentials in the Secret `secret`.
pub fn location_flags(location: &ark_storage::Location, secret: &str) -> Vec<String> {
    let mut flags = location_flags_without_credential(location);
    flags.extend(["--credential".into(), format!("{secret}=cloud")]);
    flags
}

/// The same flags without `--credential`: a location naming no Secret, as `velero install` makes
/// it (the server's environment names a credentials file instead).
pub fn location_flags_without_credential(location: &ark_storage::Location) -> Vec<String> {
    let config = location
        .config
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut flags = vec![
        "--provider",
        &location.provider,
        "--bucket",
        &location.bucket,
    ];
    if let Some(prefix) = &location.prefix {
        flags.extend(["--prefix", prefix]);
    }
    if !config.is_empty() {
        flags.extend(["--config", &config]);
    }
    flags.into_iter().map(String::from).collect()
}

/// A Kubernetes object from its JSON.
pub fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// The application the tests back up: every kind the issue names, pods Running on the kwok node.
pub async fn deploy_shop(client: &Client, ns: &str) {
    let pp = PostParams::default();
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&pp, &object(serde_json::json!({ "metadata": { "name": "settings" }, "data": { "color": "blue" } })))
        .await
        .unwrap();
    Api::<Secret>::namespaced(client.clone(), ns)
        .create(&pp, &object(serde_json::json!({ "metadata": { "name": "db" }, "stringData": { "password": "hunter2" } })))
        .await
        .unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(
            &pp,
            &object(serde_json::json!({ "metadata": { "name": "shop" } })),
        )
        .await
        .unwrap();
    Api::<Service>::namespaced(client.clone(), ns)
        .create(
            &pp,
            &object(serde_json::json!({
                "metadata": { "name": "web" },
                "spec": { "selector": { "app": "web" }, "ports": [{ "port": 80 }] },
            })),
        )
        .await
        .unwrap();
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(
            &pp,
            &object(serde_json::json!({
                "metadata": { "name": "web" },
                "spec": {
                    "replicas": 2,
                    "selector": { "matchLabels": { "app": "web" } },
                    "template": {
                        "metadata": { "labels": { "app": "web" } },
                        "spec": {
                            "serviceAccountName": "shop",
                            "nodeSelector": { "type": "kwok" },
                            "containers": [{ "name": "web", "image": "nginx" }],
                        },
                    },
                },
            })),
        )
        .await
        .unwrap();
    wait_for_running_pods(client, ns, 2).await;
}

/// The ConfigMap `large`, whose JSON is large enough for ark's backups to compress it as a gzip
/// member of its own: 200 KiB of text that does not repeat within gzip's window.
pub fn large_config_map() -> ConfigMap {
    object(serde_json::json!({
        "metadata": { "name": "large" }, "data": { "text": large_text() },
    }))
}

pub fn large_text() -> String {
    (0..200 * 1024u64)
        .map(|i| char::from(b'a' + ((i.wrapping_mul(2_654_435_761) >> 7) % 26) as u8))
        .collect()
}

pub async fn wait_for_running_pods(client: &Client, ns: &str, count: usize) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = pods
            .list(&ListParams::default().labels("app=web"))
            .await
            .unwrap();
        let running = list
            .items
            .iter()
            .filter(|p| is_pod_running().matches_object(Some(p)))
            .count();
        if running >= count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{count} pods of app=web in {ns} not Running: {running}"
        );
        // The watch-based wait needs a name; a short poll is fine for a set of pods.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A gzipped tarball of regular files, as a backup's `<name>.tar.gz` holds them.
pub fn tarball(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, data.as_slice())
            .expect("a tar entry");
    }
    gzip(&builder.into_inner().expect("a tarball"))
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("gzip");
    gz.finish().expect("gzip")
}

/// A Completed backup written straight into a `file` location's directory, as another cluster or
/// anyone with access to the bucket could write it: `<name>.tar.gz` (already gzipped) and a
/// `velero-backup.json` with `spec`. Sync turns it into a Backup object.
pub fn put_file_backup(
    bucket: &std::path::Path,
    name: &str,
    spec: serde_json::Value,
    tar_gz: &[u8],
) {
    let dir = bucket.join("backups").join(name);
    std::fs::create_dir_all(&dir).expect("backup directory");
    std::fs::write(dir.join(format!("{name}.tar.gz")), tar_gz).expect("tarball");
    let backup = serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Backup", "metadata": { "name": name },
        "spec": spec, "status": { "phase": "Completed" },
    });
    std::fs::write(
        dir.join("velero-backup.json"),
        serde_json::to_vec(&backup).expect("json"),
    )
    .expect("velero-backup.json");
}
