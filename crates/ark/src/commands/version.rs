use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{GlobalArgs, VersionArgs};

pub async fn run(global: &GlobalArgs, args: VersionArgs) -> anyhow::Result<ExitCode> {
    println!("Client: ark {}", env!("CARGO_PKG_VERSION"));
    if args.client_only {
        return Ok(ExitCode::SUCCESS);
    }
    let client = crate::context::client(global).await?;
    let server = client
        .apiserver_version()
        .await
        .context("cannot reach the Kubernetes API server")?;
    println!("Kubernetes: {}", server.git_version);
    Ok(ExitCode::SUCCESS)
}
