use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::RepositoryArgs;
use crate::cli::args::{GlobalArgs, OutputArgs, OutputFormat};

#[derive(Debug, Args)]
pub struct SnapshotsArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// One snapshot, as `-o json` prints it.
#[derive(Serialize)]
struct Row {
    id: String,
    source: String,
    #[serde(rename = "startTime")]
    start_time: String,
    #[serde(skip)]
    at: ark_kopia::snapshot::Time,
    size: i64,
    files: i64,
    directories: i64,
    tags: std::collections::BTreeMap<String, String>,
}

pub async fn run(global: &GlobalArgs, args: SnapshotsArgs) -> anyhow::Result<ExitCode> {
    let repo = args.repository.open(global).await?;
    let rows: Vec<Row> = repo
        .snapshots()
        .await?
        .into_iter()
        .map(|s| {
            let summary = s
                .manifest
                .root_entry
                .as_ref()
                .and_then(|r| r.summary.clone())
                .unwrap_or_default();
            Row {
                id: s.id,
                source: s.manifest.source.to_string(),
                start_time: s.manifest.start_time.timestamp().to_string(),
                at: s.manifest.start_time,
                size: summary.total_file_size,
                files: summary.total_file_count,
                directories: summary.total_dir_count,
                tags: s.manifest.tags,
            }
        })
        .collect();
    match args.output.output {
        OutputFormat::Table => {
            let table = crate::output::table(
                &["ID", "SOURCE", "TIME", "SIZE", "FILES", "DIRS"],
                rows.iter().map(|r| {
                    vec![
                        r.id.clone(),
                        r.source.clone(),
                        super::time(r.at),
                        ark_api::size::human(r.size as u64),
                        r.files.to_string(),
                        r.directories.to_string(),
                    ]
                }),
            );
            println!("{table}");
        }
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        OutputFormat::Yaml => print!("{}", serde_saphyr::to_string(&rows)?),
    }
    Ok(ExitCode::SUCCESS)
}
