//! Writes to ark's objects. Velero's CRDs serve no status subresource for any of the four kinds
//! (Backup and Restore have none at all; BackupStorageLocation and DeleteBackupRequest declare an
//! empty `subresources: {}`), so status is part of the object and written through the object
//! itself: a write to `/status` would be a 404 on Velero's CRDs. Writes go through untyped APIs
//! (see `objects`), so that writing to an object ark's types cannot read still works.
//!
//! A write that claims work, or ends it, is conditional: claiming (New to InProgress, to
//! Deleting) names the resourceVersion it decided on, ending names the phase it expects, so two
//! servers (an old leader paused past its lease and the new one) never both act on one object.

use ark_storage::backoff::Backoff;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
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
/// `resource_version`. A claim whose answer is lost (the connection broke after the API server
/// applied it) is found out from the object, never left half-known: a claim taken and then
/// dropped would leave the operation InProgress with nobody working on it.
pub async fn claim(
    api: &Api<DynamicObject>,
    name: &str,
    resource_version: Option<&str>,
    mut body: Value,
) -> kube::Result<Claim> {
    let mut backoff = Backoff::starting_at(std::time::Duration::from_millis(500));
    loop {
        body["metadata"]["resourceVersion"] = json!(resource_version);
        let error = match claim_outcome(
            api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
                .await,
        ) {
            Err(error @ kube::Error::Api(_)) => return Err(error),
            Err(error) => error,
            answered => return answered,
        };
        // No answer: read the object until the API server answers, then decide.
        let object = loop {
            tracing::warn!(
                "claiming {name}: {error}; reading it to find out whether the claim landed"
            );
            backoff.wait().await;
            match api.get_opt(name).await {
                Ok(object) => break object,
                Err(kube::Error::Api(status)) => return Err(kube::Error::Api(status)),
                Err(_) => continue,
            }
        };
        let object = object.map(|o| serde_json::to_value(o).unwrap_or_default());
        if let Some(metadata) = body["metadata"].as_object_mut() {
            metadata.remove("resourceVersion");
        }
        match after_unanswered_claim(object.as_ref(), resource_version, &body) {
            Some(claim) => return Ok(claim),
            None => continue,
        }
    }
}

/// What a claim that got no answer came to, from the object as it is now: `Won` when it holds
/// what the claim wrote (and moved past the version the claim named), `Lost` when it moved on
/// otherwise or is gone, None when it is still at that version (the claim never landed: try
/// again).
fn after_unanswered_claim(
    object: Option<&Value>,
    resource_version: Option<&str>,
    body: &Value,
) -> Option<Claim> {
    let Some(object) = object else {
        return Some(Claim::Lost);
    };
    let now = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    if resource_version.is_some() && now == resource_version {
        return None;
    }
    Some(if holds(object, body) {
        Claim::Won
    } else {
        Claim::Lost
    })
}

/// Whether `object` is what merge-patching `patch` into it leaves unchanged: JSON merge-patch
/// rules, so a null asks for the field's absence and an array must be equal as a whole. (The
/// restore's `transform::contains` differs on purpose: it reads a live object against a backed-up
/// one, and the API server's defaults inside array elements are no difference there.)
fn holds(object: &Value, patch: &Value) -> bool {
    match patch {
        Value::Object(fields) => fields
            .iter()
            .all(|(key, value)| match (object.get(key), value) {
                (None | Some(Value::Null), Value::Null) => true,
                // An absent map holds a patch that only removes (a label taken off, the last).
                (None, value @ Value::Object(_)) => holds(&json!({}), value),
                (Some(found), value) if !value.is_null() => holds(found, value),
                _ => false,
            }),
        other => object == other,
    }
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

/// [`status_in_phase`] for a final status, on which the outcome of a whole piece of work hangs:
/// tried again until it lands (the API server may be gone a while), or the object has gone
/// (`Lost`) or left `phase`. `what` names the object in the log.
pub async fn final_status_in_phase<P: Serialize + Copy, S: Serialize>(
    api: &Api<DynamicObject>,
    what: &str,
    name: &str,
    phase: P,
    status: &S,
) -> Claim {
    let mut backoff = Backoff::starting_at(std::time::Duration::from_secs(1));
    loop {
        match status_in_phase(api, name, phase, status).await {
            Ok(claim) => return claim,
            Err(kube::Error::Api(gone)) if gone.code == 404 => return Claim::Lost,
            Err(error) => {
                tracing::warn!(
                    "{what} {name}: writing its final status: {error}; trying again in {:?}",
                    backoff.pause()
                );
                backoff.wait().await;
            }
        }
    }
}

fn phase_tested_operations(phase: &Value, status: &Value) -> Value {
    let mut operations = vec![json!({ "op": "test", "path": "/status/phase", "value": phase })];
    for (key, value) in status.as_object().into_iter().flatten() {
        let path = format!("/status/{}", key.replace('~', "~0").replace('/', "~1"));
        // A null value is added too: `remove` of a missing member fails the whole patch, and
        // `add` of null clears it.
        operations.push(json!({ "op": "add", "path": path, "value": value }));
    }
    Value::Array(operations)
}

/// Whether the object of metadata `meta` holds `finalizer`.
pub fn holds_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    (meta.finalizers.iter().flatten()).any(|f| f == finalizer)
}

/// Sets the finalizers of the object of metadata `meta` (stored or summarized) to what `change`
/// makes of them, unless the object changed since it was read (its resourceVersion named: a
/// finalizer another writer added meanwhile is never dropped). `Lost` when it changed or is gone.
pub async fn set_finalizers(
    api: &Api<DynamicObject>,
    meta: &ObjectMeta,
    change: impl FnOnce(&mut Vec<String>),
) -> kube::Result<Claim> {
    let mut finalizers = meta.finalizers.clone().unwrap_or_default();
    change(&mut finalizers);
    let name = meta.name.as_deref().unwrap_or_default();
    let patch = json!({ "metadata": {
        "finalizers": finalizers, "resourceVersion": meta.resource_version,
    } });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Claim::Lost),
        result => claim_outcome(result),
    }
}

/// Removes `finalizer` from the object of metadata `meta`, the others kept (see
/// [`set_finalizers`]).
pub async fn release_finalizer(
    api: &Api<DynamicObject>,
    meta: &ObjectMeta,
    finalizer: &str,
) -> kube::Result<Claim> {
    set_finalizers(api, meta, |f| f.retain(|f| f != finalizer)).await
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
    fn a_claim_without_an_answer_is_decided_from_the_object() {
        let body = json!({ "metadata": { "labels": { "l": "v" } }, "status": { "phase": "InProgress", "startTimestamp": "2026-11-30T11:27:42Z", "errors": null } });
        let object = |rv: &str, phase: &str, start: &str| {
            json!({ "metadata": { "name": "b1", "resourceVersion": rv, "labels": { "l": "v", "other": "x" } },
                    "spec": {}, "status": { "phase": phase, "startTimestamp": start } })
        };
        let ours = object("8", "InProgress", "2026-11-30T11:27:42Z");
        assert_eq!(
            after_unanswered_claim(Some(&ours), Some("7"), &body),
            Some(Claim::Won)
        );
        let untouched = object("7", "New", "");
        assert_eq!(
            after_unanswered_claim(Some(&untouched), Some("7"), &body),
            None
        );
        let theirs = object("8", "InProgress", "2026-11-30T11:27:40Z");
        assert_eq!(
            after_unanswered_claim(Some(&theirs), Some("7"), &body),
            Some(Claim::Lost)
        );
        let failed = object("9", "Failed", "2026-11-30T11:27:42Z");
        assert_eq!(
            after_unanswered_claim(Some(&failed), Some("7"), &body),
            Some(Claim::Lost)
        );
        assert_eq!(
            after_unanswered_claim(None, Some("7"), &body),
            Some(Claim::Lost)
        );
        // A claim that took off an object's last label: the API server drops the empty map.
        let unlabel =
            json!({ "metadata": { "labels": { "l": null } }, "status": { "phase": "InProgress" } });
        let unlabelled = json!({ "metadata": { "name": "b1", "resourceVersion": "8" },
            "status": { "phase": "InProgress" } });
        assert_eq!(
            after_unanswered_claim(Some(&unlabelled), Some("7"), &unlabel),
            Some(Claim::Won)
        );
    }

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
