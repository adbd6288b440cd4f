//! What every end-to-end test needs: the local cluster `scripts/cluster.sh up` started (its
//! kubeconfig and S3 credentials in `.cluster/cluster.env`), a namespace of its own, and waits that
//! watch instead of sleeping.
//!
//! A test that finds no cluster fails and says how to start one: it never skips itself.

pub mod bench;
pub mod csi;
pub mod fixtures;
pub mod kopia;
pub mod netns;
pub mod node_agent;
pub mod proxy;
pub mod tls;
pub mod turn;
pub mod velero;

pub use turn::Turn;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::wait::{Condition, await_condition};
use kube::{Api, Client};

/// The local cluster and storage servers, as `scripts/cluster.sh up` described them. Every server
/// has the bucket (or container) `s3_bucket`.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub kubeconfig: PathBuf,
    pub s3_endpoint: String,
    pub s3_bucket: String,
    pub s3_access_key: String,
    pub s3_secret_key: String,
    /// Azurite: `http://127.0.0.1:<port>/<account>`.
    pub azure_endpoint: String,
    pub azure_account: String,
    pub azure_key: String,
    /// How many kwok nodes (labelled `type: kwok`) the cluster has.
    pub kwok_nodes: usize,
    /// The real node's name, where the cluster has one (scripts/node.sh: the first cluster).
    pub real_node: Option<String>,
    /// The socket of the real node's containerd, which images are imported into.
    pub real_node_containerd: Option<PathBuf>,
    /// The real node's kubelet pod directory (`<kubelet root>/pods`): what a node agent mounts.
    pub real_node_pods: Option<PathBuf>,
}

/// How long one CLI command of a test may run: a command that waits on a server (`--wait`) ends
/// by then or the test fails, never hangs.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(300);

/// Runs `command` to its end, for at most `limit`: past it the command is killed and the test
/// fails, with what the command printed so far.
pub fn output_within(command: &mut std::process::Command, limit: Duration) -> std::process::Output {
    use std::io::Read as _;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} still ran after {limit:?}: killed\n{}{}",
                String::from_utf8_lossy(&stdout.join().unwrap_or_default()),
                String::from_utf8_lossy(&stderr.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// The tool image the real node has (built by scripts/cluster-build.sh: there is no registry).
pub const BUSYBOX: &str = "ark.local/busybox:1";

/// The checkout the tests run from, found at run time (the package's directory under `cargo
/// test`, else the working directory, or an ancestor of either holding `scripts/cluster.sh`): a
/// path compiled in would name the clone the harness was first built in, and the build is kept
/// between clones (scripts/build-cache.sh).
pub fn checkout() -> PathBuf {
    let start = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    start
        .ancestors()
        .find(|dir| dir.join("scripts/cluster.sh").is_file())
        .unwrap_or_else(|| {
            panic!(
                "no checkout of ark at or above {}: run the tests from one",
                start.display()
            )
        })
        .to_path_buf()
}

/// Where `scripts/cluster.sh` keeps the local clusters' state: `$ARK_CLUSTER_STATE`, or the
/// checkout's `.cluster/`.
pub fn state_dir() -> PathBuf {
    std::env::var_os("ARK_CLUSTER_STATE").map_or_else(|| checkout().join(".cluster"), PathBuf::from)
}

impl Cluster {
    /// The main cluster (with the S3 server).
    pub fn get() -> Cluster {
        Self::read(state_dir().join("cluster.env"))
    }

    /// The second cluster, beside the first and sharing its S3 server: where migrations go. It runs
    /// Velero's own CRDs (`config/crd/`, Velero's files as they are), so every test here runs ark
    /// on the CRDs of a cluster that runs Velero.
    pub fn second() -> Cluster {
        Self::read(state_dir().join("second/cluster.env"))
    }

    /// Reads a `cluster.env`; panics with the command to run when the cluster was never started.
    fn read(path: PathBuf) -> Cluster {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "the local test cluster is not running ({}: {e}); start it with `cargo xtask cluster up`, \
                 or run the README's test command, which does",
                path.display()
            )
        });
        let vars: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        let var = |name: &str| {
            vars.get(name)
                .unwrap_or_else(|| panic!("{} lacks {name}", path.display()))
                .to_string()
        };
        Cluster {
            kubeconfig: PathBuf::from(var("KUBECONFIG")),
            s3_endpoint: var("ARK_S3_ENDPOINT"),
            s3_bucket: var("ARK_S3_BUCKET"),
            s3_access_key: var("ARK_S3_ACCESS_KEY"),
            s3_secret_key: var("ARK_S3_SECRET_KEY"),
            azure_endpoint: var("ARK_AZURE_ENDPOINT"),
            azure_account: var("ARK_AZURE_ACCOUNT"),
            azure_key: var("ARK_AZURE_KEY"),
            kwok_nodes: var("ARK_KWOK_NODES").parse().expect("a number of nodes"),
            real_node: vars.get("ARK_REAL_NODE").map(|n| n.to_string()),
            real_node_containerd: vars.get("ARK_REAL_NODE_CONTAINERD").map(PathBuf::from),
            real_node_pods: vars.get("ARK_REAL_NODE_PODS").map(PathBuf::from),
        }
    }

    /// An image of `binaries` (each at `/<its name>`, the first its entrypoint), made by
    /// scripts/image.sh and imported into the real node as `tag`.
    pub fn import_binaries(&self, binaries: &[&std::path::Path], tag: &str) {
        let dir = tempfile::tempdir().unwrap();
        let tarball = dir.path().join("image.tar");
        let mut command = std::process::Command::new("bash");
        command
            .arg(checkout().join("scripts/image.sh"))
            .arg(&tarball)
            .args(["--tag", tag]);
        for binary in binaries {
            command.arg("--binary").arg(binary);
        }
        let output = command.output().expect("run scripts/image.sh");
        assert!(
            output.status.success(),
            "scripts/image.sh {binaries:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        self.import_image(&tarball);
    }

    /// Imports an image tarball (docker-archive) into the real node's containerd, the only way
    /// an image reaches it: there is no registry.
    pub fn import_image(&self, tarball: &std::path::Path) {
        let socket = self.real_node_containerd.as_ref().expect(
            "this cluster has no real node (scripts/node.sh starts one in the first cluster)",
        );
        let output = std::process::Command::new("ctr")
            .arg("--address")
            .arg(socket)
            .args(["--namespace", "k8s.io", "images", "import"])
            .arg(tarball)
            .output()
            .expect("run ctr");
        assert!(
            output.status.success(),
            "ctr images import {}: {}",
            tarball.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `pod` (a Pod as JSON) placed on this cluster's real node, where containers really run: its
    /// node selector and toleration, images never pulled (the node has them), and a short
    /// termination grace so that a test's namespace goes quickly.
    pub fn on_real_node(&self, mut pod: serde_json::Value) -> Pod {
        assert!(
            self.real_node.is_some(),
            "this cluster has no real node (scripts/node.sh starts one in the first cluster)"
        );
        let spec = &mut pod["spec"];
        spec["nodeSelector"] = serde_json::json!({ "ark.test/real-node": "true" });
        spec["tolerations"] = serde_json::json!([
            { "key": "ark.test/real-node", "operator": "Exists", "effect": "NoSchedule" }
        ]);
        if spec["terminationGracePeriodSeconds"].is_null() {
            spec["terminationGracePeriodSeconds"] = serde_json::json!(1);
        }
        for list in ["initContainers", "containers"] {
            for container in spec[list].as_array_mut().into_iter().flatten() {
                if container["imagePullPolicy"].is_null() {
                    container["imagePullPolicy"] = serde_json::json!("Never");
                }
            }
        }
        serde_json::from_value(pod).expect("a pod")
    }

    /// The admin (system:masters) client config of the local cluster.
    pub async fn config(&self) -> kube::Config {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let kubeconfig =
            kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("readable kubeconfig");
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("valid kubeconfig")
    }

    pub async fn client(&self) -> Client {
        Client::try_from(self.config().await).expect("kube client")
    }

    /// The same cluster as the ServiceAccount `namespace/name` sees it: a kubeconfig in `dir` whose
    /// user is a token of that account's (TokenRequest, an hour long), and nothing else.
    pub async fn as_service_account(
        &self,
        namespace: &str,
        name: &str,
        dir: &std::path::Path,
    ) -> Cluster {
        use k8s_openapi::api::authentication::v1::TokenRequest;
        use k8s_openapi::api::core::v1::ServiceAccount;
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client().await, namespace);
        let request: TokenRequest = serde_json::from_value(serde_json::json!({
            "spec": { "audiences": [], "expirationSeconds": 3600 }
        }))
        .unwrap();
        let token = accounts
            .create_subresource::<TokenRequest, TokenRequest>(
                "token",
                name,
                &PostParams::default(),
                &request,
            )
            .await
            .unwrap_or_else(|e| panic!("token for {namespace}/{name}: {e}"))
            .status
            .expect("a token")
            .token;
        let kubeconfig = std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig");
        let (head, admin) = kubeconfig.split_once("users:").expect("a users section");
        let user = admin
            .lines()
            .find_map(|l| l.trim().strip_prefix("- name: "))
            .expect("a user name");
        let path = dir.join(format!("kubeconfig-{name}"));
        std::fs::write(
            &path,
            format!("{head}users:\n- name: {user}\n  user:\n    token: {token}\n"),
        )
        .expect("write kubeconfig");
        Cluster {
            kubeconfig: path,
            ..self.clone()
        }
    }

    /// The S3 server's address, to put a proxy in front of it.
    pub fn s3_address(&self) -> std::net::SocketAddr {
        self.s3_endpoint
            .trim_start_matches("http://")
            .parse()
            .expect("ARK_S3_ENDPOINT is http://<ip>:<port>")
    }

    /// What the test ground adds to an installed Deployment or DaemonSet (`container` its
    /// container), and nothing else: its place (the real node) and its way to the API server. The
    /// local API server listens on 127.0.0.1 only, which it cannot publish as the `kubernetes`
    /// Service's endpoint, and there is no kube-proxy: the pod takes the host's network and is
    /// told the API server's address, as in-cluster clients read it.
    pub fn test_ground_patch(&self, container: &str) -> serde_json::Value {
        let api_server = self.api_server_address();
        serde_json::json!({ "spec": { "template": { "spec": {
            "hostNetwork": true,
            "nodeSelector": { "ark.test/real-node": "true" },
            "tolerations": [{ "key": "ark.test/real-node", "operator": "Exists", "effect": "NoSchedule" }],
            "containers": [{ "name": container, "env": [
                { "name": "KUBERNETES_SERVICE_HOST", "value": api_server.ip().to_string() },
                { "name": "KUBERNETES_SERVICE_PORT", "value": api_server.port().to_string() },
            ] }],
        } } } })
    }

    /// The API server's address, from the kubeconfig.
    pub fn api_server_address(&self) -> std::net::SocketAddr {
        let kubeconfig = std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig");
        kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: https://"))
            .and_then(|a| a.parse().ok())
            .expect("the kubeconfig names an https://<ip>:<port> server")
    }

    /// The same cluster reached through a proxy at `address` (TLS passes through unchanged), with
    /// its kubeconfig written into `dir`.
    pub fn through(&self, address: std::net::SocketAddr, dir: &std::path::Path) -> Cluster {
        let kubeconfig = std::fs::read_to_string(&self.kubeconfig).expect("kubeconfig");
        let kubeconfig =
            kubeconfig.replace(&self.api_server_address().to_string(), &address.to_string());
        let path = dir.join("kubeconfig");
        std::fs::write(&path, kubeconfig).expect("write kubeconfig");
        Cluster {
            kubeconfig: path,
            ..self.clone()
        }
    }

    /// An S3 location on the SeaweedFS server, under a prefix of its own so tests do not meet.
    pub fn s3_location(&self, prefix: &str) -> ark_storage::Location {
        ark_storage::Location {
            name: "test-s3".into(),
            provider: "aws".into(),
            bucket: self.s3_bucket.clone(),
            prefix: Some(prefix.into()),
            config: BTreeMap::from([
                ("region".into(), "us-east-1".into()),
                ("s3Url".into(), self.s3_endpoint.clone()),
                ("s3ForcePathStyle".into(), "true".into()),
            ]),
            credentials: Some(aws_credentials_file(
                &self.s3_access_key,
                &self.s3_secret_key,
            )),
            ca_bundle: None,
        }
    }
}

impl Cluster {
    /// An Azure Blob location on Azurite, with the account key in Velero's credentials-file form.
    pub fn azure_location(&self, prefix: &str) -> ark_storage::Location {
        ark_storage::Location {
            name: "test-azure".into(),
            provider: "azure".into(),
            bucket: self.s3_bucket.clone(),
            prefix: Some(prefix.into()),
            config: BTreeMap::from([
                ("storageAccount".into(), self.azure_account.clone()),
                ("storageAccountURI".into(), self.azure_endpoint.clone()),
            ]),
            credentials: Some(format!(
                "AZURE_STORAGE_ACCOUNT_ACCESS_KEY={}\nAZURE_CLOUD_NAME=AzurePublicCloud\n",
                self.azure_key
            )),
            ca_bundle: None,
        }
    }
}

/// The AWS shared-credentials file Velero's users put in a Secret.
pub fn aws_credentials_file(access_key: &str, secret_key: &str) -> String {
    format!("[default]\naws_access_key_id = {access_key}\naws_secret_access_key = {secret_key}\n")
}

/// A name no other test run uses, for namespaces and objects.
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}-{}-{:x}{:x}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A namespace for one test, deleted when the guard is dropped.
pub struct TestNamespace {
    pub name: String,
    cluster: Cluster,
}

impl Cluster {
    /// A namespace of the test's own in this cluster, deleted when dropped.
    pub async fn namespace(&self, prefix: &str) -> TestNamespace {
        let client = self.client().await;
        let name = unique_name(prefix);
        let namespace: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": { "ark.test/e2e": "true" } }
        }))
        .unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create test namespace");
        TestNamespace {
            name,
            cluster: self.clone(),
        }
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        // Best effort: a namespace a failed test leaves is labelled.
        self.cluster.delete_while_dropping::<Namespace>(&self.name);
        // Its Restores carry the server's finalizer, which a stopped server cannot remove.
        self.cluster.release_restores_while_dropping(&self.name);
    }
}

/// A kind of cluster-scoped object the tests can delete by name.
pub trait ClusterObject:
    kube::Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + serde::de::DeserializeOwned
    + 'static
{
}

impl<K> ClusterObject for K where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + 'static
{
}

/// A cluster-scoped object, by name, deleted when dropped: what a test creates (or fears the code
/// under test creates) outside its namespaces.
pub struct DeletedOnDrop<K>
where
    K: ClusterObject,
{
    cluster: Cluster,
    pub name: String,
    kind: std::marker::PhantomData<K>,
}

impl<K> Drop for DeletedOnDrop<K>
where
    K: ClusterObject,
{
    fn drop(&mut self) {
        self.cluster.delete_while_dropping::<K>(&self.name);
    }
}

impl Cluster {
    pub fn delete_on_drop<K>(&self, name: &str) -> DeletedOnDrop<K>
    where
        K: ClusterObject,
    {
        DeletedOnDrop {
            cluster: self.clone(),
            name: name.to_string(),
            kind: std::marker::PhantomData,
        }
    }

    /// What `ark install` makes in and for namespace `ns` (the namespace, its roles and bindings,
    /// its admission policies), removed when the guard is dropped, however the test ends.
    pub fn install_removed_on_drop(&self, ns: &str) -> Vec<Box<dyn std::any::Any>> {
        use k8s_openapi::api::admissionregistration::v1 as admission;
        use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
        let mut guards: Vec<Box<dyn std::any::Any>> =
            vec![Box::new(self.delete_on_drop::<Namespace>(ns))];
        for role in [
            "server",
            "admin-viewer",
            "admin-operator",
            "tenant",
            "node-agent",
        ] {
            let name = format!("ark:{ns}:{role}");
            guards.push(Box::new(self.delete_on_drop::<ClusterRole>(&name)));
            guards.push(Box::new(self.delete_on_drop::<ClusterRoleBinding>(&name)));
        }
        for policy in ["node-agent-pods", "server-requests"] {
            let name = format!("ark-{ns}-{policy}");
            guards.push(Box::new(
                self.delete_on_drop::<admission::ValidatingAdmissionPolicy>(&name),
            ));
            guards.push(Box::new(
                self.delete_on_drop::<admission::ValidatingAdmissionPolicyBinding>(&name),
            ));
        }
        guards
    }

    /// Takes the finalizers off the Restores of namespace `ns` (best effort), from a `Drop`.
    pub fn release_restores_while_dropping(&self, ns: &str) {
        let (cluster, ns) = (self.clone(), ns.to_string());
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    crate::velero::release_restores(&cluster.client().await, &ns).await;
                })
        })
        .join();
    }

    /// Deletes a cluster-scoped object from a `Drop`: with a client of its own on a runtime of its
    /// own, because the test's client is driven by the test's runtime, which a drop blocks.
    pub fn delete_while_dropping<K>(&self, name: &str)
    where
        K: ClusterObject,
    {
        let (cluster, name) = (self.clone(), name.to_string());
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let _ = Api::<K>::all(cluster.client().await)
                        .delete(&name, &DeleteParams::background())
                        .await;
                })
        })
        .join();
    }
}

/// A pod spec scheduled onto the kwok node (kwok's nodes are tainted so real workloads stay away).
pub fn kwok_pod(name: &str, containers: &[&str]) -> Pod {
    let containers: Vec<_> = containers
        .iter()
        .map(|c| serde_json::json!({ "name": c, "image": "busybox" }))
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "containers": containers,
            "nodeSelector": { "type": "kwok" },
            "tolerations": [{ "key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule" }],
        }
    }))
    .unwrap()
}

/// The first Warning event in `namespace` with `reason`, once there is one, or an error after
/// `timeout`.
pub async fn warning_event(
    client: &kube::Client,
    namespace: &str,
    reason: &str,
    timeout: Duration,
) -> anyhow::Result<k8s_openapi::api::events::v1::Event> {
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(client.clone(), namespace);
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let found = (events.list(&Default::default()).await?.items.into_iter())
            .find(|e| e.reason.as_deref() == Some(reason));
        if let Some(event) = found {
            anyhow::ensure!(
                event.type_.as_deref() == Some("Warning"),
                "event {reason} is not a warning: {event:?}"
            );
            return Ok(event);
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no {reason} event in namespace {namespace} within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (watching, not polling) until `condition` holds for the named object, or fails after `timeout`.
pub async fn wait_for<K>(
    api: Api<K>,
    name: &str,
    condition: impl Condition<K>,
    timeout: Duration,
) -> anyhow::Result<K>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::time::timeout(timeout, await_condition(api, name, condition))
        .await
        .with_context(|| format!("{name} did not reach the expected state within {timeout:?}"))?
        .context("watch failed")?
        .with_context(|| format!("{name} was deleted"))
}

/// Waits until the location `ns/name` is Available, or panics after `timeout`.
pub async fn location_available(client: &Client, ns: &str, name: &str, timeout: Duration) {
    use ark_api::{BackupStorageLocation, BackupStorageLocationPhase};
    wait_for(
        Api::<BackupStorageLocation>::namespaced(client.clone(), ns),
        name,
        |l: Option<&BackupStorageLocation>| {
            l.and_then(|l| l.status.as_ref()).and_then(|s| s.phase)
                == Some(BackupStorageLocationPhase::Available)
        },
        timeout,
    )
    .await
    .unwrap_or_else(|e| panic!("location {ns}/{name} not Available: {e:#}"));
}

/// Object `ns/name` once `done` says so (it may not exist yet), or panics after `timeout`.
pub async fn ended<K>(
    client: &Client,
    ns: &str,
    name: &str,
    done: impl Fn(&K) -> bool,
    timeout: Duration,
) -> K
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    wait_for(
        Api::<K>::namespaced(client.clone(), ns),
        name,
        |o: Option<&K>| o.is_some_and(&done),
        timeout,
    )
    .await
    .unwrap_or_else(|e| panic!("{ns}/{name} did not end: {e:#}"))
}

/// Waits (watching) until this very object (its uid) is gone, or fails after `timeout`.
pub async fn wait_deleted<K>(api: Api<K>, object: &K, timeout: Duration)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let name = object.meta().name.clone().unwrap_or_default();
    let uid = object.meta().uid.clone().unwrap_or_default();
    let deleted = tokio::time::timeout(
        timeout,
        await_condition(
            api.clone(),
            &name,
            kube::runtime::wait::conditions::is_deleted(&uid),
        ),
    )
    .await;
    match deleted {
        Ok(watched) => {
            watched.expect("watch failed");
        }
        // What holds it is in the object as it is now (a namespace's conditions name what is
        // left in it, a finalizer names who must let it go).
        Err(_) => panic!(
            "{name} was not deleted within {timeout:?}; it is now:\n{:#?}",
            api.get_opt(&name).await
        ),
    }
}

/// kwok's ClusterExec: `pods/exec` into any container on the kwok node runs the command here.
pub async fn allow_local_exec(client: &Client) {
    let gvk = GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "ClusterExec");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk));
    let exec: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterExec",
        "metadata": { "name": "ark-tests-local-exec" },
        "spec": { "execs": [{ "local": { "workDir": "/tmp" } }] },
    }))
    .unwrap();
    match api.create(&PostParams::default(), &exec).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("{error}"),
    }
}

/// Condition: the pod's phase is Running.
pub fn is_pod_running() -> impl Condition<Pod> {
    |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.phase.as_deref())
            == Some("Running")
    }
}

/// An `ark server` process acting on one namespace, stopped when dropped. Its log is kept in the
/// scratch directory and printed if the test fails (on drop while panicking).
pub struct ArkServer {
    child: std::process::Child,
    log: PathBuf,
    /// The kubeconfig and namespace it serves, for the objects' status printed on a failure.
    serves: (PathBuf, Option<String>),
    _scratch: tempfile::TempDir,
}

impl ArkServer {
    /// Starts `binary server -n namespace` with short sync and validation periods.
    pub fn start(binary: &str, cluster: &Cluster, namespace: &str) -> ArkServer {
        Self::start_with(binary, cluster, namespace, &[])
    }

    /// The same, with more `ark server` arguments.
    pub fn start_with(
        binary: &str,
        cluster: &Cluster,
        namespace: &str,
        extra: &[&str],
    ) -> ArkServer {
        Self::start_with_env(binary, cluster, namespace, extra, &[])
    }

    /// The same, with these variables in the server's environment too.
    pub fn start_with_env(
        binary: &str,
        cluster: &Cluster,
        namespace: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> ArkServer {
        let scratch = tempfile::tempdir().expect("scratch dir");
        // Short periods so tests see sync and validation soon, unless `extra` sets them.
        let mut periods = Vec::new();
        for flag in ["--backup-sync-period", "--store-validation-frequency"] {
            if !extra.contains(&flag) {
                periods.extend([flag, "2s"]);
            }
        }
        let mut args: Vec<String> = ["server", "-n", namespace]
            .into_iter()
            .chain(periods)
            .map(String::from)
            .collect();
        args.push("--scratch-dir".into());
        args.push(scratch.path().join("work").to_string_lossy().into_owned());
        args.extend(extra.iter().map(|a| a.to_string()));
        Self::spawn(binary, cluster, &args, env, scratch)
    }

    /// `binary ARGS` exactly (an installed Deployment's command line, say).
    pub fn start_exactly(binary: &str, cluster: &Cluster, args: &[String]) -> ArkServer {
        Self::spawn(
            binary,
            cluster,
            args,
            &[],
            tempfile::tempdir().expect("scratch dir"),
        )
    }

    fn spawn(
        binary: &str,
        cluster: &Cluster,
        args: &[String],
        env: &[(&str, &str)],
        scratch: tempfile::TempDir,
    ) -> ArkServer {
        let log = scratch.path().join("server.log");
        let child = std::process::Command::new(binary)
            .args(args)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("server log"))
            .spawn()
            .expect("start ark server");
        // `-n NS` or `--namespace=NS`, as its command line names it.
        let namespace = args
            .iter()
            .position(|a| a == "-n")
            .and_then(|at| args.get(at + 1).cloned())
            .or_else(|| {
                args.iter()
                    .find_map(|a| a.strip_prefix("--namespace=").map(str::to_string))
            });
        ArkServer {
            child,
            log,
            serves: (cluster.kubeconfig.clone(), namespace),
            _scratch: scratch,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the server's log contains `text`; panics with the log after `timeout`.
    pub async fn wait_for_log(&self, text: &str, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        while !self.log().contains(text) {
            assert!(
                std::time::Instant::now() < deadline,
                "the server never logged {text:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends `signal` (`TERM`, `STOP`, `CONT`, `KILL`) to the server.
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits for the server to exit, for at most `timeout`; its exit status, or None if it still
    /// runs.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the server") {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's peak resident memory so far (VmHWM), in MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        peak_rss_mib(self.child.id())
    }

    /// The server's resident memory now (VmRSS), in MiB.
    pub fn rss_mib(&self) -> f64 {
        rss_mib(self.child.id())
    }

    /// The server's CPU time so far, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id())
    }

    /// The directory the server's scratch directory (`work/`) is in.
    pub fn scratch_parent(&self) -> &std::path::Path {
        self._scratch.path()
    }
}

impl Drop for ArkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- ark server log ---\n{}", self.log());
            // What the server left its objects in (bounded: a failing test must not hang here).
            if let (kubeconfig, Some(namespace)) = &self.serves {
                // `timeout`, not `output_within`: a second panic here would abort the tests.
                let mut command = std::process::Command::new("timeout");
                command
                    .args(["20", "kubectl", "--kubeconfig"])
                    .arg(kubeconfig)
                    .args(["-n", namespace, "--request-timeout=10s", "get"])
                    .arg("backups.velero.io,restores.velero.io,deletebackuprequests.velero.io,backupstoragelocations.velero.io")
                    .args(["-o", "custom-columns=KIND:.kind,NAME:.metadata.name,PHASE:.status.phase,MESSAGE:.status.message,ERRORS:.status.errors,FAILURE:.status.failureReason"])
                    .stdin(std::process::Stdio::null());
                if let Ok(output) = command.output() {
                    eprintln!(
                        "--- objects in {namespace} ---\n{}{}",
                        String::from_utf8_lossy(&output.stdout),
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
            }
        }
    }
}

/// A running process's peak resident memory so far (VmHWM), in MiB; 0 when it cannot be read.
pub fn peak_rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmHWM")
}

/// A running process's resident memory now (VmRSS), in MiB; 0 when it cannot be read.
pub fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS")
}

/// A memory figure (kB) of `/proc/<pid>/status`, in MiB; 0 when it cannot be read.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time (user and system) a process has used so far, in seconds; 0 when it cannot be read.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; Linux counts
    // them in ticks of 1/100 s (USER_HZ).
    (ticks(11) + ticks(12)) / 100.0
}

/// The CPU time of every process whose command name is `name`, summed, in seconds.
pub fn cpu_seconds_of(name: &str) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
        })
        .map(cpu_seconds)
        .sum()
}

/// A port of the host free a moment ago (the kernel's pick, out of the way of fixed ports).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `127.0.0.1:<port>` with a port free a moment ago: for a server's `--metrics-address`.
pub fn free_local_address() -> String {
    format!("127.0.0.1:{}", free_port())
}

/// Whether every pod of `daemon_set` runs its latest template and is available, as `kubectl
/// rollout status` waits for. Ready pods alone are not enough: an agent patched right after it
/// is applied can have a pod of the first template ready while the rollout deletes it.
pub fn daemon_set_rolled_out(daemon_set: &DaemonSet) -> bool {
    let Some(status) = daemon_set.status.as_ref() else {
        return false;
    };
    status.observed_generation == daemon_set.metadata.generation
        && status.desired_number_scheduled >= 1
        && status.updated_number_scheduled == Some(status.desired_number_scheduled)
        && status.number_available == Some(status.desired_number_scheduled)
        && status.number_ready == status.desired_number_scheduled
}

/// Whether every replica of `deployment` runs its latest template and is available, and no pod
/// of an older one is left (`kubectl rollout status`).
pub fn deployment_rolled_out(deployment: &Deployment) -> bool {
    let (Some(spec), Some(status)) = (deployment.spec.as_ref(), deployment.status.as_ref()) else {
        return false;
    };
    let wanted = spec.replicas.unwrap_or(1);
    status.observed_generation == deployment.metadata.generation
        && status.updated_replicas == Some(wanted)
        && status.available_replicas == Some(wanted)
        && status.replicas == Some(wanted)
}

/// The body of `GET <path>` on the server's metrics address (`host:port`), within 10 s.
pub fn scrape(address: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(address)
        .unwrap_or_else(|e| panic!("connecting to {address}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: ark\r\n\r\n").as_bytes())
        .unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("reading {path} from {address}: {e}"));
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// The bytes of a gzip file (of one or more members, as ark's tarballs are).
pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out)
        .expect("gzip");
    out
}

/// The paths in backup `name`'s tarball in `store`, in the tarball's order.
pub async fn tarball_paths(store: &ark_storage::BackupStore, name: &str) -> Vec<String> {
    let entries = tarball_entries(store, name).await;
    entries.into_iter().map(|(path, _)| path).collect()
}

/// The entries of backup `name`'s tarball in `store`, path and bytes, in the tarball's order.
pub async fn tarball_entries(
    store: &ark_storage::BackupStore,
    name: &str,
) -> Vec<(String, Vec<u8>)> {
    let tarball = store
        .get(&store.layout.backup_contents(name))
        .await
        .unwrap_or_else(|e| panic!("backup {name}'s tarball: {e}"));
    let unpacked = gunzip(&tarball);
    tar::Archive::new(unpacked.as_slice())
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
            (path, bytes)
        })
        .collect()
}
