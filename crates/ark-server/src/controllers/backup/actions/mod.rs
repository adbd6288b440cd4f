//! Backup item actions: per-kind work on an item as the backup lists it, as Velero's
//! `pkg/backup/actions` do it. Today's actions name the items an item depends on (a pod's claims,
//! a claim's volume, a service account's cluster role bindings and roles), so that a backup of a
//! namespace holds what its items need in a fresh cluster; the engine backs those up too, unless
//! the backup's filters leave them out (see `engine::related_item_is_wanted`).

mod persistent_volume_claim;
mod pod;
mod service_account;

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use kube::Client;
use kube::api::DynamicObject;

/// An item of the cluster, named by group-resource, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ItemRef {
    pub group_resource: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ItemRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.group_resource, self.name),
            None => write!(f, "{} {}", self.group_resource, self.name),
        }
    }
}

pub trait BackupItemAction: Send + Sync {
    fn applies_to(&self, group_resource: &str) -> bool;
    /// The group-resources of the items it may add.
    fn adds(&self) -> &'static [&'static str];
    /// The items to back up with `item`; the error, recorded in the backup's results, when they
    /// cannot be found out.
    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        client: &'a Client,
    ) -> BoxFuture<'a, Result<Vec<ItemRef>, String>>;
}

/// The actions of one backup (an action may keep what it read for the backup's other items).
pub struct Actions(Vec<Box<dyn BackupItemAction>>);

impl Actions {
    pub fn built_in() -> Self {
        Actions(vec![
            Box::new(pod::PodAction),
            Box::new(persistent_volume_claim::PersistentVolumeClaimAction),
            Box::new(service_account::ServiceAccountAction::default()),
        ])
    }

    /// The group-resources any action may add.
    pub fn adds(&self) -> BTreeSet<&'static str> {
        self.0.iter().flat_map(|a| a.adds()).copied().collect()
    }

    pub fn applies_to(&self, group_resource: &str) -> bool {
        self.0.iter().any(|a| a.applies_to(group_resource))
    }

    /// The items to back up with `item`, and the errors of the actions that failed.
    pub async fn run(
        &self,
        group_resource: &str,
        item: &DynamicObject,
        client: &Client,
    ) -> (Vec<ItemRef>, Vec<String>) {
        let (mut related, mut errors) = (Vec::new(), Vec::new());
        for action in self.0.iter().filter(|a| a.applies_to(group_resource)) {
            match action.execute(item, client).await {
                Ok(found) => related.extend(found),
                Err(error) => errors.push(error),
            }
        }
        (related, errors)
    }
}
