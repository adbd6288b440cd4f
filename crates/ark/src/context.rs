//! The cluster connection every command that talks to Kubernetes shares.

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cli::args::GlobalArgs;

/// A client for the cluster the global flags (or the environment) point at.
pub async fn client(global: &GlobalArgs) -> anyhow::Result<kube::Client> {
    let options = KubeConfigOptions {
        context: global.context.clone(),
        ..Default::default()
    };
    let config = match &global.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .with_context(|| format!("invalid kubeconfig {}", path.display()))?
        }
        None if global.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("cannot load kubeconfig")?,
        None => kube::Config::infer()
            .await
            .map_err(|error| match missing_kubeconfig() {
                Some(looked) => anyhow::anyhow!(
                    "no cluster to talk to: there is no kubeconfig at {looked} and ark is not \
                     running in a pod; set KUBECONFIG or pass --kubeconfig FILE"
                ),
                None => {
                    anyhow::Error::new(error).context("cannot load the cluster's configuration")
                }
            })?,
    };
    let _ = CLUSTER_URL.set(config.cluster_url.to_string());
    kube::Client::try_from(config).context("cannot create a Kubernetes client")
}

/// Where the kubeconfig was looked for (`$KUBECONFIG`, else `~/.kube/config`) when nothing is
/// there and no pod's service account is either: the one failure with an obvious remedy.
fn missing_kubeconfig() -> Option<String> {
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        return None;
    }
    let looked = match std::env::var("KUBECONFIG") {
        Ok(paths) if !paths.is_empty() => paths,
        _ => format!("{}/.kube/config", std::env::var("HOME").unwrap_or_default()),
    };
    let missing = std::env::split_paths(&looked).all(|path| !path.exists());
    missing.then_some(looked)
}

/// The API server's address the client was made for: an unreachable cluster is named by it.
static CLUSTER_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub fn cluster_url() -> Option<&'static str> {
    CLUSTER_URL.get().map(String::as_str)
}
