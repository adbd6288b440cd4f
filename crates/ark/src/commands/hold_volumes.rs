//! `ark hold-volumes`: what the pod a node agent exposes a volume with runs. The pod holds the
//! claim's volume mounted on its node, where the node agent reads or writes it through the
//! kubelet's pod directory; a block volume it is given as a device, which it opens and hands to
//! the agent (`--device`, see `ark_server::node_agent::block_device`). It does nothing else, and
//! ends when it is told to stop (the agent deletes it once the data is moved).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use ark_server::node_agent::block_device;
use clap::Args;

#[derive(Debug, Args)]
pub struct HoldVolumesArgs {
    /// A block device to open and hand over to the node agent (with --hand-over)
    #[arg(long, requires = "hand_over")]
    pub device: Option<PathBuf>,
    /// The unix socket to hand the device over at
    #[arg(long, requires = "device")]
    pub hand_over: Option<PathBuf>,
    /// Open the device for writing too (a volume being restored)
    #[arg(long, requires = "device")]
    pub writable: bool,
}

pub async fn run(args: HoldVolumesArgs) -> anyhow::Result<ExitCode> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let serving = async {
        match (&args.device, &args.hand_over) {
            (Some(device), Some(socket)) => {
                println!(
                    "handing block device {} over to the node agent at {} until told to stop",
                    device.display(),
                    socket.display()
                );
                let served = block_device::serve(device, args.writable, socket).await;
                served.map(|never| match never {})
            }
            _ => {
                println!(
                    "holding this pod's volumes mounted for the node agent until told to stop"
                );
                std::future::pending().await
            }
        }
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
        served = serving => served.context("handing the device over")?,
    }
    Ok(ExitCode::SUCCESS)
}
