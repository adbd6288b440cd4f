//! Checks each BackupStorageLocation every `--store-validation-frequency` (and when it is created
//! or its spec changes) and writes Available/Unavailable with the reason.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{BackupStorageLocation, BackupStorageLocationPhase, BackupStorageLocationStatus};
use kube::ResourceExt;
use kube::api::DynamicObject;

use crate::Context;
use crate::shared::{locations, objects, patch, periodic};

pub async fn run(ctx: Arc<Context>) {
    periodic::run::<BackupStorageLocation, _, _>(ctx, validate).await;
}

async fn validate(object: Arc<DynamicObject>, ctx: Arc<Context>) -> Duration {
    let name = object.name_any();
    let checked = match objects::typed(object.as_ref()) {
        Ok(location) => locations::check(&ctx.client, location).await,
        Err(unfit) => Err(format!(
            "backup storage location {name:?} cannot be read: {unfit}"
        )),
    };
    let (phase, message) = match checked {
        Ok(()) => (BackupStorageLocationPhase::Available, String::new()),
        Err(reason) => (BackupStorageLocationPhase::Unavailable, reason),
    };
    let status = BackupStorageLocationStatus {
        phase: Some(phase),
        message: Some(message),
        last_validation_time: Some(patch::now()),
        ..Default::default()
    };
    let api = objects::api::<BackupStorageLocation>(&ctx.client, &ctx.namespace);
    if let Err(error) = patch::object_status(&api, &name, &status).await {
        tracing::warn!("updating backup storage location {name}: {error}");
    }
    ctx.validation_period
}
