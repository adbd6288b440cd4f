//! Garbage collection: an expired backup (past its TTL) gets a DeleteBackupRequest, unless one is
//! already pending for it; when its location is missing or read-only the backup is labelled
//! `velero.io/gc-failure` with the reason instead.

use std::sync::Arc;

use ark_api::{Backup, BackupPhase, DeleteBackupRequest, DeleteBackupRequestPhase, labels};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::Context;
use crate::locations::{self, LocationError};

pub async fn run(ctx: Arc<Context>) {
    loop {
        if let Err(error) = collect(&ctx).await {
            tracing::warn!("garbage collection: {error}");
        }
        tokio::time::sleep(ctx.gc_frequency).await;
    }
}

/// Whether a backup is past its expiration and in a phase where deletion makes sense.
pub fn is_expired(backup: &Backup, now: Timestamp) -> bool {
    let expired = backup
        .status
        .as_ref()
        .and_then(|s| s.expiration.as_ref())
        .is_some_and(|e| e.0 <= now);
    expired
        && !matches!(
            backup.phase(),
            BackupPhase::New | BackupPhase::InProgress | BackupPhase::Deleting
        )
}

/// Whether a request still stands for its backup (Velero #685: one is enough).
pub fn is_pending(request: &DeleteBackupRequest) -> bool {
    matches!(
        request.phase(),
        None | Some(DeleteBackupRequestPhase::New) | Some(DeleteBackupRequestPhase::InProgress)
    )
}

async fn collect(ctx: &Context) -> kube::Result<()> {
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let requests: Api<DeleteBackupRequest> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let now = Timestamp::now();
    for backup in backups
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|b| is_expired(b, now))
    {
        let name = backup.name_any();
        let location = backup.spec.storage_location.clone().unwrap_or_default();
        let failure = match locations::get(&ctx.client, &ctx.namespace, &location).await {
            Ok(found) if found.is_read_only() => Some("BSLReadOnly"),
            Ok(_) => None,
            Err(LocationError::NotFound(_)) => Some("BSLNotFound"),
            Err(_) => Some("BSLCannotGet"),
        };
        let current = backup.labels().get(labels::GC_FAILURE).map(String::as_str);
        if current != failure {
            let patch = json!({ "metadata": { "labels": { labels::GC_FAILURE: failure } } });
            backups
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        if failure.is_some() {
            continue;
        }
        let selector =
            labels::selector_for_backup(&name, backup.metadata.uid.as_deref().unwrap_or_default());
        let pending = requests
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .iter()
            .any(is_pending);
        if !pending {
            requests
                .create(
                    &PostParams::default(),
                    &DeleteBackupRequest::for_backup(backup),
                )
                .await?;
            tracing::info!("garbage collection: backup {name} expired; deletion requested");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupSpec, BackupStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::SignedDuration;

    fn backup(phase: BackupPhase, expires_in_secs: i64) -> Backup {
        let mut backup = Backup::new("b", BackupSpec::default());
        backup.status = Some(BackupStatus {
            phase: Some(phase),
            expiration: Some(Time(
                Timestamp::now() + SignedDuration::from_secs(expires_in_secs),
            )),
            ..Default::default()
        });
        backup
    }

    #[test]
    fn only_finished_backups_past_their_ttl_expire() {
        let now = Timestamp::now();
        assert!(is_expired(&backup(BackupPhase::Completed, -10), now));
        assert!(is_expired(&backup(BackupPhase::Failed, -10), now));
        assert!(!is_expired(&backup(BackupPhase::Completed, 3600), now));
        assert!(!is_expired(&backup(BackupPhase::InProgress, -10), now));
        assert!(!is_expired(&backup(BackupPhase::Deleting, -10), now));
        assert!(!is_expired(&Backup::new("b", BackupSpec::default()), now));
    }
}
