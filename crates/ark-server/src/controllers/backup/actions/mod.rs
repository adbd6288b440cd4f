//! Backup item actions: per-kind work on an item as the backup lists it, as Velero's
//! `pkg/backup/actions` do it. They name the items an item depends on (a pod's claims, a claim's
//! volume, a service account's cluster role bindings and roles, a claim's VolumeSnapshot and its
//! content and class), so that a backup of a namespace holds what its items need in a fresh
//! cluster; the engine backs those up too, unless the backup's filters leave them out (see
//! `engine::Related::back_up`). An action may also change the item as it is written (a claim
//! names its snapshot).

mod persistent_volume_claim;
mod pod;
mod service_account;
mod volume_snapshot;

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use kube::Client;
use kube::api::DynamicObject;

use super::volume_snapshots::ClaimSnapshots;

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

/// What an action did with an item.
#[derive(Default)]
pub struct Executed {
    /// The items to back up with it.
    pub additional: Vec<ItemRef>,
    /// The item as it is to be written, when the action changed it.
    pub updated: Option<DynamicObject>,
}

impl Executed {
    pub fn adding(additional: Vec<ItemRef>) -> Self {
        Executed {
            additional,
            updated: None,
        }
    }
}

pub trait BackupItemAction: Send + Sync {
    fn applies_to(&self, group_resource: &str) -> bool;
    /// The group-resources of the items it may add.
    fn adds(&self) -> &'static [&'static str];
    /// What to do with `item`; the error, recorded in the backup's results, when it cannot be
    /// found out.
    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        client: &'a Client,
    ) -> BoxFuture<'a, Result<Executed, String>>;
    /// Whether a listed item is one the action made for this backup, written by the action
    /// rather than as listed.
    fn made_here(&self, _group_resource: &str, _item: &DynamicObject) -> bool {
        false
    }
}

/// The actions of one backup (an action may keep what it read for the backup's other items).
pub struct Actions(Vec<Box<dyn BackupItemAction>>);

impl Actions {
    pub fn for_backup(snapshots: ClaimSnapshots) -> Self {
        Actions(vec![
            Box::new(pod::PodAction),
            Box::new(persistent_volume_claim::PersistentVolumeClaimAction),
            Box::new(service_account::ServiceAccountAction::default()),
            // After the claim's volume is named: the claim item it updates keeps that.
            Box::new(volume_snapshot::VolumeSnapshotAction(snapshots)),
        ])
    }

    /// The group-resources any action may add.
    pub fn adds(&self) -> BTreeSet<&'static str> {
        self.0.iter().flat_map(|a| a.adds()).copied().collect()
    }

    pub fn applies_to(&self, group_resource: &str) -> bool {
        self.0.iter().any(|a| a.applies_to(group_resource))
    }

    /// Runs the actions on `item`, which each may change: the items to back up with it, and the
    /// errors of the actions that failed.
    pub async fn run(
        &self,
        group_resource: &str,
        item: &mut DynamicObject,
        client: &Client,
    ) -> (Vec<ItemRef>, Vec<String>) {
        let (mut related, mut errors) = (Vec::new(), Vec::new());
        for action in self.0.iter().filter(|a| a.applies_to(group_resource)) {
            match action.execute(item, client).await {
                Ok(executed) => {
                    related.extend(executed.additional);
                    if let Some(updated) = executed.updated {
                        *item = updated;
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        (related, errors)
    }

    pub fn made_here(&self, group_resource: &str, item: &DynamicObject) -> bool {
        self.0.iter().any(|a| a.made_here(group_resource, item))
    }
}
