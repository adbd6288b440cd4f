use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::RepositoryArgs;
use crate::cli::args::GlobalArgs;
use ark_kopia::snapshot::{EntryType, RestoreCounts};

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The snapshot's ID (or a unique prefix of it), as `ark repository snapshots` lists it
    pub snapshot: String,
    /// Where to write it: a directory for a directory (created if absent), a file for a file
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Only this file or directory of the snapshot, relative to its root
    #[arg(long, value_name = "PATH", default_value = "/")]
    pub path: String,
    #[command(flatten)]
    pub repository: RepositoryArgs,
}

pub async fn run(global: &GlobalArgs, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let repo = args.repository.open(global).await?;
    write_out(&repo, &args.snapshot, &args.path, &args.to).await?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `path` of `snapshot` (an ID or a unique prefix of one) to `to` on the local disk, with a
/// progress bar, and says what it wrote.
pub(crate) async fn write_out(
    repo: &ark_kopia::Repository,
    snapshot: &str,
    path: &str,
    to: &Path,
) -> anyhow::Result<()> {
    let found = repo.snapshot(snapshot).await?;
    let entry = repo.entry_at(&found.manifest, path).await?;
    let total = match entry.entry_type {
        EntryType::Directory => entry.summary.as_ref().map_or(0, |s| s.total_file_size) as u64,
        _ => entry.size as u64,
    };
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ({elapsed})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let counts = RestoreCounts::default();
    let restore = repo.restore(&entry, to, &counts);
    tokio::pin!(restore);
    let result = loop {
        tokio::select! {
            result = &mut restore => break result,
            () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                bar.set_position(counts.bytes.load(Ordering::Relaxed));
            }
        }
    };
    bar.finish_and_clear();
    result.with_context(|| format!("restoring {}:{path} to {}", found.id, to.display()))?;
    println!(
        "Restored {} files ({}), {} directories and {} symlinks of snapshot {} to {}",
        counts.files.load(Ordering::Relaxed),
        ark_api::size::human(counts.bytes.load(Ordering::Relaxed)),
        counts.directories.load(Ordering::Relaxed),
        counts.symlinks.load(Ordering::Relaxed),
        found.id,
        to.display()
    );
    Ok(())
}
