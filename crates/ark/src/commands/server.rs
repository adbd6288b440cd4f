use std::process::ExitCode;

use crate::cli::{GlobalArgs, ServerArgs};

pub async fn run(global: &GlobalArgs, _args: ServerArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let options = ark_server::ServerOptions {
        namespace: global.namespace.clone(),
    };
    ark_server::run(client, options).await?;
    Ok(ExitCode::SUCCESS)
}
