//! Velero itself, as a real part of the interop tests: its CLI and its server (with the AWS plugin),
//! built once by `scripts/velero-build.sh` into a cache outside the repository, run as local
//! processes against the local clusters and the same SeaweedFS bucket as ark.
//!
//! A test that finds no Velero build fails and says how to make one: it never skips itself.

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Output};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use kube::Api;
use kube::api::{DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::Scope;

use crate::Cluster;

/// The directory holding `velero` and `velero-plugin-for-aws`: `$ARK_VELERO_BIN`, or where
/// `scripts/velero-build.sh` puts them.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ARK_VELERO_BIN") {
        return PathBuf::from(dir);
    }
    let output = Command::new("bash")
        .arg(crate::checkout().join("scripts/velero-build.sh"))
        .arg("--print-dir")
        .output()
        .expect("run scripts/velero-build.sh --print-dir");
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(
        dir.join("velero").is_file() && dir.join("velero-plugin-for-aws").is_file(),
        "Velero is not built ({}): run `bash scripts/velero-build.sh` (the README's setup and test \
         commands do)",
        dir.display()
    );
    dir
}

/// Runs Velero's CLI, `velero ARGS -n NS`, against a local cluster.
pub fn velero(cluster: &Cluster, ns: &str, args: &[&str]) -> Output {
    let mut command = Command::new(bin_dir().join("velero"));
    command
        .args(args)
        .args(["-n", ns])
        .env("KUBECONFIG", &cluster.kubeconfig)
        // Velero's CLI keeps its settings here; a test must not read a developer's.
        .env("HOME", std::env::temp_dir())
        .stdin(std::process::Stdio::null());
    crate::output_within(&mut command, crate::COMMAND_LIMIT)
}

/// Runs Velero's CLI and insists that it succeeds and writes nothing to stderr; its output comes
/// back without the colours Velero's `describe` adds.
pub fn velero_ok(cluster: &Cluster, ns: &str, args: &[&str]) -> String {
    let output = velero(cluster, ns, args);
    let stdout = without_colours(&String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success() && stderr.is_empty(),
        "velero {args:?} -n {ns} failed ({:?}):\n{stdout}{stderr}",
        output.status.code()
    );
    stdout
}

/// `text` without ANSI SGR sequences (`ESC [ ... m`).
fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        rest = after.find('m').map_or("", |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// Velero's image as the stand-in Deployment names it, so the one Velero's server puts in the
/// `restore-wait` init container of pods whose volumes it restores, and the one its node agent runs.
pub const IMAGE: &str = "velero/velero:v1.18.3";

/// Velero's image, made by `scripts/image.sh` from the local build (`/velero` and
/// `/velero-restore-helper`, as in Velero's own image) and imported into the real node of
/// `cluster` as [`IMAGE`], once per test process.
pub fn import_image(cluster: &Cluster) {
    static IMPORTED: std::sync::Once = std::sync::Once::new();
    IMPORTED.call_once(|| {
        let bin = bin_dir();
        let helper = bin.join("velero-restore-helper");
        assert!(
            helper.is_file(),
            "{} is not built: run `bash scripts/velero-build.sh`",
            helper.display()
        );
        cluster.import_binaries(&[&bin.join("velero"), &helper], IMAGE);
    });
}

/// Velero's node agent in namespace `ns` of the cluster with the real node: the DaemonSet,
/// ServiceAccount and binding `velero install --use-node-agent` makes, from Velero's image, with
/// the test ground's patch (the real node, its kubelet's directory, the way to the API server). The
/// pods the agent makes to read and write volumes inherit its environment but not its host
/// network, the only way here to the API server and S3: a mutating admission policy gives them
/// that, for this namespace only. Its data mover pods (which Velero schedules anywhere, and the
/// kwok nodes would take) get the real node's selector and taint toleration from a second one. All
/// of it goes when dropped.
pub struct NodeAgent {
    _cleanup: Vec<Box<dyn std::any::Any>>,
}

impl NodeAgent {
    pub async fn install(cluster: &Cluster, ns: &str) -> NodeAgent {
        use k8s_openapi::api::admissionregistration::v1beta1::{
            MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding,
        };
        use k8s_openapi::api::rbac::v1::ClusterRoleBinding;

        import_image(cluster);
        let client = cluster.client().await;
        let pods_dir = cluster.real_node_pods.clone().expect("the real node");
        let kubelet_dir = pods_dir.parent().unwrap();
        // Velero mounts the kubelet's plugin directory too, which this node has no use for.
        std::fs::create_dir_all(kubelet_dir.join("plugins")).unwrap();
        let output = velero(
            cluster,
            ns,
            &[
                "install",
                "--use-node-agent",
                "--no-default-backup-location",
                "--use-volume-snapshots=false",
                "--no-secret",
                "--image",
                IMAGE,
                "--kubelet-root-dir",
                kubelet_dir.to_str().unwrap(),
                "--dry-run",
                "-o",
                "json",
            ],
        );
        assert!(
            output.status.success(),
            "velero install --dry-run: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let item = |kind: &str| {
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["kind"] == kind)
                .unwrap_or_else(|| panic!("velero install makes no {kind}"))
                .clone()
        };
        let binding_name = format!("velero-{ns}");
        let policy_name = format!("ark-test-host-network-{ns}");
        let real_node_name = format!("ark-test-real-node-{ns}");
        let mut cleanup: Vec<Box<dyn std::any::Any>> = vec![Box::new(
            cluster.delete_on_drop::<ClusterRoleBinding>(&binding_name),
        )];
        for name in [&policy_name, &real_node_name] {
            cleanup.push(Box::new(
                cluster.delete_on_drop::<MutatingAdmissionPolicyBinding>(name),
            ));
            cleanup.push(Box::new(
                cluster.delete_on_drop::<MutatingAdmissionPolicy>(name),
            ));
        }
        let mut binding = item("ClusterRoleBinding");
        binding["metadata"]["name"] = serde_json::json!(binding_name);
        let policy = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1",
            "kind": "MutatingAdmissionPolicy",
            "metadata": { "name": policy_name },
            "spec": {
                "matchConstraints": { "resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["pods"],
                }] },
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "mutations": [{
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": { "expression": "Object{spec: Object.spec{hostNetwork: true}}" },
                }],
            },
        });
        let real_node = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1",
            "kind": "MutatingAdmissionPolicy",
            "metadata": { "name": real_node_name },
            "spec": {
                "matchConstraints": { "resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["pods"],
                }] },
                "matchConditions": [{
                    "name": "data-mover-pod",
                    "expression": "has(object.metadata.labels) && 'velero.io/exposer-pod-group' in object.metadata.labels && object.metadata.labels['velero.io/exposer-pod-group'] in ['snapshot-exposer', 'generic-restore-exposer']",
                }],
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                // A JSON patch: an apply configuration may not change the pod's (atomic)
                // selector and tolerations.
                "mutations": [{
                    "patchType": "JSONPatch",
                    "jsonPatch": { "expression": "[has(object.spec.nodeSelector) ? JSONPatch{op: 'add', path: '/spec/nodeSelector/ark.test~1real-node', value: 'true'} : JSONPatch{op: 'add', path: '/spec/nodeSelector', value: {'ark.test/real-node': 'true'}}, JSONPatch{op: 'add', path: '/spec/tolerations', value: (has(object.spec.tolerations) ? object.spec.tolerations : []) + [Object.spec.tolerations{key: 'ark.test/real-node', operator: 'Exists', effect: 'NoSchedule'}]}]" },
                }],
            },
        });
        let binding_of = |name: &str| {
            serde_json::json!({
                "apiVersion": "admissionregistration.k8s.io/v1beta1",
                "kind": "MutatingAdmissionPolicyBinding",
                "metadata": { "name": name },
                "spec": {
                    "policyName": name,
                    "matchResources": { "namespaceSelector": {
                        "matchLabels": { "kubernetes.io/metadata.name": ns },
                    } },
                },
            })
        };
        for object in [
            policy,
            binding_of(&policy_name),
            real_node,
            binding_of(&real_node_name),
            item("ServiceAccount"),
            binding,
            item("DaemonSet"),
        ] {
            apply(&client, ns, object).await;
        }
        let daemon_sets = Api::<DaemonSet>::namespaced(client, ns);
        daemon_sets
            .patch(
                "node-agent",
                &PatchParams::default(),
                &Patch::Strategic(cluster.test_ground_patch("node-agent")),
            )
            .await
            .unwrap();
        crate::wait_for(
            daemon_sets,
            "node-agent",
            |ds: Option<&DaemonSet>| ds.is_some_and(crate::daemon_set_rolled_out),
            std::time::Duration::from_secs(120),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "Velero's node agent is not running on the real node: {e:#}\n{}",
                diagnostics(cluster, ns)
            )
        });
        NodeAgent { _cleanup: cleanup }
    }
}

/// What a failing test needs to see of Velero's pods in `ns` (the agent and the pods it makes
/// per request): their states and logs.
pub fn diagnostics(cluster: &Cluster, ns: &str) -> String {
    let kubectl = |args: &[&str]| {
        let mut command = Command::new("kubectl");
        command
            .args(args)
            .args(["-n", ns])
            .env("KUBECONFIG", &cluster.kubeconfig);
        let output = crate::output_within(&mut command, crate::COMMAND_LIMIT);
        format!(
            "--- kubectl {} ---\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };
    let mut out = kubectl(&[
        "get",
        "backups,pods,podvolumebackups,podvolumerestores,datauploads",
        "-o",
        "wide",
    ]);
    // A backup waits on snapshots in the namespaces it backs up.
    out += &kubectl(&["get", "volumesnapshots", "--all-namespaces", "-o", "wide"]);
    out += &kubectl(&["describe", "pods"]);
    out += &kubectl(&[
        "logs",
        "--all-containers",
        "--prefix",
        "--tail",
        "200",
        "-l",
        "name=node-agent",
    ]);
    out += &kubectl(&[
        "logs",
        "--all-containers",
        "--prefix",
        "--tail",
        "200",
        "-l",
        "velero.io/exposer-pod-group",
    ]);
    out
}

/// One server's side of a differential test (Velero's or ark's): its namespace, and the prefix
/// of its location `default`, made with Velero's CLI.
pub struct Side {
    pub ns: crate::TestNamespace,
    pub prefix: String,
}

impl Side {
    /// A namespace named after `tool`, over a fresh prefix starting `<test>-<tool>`.
    pub async fn new(cluster: &Cluster, test: &str, tool: &str) -> Side {
        let client = cluster.client().await;
        let side = Side {
            ns: cluster.namespace(tool).await,
            prefix: crate::unique_name(&format!("{test}-{tool}")),
        };
        let (flags, _) =
            crate::fixtures::s3_location(cluster, &client, &side.ns.name, Some(&side.prefix), None)
                .await;
        let mut create = vec!["backup-location", "create", "default", "--default"];
        create.extend(flags.iter().map(String::as_str));
        velero_ok(cluster, &side.ns.name, &create);
        side
    }

    /// `velero backup create NAME ARGS --wait` against this side's server, asserted Completed;
    /// the entries of its tarball.
    pub async fn backed_up(&self, cluster: &Cluster, name: &str, args: &[&str]) -> Vec<String> {
        let mut create = vec!["backup", "create", name, "--wait"];
        create.extend(args);
        velero_ok(cluster, &self.ns.name, &create);
        let backup = crate::ended::<ark_api::Backup>(
            &cluster.client().await,
            &self.ns.name,
            name,
            |b| b.phase().is_terminal(),
            std::time::Duration::from_secs(120),
        )
        .await;
        assert_eq!(
            backup.phase(),
            ark_api::BackupPhase::Completed,
            "backup {name} in {}: {:#?}",
            self.ns.name,
            backup.status
        );
        let store = ark_storage::open(&cluster.s3_location(&self.prefix)).unwrap();
        crate::tarball_paths(&store, name).await
    }
}

/// Velero's server and node agent in a namespace of their own, over an S3 location `default` at
/// `prefix` made with Velero's CLI.
pub struct VeleroWithAgent {
    pub server: VeleroServer,
    pub ns: crate::TestNamespace,
    agent: NodeAgent,
}

impl VeleroWithAgent {
    pub async fn start(cluster: &Cluster, prefix: &str) -> VeleroWithAgent {
        Self::start_with(cluster, prefix, &[]).await
    }

    /// The same, with more `velero server` arguments (`--features=EnableCSI`).
    pub async fn start_with(cluster: &Cluster, prefix: &str, extra: &[&str]) -> VeleroWithAgent {
        let client = cluster.client().await;
        let ns = cluster.namespace("velero").await;
        let (flags, _) =
            crate::fixtures::s3_location(cluster, &client, &ns.name, Some(prefix), None).await;
        let mut create = vec!["backup-location", "create", "default", "--default"];
        create.extend(flags.iter().map(String::as_str));
        velero_ok(cluster, &ns.name, &create);
        let server = VeleroServer::start_beside_node_agent(cluster, &ns.name, extra).await;
        let agent = NodeAgent::install(cluster, &ns.name).await;
        // Velero fails a backup made while its location is not Available (a full run saw its
        // first check of a busy S3 fail, and the backup with it): its location checked first.
        let timeout = std::time::Duration::from_secs(60);
        crate::location_available(&client, &ns.name, "default", timeout).await;
        VeleroWithAgent { server, ns, agent }
    }

    /// Backup `name` of this server, once it has ended, asserted Completed; if it is not, the
    /// failure shows Velero's own account of it (`velero backup describe --details` and the errors
    /// and warnings of its log) beside the agent's pods.
    pub async fn backup_completed(&self, cluster: &Cluster, name: &str) -> ark_api::Backup {
        let ns = &self.ns.name;
        let backups = Api::<ark_api::Backup>::namespaced(cluster.client().await, ns);
        let ended = |b: Option<&ark_api::Backup>| b.is_some_and(|b| b.phase().is_terminal());
        let backup = crate::wait_for(backups, name, ended, std::time::Duration::from_secs(180))
            .await
            .unwrap_or_else(|e| {
                // The server's last words first: the whole log, printed when the server is
                // dropped, is often cut from what CI shows.
                let log = self.server.log();
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                panic!(
                    "Velero's backup {name} did not end: {e:#}\n--- velero server log, last \
                     lines ---\n{tail}\n{}",
                    diagnostics(cluster, ns)
                )
            });
        if backup.phase() != ark_api::BackupPhase::Completed {
            let shown = |args: &[&str]| {
                let output = velero(cluster, ns, args);
                format!(
                    "--- velero {} ---\n{}{}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                )
            };
            let log = shown(&["backup", "logs", name]);
            let notable: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("level=error") || l.contains("level=warn"))
                .collect();
            panic!(
                "Velero's backup {name} ended {:?}, not Completed: {:#?}\n{}--- its log's errors and warnings ---\n{}\n{}",
                backup.phase(),
                backup.status,
                shown(&["backup", "describe", name, "--details"]),
                notable.join("\n"),
                diagnostics(cluster, ns)
            );
        }
        backup
    }

    /// Stops the server and removes the agent, waiting until its pods are gone: they take ports
    /// of the host's network that another install needs. The agent goes first, then the
    /// finalizers Velero put on what it was working on (`velero.io/pod-volume-finalizer` on pod
    /// volume backups and restores, Velero's on restores): with the agent and the server gone,
    /// nothing else would remove them and the namespace would stay Terminating.
    pub async fn stop(self, cluster: &Cluster) {
        let VeleroWithAgent { server, ns, agent } = self;
        drop(server);
        let client = cluster.client().await;
        let daemon_sets = Api::<DaemonSet>::namespaced(client.clone(), &ns.name);
        if let Some(daemon_set) = daemon_sets.get_opt("node-agent").await.unwrap() {
            daemon_sets
                .delete("node-agent", &kube::api::DeleteParams::foreground())
                .await
                .unwrap();
            crate::wait_deleted(
                daemon_sets,
                &daemon_set,
                std::time::Duration::from_secs(120),
            )
            .await;
        }
        release_restores(&client, &ns.name).await;
        for kind in ["PodVolumeBackup", "PodVolumeRestore"] {
            release_all(&client, &ns.name, kind).await;
        }
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
        let namespace = namespaces.get(&ns.name).await.unwrap();
        namespaces
            .delete(&ns.name, &Default::default())
            .await
            .unwrap();
        crate::wait_deleted(namespaces, &namespace, std::time::Duration::from_secs(120)).await;
        drop(agent);
    }
}

/// Server-side applies `object` (any kind the API server serves; namespaced ones into `ns`).
async fn apply(client: &kube::Client, ns: &str, object: serde_json::Value) {
    let object: DynamicObject = serde_json::from_value(object).expect("an object");
    let gvk = GroupVersionKind::try_from(object.types.as_ref().expect("apiVersion and kind"))
        .expect("a group, version and kind");
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("the API server serves no {gvk:?}: {e}"));
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), ns, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let name = object.metadata.name.clone().expect("a name");
    api.patch(
        &name,
        &PatchParams::apply("ark-tests").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("apply {} {name}: {e}", gvk.kind));
}

/// `velero server -n NS` as a local process with the AWS plugin, stopped when dropped; its log is
/// printed if the test fails. Velero reads its own Deployment (`velero`) for the image it puts in
/// restored pods, so a stand-in Deployment runs on the kwok nodes, as `velero install` would make.
///
/// Velero's controller manager always serves its own metrics on `:8080` (Velero has no flag for
/// it), so two Velero servers cannot run on one machine at once: each holds its turn
/// ([`crate::Turn::velero_server`]) for its lifetime, across test processes too.
pub struct VeleroServer {
    child: std::process::Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
    _turn: crate::Turn,
    _network: Option<crate::netns::IsolatedNetwork>,
}

impl VeleroServer {
    pub async fn start(cluster: &Cluster, ns: &str) -> VeleroServer {
        Self::start_from(&bin_dir(), cluster, ns).await
    }

    /// The same, with the Velero build in `bin` (`velero` and `velero-plugin-for-aws`).
    pub async fn start_from(bin: &std::path::Path, cluster: &Cluster, ns: &str) -> VeleroServer {
        Self::spawn(bin, cluster, ns, None, &[]).await
    }

    /// The same, with more `velero server` arguments (`--features=EnableCSI`).
    pub async fn start_with(cluster: &Cluster, ns: &str, extra: &[&str]) -> VeleroServer {
        Self::spawn(&bin_dir(), cluster, ns, None, extra).await
    }

    /// The same, in a network namespace of its own that reaches the API server and S3: beside
    /// Velero's node agent on the host's network, which binds `:8080` too. Only then, as the
    /// forwarders add a hop to each of the server's requests, which the benchmarks time.
    pub async fn start_beside_node_agent(
        cluster: &Cluster,
        ns: &str,
        extra: &[&str],
    ) -> VeleroServer {
        let network = crate::netns::IsolatedNetwork::new(&[
            cluster.api_server_address(),
            cluster.s3_address(),
        ]);
        Self::spawn(&bin_dir(), cluster, ns, Some(network), extra).await
    }

    async fn spawn(
        bin: &std::path::Path,
        cluster: &Cluster,
        ns: &str,
        network: Option<crate::netns::IsolatedNetwork>,
        extra: &[&str],
    ) -> VeleroServer {
        let turn = crate::Turn::velero_server().await;
        let client = cluster.client().await;
        let deployment: Deployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "velero", "labels": { "component": "velero", "deploy": "velero" } },
            "spec": {
                "selector": { "matchLabels": { "deploy": "velero" } },
                "template": {
                    "metadata": { "labels": { "deploy": "velero" } },
                    "spec": {
                        "nodeSelector": { "type": "kwok" },
                        "containers": [{ "name": "velero", "image": IMAGE }],
                    },
                },
            },
        }))
        .unwrap();
        Api::<Deployment>::namespaced(client, ns)
            .patch(
                "velero",
                &PatchParams::apply("ark-tests").force(),
                &Patch::Apply(&deployment),
            )
            .await
            .expect("velero stand-in Deployment");

        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        std::os::unix::fs::symlink(
            bin.join("velero-plugin-for-aws"),
            plugins.join("velero-plugin-for-aws"),
        )
        .unwrap();
        let log = dir.path().join("velero-server.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let velero = bin.join("velero");
        let child = match &network {
            Some(network) => network.command(&velero),
            None => Command::new(&velero),
        }
        .args(["server", "-n", ns, "--plugin-dir"])
        .arg(&plugins)
        .args([
            "--metrics-address",
            &format!("127.0.0.1:{}", crate::free_port()),
        ])
        .args([
            "--profiler-address",
            &format!("127.0.0.1:{}", crate::free_port()),
        ])
        .args([
            "--backup-sync-period",
            "2s",
            "--store-validation-frequency",
            "2s",
        ])
        .args(["--log-level", "info"])
        .args(extra)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .env("HOME", dir.path())
        // As `velero install` sets it: where the server's own clients look (the ConfigMap
        // `enableapigroupversions`, for one).
        .env("VELERO_NAMESPACE", ns)
        // The test ground's S3 keys, which the AWS plugin takes before a location's credentials
        // file: Velero rewrites that file (truncating it first) each time it is asked for it, at
        // every sync and validation (every 2 s here), and a plugin that reads it meanwhile finds
        // no keys and fails the backup ("no EC2 IMDS role found", velero-io/velero#8524; a full
        // run saw it once).
        .env("AWS_ACCESS_KEY_ID", &cluster.s3_access_key)
        .env("AWS_SECRET_ACCESS_KEY", &cluster.s3_secret_key)
        // A group of its own, stopped as a whole: the plugins the server starts would outlive it.
        .process_group(0)
        // Velero's server logs to stdout.
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .expect("start velero server");
        VeleroServer {
            child,
            log,
            _dir: dir,
            _turn: turn,
            _network: network,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The server process's peak resident memory so far, in MiB (its plugin processes apart).
    pub fn peak_rss_mib(&self) -> f64 {
        crate::peak_rss_mib(self.child.id())
    }

    /// The server process's CPU time so far, in seconds (its plugin processes apart).
    pub fn cpu_seconds(&self) -> f64 {
        crate::cpu_seconds(self.child.id())
    }
}

impl Drop for VeleroServer {
    fn drop(&mut self) {
        // SAFETY: a signal to the server's process group, which it leads.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- velero server log ---\n{}", self.log());
        }
    }
}

/// Velero's stopped server leaves its Deployment (the stand-in [`VeleroServer`] makes on a kwok
/// node) available, which ark's server refuses to start beside: scaled to nothing, as a user
/// taking over from Velero scales it.
pub async fn stand_down(client: &kube::Client, ns: &str) {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    deployments
        .patch(
            "velero",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "replicas": 0 } })),
        )
        .await
        .unwrap();
    crate::wait_for(
        deployments,
        "velero",
        |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref())
                .is_some_and(|s| s.available_replicas.unwrap_or(0) == 0)
        },
        std::time::Duration::from_secs(120),
    )
    .await
    .unwrap_or_else(|e| panic!("Velero's Deployment in {ns} not scaled down: {e:#}"));
}

/// Velero puts a finalizer on its Restores that only its server removes: a test's or a
/// benchmark's namespace could not go once the server is stopped.
pub async fn release_restores(client: &kube::Client, ns: &str) {
    release_all(client, ns, "Restore").await;
}

/// Removes the finalizers of every `velero.io/v1` object of `kind` in `ns`.
async fn release_all(client: &kube::Client, ns: &str, kind: &str) {
    let resource =
        kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("velero.io", "v1", kind));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    for object in api.list(&Default::default()).await.unwrap() {
        let name = object.metadata.name.unwrap();
        let released = api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "metadata": { "finalizers": null } })),
            )
            .await;
        match released {
            // Gone between the list and the patch: nothing holds it.
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            other => {
                other.unwrap_or_else(|e| panic!("releasing {kind} {ns}/{name}: {e}"));
            }
        }
    }
}
