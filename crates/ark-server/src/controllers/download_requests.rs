//! Answers Velero's DownloadRequests with a signed URL to the file they name, so that Velero's CLI
//! (`velero backup describe`, `velero backup logs`, `velero restore describe --details`) works
//! against ark's server as against Velero's own. Velero's rules: the URL is valid for ten
//! minutes, and a request is removed once that time has passed, answered or not, so none piles up.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{Backup, DownloadRequest, DownloadRequestPhase, DownloadRequestStatus, Restore};
use ark_storage::layout::Layout;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::DeleteParams;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use crate::domain::locations;
use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::Readable;
use crate::runtime::{objects, patch};

/// How long a download URL is valid, and an unanswered request kept (Velero's `DownloadURLTTL`).
const URL_TTL: Duration = Duration::from_secs(600);
/// How soon a request that cannot be answered yet (its backup not synced, its bucket down) is
/// tried again.
const RETRY: Duration = Duration::from_secs(5);

pub async fn run(ctx: Arc<Kube>) {
    controller::run::<DownloadRequest, _, _, _>(ctx, "download request", 0, reconcile).await;
}

/// What to do with a request, decided from the request and the time.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    /// Past its expiration (or, unanswered, ten minutes old): remove it.
    Remove,
    /// Answered and still valid: look again when it expires.
    KeepFor(Duration),
    /// Not answered yet: sign a URL.
    Answer,
}

fn decide(request: &DownloadRequest, now: Timestamp) -> Decision {
    let status = request.status.as_ref();
    let answered = status.and_then(|s| s.phase) == Some(DownloadRequestPhase::Processed);
    let expires = status
        .and_then(|s| s.expiration.as_ref())
        .map(|t| t.0)
        .or_else(|| {
            let created = request.metadata.creation_timestamp.as_ref()?.0;
            created
                .checked_add(SignedDuration::try_from(URL_TTL).ok()?)
                .ok()
        });
    match expires {
        Some(expires) if expires <= now => Decision::Remove,
        Some(expires) if answered => Decision::KeepFor(
            now.duration_until(expires)
                .try_into()
                .unwrap_or(Duration::ZERO),
        ),
        _ => Decision::Answer,
    }
}

async fn reconcile(
    object: Arc<Readable<DownloadRequest>>,
    ctx: Arc<Kube>,
) -> Result<Action, ReconcileError> {
    let api = objects::api::<DownloadRequest>(&ctx.client, &ctx.namespace);
    let name = object.name();
    let request = match &object.read {
        Ok(request) => request,
        Err(unfit) => {
            // Nothing can be answered to it; removed as an expired one would be.
            let note = format!("download request {name} cannot be read and is removed: {unfit}");
            ctx.events
                .warn(
                    object
                        .stored
                        .object_ref(&objects::resource::<DownloadRequest>()),
                    None,
                    "Unreadable",
                    "Answer",
                    note,
                )
                .await;
            patch::ignore_not_found(api.delete(&name, &DeleteParams::background()).await)?;
            return Ok(Action::await_change());
        }
    };
    match decide(request, Timestamp::now()) {
        Decision::Remove => {
            patch::ignore_not_found(api.delete(&name, &DeleteParams::background()).await)?;
            Ok(Action::await_change())
        }
        Decision::KeepFor(left) => Ok(Action::requeue(left)),
        Decision::Answer => match signed_url(&ctx, request).await {
            Ok(Some(url)) => {
                let status = DownloadRequestStatus {
                    phase: Some(DownloadRequestPhase::Processed),
                    download_url: Some(url),
                    expiration: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        Timestamp::now() + URL_TTL,
                    )),
                };
                patch::object_status(&api, &name, &status).await?;
                Ok(Action::requeue(URL_TTL))
            }
            Ok(None) => Ok(Action::requeue(URL_TTL)),
            Err(reason) => {
                tracing::warn!("download request {name}: {reason}; trying again");
                Ok(Action::requeue(RETRY))
            }
        },
    }
}

/// The signed URL of the file the request names; None when its location cannot sign URLs.
async fn signed_url(ctx: &Kube, request: &DownloadRequest) -> Result<Option<String>, String> {
    let target = &request.spec.target;
    let backup_name = if Layout::is_restore_target(&target.kind) {
        objects::get::<Restore>(&ctx.client, &ctx.namespace, &target.name)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("restore {:?} not found", target.name))?
            .map_err(|e| format!("restore {:?} cannot be read: {e}", target.name))?
            .spec
            .backup_name
    } else {
        target.name.clone()
    };
    let backup = objects::get::<Backup>(&ctx.client, &ctx.namespace, &backup_name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("backup {backup_name:?} not found"))?
        .map_err(|e| format!("backup {backup_name:?} cannot be read: {e}"))?;
    let location = backup.spec.storage_location.unwrap_or_default();
    let open = locations::open_named(&ctx.client, &ctx.namespace, &location)
        .await
        .map_err(|e| e.to_string())?;
    let key = open
        .store
        .layout
        .download_target(&target.kind, &target.name)
        .ok_or_else(|| format!("unsupported download target kind {:?}", target.kind))?;
    let url = open
        .store
        .signed_url(&key, URL_TTL)
        .await
        .map_err(|e| e.to_string())?;
    if url.is_none() {
        tracing::warn!(
            "download request {}: location {location:?} is a local directory, which cannot hand \
             out URLs; Velero's CLI cannot read this backup's files",
            request.name_any()
        );
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(created: &str, status: Option<(&str, &str)>) -> DownloadRequest {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "DownloadRequest",
            "metadata": { "name": "b-1", "creationTimestamp": created },
            "spec": { "target": { "kind": "BackupLog", "name": "b" } },
            "status": status.map(|(phase, expiration)| serde_json::json!({
                "phase": phase, "downloadURL": "http://x", "expiration": expiration,
            })),
        }))
        .unwrap()
    }

    #[test]
    fn requests_are_answered_kept_while_valid_and_removed_once_expired() {
        let now: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
        assert_eq!(
            decide(&request("2026-11-30T11:59:00Z", None), now),
            Decision::Answer
        );
        // Never answered (no backup, no bucket): gone ten minutes after it was made.
        assert_eq!(
            decide(&request("2026-11-30T11:49:00Z", None), now),
            Decision::Remove
        );
        let answered = request(
            "2026-11-30T11:59:00Z",
            Some(("Processed", "2026-11-30T12:09:00Z")),
        );
        assert_eq!(
            decide(&answered, now),
            Decision::KeepFor(Duration::from_secs(540))
        );
        let expired = request(
            "2026-11-30T11:49:00Z",
            Some(("Processed", "2026-11-30T11:59:00Z")),
        );
        assert_eq!(decide(&expired, now), Decision::Remove);
    }
}
