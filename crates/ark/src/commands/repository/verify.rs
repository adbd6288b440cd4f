use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Args;

use super::RepositoryArgs;
use crate::cli::args::GlobalArgs;
use ark_kopia::repository::{Reading, VerifyProgress};

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The snapshot to verify (default: every snapshot of the repository)
    pub snapshot: Option<String>,
    #[command(flatten)]
    pub repository: RepositoryArgs,
}

pub async fn run(global: &GlobalArgs, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let repo = args.repository.open(global).await?;
    let snapshots = match &args.snapshot {
        Some(id) => vec![repo.snapshot(id).await?],
        None => repo.snapshots().await?,
    };
    let progress = VerifyProgress::default();
    let errors = repo.verify(&snapshots, Reading::All, &progress).await;
    for e in &errors {
        eprintln!("{e}");
    }
    println!(
        "Verified {} snapshots: {} objects, {} read, {} errors",
        snapshots.len(),
        progress.objects.load(Ordering::Relaxed),
        ark_api::size::human(progress.bytes.load(Ordering::Relaxed)),
        errors.len()
    );
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
