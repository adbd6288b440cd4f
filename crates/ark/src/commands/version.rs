//! `ark version`: the client's version, the Kubernetes API server's, and the version of the server
//! that runs in the namespace, asked with a ServerStatusRequest (as `velero version` asks it; ark's
//! server and Velero's both answer).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use ark_api::{ServerStatusRequest, ServerStatusRequestPhase};
use clap::Args;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Api, ResourceExt as _};

use crate::cli::args::{GlobalArgs, parse_duration};

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print only the client's version, without contacting the cluster
    #[arg(long)]
    pub client_only: bool,
    /// How long to wait for the server in the namespace to answer
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
}

pub async fn run(global: &GlobalArgs, args: VersionArgs) -> anyhow::Result<ExitCode> {
    println!("Client: ark {}", env!("CARGO_PKG_VERSION"));
    if args.client_only {
        return Ok(ExitCode::SUCCESS);
    }
    let client = crate::context::client(global).await?;
    let kubernetes = client
        .apiserver_version()
        .await
        .context("cannot reach the Kubernetes API server")?;
    println!("Kubernetes: {}", kubernetes.git_version);
    let answer = match server_version(&client, &global.namespace, args.timeout).await {
        Ok(Some(version)) => version,
        Ok(None) => format!(
            "none answered within {} in namespace {} (`ark install` runs one)",
            ark_api::duration::format(args.timeout),
            global.namespace
        ),
        Err(error) => format!(
            "cannot ask: {}",
            crate::errors::explain(&error, &global.namespace)
                .unwrap_or_else(|| format!("{error:#}"))
        ),
    };
    println!("Server: {answer}");
    Ok(ExitCode::SUCCESS)
}

/// The answer of the server in `namespace`, if one comes within `timeout`. The request is removed
/// either way.
async fn server_version(
    client: &kube::Client,
    namespace: &str,
    timeout: Duration,
) -> anyhow::Result<Option<String>> {
    let api: Api<ServerStatusRequest> = Api::namespaced(client.clone(), namespace);
    let mut request = ServerStatusRequest::new("", Default::default());
    request.metadata.name = None;
    request.metadata.generate_name = Some("ark-version-".into());
    let name = api
        .create(&PostParams::default(), &request)
        .await
        .context("cannot create a ServerStatusRequest")?
        .name_any();
    let answered = |request: Option<&ServerStatusRequest>| {
        request
            .and_then(|r| r.status.as_ref())
            .is_some_and(|s| s.phase == Some(ServerStatusRequestPhase::Processed))
    };
    let waited = tokio::time::timeout(timeout, await_condition(api.clone(), &name, answered)).await;
    let _ = api.delete(&name, &DeleteParams::default()).await;
    let Ok(waited) = waited else { return Ok(None) };
    let answered = waited
        .context("watching the request")?
        .context("the request was removed before it was answered")?;
    // A Velero built without its version stamped answers with none.
    let version = answered.status.and_then(|s| s.server_version);
    Ok(Some(match version {
        Some(ark) if ark.starts_with(ark_api::ARK_SERVER_VERSION_PREFIX) => ark,
        Some(velero) if !velero.is_empty() => format!("Velero {velero}"),
        _ => "Velero (its version not given)".to_string(),
    }))
}
