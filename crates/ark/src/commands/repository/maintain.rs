use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::RepositoryArgs;
use crate::cli::args::GlobalArgs;
use ark_kopia::maintenance::Safety;

#[derive(Debug, Args)]
pub struct MaintainArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// `full` keeps kopia's safety margins (what the server runs every maintenance frequency,
    /// safe beside any other writer); `none` frees everything unreferenced at once, only for a
    /// repository nothing else writes to now
    #[arg(long, value_enum, default_value_t = SafetyArg::Full)]
    pub safety: SafetyArg,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SafetyArg {
    Full,
    None,
}

pub async fn run(global: &GlobalArgs, args: MaintainArgs) -> anyhow::Result<ExitCode> {
    let repo = args.repository.open(global).await?;
    let safety = match args.safety {
        SafetyArg::Full => Safety::Full,
        SafetyArg::None => Safety::None,
    };
    let owner = ark_server::repositories::MAINTENANCE_OWNER;
    let report = repo.run_maintenance(owner, safety).await?;
    println!(
        "Maintained the repository of namespace {}: {} contents in use, {} marked deleted, {} blobs \
         deleted ({}), {} kept",
        args.repository.volume_namespace,
        report.contents_in_use,
        report.marked_deleted,
        report.deleted_blobs,
        ark_api::size::human(report.deleted_bytes),
        report.kept_blobs,
    );
    Ok(ExitCode::SUCCESS)
}
