//! `ark backup diff A B` and `ark backup diff A --live`: what changed between two backups, or
//! between a backup and the cluster now, read with the locations' credentials (as `verify`); see
//! `ark_server::backup_diff`.

use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Backup;
use ark_server::backup_diff::{self, Change, Diff};
use clap::Args;

use crate::cli::args::{GlobalArgs, Names, OutputFormat};

#[derive(Debug, Args)]
pub struct BackupDiffArgs {
    /// The earlier backup
    #[arg(add = clap_complete::ArgValueCompleter::new(Names::Backups))]
    pub from: String,
    /// The later backup
    #[arg(required_unless_present = "live", conflicts_with = "live", add = clap_complete::ArgValueCompleter::new(Names::Backups))]
    pub to: Option<String>,
    /// Compare the backup with the cluster now: its objects against theirs, and the objects now in
    /// its namespaces, of the resources it holds, that it does not hold
    #[arg(long)]
    pub live: bool,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
}

pub async fn run(global: &GlobalArgs, args: BackupDiffArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let namespace = &global.namespace;
    let from: Backup =
        crate::commands::missing::get(&client, namespace, &args.from, "backup").await?;
    let to: Option<Backup> = match &args.to {
        Some(to) => Some(crate::commands::missing::get(&client, namespace, to, "backup").await?),
        None => None,
    };
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let earlier = unpack(&client, namespace, &from, scratch.path()).await?;
    let earlier_items = backup_diff::items(earlier.path());
    let diff = match &to {
        Some(to) => {
            let later = unpack(&client, namespace, to, scratch.path()).await?;
            let later_items = backup_diff::items(later.path());
            let to_name = args.to.as_deref().unwrap_or_default();
            backup_diff::between(&args.from, to_name, &earlier_items, &later_items)
        }
        None => backup_diff::with_cluster(&client, &args.from, &earlier_items)
            .await
            .context("cannot read the cluster's objects")?,
    };
    match args.output {
        OutputFormat::Table => print!("{}", text(&diff)),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&diff)?),
        OutputFormat::Yaml => print!("{}", serde_saphyr::to_string(&diff)?),
    }
    Ok(ExitCode::SUCCESS)
}

async fn unpack(
    client: &kube::Client,
    namespace: &str,
    backup: &Backup,
    scratch: &std::path::Path,
) -> anyhow::Result<tempfile::TempDir> {
    let name = backup.metadata.name.as_deref().unwrap_or_default();
    backup_diff::unpack(client, namespace, backup, scratch)
        .await
        .with_context(|| format!("cannot read backup {name}"))
}

/// One line per difference (`+` added, `-` removed, `~` changed with its fields), then the counts.
fn text(diff: &Diff) -> String {
    let mut text = format!("From {} to {}:\n", diff.from, diff.to);
    for difference in &diff.differences {
        let line = match difference.change {
            Change::Added => format!("  + {}\n", difference.key),
            Change::Removed => format!("  - {}\n", difference.key),
            Change::Changed => {
                format!("  ~ {}: {}\n", difference.key, difference.fields.join(", "))
            }
        };
        text.push_str(&line);
    }
    if diff.differences.is_empty() {
        text.push_str("  no differences\n");
    }
    text.push_str(&format!(
        "{} added, {} removed, {} changed; {} unchanged.\n",
        diff.count(Change::Added),
        diff.count(Change::Removed),
        diff.count(Change::Changed),
        diff.unchanged
    ));
    text
}
