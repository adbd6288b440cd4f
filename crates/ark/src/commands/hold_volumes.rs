//! `ark hold-volumes`: what the pod a node agent exposes a CSI snapshot with runs. The pod only
//! holds the claim made from the snapshot mounted on its node, where the node agent reads it
//! through the kubelet's pod directory; it does nothing else, and ends when it is told to stop
//! (the agent deletes it once the data is moved).

use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct HoldVolumesArgs {}

pub async fn run(_: HoldVolumesArgs) -> anyhow::Result<ExitCode> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    println!("holding this pod's volumes mounted for the node agent until told to stop");
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(ExitCode::SUCCESS)
}
