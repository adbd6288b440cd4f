//! The server's own verification of new backups (`--verify-new-backups`): each backup that ends
//! Completed or PartiallyFailed is read back once, one at a time, and the outcome recorded as
//! `ark backup verify` records it (the Backup's annotation, an event), and counted in the
//! server's metrics. Work cut off by a stop records nothing: the next server verifies the backup
//! again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ark_api::verification::ANNOTATION;
use ark_api::{Backup, BackupPhase, labels};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Resource as _, ResourceExt as _};

use crate::runtime::context::Kube;
use crate::runtime::objects::Readable;
use crate::runtime::periodic;
use crate::verification::{self, Options};

/// Which new backups the server verifies on its own, and how deep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewBackups {
    Off,
    /// Every file and item, the volume data's directories and contents looked up, a sample read.
    Sampled,
    /// The same, every byte of the volume data read.
    Data,
}

/// How often a backup that has not ended yet is looked at again.
const UNFINISHED: Duration = Duration::from_secs(5);
/// How long after a failure to reach its location a backup is tried again.
const UNREACHABLE: Duration = Duration::from_secs(300);
/// A backup that ended longer ago than this is not new: a server started after a long stop, or
/// backups synced from a bucket, do not set off a verification of every backup there is.
const NEW_FOR: SignedDuration = SignedDuration::from_hours(24);

pub struct Ctx {
    pub kube: Kube,
    pub data: bool,
    pub scratch: PathBuf,
    /// One verification at a time: its cost is one backup's reading, whatever the number due.
    pub one_at_a_time: tokio::sync::Semaphore,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    periodic::run::<Backup, _, _, _>(ctx, verify_if_due).await;
}

/// Whether a backup is to be verified now, later (it has not ended), or never.
#[derive(Debug, PartialEq, Eq)]
enum Due {
    Now,
    Later,
    Never,
}

fn due(backup: &Backup, now: Timestamp) -> Due {
    if backup.annotations().contains_key(ANNOTATION) {
        return Due::Never;
    }
    let ended = (backup.status.as_ref()).and_then(|s| s.completion_timestamp.as_ref());
    match backup.phase() {
        BackupPhase::Completed | BackupPhase::PartiallyFailed => match ended {
            Some(ended) if now.duration_since(ended.0) < NEW_FOR => Due::Now,
            _ => Due::Never,
        },
        BackupPhase::Failed | BackupPhase::FailedValidation | BackupPhase::Deleting => Due::Never,
        _ => Due::Later,
    }
}

async fn verify_if_due(object: Arc<Readable<Backup>>, ctx: Arc<Ctx>) -> Option<Duration> {
    let Ok(backup) = &object.read else {
        return None;
    };
    match due(backup, Timestamp::now()) {
        Due::Never => return None,
        Due::Later => return Some(UNFINISHED),
        Due::Now => {}
    }
    let _turn = ctx.one_at_a_time.acquire().await.ok()?;
    let kube = &ctx.kube;
    let options = Options {
        data: ctx.data,
        scratch: ctx.scratch.clone(),
    };
    let name = backup.name_any();
    let report = match verification::verify(&kube.client, &kube.namespace, backup, &options).await {
        Ok(report) => report,
        Err(error) => {
            let note = format!("backup {name} could not be verified: {error}");
            let object = backup.object_ref(&());
            (kube.events)
                .warn(object, None, "VerificationNotRun", "Verify", note)
                .await;
            return Some(UNREACHABLE);
        }
    };
    match verification::record(&kube.client, backup, &report, ctx.data, "ark-server").await {
        Ok(_) => {
            let schedule =
                (backup.labels().get(labels::SCHEDULE_NAME).cloned()).unwrap_or_default();
            kube.metrics.backup_verified(&schedule, report.passed());
            None
        }
        Err(error) => {
            tracing::warn!("recording the verification of backup {name}: {error}");
            Some(UNFINISHED)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::BackupStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn backup(phase: BackupPhase, ended_hours_ago: Option<i64>) -> Backup {
        let now = Timestamp::now();
        let mut backup = Backup::new("b", Default::default());
        backup.status = Some(BackupStatus {
            phase: Some(phase),
            completion_timestamp: ended_hours_ago
                .map(|h| Time(now - SignedDuration::from_hours(h))),
            ..Default::default()
        });
        backup
    }

    #[test]
    fn a_backup_is_verified_once_when_it_ends_and_old_or_failed_ones_never() {
        let now = Timestamp::now();
        assert_eq!(due(&backup(BackupPhase::Completed, Some(1)), now), Due::Now);
        assert_eq!(
            due(&backup(BackupPhase::PartiallyFailed, Some(0)), now),
            Due::Now
        );
        assert_eq!(due(&backup(BackupPhase::InProgress, None), now), Due::Later);
        assert_eq!(due(&backup(BackupPhase::Finalizing, None), now), Due::Later);
        assert_eq!(
            due(&backup(BackupPhase::Completed, Some(25)), now),
            Due::Never
        );
        assert_eq!(due(&backup(BackupPhase::Completed, None), now), Due::Never);
        assert_eq!(due(&backup(BackupPhase::Failed, Some(1)), now), Due::Never);
        let mut verified = backup(BackupPhase::Completed, Some(1));
        verified.metadata.annotations = Some([(ANNOTATION.to_string(), "{}".to_string())].into());
        assert_eq!(due(&verified, now), Due::Never);
    }
}
