use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use crate::cli::GlobalArgs;

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print only the client's version, without contacting the cluster
    #[arg(long)]
    pub client_only: bool,
}

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
