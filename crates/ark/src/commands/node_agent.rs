use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cli::args::{GlobalArgs, parse_duration};

#[derive(Debug, Args)]
pub struct NodeAgentArgs {
    /// This node's name (the DaemonSet passes the pod's spec.nodeName)
    #[arg(long, value_name = "NODE", env = "NODE_NAME")]
    pub node_name: String,
    /// Where the kubelet's pod directory (<kubelet root>/pods) is mounted
    #[arg(long, value_name = "DIR", default_value = "/host_pods")]
    pub host_pods: PathBuf,
    /// Volumes whose data moves at once on this node (pod volume backups and restores, data
    /// uploads and downloads together), unless the settings' loadConcurrency says otherwise
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:8086)
    #[arg(long, value_name = "ADDRESS")]
    pub metrics_address: Option<std::net::SocketAddr>,
    /// On SIGTERM, how long running volume backups and restores may take to finish before the
    /// agent stops anyway (the next agent on the node fails what is left)
    #[arg(long, value_name = "DURATION", default_value = "25s", value_parser = parse_duration)]
    pub shutdown_grace: std::time::Duration,
    /// The ConfigMap in the namespace holding Velero's node agent settings (one JSON document:
    /// loadConcurrency, loadAffinity, backupPVC, restorePVC)
    #[arg(long, value_name = "NAME")]
    pub node_agent_configmap: Option<String>,
    /// How long a volume exposed for snapshot data movement may take to be ready: its pod to run,
    /// or a restored claim that binds on first use to be scheduled (Velero's flag)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    pub data_mover_prepare_timeout: std::time::Duration,
}

/// The settings of ConfigMap `name` in `namespace`: its only value, read as Velero's node agent
/// reads it. A ConfigMap that is missing or does not fit is an error naming it, as is one that
/// holds more than one value; the fields ark does not act on are named in a warning.
pub async fn configs(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<ark_api::NodeAgentConfigs> {
    let shown = format!("the node agent's ConfigMap {namespace}/{name}");
    let map =
        kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), namespace)
            .get_opt(name)
            .await
            .with_context(|| format!("reading {shown}"))?
            .with_context(|| format!("{shown} is not there"))?;
    let data = map.data.unwrap_or_default();
    let [(key, json)] = Vec::from_iter(data).try_into().map_err(|data: Vec<_>| {
        anyhow::anyhow!(
            "{shown} must hold one value (a JSON document), not {}",
            data.len()
        )
    })?;
    let configs = ark_api::NodeAgentConfigs::parse(&json)
        .map_err(|reason| anyhow::anyhow!("{shown}, key {key}: {reason}"))?;
    let ignored = configs.not_acted_on();
    if !ignored.is_empty() {
        tracing::warn!("{shown}: ark does not act on {}", ignored.join(", "));
    }
    Ok(configs)
}

pub async fn run(global: &GlobalArgs, args: NodeAgentArgs) -> anyhow::Result<ExitCode> {
    crate::commands::server::log_to_stderr();
    let client = crate::context::client(global).await?;
    std::fs::read_dir(&args.host_pods).with_context(|| {
        format!(
            "the kubelet's pod directory {} (mount <kubelet root>/pods there)",
            args.host_pods.display()
        )
    })?;
    let configs = match &args.node_agent_configmap {
        Some(name) => configs(&client, &global.namespace, name).await?,
        None => Default::default(),
    };
    let options = ark_server::node_agent::NodeAgentOptions {
        namespace: global.namespace.clone(),
        node: args.node_name,
        host_pods: args.host_pods,
        concurrency: args.concurrency,
        metrics_address: args.metrics_address,
        shutdown_grace: args.shutdown_grace,
        configs,
        prepare_timeout: args.data_mover_prepare_timeout,
    };
    ark_server::node_agent::run(client, options).await?;
    Ok(ExitCode::SUCCESS)
}
