//! Answers ServerStatusRequests (what `velero version` and `ark version` ask) with ark's version,
//! and removes each a minute after it was answered, as Velero's server does, so none piles up.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{
    ARK_SERVER_VERSION_PREFIX, ServerStatusRequest, ServerStatusRequestPhase,
    ServerStatusRequestStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::DeleteParams;
use kube::runtime::controller::Action;

use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Readable};
use crate::runtime::patch;

/// How long an answered request is kept (Velero's `ttl` for them).
const ANSWERED_TTL: Duration = Duration::from_secs(60);

pub async fn run(ctx: Arc<Kube>) {
    controller::run::<ServerStatusRequest, _, _, _>(ctx, "server status request", 0, reconcile)
        .await;
}

#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Answer,
    KeepFor(Duration),
    Remove,
}

fn decide(request: &ServerStatusRequest, now: Timestamp) -> Decision {
    let status = request.status.as_ref();
    let answered = status
        .filter(|s| s.phase == Some(ServerStatusRequestPhase::Processed))
        .and_then(|s| s.processed_timestamp.as_ref());
    let Some(answered) = answered else {
        return Decision::Answer;
    };
    let expires = answered.0 + SignedDuration::try_from(ANSWERED_TTL).unwrap_or_default();
    match now.duration_until(expires).try_into() {
        Ok(left) if left > Duration::ZERO => Decision::KeepFor(left),
        _ => Decision::Remove,
    }
}

async fn reconcile(
    object: Arc<Readable<ServerStatusRequest>>,
    ctx: Arc<Kube>,
) -> Result<Action, ReconcileError> {
    let api = objects::api::<ServerStatusRequest>(&ctx.client, &ctx.namespace);
    let name = object.name();
    // A request of a shape ark cannot read is answered all the same: the question has no content.
    let decision = object.read.as_ref().map_or(Decision::Answer, |request| {
        decide(request, Timestamp::now())
    });
    match decision {
        Decision::Answer => {
            let status = ServerStatusRequestStatus {
                phase: Some(ServerStatusRequestPhase::Processed),
                processed_timestamp: Some(Time(Timestamp::now())),
                server_version: Some(format!(
                    "{ARK_SERVER_VERSION_PREFIX}{}",
                    env!("CARGO_PKG_VERSION")
                )),
            };
            patch::ignore_not_found(patch::object_status(&api, &name, &status).await)?;
            Ok(Action::requeue(ANSWERED_TTL))
        }
        Decision::KeepFor(left) => Ok(Action::requeue(left)),
        Decision::Remove => {
            patch::ignore_not_found(api.delete(&name, &DeleteParams::background()).await)?;
            Ok(Action::await_change())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(status: serde_json::Value) -> ServerStatusRequest {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "ServerStatusRequest",
            "metadata": { "name": "r" }, "spec": {}, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_request_is_answered_once_and_removed_a_minute_later() {
        let now: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
        assert_eq!(
            decide(&request(serde_json::json!(null)), now),
            Decision::Answer
        );
        assert_eq!(
            decide(&request(serde_json::json!({ "phase": "New" })), now),
            Decision::Answer
        );
        let answered = |at: &str| {
            request(serde_json::json!({ "phase": "Processed", "processedTimestamp": at }))
        };
        assert_eq!(
            decide(&answered("2026-11-30T11:59:20Z"), now),
            Decision::KeepFor(Duration::from_secs(20))
        );
        assert_eq!(
            decide(&answered("2026-11-30T11:59:00Z"), now),
            Decision::Remove
        );
        assert_eq!(
            decide(&answered("2026-11-30T11:00:00Z"), now),
            Decision::Remove
        );
    }
}
