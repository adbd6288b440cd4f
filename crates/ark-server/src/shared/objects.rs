//! Reading ark's kinds as the API server stores them. Velero's CRDs keep embedded objects (init
//! containers, hooks, selectors) free-form, so the API server accepts objects that ark's types
//! cannot read: each is read on its own, and one that does not fit fails alone, with the field
//! and the reason, never a whole list, a watch or a controller.

use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// The kind's objects in `namespace`, untyped.
pub fn api<K: Resource<DynamicType = ()>>(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &resource::<K>())
}

pub fn resource<K: Resource<DynamicType = ()>>() -> ApiResource {
    ApiResource::erase::<K>(&())
}

pub use ark_api::read::{Unfit, typed};

/// `status.phase` as stored, whatever ark's types make of it; "" when there is none.
pub fn phase(object: &DynamicObject) -> &str {
    object
        .data
        .pointer("/status/phase")
        .and_then(|p| p.as_str())
        .unwrap_or_default()
}

/// One object by name, read as `K` on its own.
pub async fn get<K>(
    client: &Client,
    namespace: &str,
    name: &str,
) -> kube::Result<Option<Result<K, Unfit>>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    Ok(api::<K>(client, namespace)
        .get_opt(name)
        .await?
        .map(|object| typed(&object)))
}

/// Every object of the kind that fits ark's type; each one that does not is logged and left out.
pub async fn list<K>(client: &Client, namespace: &str, params: &ListParams) -> kube::Result<Vec<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let objects = api::<K>(client, namespace).list(params).await?;
    Ok(objects
        .items
        .iter()
        .filter_map(|object| match typed(object) {
            Ok(typed) => Some(typed),
            Err(unfit) => {
                tracing::warn!(
                    "{} {}/{} does not fit ark's type and is passed over: {unfit}",
                    K::kind(&()),
                    namespace,
                    object.name_any()
                );
                None
            }
        })
        .collect())
}

/// A Kubernetes error as a person reads it in a status or result: the API server's own message
/// for a refusal (`... is forbidden: User "..." cannot delete resource ...`), without the debug
/// dump of the whole Status that kube's `Display` appends.
pub fn reason(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_is_read_as_stored() {
        let object =
            |value: serde_json::Value| -> DynamicObject { serde_json::from_value(value).unwrap() };
        assert_eq!(
            phase(&object(serde_json::json!({ "metadata": { "name": "r" } }))),
            ""
        );
        let weird = object(
            serde_json::json!({ "metadata": { "name": "r" }, "status": { "phase": "Weird" } }),
        );
        assert_eq!(phase(&weird), "Weird");
    }
}
