//! A bound claim's volume goes with it (Velero's PV backup action): a restore into a fresh cluster
//! binds the pair again.

use futures::future::BoxFuture;
use kube::Client;
use kube::api::DynamicObject;

use super::{BackupItemAction, Executed, ItemRef};

pub struct PersistentVolumeClaimAction;

impl BackupItemAction for PersistentVolumeClaimAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "persistentvolumeclaims"
    }

    fn adds(&self) -> &'static [&'static str] {
        &["persistentvolumes"]
    }

    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        _: &'a Client,
    ) -> BoxFuture<'a, Result<Executed, String>> {
        let volume = item
            .data
            .pointer("/spec/volumeName")
            .and_then(|v| v.as_str())
            .filter(|name| !name.is_empty());
        let related = volume
            .map(|name| ItemRef {
                group_resource: "persistentvolumes".into(),
                namespace: None,
                name: name.to_string(),
            })
            .into_iter()
            .collect();
        Box::pin(async move { Ok(Executed::adding(related)) })
    }
}
