//! ark does not run Schedules yet: each one is marked FailedValidation, saying so, so that nobody
//! believes backups are being made from it (Velero's server, and a later ark, validate it again).

use std::sync::Arc;

use ark_api::{Schedule, SchedulePhase, ScheduleStatus};
use kube::runtime::controller::Action;
use serde_json::json;

use crate::shared::context::Kube;
use crate::shared::controller::{self, ReconcileError};
use crate::shared::objects::{self, Readable};
use crate::shared::patch;

pub const NOT_RUN: &str = "ark does not run schedules yet: no backup is made from this schedule \
                           (make backups with ark backup create, or run Velero's server instead)";

pub async fn run(ctx: Arc<Kube>) {
    controller::run::<Schedule, _, _, _>(ctx, "schedule", 0, reconcile).await;
}

async fn reconcile(
    object: Arc<Readable<Schedule>>,
    ctx: Arc<Kube>,
) -> Result<Action, ReconcileError> {
    let marked = object.read.as_ref().is_ok_and(|schedule| {
        schedule.phase() == SchedulePhase::FailedValidation
            && schedule
                .status
                .as_ref()
                .and_then(|s| s.validation_errors.as_ref())
                .is_some_and(|errors| errors.iter().any(|e| e == NOT_RUN))
    });
    if !marked {
        let api = objects::api::<Schedule>(&ctx.client, &ctx.namespace);
        let status = ScheduleStatus {
            phase: Some(SchedulePhase::FailedValidation),
            validation_errors: Some(vec![NOT_RUN.to_string()]),
            ..Default::default()
        };
        let claim = patch::claim(
            &api,
            &object.name(),
            object.stored.metadata.resource_version.as_deref(),
            json!({ "status": status }),
        )
        .await;
        // Lost: changed meanwhile, and decided again on the change.
        patch::ignore_not_found(claim)?;
        tracing::warn!("schedule {}: {NOT_RUN}", object.name());
    }
    Ok(Action::await_change())
}
