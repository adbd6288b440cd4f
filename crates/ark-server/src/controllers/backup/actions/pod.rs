//! A pod's claims go with it (Velero's pod backup action), even those its backup's label selector
//! does not select: the pod cannot start without them.

use futures::future::BoxFuture;
use kube::Client;
use kube::api::DynamicObject;

use super::{BackupItemAction, Executed, ItemRef};

pub struct PodAction;

impl BackupItemAction for PodAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "pods"
    }

    fn adds(&self) -> &'static [&'static str] {
        &["persistentvolumeclaims"]
    }

    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        _: &'a Client,
    ) -> BoxFuture<'a, Result<Executed, String>> {
        Box::pin(async move { Ok(Executed::adding(claims(item))) })
    }
}

fn claims(pod: &DynamicObject) -> Vec<ItemRef> {
    let volumes = pod.data.pointer("/spec/volumes").and_then(|v| v.as_array());
    volumes
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/persistentVolumeClaim/claimName")?.as_str())
        .filter(|name| !name.is_empty())
        .map(|name| ItemRef {
            group_resource: "persistentvolumeclaims".into(),
            namespace: pod.metadata.namespace.clone(),
            name: name.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_names_its_claims() {
        let pod: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "db", "namespace": "shop" },
            "spec": { "volumes": [
                { "name": "data", "persistentVolumeClaim": { "claimName": "db-data" } },
                { "name": "tmp", "emptyDir": {} },
            ] },
        }))
        .unwrap();
        assert_eq!(
            claims(&pod),
            [ItemRef {
                group_resource: "persistentvolumeclaims".into(),
                namespace: Some("shop".into()),
                name: "db-data".into()
            }]
        );
    }
}
