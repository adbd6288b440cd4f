//! Checks each BackupStorageLocation every `--store-validation-frequency` (and when it is created
//! or its spec changes) and writes Available/Unavailable with the reason.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{BackupStorageLocation, BackupStorageLocationPhase, BackupStorageLocationStatus};

use crate::domain::locations;
use crate::runtime::context::Kube;
use crate::runtime::objects::{self, Readable};
use crate::runtime::{patch, periodic};

pub struct Ctx {
    pub kube: Kube,
    /// How often each location is checked (`--store-validation-frequency`).
    pub period: Duration,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    periodic::run::<BackupStorageLocation, _, _, _>(ctx, validate).await;
}

async fn validate(object: Arc<Readable<BackupStorageLocation>>, ctx: Arc<Ctx>) -> Duration {
    let kube = &ctx.kube;
    let name = object.name();
    let checked = match &object.read {
        Ok(location) => locations::check(&kube.client, location.clone()).await,
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
    let api = objects::api::<BackupStorageLocation>(&kube.client, &kube.namespace);
    if let Err(error) = patch::object_status(&api, &name, &status).await {
        tracing::warn!("updating backup storage location {name}: {error}");
    }
    ctx.period
}
