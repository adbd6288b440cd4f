//! One test's world: an ark namespace with an S3 location, an application namespace to back up,
//! and the bucket as the test sees it.

use std::io::Write;
use std::time::Duration;

use ark_api::{Backup, DeleteBackupRequest, DeleteBackupRequestPhase, Restore, labels};
use ark_storage::BackupStore;
use ark_tests::{Cluster, TestNamespace, fixtures, wait_deleted, wait_for};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};

use super::ark_ok;

pub const WAIT: Duration = Duration::from_secs(60);

/// An ark namespace with an S3 location (optionally behind a proxy), an application namespace
/// with one ConfigMap, and the bucket as the test sees it.
pub struct Setup {
    pub cluster: Cluster,
    pub client: Client,
    pub ark_ns: TestNamespace,
    pub app: TestNamespace,
    pub store: BackupStore,
}

impl Setup {
    pub async fn new(cluster: Cluster, endpoint: Option<&str>) -> Setup {
        let client = cluster.client().await;
        let ark_ns = cluster.namespace("ark").await;
        let app = cluster.namespace("app").await;
        let (flags, location) =
            fixtures::s3_location(&cluster, &client, &ark_ns.name, None, endpoint).await;
        let mut create = vec!["backup-location", "create", "default", "--default"];
        create.extend(flags.iter().map(String::as_str));
        ark_ok(&cluster, &ark_ns.name, &create);
        let config_map: ConfigMap = serde_json::from_value(
            serde_json::json!({ "metadata": { "name": "settings" }, "data": { "k": "v" } }),
        )
        .unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), &app.name)
            .create(&PostParams::default(), &config_map)
            .await
            .unwrap();
        Setup {
            store: ark_storage::open(&location).unwrap(),
            cluster,
            client,
            ark_ns,
            app,
        }
    }

    pub fn ns(&self) -> &str {
        &self.ark_ns.name
    }

    pub fn ark(&self, args: &[&str]) -> String {
        ark_ok(&self.cluster, self.ns(), args)
    }

    pub fn backups(&self) -> Api<Backup> {
        Api::namespaced(self.client.clone(), self.ns())
    }

    pub fn requests(&self) -> Api<DeleteBackupRequest> {
        Api::namespaced(self.client.clone(), self.ns())
    }

    pub fn restores(&self) -> Api<Restore> {
        Api::namespaced(self.client.clone(), self.ns())
    }

    /// A backup of the application namespace, and optionally a restore of it into a copy.
    pub fn backup(&self, name: &str, restore: Option<&str>) {
        self.ark(&[
            "backup",
            "create",
            name,
            "--include-namespaces",
            &self.app.name,
            "--wait",
        ]);
        if let Some(restore) = restore {
            let mapping = format!("{}:{}-{restore}", self.app.name, self.app.name);
            self.ark(&[
                "restore",
                "create",
                restore,
                "--from-backup",
                name,
                "--namespace-mappings",
                &mapping,
                "--wait",
            ]);
        }
    }

    pub async fn keys(&self, dir: &ark_storage::Path) -> usize {
        self.store.keys_under(dir).await.unwrap().len()
    }

    /// A request written directly (as kubectl or Velero's CLI would).
    pub async fn request(&self, backup_name: &str, labels: Option<(&str, &str)>) -> String {
        let mut request: DeleteBackupRequest = serde_json::from_value(serde_json::json!({
            "metadata": { "generateName": "req-" },
            "spec": { "backupName": backup_name },
        }))
        .unwrap();
        if let Some((name, uid)) = labels {
            request.metadata.labels = Some(labels::for_backup(name, uid));
        }
        self.requests()
            .create(&PostParams::default(), &request)
            .await
            .unwrap()
            .name_any()
    }

    pub async fn processed(&self, request: &str) -> DeleteBackupRequest {
        let done = |r: Option<&DeleteBackupRequest>| {
            r.is_some_and(|r| r.phase() == Some(DeleteBackupRequestPhase::Processed))
        };
        wait_for(self.requests(), request, done, WAIT)
            .await
            .unwrap()
    }

    pub async fn gone(&self, backup: &Backup) {
        wait_deleted(self.backups(), backup, WAIT).await;
    }

    /// Waits until no request matches `selector` (every request: ""); the server removes a
    /// deletion's requests just after its Backup, so a wait that saw the Backup go may be first.
    pub async fn requests_removed(&self, selector: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let left = self
                .requests()
                .list(&kube::api::ListParams::default().labels(selector))
                .await
                .unwrap()
                .items;
            if left.is_empty() {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "requests were not removed: {:?}",
                Vec::from_iter(left.iter().map(|r| r.metadata.name.clone()))
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    pub async fn put_gz(&self, key: &ark_storage::Path, json: &str) {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(json.as_bytes()).unwrap();
        self.store
            .put(key, gz.finish().unwrap().into())
            .await
            .unwrap();
    }

    /// Starts a backup of the application namespace, without waiting.
    pub fn start_backup(&self, name: &str) {
        self.ark(&[
            "backup",
            "create",
            name,
            "--include-namespaces",
            &self.app.name,
        ]);
    }

    /// Waits until backup `name` is in `phase`.
    pub async fn backup_in(&self, name: &str, phase: ark_api::BackupPhase) -> Backup {
        let reached = move |b: Option<&Backup>| b.is_some_and(|b| b.phase() == phase);
        wait_for(self.backups(), name, reached, WAIT)
            .await
            .unwrap_or_else(|e| panic!("backup {name}: {e:#}"))
    }
}
