//! Status writes. Velero's CRDs serve no status subresource for any of the four kinds (Backup and
//! Restore have none at all; BackupStorageLocation and DeleteBackupRequest declare an empty
//! `subresources: {}`), so status is part of the object and written through the object itself:
//! a write to `/status` would be a 404 on Velero's CRDs.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// Merge-patches `status` of an object, through the object (see above).
pub async fn object_status<K>(
    api: &Api<K>,
    name: &str,
    status: serde_json::Value,
) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": status })),
    )
    .await
}

/// Now, as the API writes times.
pub fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

/// A delete whose object is gone already has done its job.
pub fn ignore_not_found<T>(result: kube::Result<T>) -> kube::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}
