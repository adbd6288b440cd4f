//! ark installed as users install it, with its node agent (`ark install --use-node-agent`), on
//! the real node: for the tests of pod volumes and their benchmark, each giving the ark binary
//! and image it runs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::Cluster;

/// ark installed in a namespace of its own with its node agent, both from one image, on the real
/// node, over an S3 location; all of it goes when dropped.
pub struct Installed {
    pub ns: String,
    pub prefix: String,
    /// Where the node agent serves its metrics, on the host.
    pub agent_metrics: std::net::SocketAddr,
    /// Where the server serves its metrics, on the host.
    pub server_metrics: std::net::SocketAddr,
    /// The repositories' password, as the install left it in its Secret.
    pub password: String,
    _cleanup: Vec<Box<dyn std::any::Any>>,
}

/// How a test installs ark beyond the defaults.
#[derive(Default)]
pub struct Options<'a> {
    /// Where the node agent reaches the API server (the proxy of a fault test).
    pub api_server: Option<std::net::SocketAddr>,
    /// The location's S3 endpoint, for the server and the agent (the proxy of a fault test).
    pub s3_url: Option<&'a str>,
    /// Velero's node agent settings (JSON, in the ConfigMap `agent-settings`).
    pub agent_settings: Option<&'a str>,
    /// More arguments of `ark node-agent` (`--data-mover-prepare-timeout=15s`, say).
    pub agent_args: &'a [&'a str],
    /// The repositories' password (`--repository-password-file`); a random one when None.
    pub repository_password: Option<&'a str>,
}

impl Installed {
    /// ark (the binary `ark`, its image `image`) installed over the location at `prefix`.
    pub async fn install(cluster: &Cluster, ark: &Path, image: &str, prefix: &str) -> Installed {
        Self::install_with(cluster, ark, image, prefix, Options::default()).await
    }

    /// [`install`](Self::install), with `options`.
    pub async fn install_with(
        cluster: &Cluster,
        ark: &Path,
        image: &str,
        prefix: &str,
        options: Options<'_>,
    ) -> Installed {
        let client = cluster.client().await;
        let ns = crate::unique_name("ark-agent");
        let cleanup = cluster.install_removed_on_drop(&ns);
        let prefix = prefix.to_string();
        let location = cluster.s3_location(&prefix);
        let dir = tempfile::tempdir().unwrap();
        let secret_file = dir.path().join("credentials");
        std::fs::write(&secret_file, location.credentials.as_deref().unwrap()).unwrap();
        let s3_url = options.s3_url.unwrap_or(&cluster.s3_endpoint);
        let config = format!("region=us-east-1,s3ForcePathStyle=true,s3Url={s3_url}");
        let pods_dir = cluster.real_node_pods.as_ref().expect("the real node");
        let mut settings_flag = Vec::new();
        if let Some(settings) = options.agent_settings {
            let namespaces = Api::<Namespace>::all(client.clone());
            let namespace = serde_json::json!({ "metadata": { "name": ns } });
            let namespace = serde_json::from_value(namespace).unwrap();
            namespaces
                .create(&Default::default(), &namespace)
                .await
                .unwrap();
            let map = serde_json::json!({
                "metadata": { "name": "agent-settings" },
                "data": { "node-agent-config.json": settings },
            });
            Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), &ns)
                .create(&Default::default(), &serde_json::from_value(map).unwrap())
                .await
                .unwrap();
            settings_flag = vec!["--node-agent-configmap", "agent-settings"];
        }
        let mut args = vec![
            "install",
            "--provider",
            "aws",
            "--bucket",
            &location.bucket,
            "--prefix",
            &prefix,
            "--secret-file",
            secret_file.to_str().unwrap(),
            "--backup-location-config",
            &config,
            "--image",
            image,
            "--use-node-agent",
            "--kubelet-pods-dir",
            pods_dir.to_str().unwrap(),
        ];
        args.extend(&settings_flag);
        let password_file = dir.path().join("repository-password");
        if let Some(password) = options.repository_password {
            std::fs::write(&password_file, password).unwrap();
            args.extend([
                "--repository-password-file",
                password_file.to_str().unwrap(),
            ]);
        }
        // Not `--wait`: what it waits for runs once the test ground's patch below is in.
        run_ark(cluster, ark, &ns, &args);
        // Ports of its own on the host's network, which other installs share, and Velero's node
        // agent (on Velero's 8085): tests of the real node run side by side.
        let deployments = Api::<Deployment>::namespaced(client.clone(), &ns);
        let daemon_sets = Api::<DaemonSet>::namespaced(client.clone(), &ns);
        let server_port = crate::free_port();
        let server_patch = serving_on(
            cluster.test_ground_patch("ark"),
            &container_args(deployments.get("ark").await.unwrap().spec.unwrap().template),
            server_port,
        );
        let agent_port = crate::free_port();
        let agents = daemon_sets.get("node-agent").await.unwrap();
        let mut agent_args = container_args(agents.spec.unwrap().template);
        agent_args.extend(options.agent_args.iter().map(|a| a.to_string()));
        let mut agent_patch = serving_on(
            cluster.test_ground_patch("node-agent"),
            &agent_args,
            agent_port,
        );
        if let Some(api_server) = options.api_server {
            agent_patch["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] =
                serde_json::json!(api_server.port().to_string());
        }
        deployments
            .patch(
                "ark",
                &PatchParams::default(),
                &Patch::Strategic(server_patch),
            )
            .await
            .unwrap();
        daemon_sets
            .patch(
                "node-agent",
                &PatchParams::default(),
                &Patch::Strategic(agent_patch),
            )
            .await
            .unwrap();
        let rollout = Duration::from_secs(120);
        let server = |d: Option<&Deployment>| d.is_some_and(crate::deployment_rolled_out);
        let agents = |d: Option<&DaemonSet>| d.is_some_and(crate::daemon_set_rolled_out);
        let rolled_out = async {
            crate::wait_for(deployments, "ark", server, rollout).await?;
            crate::wait_for(daemon_sets, "node-agent", agents, rollout).await
        };
        if let Err(error) = rolled_out.await {
            let pods = crate::output_within(
                Command::new("kubectl")
                    .args(["describe", "pods", "-n", &ns])
                    .env("KUBECONFIG", &cluster.kubeconfig),
                crate::COMMAND_LIMIT,
            );
            panic!(
                "ark in {ns} is not running on the real node: {error:#}\n{}",
                String::from_utf8_lossy(&pods.stdout)
            );
        }
        let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns)
            .get("velero-repo-credentials")
            .await
            .expect("the install made the repositories' password");
        let password = secret.data.unwrap()["repository-password"].0.clone();
        Installed {
            ns,
            prefix,
            agent_metrics: std::net::SocketAddr::from(([127, 0, 0, 1], agent_port)),
            server_metrics: std::net::SocketAddr::from(([127, 0, 0, 1], server_port)),
            password: String::from_utf8(password).unwrap(),
            _cleanup: cleanup,
        }
    }

    /// Removes ark (its namespace), and waits until its pods are gone: they take ports of the
    /// host's network that another install needs.
    pub async fn uninstall(self, cluster: &Cluster) {
        let namespaces: Api<Namespace> = Api::all(cluster.client().await);
        let namespace = namespaces.get(&self.ns).await.unwrap();
        namespaces
            .delete(&self.ns, &Default::default())
            .await
            .unwrap();
        // The server goes with the namespace and may not live to release its restores' finalizer
        // (it puts it back on one not yet being deleted): released until the namespace is gone.
        let client = cluster.client().await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while namespaces.get_opt(&self.ns).await.unwrap().is_some()
            && tokio::time::Instant::now() < deadline
        {
            crate::velero::release_restores(&client, &self.ns).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        crate::wait_deleted(namespaces, &namespace, Duration::from_secs(10)).await;
    }
}

/// The arguments of a pod template's only container.
fn container_args(template: k8s_openapi::api::core::v1::PodTemplateSpec) -> Vec<String> {
    let containers = template.spec.unwrap().containers;
    containers[0].args.clone().unwrap_or_default()
}

/// The test ground's `patch` of an installed workload, its container also serving its metrics
/// and health endpoints on `port`: its `--metrics-address` in `args` (as installed) and its one
/// port, replaced (a host port is held by its number: one added beside it would still be held).
fn serving_on(mut patch: serde_json::Value, args: &[String], port: u16) -> serde_json::Value {
    let address = "--metrics-address=";
    assert!(
        args.iter().any(|a| a.starts_with(address)),
        "installed with no {address}: {args:?}"
    );
    let args: Vec<String> = (args.iter())
        .map(|arg| match arg.starts_with(address) {
            true => format!("{address}0.0.0.0:{port}"),
            false => arg.clone(),
        })
        .collect();
    let container = &mut patch["spec"]["template"]["spec"]["containers"][0];
    container["args"] = serde_json::json!(args);
    container["ports"] = serde_json::json!([
        { "$patch": "replace" },
        { "name": "metrics", "containerPort": port },
    ]);
    patch
}

/// Runs `ark ARGS -n NS` (the binary `ark`) against the cluster and insists that it succeeds: its
/// output.
pub fn run_ark(cluster: &Cluster, ark: &Path, ns: &str, args: &[&str]) -> String {
    let mut command = Command::new(ark);
    command
        .args(args)
        .args(["-n", ns])
        .env_remove("ARK_NAMESPACE")
        .env("XDG_CONFIG_HOME", "/nonexistent/config")
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdin(std::process::Stdio::null());
    let output = crate::output_within(&mut command, crate::COMMAND_LIMIT);
    assert!(
        output.status.success(),
        "ark {args:?} failed ({:?}):\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
