//! Putting an unpacked backup into the cluster, resource by resource in restore order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ark_api::RestoreSpec;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::{ApiCapabilities, Scope};
use kube::{Api, Client, ResourceExt as _};
use serde_json::Value;
use tokio::sync::{OnceCell, Semaphore};

use super::actions::{Actions, ClaimVolume, ItemCx, PlanCx, ResourceModifiers, RestoreCx, Skip};
use super::api_versions::{self, USER_PRIORITIES_CONFIG_MAP, UserPriorities};
use super::extract::{child_dirs, json_files};
use super::order::{Priorities, is_restorable};
use super::pod_volumes::{PodWithVolumeData, VolumeData};
use super::transform::{self, differences};
use super::volume_snapshots::{BackedUpSnapshots, snapshot_classes};
use crate::domain::csi;
use crate::domain::discovery::GroupVersions;
use crate::domain::filter::{
    IncludesExcludes, LabelSelection, include_cluster_scoped, resource_names,
};
use crate::hooks::{self, PodHooks};
use crate::records::recorder::Recorder;
use crate::records::resource_list::ResourceListWriter;
use crate::runtime::objects::reason;
use crate::runtime::sync::Locked;

#[derive(Default)]
pub struct Restored {
    pub items: i64,
    /// Restored pods that have hooks: their exec hooks run once everything is restored.
    pub pods_with_hooks: Vec<PodWithHooks>,
    /// Restored pods whose volumes' data the node agent writes back.
    pub pods_with_volume_data: Vec<PodWithVolumeData>,
    /// Restored claims provisioned from a CSI snapshot: namespace, claim, VolumeSnapshot.
    pub claims_from_snapshots: Vec<(String, String, String)>,
    /// Restored claims whose data a data mover moved: a DataDownload writes it into their volume.
    pub claims_with_moved_data: Vec<MovedClaim>,
    /// A dry run's: what would become of each item, in restore order.
    pub planned: Vec<PlannedItem>,
}

/// What a dry run would do to one item (`ark restore create --dry-run`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PlannedItem {
    /// `configmaps`, `deployments.apps`.
    pub resource: String,
    /// Where it would go (the mapping applied); none for a cluster-scoped item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub action: Action,
    /// Of an item that exists and differs: the fields that differ (an update changes them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Why it is refused, why it is a conflict, or what was not checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// It does not exist and would be created.
    Create,
    /// It exists, differs, and would be patched to the backup's (`existingResourcePolicy:
    /// update`).
    Update,
    /// It exists as the backup has it.
    Skip,
    /// It exists, differs, and would be left as it is, with a warning.
    Conflict,
    /// The API server (admission, a policy, a quota, validation) or the restore itself says no.
    Refused,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Skip => "skip",
            Action::Conflict => "conflict",
            Action::Refused => "refused",
        }
    }
}

/// A restored claim whose data a data mover moved into the backup location.
pub struct MovedClaim {
    /// Where it was restored to.
    pub namespace: String,
    pub claim: String,
    /// The backup's DataUpload that moved it.
    pub upload: ark_api::DataUpload,
}

pub struct PodWithHooks {
    pub namespace: String,
    pub name: String,
    pub hooks: PodHooks,
    /// When the restore created it: its hooks' wait timeouts count from here.
    pub created: tokio::time::Instant,
}

/// What the items being restored at once may hold, in item file bytes, beside their count limit.
/// Each is held about four times over (parsed, as the request, as the response and its parse):
/// 4 MiB keeps a restore of 1 MiB Secrets near 20 MiB of items, and never limits small ones.
const BYTES_IN_FLIGHT: usize = 4 << 20;

/// One item file of the unpacked backup.
struct Item {
    namespace: Option<String>,
    path: PathBuf,
}

/// What a restore takes from its backup, and how, as its validation read the spec.
pub struct Selection {
    pub namespaces: IncludesExcludes,
    pub resources: IncludesExcludes,
    pub labels: LabelSelection,
    pub include_cluster_resources: Option<bool>,
    pub existing: ExistingResourcePolicy,
    /// The order resources are created in (the server's).
    pub priorities: Priorities,
    /// The resources whose backed-up status is restored (`restoreStatus`); none when unset.
    pub status: Option<IncludesExcludes>,
    /// When each resource is read at the version Velero's priorities choose among those its
    /// backup holds (the server's `EnableAPIGroupVersions`, a backup of format 1.1.0 or later):
    /// the users' own priorities.
    pub api_versions: Option<UserPriorities>,
}

/// What becomes of an item that exists already and differs from the backup's (Velero's
/// `existingResourcePolicy`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExistingResourcePolicy {
    /// Left as it is, with a warning.
    None,
    /// Patched to the backup's.
    Update,
}

pub struct RestoreInput<'a> {
    pub client: &'a Client,
    /// For what the selection does not cover: hooks and the namespace mapping.
    pub spec: &'a RestoreSpec,
    pub selection: &'a Selection,
    pub restore_name: &'a str,
    /// In the names of the snapshots the restore creates again.
    pub restore_uid: &'a str,
    pub unpacked: &'a Path,
    pub resource_list: &'a mut ResourceListWriter,
    pub record: &'a mut Recorder,
    pub progress: &'a tokio::sync::watch::Sender<(i64, i64)>,
    /// How many items of one resource are created at once.
    pub items_at_once: usize,
    pub resource_modifiers: Option<&'a ResourceModifiers>,
    /// The pod volume data the backup holds.
    pub volume_data: Option<&'a VolumeData<'a>>,
    /// Nothing is changed: each create and patch is the API server's dry run (admission and
    /// quotas included), and what would become of each item is planned rather than recorded.
    pub dry_run: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("discovering the cluster's resources: {0}")]
    Discovery(#[from] kube::Error),
    #[error("writing the restore's resource list: {0}")]
    ResourceList(std::io::Error),
}

/// Restores the unpacked backup: a plan (the item files to restore, resource by resource, in
/// Velero's order, with what the actions leave out), then each resource's items created
/// concurrently through the item actions, then recorded in order.
pub async fn restore(input: RestoreInput<'_>) -> Result<Restored, EngineError> {
    let RestoreInput {
        client,
        spec,
        selection,
        restore_name,
        restore_uid,
        unpacked,
        resource_list,
        record,
        progress,
        items_at_once,
        resource_modifiers,
        volume_data,
        dry_run,
    } = input;
    for warning in hooks::ignored_resource_filters(spec.hooks.as_ref()) {
        record.warning(None, warning);
    }
    let (served, groups) = served(client, record).await?;
    let snapshots = BackedUpSnapshots::read(&unpacked.join("resources"), spec);
    let snapshot_classes = snapshot_classes(client, &served).await;
    let actions = Actions::built_in();
    // Claims whose data the node agent writes back are provisioned anew: their volumes are not
    // restored (Velero's `hasPodVolumeBackup`).
    let claims_with_data = volume_data
        .map(|d| d.backed_up.claims())
        .unwrap_or_default();
    let plan_cx = PlanCx {
        restore_pvs: snapshots.restore_pvs,
        claims_from_snapshots: &snapshots.claims,
        claims_with_data: &claims_with_data,
        claims_moved: &snapshots.moved,
    };
    let mut plan = plan(
        unpacked, selection, &served, &snapshots, &actions, &plan_cx, record,
    );
    if let Some(user) = &selection.api_versions {
        read_chosen_versions(unpacked, &mut plan, &groups, user, record);
    }
    let mapping = spec.namespace_mapping.clone().unwrap_or_default();
    let restore_cx = RestoreCx {
        spec,
        namespace_mapping: &mapping,
        restored_volumes: &plan.restored_volumes,
        resource_modifiers,
        volume_data,
        restore_uid,
        snapshot_classes: &snapshot_classes,
        moved_claims: &snapshots.moved,
    };
    let total: i64 = plan
        .resources
        .iter()
        .map(|(_, items)| items.len() as i64)
        .sum();
    progress.send_replace((0, total));
    let mut run = Run {
        shared: Shared {
            client,
            restore: &restore_cx,
            actions: &actions,
            restore_name,
            labels: &selection.labels,
            status: selection.status.as_ref(),
            unpacked,
            update_existing: selection.existing == ExistingResourcePolicy::Update,
            namespaces: EnsuredNamespaces::default(),
            in_flight: Semaphore::new(BYTES_IN_FLIGHT),
            items_at_once: items_at_once.max(1),
            dry_run,
        },
        served,
        record: Record {
            record,
            resource_list,
            progress,
            total,
            restored: Restored::default(),
            definitions_created: false,
            definitions_planned: BTreeSet::new(),
            dry_run,
        },
    };
    for (gr, items) in plan.resources {
        run.resource(gr, items).await?;
    }
    Ok(run.record.restored)
}

/// What a restore restores, in order, and the volumes among it.
struct Plan {
    resources: Vec<(String, Vec<Item>)>,
    /// The PersistentVolumes the restore creates again (their claims keep their `volumeName`).
    restored_volumes: BTreeSet<String>,
}

/// Every item file to restore, resource by resource in Velero's order: those the filters take,
/// less those an item action leaves out (each logged with its reason).
fn plan(
    unpacked: &Path,
    selection: &Selection,
    served: &BTreeMap<String, (ApiResource, ApiCapabilities)>,
    snapshots: &BackedUpSnapshots,
    actions: &Actions,
    plan_cx: &PlanCx<'_>,
    record: &mut Recorder,
) -> Plan {
    let resources_dir = unpacked.join("resources");
    let mut plan = Plan {
        resources: Vec::new(),
        restored_volumes: BTreeSet::new(),
    };
    for gr in selection.priorities.order(child_dirs(&resources_dir)) {
        if !is_restorable(&gr) {
            continue;
        }
        let plural = gr.split('.').next().unwrap_or(&gr).to_string();
        let kind = served
            .get(&gr)
            .map(|(r, _)| r.kind.to_lowercase())
            .unwrap_or_default();
        if !selection
            .resources
            .should_include_any(&resource_names(&plural, &gr, &kind))
        {
            continue;
        }
        let mut items = items_of(&resources_dir.join(&gr), &gr, selection, snapshots);
        if actions.skip_some(&gr) {
            items.retain(|item| {
                let backed_up: Value = std::fs::read(&item.path)
                    .ok()
                    .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                    .unwrap_or_default();
                if let Some(Skip(reason)) = actions.skip(&gr, &backed_up, plan_cx) {
                    record.info(&reason);
                    return false;
                }
                if gr == "persistentvolumes" {
                    let name = backed_up.pointer("/metadata/name").and_then(Value::as_str);
                    plan.restored_volumes
                        .insert(name.unwrap_or_default().to_string());
                }
                true
            });
        }
        if !items.is_empty() {
            plan.resources.push((gr, items));
        }
    }
    plan
}

/// Each resource's items read at the version Velero's priorities choose, from that version's
/// copies (an item without one then fails, naming the file, as in Velero).
fn read_chosen_versions(
    unpacked: &Path,
    plan: &mut Plan,
    target: &BTreeMap<String, GroupVersions>,
    user: &UserPriorities,
    record: &mut Recorder,
) {
    for ignored in &user.ignored {
        let message = format!("ConfigMap {USER_PRIORITIES_CONFIG_MAP}: {ignored}: passed over");
        record.warning(None, message);
    }
    let resources = unpacked.join("resources");
    let chosen = api_versions::choose_all(&resources, target, user);
    for (gr, items) in &mut plan.resources {
        let Some(chosen) = chosen.get(gr.as_str()) else {
            continue;
        };
        record.info(&format!(
            "{gr} restored at version {}: {}",
            chosen.version, chosen.why
        ));
        for item in items {
            item.path = api_versions::copy_path(&resources, gr, chosen, &item.path);
        }
    }
}

/// The item files of one resource (its folder `dir`) that the restore's filters take.
fn items_of(
    dir: &Path,
    gr: &str,
    selection: &Selection,
    snapshots: &BackedUpSnapshots,
) -> Vec<Item> {
    let namespace_filter = &selection.namespaces;
    let cluster_scoped =
        include_cluster_scoped(selection.include_cluster_resources, namespace_filter);
    let mut items = Vec::new();
    for ns in child_dirs(&dir.join("namespaces")) {
        if namespace_filter.should_include(&ns) {
            for path in json_files(&dir.join("namespaces").join(&ns)) {
                items.push(Item {
                    namespace: Some(ns.clone()),
                    path,
                });
            }
        }
    }
    for path in json_files(&dir.join("cluster")) {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        // A namespace's own object comes with its namespace; other cluster-scoped items only
        // when cluster resources are part of the restore.
        let wanted = if gr == "namespaces" {
            namespace_filter.should_include(name)
        } else if gr == csi::VOLUME_SNAPSHOT_CONTENTS && snapshots.contents.contains(name) {
            // A backed-up snapshot's content comes with its snapshot.
            snapshots.restore_pvs
        } else {
            cluster_scoped
        };
        if wanted {
            items.push(Item {
                namespace: None,
                path,
            });
        }
    }
    items
}

/// What every item of the restore is restored with.
struct Shared<'a> {
    client: &'a Client,
    restore: &'a RestoreCx<'a>,
    actions: &'a Actions,
    restore_name: &'a str,
    labels: &'a LabelSelection,
    /// The resources whose backed-up status is restored.
    status: Option<&'a IncludesExcludes>,
    unpacked: &'a Path,
    update_existing: bool,
    namespaces: EnsuredNamespaces,
    in_flight: Semaphore,
    items_at_once: usize,
    dry_run: bool,
}

/// A restore under way: what it restores with, what the cluster serves, and its record.
struct Run<'a> {
    shared: Shared<'a>,
    served: BTreeMap<String, (ApiResource, ApiCapabilities)>,
    record: Record<'a>,
}

impl Run<'_> {
    /// Restores the items of one resource. They are independent of each other: up to
    /// `items_at_once` are created at a time, each starting as soon as one ends, and recorded in
    /// their order (the resource list, the log and the results read the same as one by one).
    /// Resources stay one after another.
    async fn resource(&mut self, gr: String, items: Vec<Item>) -> Result<(), EngineError> {
        if self.record.definitions_created && !self.served.contains_key(&gr) {
            let served = std::mem::take(&mut self.served);
            self.served =
                served_once_defined(self.shared.client, &gr, served, self.record.record).await;
        }
        let Some((resource, caps)) = self.served.get(&gr) else {
            if self.record.definitions_planned.contains(&gr) {
                self.plan_undefined(&gr, items);
                return Ok(());
            }
            self.record.record.general_error(format!(
                "{gr}: the cluster does not serve this resource; {} items not restored",
                items.len()
            ));
            self.record.done(items.len() as i64);
            return Ok(());
        };
        let cx = ItemContext {
            shared: &self.shared,
            resource,
            caps,
            gr: &gr,
        };
        // Outcomes arrive as items end and are recorded in the items' order: those that end
        // early wait, small (the objects themselves are dropped once created).
        let mut outcomes = futures::stream::iter(items.into_iter().enumerate())
            .map(|(index, item)| {
                let cx = &cx;
                async move { (index, restore_item(item, cx).await) }
            })
            .buffer_unordered(self.shared.items_at_once);
        let (mut waiting, mut next) = (BTreeMap::new(), 0);
        while let Some((index, outcome)) = outcomes.next().await {
            waiting.insert(index, outcome);
            while let Some(outcome) = waiting.remove(&next) {
                next += 1;
                self.record.outcome(&gr, outcome, &self.shared.namespaces)?;
            }
        }
        self.record.record.info(&format!("restored {gr}"));
        Ok(())
    }

    /// A dry run's items of a custom resource whose definition the restore would create first:
    /// planned as created, without asking the API server, which cannot serve them yet.
    fn plan_undefined(&mut self, gr: &str, items: Vec<Item>) {
        for item in items {
            let name = item.path.file_stem().and_then(|s| s.to_str());
            self.record.restored.planned.push(PlannedItem {
                resource: gr.to_string(),
                namespace: (item.namespace.as_deref())
                    .map(|ns| self.shared.restore.target_namespace(ns).to_string()),
                name: name.unwrap_or_default().to_string(),
                action: Action::Create,
                fields: Vec::new(),
                messages: vec![format!(
                    "not checked: the cluster serves {gr} only once the restore creates its \
                     definition"
                )],
            });
            self.record.done(1);
        }
    }
}

/// What a restore writes down of each item, in order: the log and results, the resource list, the
/// progress, and what comes after the items (hooks, volume data, snapshots to wait for).
struct Record<'a> {
    record: &'a mut Recorder,
    resource_list: &'a mut ResourceListWriter,
    progress: &'a tokio::sync::watch::Sender<(i64, i64)>,
    total: i64,
    restored: Restored,
    definitions_created: bool,
    /// A dry run's custom resource definitions it would create, by name (their resources').
    definitions_planned: BTreeSet<String>,
    dry_run: bool,
}

impl Record<'_> {
    fn done(&mut self, items: i64) {
        self.restored.items += items;
        self.progress
            .send_replace((self.restored.items, self.total));
    }

    fn outcome(
        &mut self,
        gr: &str,
        outcome: Outcome,
        namespaces: &EnsuredNamespaces,
    ) -> Result<(), EngineError> {
        self.done(1);
        let attempt = match outcome {
            Outcome::Filtered => return Ok(()),
            Outcome::Unrestorable { namespace, message } => {
                self.record.error(namespace.as_deref(), message);
                return Ok(());
            }
            Outcome::Attempted(attempt) => *attempt,
        };
        let Attempt {
            target_ns,
            name,
            shown,
            pod_hooks,
            volume_data,
            claim_volume,
            created,
            namespace_error,
            action_errors,
            action_warnings,
        } = attempt;
        let errors = namespace_error.into_iter().chain(action_errors);
        if self.dry_run {
            let messages = errors.chain(action_warnings).collect();
            let planned = planned(gr, &target_ns, &name, &created, messages);
            self.restored.planned.push(planned);
        } else {
            for error in errors.chain(created.error.clone()) {
                self.record.error(target_ns.as_deref(), error);
            }
            for warning in action_warnings.into_iter().chain(created.warning.clone()) {
                self.record.warning(target_ns.as_deref(), warning);
            }
        }
        self.resource_list
            .add(
                &created.key,
                &format!("{shown}({})", created.outcome.as_str()),
            )
            .map_err(EngineError::ResourceList)?;
        if created.outcome != CreateOutcome::Created {
            return Ok(());
        }
        match (self.dry_run, gr) {
            (false, "namespaces") => namespaces.created(&name),
            (false, CUSTOM_RESOURCE_DEFINITIONS) => self.definitions_created = true,
            (true, CUSTOM_RESOURCE_DEFINITIONS) => {
                self.definitions_planned.insert(name.clone());
            }
            _ => {}
        }
        let restored = &mut self.restored;
        let namespace = target_ns.unwrap_or_default();
        match claim_volume {
            Some(ClaimVolume::FromSnapshot(snapshot)) => {
                (restored.claims_from_snapshots).push((namespace.clone(), name.clone(), snapshot));
            }
            Some(ClaimVolume::MovedData(upload)) => {
                restored.claims_with_moved_data.push(MovedClaim {
                    namespace: namespace.clone(),
                    claim: name.clone(),
                    upload: *upload,
                });
            }
            None => {}
        }
        if !volume_data.is_empty() {
            restored.pods_with_volume_data.push(PodWithVolumeData {
                namespace: namespace.clone(),
                name: name.clone(),
                backups: volume_data,
            });
        }
        if !pod_hooks.is_empty() {
            restored.pods_with_hooks.push(PodWithHooks {
                namespace,
                name,
                hooks: pod_hooks,
                created: created.at,
            });
        }
        Ok(())
    }
}

/// What a dry run's create or patch of an item came to, as the plan shows it.
fn planned(
    gr: &str,
    namespace: &Option<String>,
    name: &str,
    created: &Created,
    mut messages: Vec<String>,
) -> PlannedItem {
    let action = match created.outcome {
        CreateOutcome::Created => Action::Create,
        CreateOutcome::Updated => Action::Update,
        CreateOutcome::Skipped if created.warning.is_some() => Action::Conflict,
        CreateOutcome::Skipped => Action::Skip,
        CreateOutcome::Failed => Action::Refused,
    };
    messages.extend(created.error.iter().chain(&created.warning).cloned());
    PlannedItem {
        resource: gr.to_string(),
        namespace: namespace.clone(),
        name: name.to_string(),
        action,
        fields: created.changes.clone(),
        messages,
    }
}

const CUSTOM_RESOURCE_DEFINITIONS: &str = "customresourcedefinitions.apiextensions.k8s.io";
/// How long a custom resource restored after its definition waits for the API server to serve
/// it (a definition is served once established, within seconds).
const DEFINITION_SERVED_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// What the cluster serves, by group-resource, and each group's versions; the resources discovery
/// could not read are warnings.
async fn served(
    client: &Client,
    record: &mut Recorder,
) -> Result<
    (
        BTreeMap<String, (ApiResource, ApiCapabilities)>,
        BTreeMap<String, GroupVersions>,
    ),
    EngineError,
> {
    let discovered = crate::domain::discovery::discover(client).await?;
    for skipped in discovered.skipped {
        record.warning(None, skipped);
    }
    Ok((
        crate::domain::discovery::by_group_resource(discovered.resources),
        discovered.groups,
    ))
}

/// The served resources once `gr` is among them, after this restore created custom resource
/// definitions (its definition may be one): discovery is asked again until it serves `gr` or
/// [`DEFINITION_SERVED_TIMEOUT`] passes, as Velero waits for a restored definition to be
/// established.
async fn served_once_defined(
    client: &Client,
    gr: &str,
    served: BTreeMap<String, (ApiResource, ApiCapabilities)>,
    record: &mut Recorder,
) -> BTreeMap<String, (ApiResource, ApiCapabilities)> {
    let deadline = tokio::time::Instant::now() + DEFINITION_SERVED_TIMEOUT;
    let mut latest = served;
    loop {
        if let Ok(discovered) = crate::domain::discovery::discover(client).await {
            latest = crate::domain::discovery::by_group_resource(discovered.resources);
            if latest.contains_key(gr) {
                record.info(&format!("{gr} is served: its definition was restored"));
                return latest;
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return latest;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// What every item of one resource is restored with.
struct ItemContext<'a> {
    shared: &'a Shared<'a>,
    resource: &'a ApiResource,
    caps: &'a ApiCapabilities,
    gr: &'a str,
}

/// What restoring one item came to.
enum Outcome {
    /// The label selector leaves it out.
    Filtered,
    /// It could not be read or may not be restored; the error is recorded under `namespace`, the
    /// item's namespace in the backup.
    Unrestorable {
        namespace: Option<String>,
        message: String,
    },
    Attempted(Box<Attempt>),
}

/// What is recorded of an item the restore tried to create.
struct Attempt {
    target_ns: Option<String>,
    name: String,
    shown: String,
    pod_hooks: PodHooks,
    volume_data: Vec<ark_api::PodVolumeBackup>,
    claim_volume: Option<ClaimVolume>,
    created: Created,
    /// Why the namespace it goes into could not be made ready, the first time that was tried.
    namespace_error: Option<String>,
    /// Errors of its item actions (a failed resource modifier), which did not stop its create.
    action_errors: Vec<String>,
    /// What its item actions warn of.
    action_warnings: Vec<String>,
}

async fn restore_item(item: Item, cx: &ItemContext<'_>) -> Outcome {
    // The item is read only once its bytes fit in the budget (one larger than it alone).
    let weight = std::fs::metadata(&item.path)
        .map_or(1, |m| m.len().clamp(1, BYTES_IN_FLIGHT as u64) as u32);
    // The semaphore is never closed; were it, the item would go on unbounded rather than fail.
    let _permit = cx.shared.in_flight.acquire_many(weight).await.ok();
    let prepared = match prepare(&item, cx) {
        Ok(Some(prepared)) => prepared,
        Ok(None) => return Outcome::Filtered,
        Err(message) => {
            return Outcome::Unrestorable {
                namespace: item.namespace,
                message,
            };
        }
    };
    let (namespace, namespace_error) = match &prepared.target_ns {
        Some(ns) => {
            let shared = cx.shared;
            (shared.namespaces)
                .ensure(shared.client, ns, shared.dry_run)
                .await
        }
        None => (Namespace::Exists, None),
    };
    let created = match namespace {
        Namespace::Exists => create(cx, &prepared).await,
        Namespace::Absent => not_asked(cx, &prepared),
    };
    Outcome::Attempted(Box::new(Attempt {
        target_ns: prepared.target_ns,
        name: prepared.name,
        shown: prepared.shown,
        pod_hooks: prepared.pod_hooks,
        volume_data: prepared.volume_data,
        claim_volume: prepared.claim_volume,
        created,
        namespace_error,
        action_errors: prepared.action_errors,
        action_warnings: prepared.action_warnings,
    }))
}

/// The namespaces items are restored into, each made ready once however many items go into it at
/// once: created when neither it nor its backed-up object exists (a mapped namespace, or a backup
/// without Namespace objects).
#[derive(Default)]
struct EnsuredNamespaces(std::sync::Mutex<BTreeMap<String, Arc<OnceCell<Namespace>>>>);

/// A namespace items go into, once made ready.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Namespace {
    Exists,
    /// A dry run's namespace that does not exist: the API server refuses even a dry run of an
    /// item in it, so its items are planned without being asked.
    Absent,
}

impl EnsuredNamespaces {
    fn cell(&self, name: &str) -> Arc<OnceCell<Namespace>> {
        let mut cells = self.0.locked();
        // Looked up first: every item asks, and only the first of a namespace adds it.
        if let Some(cell) = cells.get(name) {
            return cell.clone();
        }
        cells.entry(name.to_string()).or_default().clone()
    }

    /// A namespace this restore created: nothing to check.
    fn created(&self, name: &str) {
        let _ = self.cell(name).set(Namespace::Exists);
    }

    /// Makes `name` ready on the first call (in a dry run, asks whether it could be); the error,
    /// to that first caller only.
    async fn ensure(
        &self,
        client: &Client,
        name: &str,
        dry_run: bool,
    ) -> (Namespace, Option<String>) {
        let mut error = None;
        let cell = self.cell(name);
        let ready = cell
            .get_or_init(|| async {
                let (ready, failed) = ensure_namespace(client, name, dry_run).await;
                error = failed;
                ready
            })
            .await;
        (*ready, error)
    }
}

/// An item ready to be created: read, checked, filtered and transformed.
struct Prepared {
    target_ns: Option<String>,
    name: String,
    /// `namespace/name` (or `name`), as the log and the resource list show it.
    shown: String,
    candidate: Value,
    object: DynamicObject,
    /// The backed-up status, to put back once the object is created.
    status: Option<Value>,
    /// The backed-up field managers, to put back once the object is created.
    managed_fields: Option<Value>,
    pod_hooks: PodHooks,
    volume_data: Vec<ark_api::PodVolumeBackup>,
    claim_volume: Option<ClaimVolume>,
    action_errors: Vec<String>,
    action_warnings: Vec<String>,
}

/// The item as it is to be created; None when the label selector leaves it out; the error to
/// record when it cannot be restored.
fn prepare(item: &Item, cx: &ItemContext<'_>) -> Result<Option<Prepared>, String> {
    let ItemContext { gr, caps, .. } = cx;
    let Shared {
        restore,
        labels,
        unpacked,
        ..
    } = cx.shared;
    let source_ns = item.namespace.as_deref();
    let target_ns = source_ns.map(|ns| restore.target_namespace(ns).to_string());
    let shown_path = item.path.strip_prefix(unpacked).unwrap_or(&item.path);
    let unreadable =
        |error: String| format!("{gr} item {}: unreadable: {error}", shown_path.display());
    let file = std::fs::read(&item.path).map_err(|e| unreadable(e.to_string()))?;
    let mut candidate: Value =
        serde_json::from_slice(&file).map_err(|e| unreadable(e.to_string()))?;
    if !candidate.is_object() {
        return Err(unreadable("not a JSON object".into()));
    }
    let file_name = item
        .path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if let Some(reason) = misplaced(&caps.scope, source_ns, file_name, &candidate) {
        return Err(format!("{}: {reason}; not restored", shown_path.display()));
    }
    // A snapshot's content is restored with its snapshot whatever the labels say (Velero's
    // `resourceMustHave`).
    if labels.by_labels() && *gr != csi::VOLUME_SNAPSHOT_CONTENTS {
        let item_labels: BTreeMap<String, String> = serde_json::from_value(
            candidate
                .pointer("/metadata/labels")
                .cloned()
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        if !labels.matches(&item_labels) {
            return Ok(None);
        }
    }
    // Taken before they are stripped: a create cannot set them (the API server gives every field
    // to the creator), a patch of them alone can.
    let managed_fields = (candidate.pointer("/metadata/managedFields").cloned())
        .filter(|fields| fields.as_array().is_some_and(|f| !f.is_empty()));
    let status = transform::strip_and_map(restore, gr, &mut candidate);
    let actions = cx.shared.actions.run(
        &mut candidate,
        restore,
        &ItemCx {
            group_resource: gr,
            source_namespace: source_ns,
            backed_up_status: status.as_ref(),
        },
    );
    transform::label(
        &mut candidate,
        &restore.spec.backup_name,
        cx.shared.restore_name,
    );
    let name = candidate
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let object: DynamicObject = serde_json::from_value(candidate.clone())
        .map_err(|error| format!("{gr} {name}: not a Kubernetes object: {error}"))?;
    let kind = cx.resource.kind.to_lowercase();
    let names = resource_names(gr.split('.').next().unwrap_or(gr), gr, &kind);
    let status = status.filter(|_| restores_status(cx.shared.status, &names, &candidate));
    let shown = match &target_ns {
        Some(ns) => format!("{ns}/{name}"),
        None => name.clone(),
    };
    Ok(Some(Prepared {
        target_ns,
        name,
        shown,
        candidate,
        object,
        status,
        managed_fields,
        pod_hooks: actions.pod_hooks,
        volume_data: actions.volume_data,
        claim_volume: actions.claim_volume,
        action_errors: actions.errors,
        action_warnings: actions.warnings,
    }))
}

/// Whether an item's backed-up status is put back once it is created, as Velero's
/// `determineRestoreStatus` decides: its annotation `velero.io/restore-status` (`true` or `false`)
/// first, else whether the restore's `restoreStatus` includes its resource.
fn restores_status(filter: Option<&IncludesExcludes>, names: &[&str], item: &Value) -> bool {
    let by_spec = filter.is_some_and(|f| f.should_include_any(names));
    let annotation = item
        .pointer("/metadata/annotations/velero.io~1restore-status")
        .and_then(Value::as_str)
        .map(|v| v.trim().to_ascii_lowercase());
    match annotation.as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => by_spec,
    }
}

/// Replaces the created object's status with the backed-up one (the status subresource, as
/// Velero's `UpdateStatus`), again on a conflict with whoever wrote it since.
async fn put_status(
    api: &Api<DynamicObject>,
    made: DynamicObject,
    status: &Value,
) -> Result<(), kube::Error> {
    let mut object = serde_json::to_value(&made).unwrap_or_default();
    object["status"] = status.clone();
    let mut with_status: DynamicObject = serde_json::from_value(object).unwrap_or(made);
    let name = with_status.name_any();
    for _ in 0..4 {
        match api
            .replace_status(&name, &PostParams::default(), &with_status)
            .await
        {
            Err(kube::Error::Api(conflict)) if conflict.code == 409 => {
                with_status.metadata.resource_version =
                    api.get(&name).await?.metadata.resource_version;
            }
            done => return done.map(drop),
        }
    }
    api.replace_status(&name, &PostParams::default(), &with_status)
        .await
        .map(drop)
}

/// Puts the backed-up field managers back on the created object, as Velero does after its create:
/// a patch of `managedFields` alone is taken as they are, so whoever applied the object owns its
/// fields again (one gone since the create is no error: nothing is left to own).
async fn put_managed_fields(
    api: &Api<DynamicObject>,
    name: &str,
    fields: &Value,
) -> Result<(), kube::Error> {
    let patch = serde_json::json!({ "metadata": { "managedFields": fields } });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Err(kube::Error::Api(gone)) if gone.code == 404 => Ok(()),
        done => done.map(drop),
    }
}

/// What creating one item came to, as Velero's resource list says it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CreateOutcome {
    Created,
    Updated,
    Skipped,
    Failed,
}

impl CreateOutcome {
    fn as_str(self) -> &'static str {
        match self {
            CreateOutcome::Created => "created",
            CreateOutcome::Updated => "updated",
            CreateOutcome::Skipped => "skipped",
            CreateOutcome::Failed => "failed",
        }
    }
}

/// What creating one item came to.
struct Created {
    outcome: CreateOutcome,
    /// The resource list's key: `v1/ConfigMap`, `apps/v1/Deployment`.
    key: String,
    warning: Option<String>,
    error: Option<String>,
    /// When the create was sent: a pod's hooks' wait timeouts count from here.
    at: tokio::time::Instant,
    /// Of an item that exists and differs: the fields that differ.
    changes: Vec<String>,
}

/// A dry run's item in a namespace that does not exist yet, planned as created: the API server
/// refuses to consider it until its namespace exists.
fn not_asked(cx: &ItemContext<'_>, prepared: &Prepared) -> Created {
    let resource = at_version(
        cx.resource,
        prepared.candidate.get("apiVersion").and_then(Value::as_str),
    );
    let namespace = prepared.target_ns.as_deref().unwrap_or_default();
    Created {
        outcome: CreateOutcome::Created,
        key: crate::records::resource_list::key(&resource),
        warning: Some(format!(
            "not checked: the API server considers items of namespace {namespace} only once the \
             restore creates it"
        )),
        error: None,
        at: tokio::time::Instant::now(),
        changes: Vec::new(),
    }
}

/// Creates the item; one that exists already is left, or patched under the `update` policy.
async fn create(cx: &ItemContext<'_>, prepared: &Prepared) -> Created {
    let ItemContext {
        resource: served,
        caps,
        gr,
        ..
    } = cx;
    let Shared {
        client, dry_run, ..
    } = *cx.shared;
    let resource = &at_version(
        served,
        prepared.candidate.get("apiVersion").and_then(Value::as_str),
    );
    let key = crate::records::resource_list::key(resource);
    let api: Api<DynamicObject> = match (caps.scope.clone(), &prepared.target_ns) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, resource),
        _ => Api::all_with(client.clone(), resource),
    };
    let (name, shown) = (&prepared.name, &prepared.shown);
    let at = tokio::time::Instant::now();
    let created = |outcome, warning, error| Created {
        outcome,
        key: key.clone(),
        warning,
        error,
        at,
        changes: Vec::new(),
    };
    let post = PostParams {
        dry_run,
        ..Default::default()
    };
    match api.create(&post, &prepared.object).await {
        Ok(_) if dry_run => created(CreateOutcome::Created, None, None),
        Ok(made) => {
            let warning = match &prepared.status {
                Some(status) => put_status(&api, made, status).await.err().map(|error| {
                    format!(
                        "could not restore the status of {gr} {shown}: {}",
                        reason(&error)
                    )
                }),
                None => None,
            };
            let error = match &prepared.managed_fields {
                Some(fields) => put_managed_fields(&api, name, fields)
                    .await
                    .err()
                    .map(|error| {
                        format!(
                            "could not restore the field managers of {gr} {shown}: {}",
                            reason(&error)
                        )
                    }),
                None => None,
            };
            created(CreateOutcome::Created, warning, error)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => match api.get(name).await {
            Ok(existing) => {
                let existing = serde_json::to_value(&existing).unwrap_or_default();
                let changes = differences(&existing, &prepared.candidate);
                let (outcome, warning) = exists_already(cx, prepared, &api, &changes).await;
                Created {
                    changes,
                    ..created(outcome, warning, None)
                }
            }
            Err(error) => created(
                CreateOutcome::Failed,
                None,
                Some(format!("error restoring {gr} {shown}: {}", reason(&error))),
            ),
        },
        // A 404 that names no object (a missing namespace would be named) is the endpoint's: the
        // item's version of its resource is not served here ("the server could not find the
        // requested resource", or a bare "404 page not found").
        Err(kube::Error::Api(status))
            if status.code == 404 && status.details.as_ref().is_none_or(|d| d.name.is_empty()) =>
        {
            created(
                CreateOutcome::Failed,
                None,
                Some(format!(
                    "error restoring {gr} {shown}: the cluster does not serve {} (group {:?}, \
                     version {:?}, resource {:?})",
                    resource.api_version, resource.group, resource.version, resource.plural
                )),
            )
        }
        Err(error) => created(
            CreateOutcome::Failed,
            None,
            Some(format!("error restoring {gr} {shown}: {}", reason(&error))),
        ),
    }
}

/// What becomes of an item that exists already and differs from the backup's by `changes`: skipped
/// when it does not differ, patched to the backup's under the `update` policy, else left as it is
/// with a warning.
async fn exists_already(
    cx: &ItemContext<'_>,
    prepared: &Prepared,
    api: &Api<DynamicObject>,
    changes: &[String],
) -> (CreateOutcome, Option<String>) {
    let (gr, shown) = (cx.gr, &prepared.shown);
    if changes.is_empty() {
        return (CreateOutcome::Skipped, None);
    }
    if !cx.shared.update_existing {
        let message = format!(
            "could not restore, {} {shown} already exists. Warning: the in-cluster version is different than the backed-up version",
            cx.resource.kind
        );
        return (CreateOutcome::Skipped, Some(message));
    }
    let params = PatchParams {
        dry_run: cx.shared.dry_run,
        ..Default::default()
    };
    let patch = Patch::Merge(&prepared.candidate);
    match api.patch(&prepared.name, &params, &patch).await {
        Ok(_) => (CreateOutcome::Updated, None),
        Err(error) => (
            CreateOutcome::Failed,
            Some(format!("could not update {gr} {shown}: {}", reason(&error))),
        ),
    }
}

/// Why an item may not be restored from where it lies in the tarball, or None: an item of a
/// resource that is cluster-scoped (as this cluster serves it) under `namespaces/` would be created
/// cluster-wide by a restore of one namespace, a namespaced one under `cluster/` has no namespace
/// the filters saw, and an item whose own namespace is not its folder's, or whose name is not its
/// file's, would be restored where no filter looked (a Namespace `kube-system` in
/// `cluster/shop.json` is taken by a restore of namespace `shop`).
fn misplaced(scope: &Scope, folder: Option<&str>, file: &str, item: &Value) -> Option<String> {
    let name = item.pointer("/metadata/name").and_then(Value::as_str);
    if name != Some(file) {
        return Some(format!(
            "the item names {}, but its file is {file}.json",
            name.map_or("no object".into(), |name| format!("{name:?}"))
        ));
    }
    let own = item
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty());
    match (scope, folder) {
        (Scope::Cluster, Some(_)) => {
            Some("the resource is cluster-scoped, but the item lies under namespaces/".into())
        }
        (Scope::Namespaced, None) => {
            Some("the resource is namespaced, but the item lies under cluster/".into())
        }
        (Scope::Cluster, None) => {
            own.map(|own| format!("a cluster-scoped item names namespace {own:?}"))
        }
        (Scope::Namespaced, Some(folder)) => own.filter(|own| *own != folder).map(|own| {
            format!("the item names namespace {own:?}, but lies under namespaces/{folder}/")
        }),
    }
}

/// The resource at the API version the item was backed up in, so that the body is sent to the
/// endpoint of its own version (never a body of one version to another's), as Velero does; a
/// version the cluster does not serve then fails that item, naming it. An item of another group
/// than the resource's keeps the resource as discovery found it.
fn at_version(resource: &ApiResource, api_version: Option<&str>) -> ApiResource {
    let Some(api_version) = api_version.filter(|v| *v != resource.api_version) else {
        return resource.clone();
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if group != resource.group {
        return resource.clone();
    }
    ApiResource {
        version: version.to_string(),
        api_version: api_version.to_string(),
        ..resource.clone()
    }
}

/// Creates namespace `name` unless it exists (a dry run only asks whether it could); why it
/// cannot take items, if so.
async fn ensure_namespace(
    client: &Client,
    name: &str,
    dry_run: bool,
) -> (Namespace, Option<String>) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if let Ok(Some(existing)) = api.get_opt(name).await {
        let deleting = existing.metadata.deletion_timestamp.map(|_| {
            format!("namespace {name} is being deleted; its items cannot be restored yet")
        });
        return (Namespace::Exists, deleting);
    }
    let mut namespace = k8s_openapi::api::core::v1::Namespace::default();
    namespace.metadata.name = Some(name.to_string());
    let params = PostParams {
        dry_run,
        ..Default::default()
    };
    let error = match api.create(&params, &namespace).await {
        Err(error) if !matches!(&error, kube::Error::Api(s) if s.code == 409) => {
            Some(format!("creating namespace {name}: {}", reason(&error)))
        }
        _ => None,
    };
    match dry_run {
        true => (Namespace::Absent, error),
        false => (Namespace::Exists, error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_must_lie_where_their_scope_and_namespace_say() {
        let item =
            |ns: Option<&str>| serde_json::json!({ "metadata": { "name": "x", "namespace": ns } });
        let (cluster, namespaced) = (Scope::Cluster, Scope::Namespaced);
        let misplaced = |scope, folder, item: &Value| misplaced(scope, folder, "x", item);
        assert_eq!(
            super::misplaced(&cluster, None, "shop", &item(None)).as_deref(),
            Some("the item names \"x\", but its file is shop.json")
        );
        assert_eq!(
            super::misplaced(&cluster, None, "x", &serde_json::json!({})).as_deref(),
            Some("the item names no object, but its file is x.json")
        );
        assert_eq!(misplaced(&namespaced, Some("a"), &item(Some("a"))), None);
        assert_eq!(misplaced(&namespaced, Some("a"), &item(None)), None);
        assert_eq!(misplaced(&cluster, None, &item(None)), None);
        assert_eq!(misplaced(&cluster, None, &item(Some(""))), None);
        assert_eq!(
            misplaced(&cluster, Some("a"), &item(Some("a"))).as_deref(),
            Some("the resource is cluster-scoped, but the item lies under namespaces/")
        );
        assert_eq!(
            misplaced(&namespaced, None, &item(Some("a"))).as_deref(),
            Some("the resource is namespaced, but the item lies under cluster/")
        );
        assert_eq!(
            misplaced(&namespaced, Some("a"), &item(Some("kube-system"))).as_deref(),
            Some("the item names namespace \"kube-system\", but lies under namespaces/a/")
        );
        assert_eq!(
            misplaced(&cluster, None, &item(Some("a"))).as_deref(),
            Some("a cluster-scoped item names namespace \"a\"")
        );
    }

    #[test]
    fn items_are_created_at_the_version_they_were_backed_up_in() {
        let preferred = ApiResource {
            group: "autoscaling".into(),
            version: "v2".into(),
            api_version: "autoscaling/v2".into(),
            kind: "HorizontalPodAutoscaler".into(),
            plural: "horizontalpodautoscalers".into(),
        };
        let v1 = at_version(&preferred, Some("autoscaling/v1"));
        assert_eq!(
            (v1.version.as_str(), v1.api_version.as_str()),
            ("v1", "autoscaling/v1")
        );
        assert_eq!(v1.plural, "horizontalpodautoscalers");
        assert_eq!(at_version(&preferred, Some("autoscaling/v2")), preferred);
        assert_eq!(at_version(&preferred, None), preferred);
        assert_eq!(at_version(&preferred, Some("apps/v1")), preferred);
        let core = ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
        };
        assert_eq!(at_version(&core, Some("v1")), core);
    }
}
