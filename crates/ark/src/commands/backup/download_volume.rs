use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, PodVolumeBackup};
use clap::Args;

use crate::cli::args::GlobalArgs;
use crate::commands::repository::RepositoryArgs;

#[derive(Debug, Args)]
pub struct DownloadVolumeArgs {
    /// The backup
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Backups))]
    pub backup: String,
    /// The pod, as it was backed up: NAMESPACE/NAME
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub pod: String,
    /// The pod's volume (its name in the pod's spec)
    #[arg(long, value_name = "VOLUME")]
    pub volume: String,
    /// Only this file or directory of the volume, relative to its root
    #[arg(long, value_name = "PATH", default_value = "/")]
    pub path: String,
    /// Where to write it: a directory for a directory (created if absent), a file for a file
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
}

/// A pod volume's data in a backup, written to the local disk: the backup's record of its pod
/// volume backups (in the bucket) names the snapshot, which is read from the repository of the
/// pod's namespace in the backup's location.
pub async fn run(global: &GlobalArgs, args: DownloadVolumeArgs) -> anyhow::Result<ExitCode> {
    let Some((namespace, pod)) = args.pod.split_once('/') else {
        anyhow::bail!("--pod {:?}: give it as NAMESPACE/NAME", args.pod);
    };
    let client = crate::context::client(global).await?;
    let backup: Backup =
        crate::commands::missing::get(&client, &global.namespace, &args.backup, "backup").await?;
    let location = backup.spec.storage_location.clone().unwrap_or_default();
    let opened = ark_server::locations::open_named(&client, &global.namespace, &location)
        .await
        .with_context(|| format!("cannot open the location of backup {:?}", args.backup))?;
    let key = opened.store.layout.backup_pod_volume_backups(&args.backup);
    let recorded: Vec<PodVolumeBackup> = match opened.store.get(&key).await {
        Ok(bytes) => {
            // Velero writes `null` for a backup without any.
            ark_server::snapshots::gunzip_json::<Option<_>>(&bytes, key.as_ref())
                .map_err(anyhow::Error::msg)?
                .unwrap_or_default()
        }
        Err(error) if error.is_not_found() => Vec::new(),
        Err(error) => return Err(error).with_context(|| format!("reading {key}")),
    };
    let with_data = |pvb: &&PodVolumeBackup| {
        pvb.status
            .as_ref()
            .and_then(|s| s.snapshot_id.as_deref())
            .is_some_and(|id| !id.is_empty())
    };
    let Some(found) = recorded.iter().filter(with_data).find(|pvb| {
        pvb.spec.pod.namespace == namespace
            && pvb.spec.pod.name == pod
            && pvb.spec.volume == args.volume
    }) else {
        let held: Vec<String> = recorded
            .iter()
            .filter(with_data)
            .map(|p| {
                format!(
                    "{}/{}: {}",
                    p.spec.pod.namespace, p.spec.pod.name, p.spec.volume
                )
            })
            .collect();
        anyhow::bail!(
            "backup {:?} holds no data of volume {:?} of pod {}{}",
            args.backup,
            args.volume,
            args.pod,
            if held.is_empty() {
                " (it holds no pod volume data)".to_string()
            } else {
                format!("; it holds: {}", held.join(", "))
            }
        );
    };
    let snapshot = found
        .status
        .as_ref()
        .and_then(|s| s.snapshot_id.clone())
        .unwrap_or_default();
    let repository = RepositoryArgs {
        location,
        volume_namespace: namespace.to_string(),
    }
    .open(global)
    .await?;
    crate::commands::repository::restore::write_out(&repository, &snapshot, &args.path, &args.to)
        .await?;
    Ok(ExitCode::SUCCESS)
}
