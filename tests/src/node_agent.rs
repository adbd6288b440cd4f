//! ark installed as users install it, with its node agent (`ark install --use-node-agent`), on
//! the real node: for the tests of pod volumes and their benchmark, each giving the ark binary
//! and image it runs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::Cluster;

/// ark installed in a namespace of its own with its node agent, both from one image, on the real
/// node, over an S3 location; all of it goes when dropped.
pub struct Installed {
    pub ns: String,
    pub prefix: String,
    _cleanup: Vec<Box<dyn std::any::Any>>,
}

impl Installed {
    /// ark (the binary `ark`, its image `image`) installed over the location at `prefix`, the
    /// agent reaching the API server at `api_server` when given (the proxy of a fault test).
    pub async fn install(
        cluster: &Cluster,
        ark: &Path,
        image: &str,
        prefix: &str,
        api_server: Option<std::net::SocketAddr>,
    ) -> Installed {
        Self::install_with(cluster, ark, image, prefix, api_server, None).await
    }

    /// [`install`](Self::install), the agent started with Velero's node agent settings
    /// `agent_settings` (JSON, in the ConfigMap `agent-settings`) when given.
    pub async fn install_with(
        cluster: &Cluster,
        ark: &Path,
        image: &str,
        prefix: &str,
        api_server: Option<std::net::SocketAddr>,
        agent_settings: Option<&str>,
    ) -> Installed {
        let client = cluster.client().await;
        let ns = crate::unique_name("ark-agent");
        let mut cleanup: Vec<Box<dyn std::any::Any>> =
            vec![Box::new(cluster.delete_on_drop::<Namespace>(&ns))];
        for role in ["server", "viewer", "operator", "node-agent"] {
            let name = format!("ark:{ns}:{role}");
            cleanup.push(Box::new(cluster.delete_on_drop::<ClusterRole>(&name)));
            cleanup.push(Box::new(
                cluster.delete_on_drop::<ClusterRoleBinding>(&name),
            ));
        }
        let prefix = prefix.to_string();
        let location = cluster.s3_location(&prefix);
        let dir = tempfile::tempdir().unwrap();
        let secret_file = dir.path().join("credentials");
        std::fs::write(&secret_file, location.credentials.as_deref().unwrap()).unwrap();
        let config = format!(
            "region=us-east-1,s3ForcePathStyle=true,s3Url={}",
            cluster.s3_endpoint
        );
        let pods_dir = cluster.real_node_pods.as_ref().expect("the real node");
        let mut settings_flag = Vec::new();
        if let Some(settings) = agent_settings {
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
        let install = |more: &[&str]| {
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
            args.extend(more);
            run_ark(cluster, ark, &ns, &args)
        };
        install(&[]);
        Api::<Deployment>::namespaced(client.clone(), &ns)
            .patch(
                "ark",
                &PatchParams::default(),
                &Patch::Strategic(cluster.test_ground_patch("ark")),
            )
            .await
            .unwrap();
        let mut agent_patch = cluster.test_ground_patch("node-agent");
        if let Some(api_server) = api_server {
            agent_patch["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] =
                serde_json::json!(api_server.port().to_string());
        }
        Api::<DaemonSet>::namespaced(client.clone(), &ns)
            .patch(
                "node-agent",
                &PatchParams::default(),
                &Patch::Strategic(agent_patch),
            )
            .await
            .unwrap();
        let waited = install(&["--wait", "--timeout", "2m"]);
        assert!(
            waited.ends_with(&format!("ark is running in namespace {ns}\n")),
            "{waited}"
        );
        Installed {
            ns,
            prefix,
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
