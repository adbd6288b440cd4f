//! `ark backup download`: a backup's tarball (its Kubernetes objects, not its volume data) written
//! to a local file, as `velero backup download` writes it: from the bucket when the caller may read
//! the location's credentials, through a DownloadRequest to the server otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Backup;
use clap::Args;

use crate::cli::args::{GlobalArgs, Names};

#[derive(Debug, Args)]
pub struct BackupDownloadArgs {
    /// The backup
    #[arg(add = clap_complete::ArgValueCompleter::new(Names::Backups))]
    pub name: String,
    /// Where to write it (default: <NAME>-data.tar.gz in the current directory)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the file if it exists
    #[arg(long)]
    pub force: bool,
}

pub async fn run(global: &GlobalArgs, args: BackupDownloadArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let backup: Backup =
        crate::commands::missing::get(&client, &global.namespace, &args.name, "backup").await?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}-data.tar.gz", args.name)));
    if output.exists() && !args.force {
        anyhow::bail!(
            "{} already exists: remove it, choose another file with --output, or overwrite it \
             with --force",
            output.display()
        );
    }
    // Written beside the output and renamed once whole: a failed download leaves nothing, and an
    // existing file is replaced only by a complete one.
    let dir = match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let partial = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    let location = backup.spec.storage_location.clone().unwrap_or_default();
    let bytes = download(
        &client,
        &global.namespace,
        &location,
        &args.name,
        partial.path(),
    )
    .await?;
    partial
        .persist(&output)
        .with_context(|| format!("writing {}", output.display()))?;
    println!(
        "Backup {} has been successfully downloaded to {} ({bytes} bytes)",
        args.name,
        shown(&output)
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes the backup's tarball to `path`; the bytes written.
async fn download(
    client: &kube::Client,
    namespace: &str,
    location: &str,
    name: &str,
    path: &Path,
) -> anyhow::Result<u64> {
    match ark_server::locations::open_named(client, namespace, location).await {
        Ok(open) => {
            let file = std::fs::File::create(path)?;
            open.store
                .download_backup_contents(name, &file, u64::MAX)
                .await
                .with_context(|| format!("downloading backup {name} from location {location}"))?;
            Ok(file.metadata()?.len())
        }
        Err(error) if error.is_refused() => {
            let mut file = tokio::fs::File::create(path).await?;
            crate::commands::download::fetch_into(
                client,
                namespace,
                "BackupContents",
                name,
                &mut file,
            )
            .await
        }
        Err(error) => Err(error.into()),
    }
}

/// The path as the user gave it, made absolute as Velero prints it.
fn shown(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
