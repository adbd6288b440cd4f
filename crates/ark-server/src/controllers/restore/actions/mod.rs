//! Restore item actions: the per-kind and per-item work done on an item between its read from the
//! backup and its create, as Velero's `pkg/restore/actions` do it. The engine strips what the old
//! cluster owned and maps the namespace first; each action that applies to the item's
//! group-resource then runs, in [`Actions::built_in`]'s order; ark's restore labels come last.
//!
//! Items are edited as JSON rather than as k8s-openapi types: a typed round trip would drop every
//! field the types do not know (a newer API server's, or a custom resource's).

mod init_hooks;
mod job;
mod persistent_volume;
mod persistent_volume_claim;
mod pod;
mod pod_volumes;
mod resource_modifiers;
mod role_binding;
mod service;
mod volume_snapshot;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::hooks::PodHooks;
pub use resource_modifiers::ResourceModifiers;
pub use volume_snapshot::is_backed_up_snapshot;

/// What every action of one restore may read.
pub struct RestoreCx<'a> {
    pub spec: &'a ark_api::RestoreSpec,
    pub namespace_mapping: &'a BTreeMap<String, String>,
    /// The PersistentVolumes of the backup that this restore creates again: a claim bound to one
    /// of them keeps its `volumeName`, so the pair binds again; a claim bound to any other volume
    /// is provisioned anew.
    pub restored_volumes: &'a BTreeSet<String>,
    /// The restore's resource modifiers, read from their ConfigMap by validation.
    pub resource_modifiers: Option<&'a ResourceModifiers>,
    /// The pod volume data the backup holds, and how restored pods wait for it.
    pub volume_data: Option<&'a super::pod_volumes::VolumeData<'a>>,
    /// The restore's uid, in the names of the snapshots it creates again.
    pub restore_uid: &'a str,
    /// The cluster's VolumeSnapshotClasses: name and driver.
    pub snapshot_classes: &'a [(String, String)],
    /// The claims (namespace and name, as backed up) whose snapshot's data a data mover moved,
    /// each with its DataUpload as the backup holds it.
    pub moved_claims: &'a BTreeMap<(String, String), ark_api::DataUpload>,
}

impl RestoreCx<'_> {
    pub fn target_namespace<'n>(&'n self, namespace: &'n str) -> &'n str {
        self.namespace_mapping
            .get(namespace)
            .map_or(namespace, String::as_str)
    }

    /// The DataUpload that moved the data of `claim` (an item of the backup), if a data mover did.
    pub fn moved_by(&self, claim: &Value, cx: &ItemCx<'_>) -> Option<&ark_api::DataUpload> {
        let name = claim.pointer("/metadata/name").and_then(Value::as_str);
        let backed_up = (
            cx.source_namespace.unwrap_or_default().to_string(),
            name.unwrap_or_default().to_string(),
        );
        self.moved_claims.get(&backed_up)
    }
}

/// The item an action works on.
pub struct ItemCx<'a> {
    pub group_resource: &'a str,
    /// Its namespace in the backup (the item itself already names the mapped one).
    pub source_namespace: Option<&'a str>,
    /// Its status as backed up (the item itself has none: the new cluster writes its own).
    pub backed_up_status: Option<&'a Value>,
}

/// What the actions found beside the edited item.
#[derive(Default)]
pub struct Output {
    /// A restored pod's hooks: its init containers are in the item already, its exec hooks run
    /// once everything is restored.
    pub pod_hooks: PodHooks,
    /// Errors that leave the item restorable (Velero restores an item whose modifier failed, and
    /// records the error).
    pub errors: Vec<String>,
    /// What the restore's results should warn of about the item.
    pub warnings: Vec<String>,
    /// A restored pod's volumes whose data the node agent writes back: the backup's
    /// PodVolumeBackups of them.
    pub volume_data: Vec<ark_api::PodVolumeBackup>,
    /// Where a restored claim's volume comes from, when not from the cluster's provisioner alone.
    pub claim_volume: Option<ClaimVolume>,
}

/// Where a restored claim's volume comes from.
#[derive(Debug)]
pub enum ClaimVolume {
    /// Provisioned from this CSI VolumeSnapshot, which the restore watches until the driver has
    /// it ready.
    FromSnapshot(String),
    /// Written by a DataDownload from the data this DataUpload moved, then bound to the claim.
    MovedData(Box<ark_api::DataUpload>),
}

/// What the actions may read when the restore plans its items, before anything is created.
pub struct PlanCx<'a> {
    /// The restore's `restorePVs` (Velero's default: true).
    pub restore_pvs: bool,
    /// Claims the backup holds a CSI snapshot of (namespace, name, as backed up): provisioned
    /// anew from it.
    pub claims_from_snapshots: &'a BTreeSet<(String, String)>,
    /// Claims whose data the node agent writes back (Velero's `hasPodVolumeBackup`): provisioned
    /// anew.
    pub claims_with_data: &'a BTreeSet<(String, String)>,
    /// Claims whose data a data mover moved (namespace and name, as backed up): they get a new
    /// volume with that data.
    pub claims_moved: &'a BTreeMap<(String, String), ark_api::DataUpload>,
}

/// Why an action leaves an item out of the restore (Velero's `SkipRestore`), for the log.
pub struct Skip(pub String);

pub trait RestoreItemAction: Send + Sync {
    fn applies_to(&self, group_resource: &str) -> bool;
    /// Whether this action may leave items of `group_resource` out: only then are they read at
    /// plan time and offered to [`skip`](Self::skip).
    fn skips(&self, _group_resource: &str) -> bool {
        false
    }
    /// Why `item` (as backed up, of `group_resource`) is not restored, if it is not.
    fn skip(&self, _group_resource: &str, _item: &Value, _plan: &PlanCx<'_>) -> Option<Skip> {
        None
    }
    /// Edits `item`, always a JSON object.
    fn execute(&self, item: &mut Value, restore: &RestoreCx<'_>, cx: &ItemCx<'_>, out: &mut Output);
}

/// The actions of a restore, in the order they run.
pub struct Actions(Vec<Box<dyn RestoreItemAction>>);

impl Actions {
    /// ark's own actions. Resource modifiers run last, as in Velero, so that users' rules see
    /// (and may override) what the others did.
    pub fn built_in() -> Self {
        Actions(vec![
            Box::new(pod::PodAction),
            Box::new(init_hooks::InitHooksAction),
            // After the hooks' init containers are set: `restore-wait` goes before them.
            Box::new(pod_volumes::PodVolumesAction),
            Box::new(service::ServiceAction),
            Box::new(persistent_volume::PersistentVolumeAction),
            Box::new(persistent_volume_claim::PersistentVolumeClaimAction),
            Box::new(volume_snapshot::VolumeSnapshotAction),
            Box::new(role_binding::RoleBindingAction),
            Box::new(job::JobAction),
            Box::new(resource_modifiers::ResourceModifierAction),
        ])
    }

    /// Whether any action may leave items of `group_resource` out.
    pub fn skip_some(&self, group_resource: &str) -> bool {
        self.0.iter().any(|a| a.skips(group_resource))
    }

    /// The first action's reason to leave `item` out, if one has.
    pub fn skip(&self, group_resource: &str, item: &Value, plan: &PlanCx<'_>) -> Option<Skip> {
        self.0
            .iter()
            .filter(|a| a.skips(group_resource))
            .find_map(|a| a.skip(group_resource, item, plan))
    }

    pub fn run(&self, item: &mut Value, restore: &RestoreCx<'_>, cx: &ItemCx<'_>) -> Output {
        let mut out = Output::default();
        for action in self.0.iter().filter(|a| a.applies_to(cx.group_resource)) {
            action.execute(item, restore, cx, &mut out);
        }
        out
    }
}

fn remove_annotations(object: &mut Value, names: &[&str]) {
    if let Some(annotations) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        for name in names {
            annotations.remove(*name);
        }
    }
}

fn spec_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object.get_mut("spec").and_then(Value::as_object_mut)
}

/// Annotations the PV controller writes when it binds a claim and a volume: a restored pair
/// without them is bound again by the controller, as Velero restores it.
const BIND_ANNOTATIONS: &[&str] = &[
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
];

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    pub const RESTORE_UID: &str = "restore-uid-1";

    pub fn spec() -> &'static ark_api::RestoreSpec {
        Box::leak(Box::default())
    }

    /// Runs the built-in actions on `item` of `group_resource`, with `mapping` and `restored`.
    pub fn run(
        group_resource: &str,
        item: Value,
        mapping: &[(&str, &str)],
        restored: &[&str],
        spec: &ark_api::RestoreSpec,
    ) -> (Value, Output) {
        run_moved(
            group_resource,
            item,
            mapping,
            restored,
            spec,
            &BTreeMap::new(),
        )
    }

    /// [`run`], with claims whose data a data mover moved.
    pub fn run_moved(
        group_resource: &str,
        item: Value,
        mapping: &[(&str, &str)],
        restored: &[&str],
        spec: &ark_api::RestoreSpec,
        moved: &BTreeMap<(String, String), ark_api::DataUpload>,
    ) -> (Value, Output) {
        let mapping: BTreeMap<String, String> = mapping
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let restored: BTreeSet<String> = restored.iter().map(|s| s.to_string()).collect();
        let restore = RestoreCx {
            spec,
            namespace_mapping: &mapping,
            restored_volumes: &restored,
            resource_modifiers: None,
            volume_data: None,
            restore_uid: RESTORE_UID,
            snapshot_classes: &[("ark-csi".into(), "hostpath.csi.ark.test".into())],
            moved_claims: moved,
        };
        let mut object = item;
        let source = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let status = object.as_object_mut().and_then(|o| o.remove("status"));
        let out = Actions::built_in().run(
            &mut object,
            &restore,
            &ItemCx {
                group_resource,
                source_namespace: source.as_deref(),
                backed_up_status: status.as_ref(),
            },
        );
        (object, out)
    }
}
