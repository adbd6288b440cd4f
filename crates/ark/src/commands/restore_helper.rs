use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

#[derive(Debug, Args)]
pub struct RestoreHelperArgs {
    /// The uid of the restore whose volume data this pod waits for
    pub restore_uid: String,
    /// Where the pod's restored volumes are mounted, one directory each
    #[arg(long, value_name = "DIR", default_value = RESTORES)]
    pub restores: PathBuf,
}

/// Where the restore-wait init container mounts each restored volume (Velero's paths).
pub const RESTORES: &str = "/restores";
/// How often the volumes are looked at.
const EVERY: Duration = Duration::from_secs(1);

/// Velero's `velero-restore-helper`, as the `restore-wait` init container runs it: waits until
/// the node agent has written `.velero/<restore uid>` into every restored volume, then removes
/// those marks and ends, so that the pod's own containers start on volumes that hold their data.
pub fn run(args: RestoreHelperArgs) -> anyhow::Result<ExitCode> {
    println!(
        "waiting for the data of restore {} in the volumes under {}",
        args.restore_uid,
        args.restores.display()
    );
    loop {
        let volumes = volumes(&args.restores)?;
        let waiting: Vec<&PathBuf> = volumes
            .iter()
            .filter(|v| !v.join(".velero").join(&args.restore_uid).exists())
            .collect();
        if waiting.is_empty() {
            for volume in &volumes {
                let marks = volume.join(".velero");
                if let Err(error) = std::fs::remove_dir_all(&marks) {
                    eprintln!("removing {}: {error}", marks.display());
                }
            }
            println!("all {} volumes are restored", volumes.len());
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(EVERY);
    }
}

fn volumes(restores: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(restores)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", restores.display()))?;
    let mut volumes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| anyhow::anyhow!("reading {}: {e}", restores.display()))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            volumes.push(entry.path());
        }
    }
    volumes.sort();
    Ok(volumes)
}
