//! Writes to ark's objects. Velero's CRDs serve no status subresource for any of the four kinds
//! (Backup and Restore have none at all; BackupStorageLocation and DeleteBackupRequest declare an
//! empty `subresources: {}`), so status is part of the object and written through the object
//! itself: a write to `/status` would be a 404 on Velero's CRDs. Writes go through untyped APIs
//! (see `objects`), so that writing to an object ark's types cannot read still works.
//!
//! A write that claims work, or ends it, is conditional: claiming (New to InProgress, to
//! Deleting) names the resourceVersion it decided on, ending names the phase it expects, so two
//! servers (an old leader paused past its lease and the new one) never both act on one object.

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

/// Merge-patches `status` (a typed status: the fields it sets) of an object, through the object
/// (see above).
pub async fn object_status<S: Serialize>(
    api: &Api<DynamicObject>,
    name: &str,
    status: &S,
) -> kube::Result<()> {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .map(|_| ())
}

/// What a conditional write came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Claim {
    Won,
    /// The object changed since it was read (or left the expected phase): someone else acts on it.
    Lost,
}

fn claim_outcome(result: kube::Result<DynamicObject>) -> kube::Result<Claim> {
    match result {
        Ok(_) => Ok(Claim::Won),
        // 409: another resourceVersion; 422: a JSON patch `test` that failed.
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 422 => {
            Ok(Claim::Lost)
        }
        Err(error) => Err(error),
    }
}

/// Merge-patches `body` (metadata, spec, status) only if the object is still at
/// `resource_version`.
pub async fn claim(
    api: &Api<DynamicObject>,
    name: &str,
    resource_version: Option<&str>,
    mut body: Value,
) -> kube::Result<Claim> {
    body["metadata"]["resourceVersion"] = json!(resource_version);
    claim_outcome(
        api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
            .await,
    )
}

/// Writes the fields `status` sets only while `status.phase` is `phase`: one JSON patch whose
/// first operation tests the phase, so the check and the write are one step on the API server.
pub async fn status_in_phase<P: Serialize, S: Serialize>(
    api: &Api<DynamicObject>,
    name: &str,
    phase: P,
    status: &S,
) -> kube::Result<Claim> {
    let phase = serde_json::to_value(phase).map_err(kube::Error::SerdeError)?;
    let status = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    let operations = phase_tested_operations(&phase, &status);
    let patch: json_patch::Patch =
        serde_json::from_value(operations).map_err(kube::Error::SerdeError)?;
    claim_outcome(
        api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
            .await,
    )
}

fn phase_tested_operations(phase: &Value, status: &Value) -> Value {
    let mut operations = vec![json!({ "op": "test", "path": "/status/phase", "value": phase })];
    for (key, value) in status.as_object().into_iter().flatten() {
        let path = format!("/status/{}", key.replace('~', "~0").replace('/', "~1"));
        operations.push(if value.is_null() {
            // `remove` of a missing member fails the whole patch; `add` of null clears it.
            json!({ "op": "add", "path": path, "value": null })
        } else {
            json!({ "op": "add", "path": path, "value": value })
        });
    }
    Value::Array(operations)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ending_write_tests_the_phase_first() {
        let ops = phase_tested_operations(
            &json!("InProgress"),
            &json!({ "phase": "Completed", "errors": 0, "a/b": null }),
        );
        assert_eq!(
            ops,
            json!([
                { "op": "test", "path": "/status/phase", "value": "InProgress" },
                { "op": "add", "path": "/status/a~1b", "value": null },
                { "op": "add", "path": "/status/errors", "value": 0 },
                { "op": "add", "path": "/status/phase", "value": "Completed" },
            ])
        );
    }
}
