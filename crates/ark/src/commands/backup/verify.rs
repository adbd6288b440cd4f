//! `ark backup verify`: reads a backup back from its location and checks that it is whole, with
//! the location's credentials (as `download-volume`); prints what it checked and each defect,
//! records the outcome on the Backup, and exits non-zero on a defect.

use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Backup;
use ark_server::verification::{self, Options, Report};
use clap::Args;

use crate::cli::args::{GlobalArgs, Names};

/// Who the record names as the verifier.
const BY: &str = "ark backup verify";

#[derive(Debug, Args)]
pub struct BackupVerifyArgs {
    /// The backup
    #[arg(add = clap_complete::ArgValueCompleter::new(Names::Backups))]
    pub name: String,
    /// Read every byte of the backup's volume data (default: every directory, every content
    /// looked up in its repository's index and packs, and one file in 64 read whole)
    #[arg(long)]
    pub data: bool,
}

pub async fn run(global: &GlobalArgs, args: BackupVerifyArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let backup: Backup =
        crate::commands::missing::get(&client, &global.namespace, &args.name, "backup").await?;
    let options = Options {
        data: args.data,
        scratch: std::env::temp_dir(),
    };
    let report = verification::verify(&client, &global.namespace, &backup, &options)
        .await
        .with_context(|| format!("verifying backup {}", args.name))?;
    print!("{}", text(&args.name, &report));
    match verification::record(&client, &backup, &report, args.data, BY).await {
        Ok(_) => println!("Recorded on backup {}.", args.name),
        Err(error) => eprintln!(
            "The outcome is not recorded on backup {}: {error}",
            args.name
        ),
    }
    Ok(match report.passed() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

fn text(name: &str, report: &Report) -> String {
    let width = report
        .checked
        .iter()
        .map(|(what, _)| what.len())
        .max()
        .unwrap_or(0)
        + 3;
    let mut text = format!("Backup {name}:\n");
    for (what, found) in &report.checked {
        text.push_str(&format!("  {:<width$}{found}\n", format!("{what}:")));
    }
    let count = report.defects.len() + report.unlisted;
    match count {
        0 => text.push_str("No defects.\n"),
        _ => {
            text.push_str(&format!("Defects ({count}):\n"));
            for defect in &report.defects {
                text.push_str(&format!("  - {defect}\n"));
            }
            if report.unlisted > 0 {
                text.push_str(&format!("  ... and {} more\n", report.unlisted));
            }
        }
    }
    text
}
