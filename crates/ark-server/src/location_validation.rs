//! Checks each BackupStorageLocation periodically and writes Available/Unavailable with the reason.

use std::sync::Arc;

use ark_api::BackupStorageLocation;
use kube::ResourceExt;
use serde_json::json;

use crate::{Context, locations, objects, patch};

pub async fn run(ctx: Arc<Context>) {
    let api = objects::api::<BackupStorageLocation>(&ctx.client, &ctx.namespace);
    loop {
        match api.list(&Default::default()).await {
            Ok(list) => {
                for object in list.items {
                    let name = object.name_any();
                    let checked = match objects::typed(&object) {
                        Ok(location) => check(&ctx, location).await,
                        Err(unfit) => Err(format!(
                            "backup storage location {name:?} cannot be read: {unfit}"
                        )),
                    };
                    let status = match checked {
                        Ok(()) => json!({ "phase": "Available", "message": null }),
                        Err(reason) => json!({ "phase": "Unavailable", "message": reason }),
                    };
                    let mut status = status;
                    status["lastValidationTime"] = json!(patch::now());
                    if let Err(error) = patch::object_status(&api, &name, status).await {
                        tracing::warn!("updating backup storage location {name}: {error}");
                    }
                }
            }
            Err(error) => tracing::warn!("listing backup storage locations: {error}"),
        }
        tokio::time::sleep(ctx.validation_period).await;
    }
}

async fn check(ctx: &Context, location: BackupStorageLocation) -> Result<(), String> {
    let open = locations::open(&ctx.client, location)
        .await
        .map_err(|e| e.to_string())?;
    open.store
        .validate()
        .await
        .map_err(|e| format!("backup storage location {:?}: {e}", open.name()))
}
