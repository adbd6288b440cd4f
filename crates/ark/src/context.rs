//! The cluster connection every command that talks to Kubernetes shares.

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cli::GlobalArgs;

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
            .context("cannot find a cluster: set KUBECONFIG, --kubeconfig or run in a pod")?,
    };
    kube::Client::try_from(config).context("cannot create a Kubernetes client")
}
