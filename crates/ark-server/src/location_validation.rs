//! Checks each BackupStorageLocation periodically and writes Available/Unavailable with the reason.

use std::sync::Arc;

use ark_api::BackupStorageLocation;
use kube::Api;
use serde_json::json;

use crate::{Context, locations, patch};

pub async fn run(ctx: Arc<Context>) {
    let api: Api<BackupStorageLocation> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    loop {
        match api.list(&Default::default()).await {
            Ok(list) => {
                for location in list.items {
                    let name = location.metadata.name.clone().unwrap_or_default();
                    let status = match check(&ctx, location).await {
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
