//! Checks each BackupStorageLocation every `validationFrequency` (its own, else the server's
//! `--store-validation-frequency`), and when it is created or its spec changes, and writes
//! Available/Unavailable with the reason. A location whose frequency is 0 is checked once, as
//! Velero checks it (`IsReadyToValidate`), and again only when its spec changes.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{BackupStorageLocation, BackupStorageLocationPhase, BackupStorageLocationStatus};

use crate::domain::locations;
use crate::runtime::context::Kube;
use crate::runtime::objects::{self, Readable};
use crate::runtime::{patch, periodic};

pub struct Ctx {
    pub kube: Kube,
    /// How often a location without its own frequency is checked (`--store-validation-frequency`).
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

async fn validate(object: Arc<Readable<BackupStorageLocation>>, ctx: Arc<Ctx>) -> Option<Duration> {
    let kube = &ctx.kube;
    let name = object.name();
    let every = match &object.read {
        Ok(location) => {
            let every =
                locations::own_period(location.spec.validation_frequency.as_deref(), ctx.period);
            let checked_before = location
                .status
                .as_ref()
                .is_some_and(|s| s.last_validation_time.is_some());
            if every.is_none() && checked_before {
                return None;
            }
            every
        }
        Err(_) => Some(ctx.period),
    };
    let checked = match &object.read {
        Ok(location) => locations::check(&kube.client, location.clone()).await,
        Err(unfit) => Err(format!(
            "backup storage location {name:?} cannot be read: {unfit}"
        )),
    };
    kube.metrics.location_checked(&name, checked.is_ok());
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
    every
}
