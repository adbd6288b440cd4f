//! Collecting a backup: discovery, filters, paginated lists, items written to the tarball as they
//! arrive.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use ark_api::labels;
use ark_storage::tarball::group_resource;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DynamicObject, ListParams, ObjectList, TypeMeta};
use kube::core::{Expression, Selector};
use kube::discovery::{ApiCapabilities, Scope, verbs};
use kube::{Api, Client, ResourceExt};

use super::actions::{Actions, ItemRef};
use super::pod_work::{PodWork, Ready};
use super::volume_snapshots::{ClaimSnapshots, Cut};
use super::writer::{self, ItemWriter, Page};
use crate::domain::filter::{IncludesExcludes, LabelSelection, ResourceFilter};
use crate::records::recorder::Recorder;
use crate::records::resource_list;

/// Items per list page: the API server's page is counted in items, but memory is spent in bytes.
/// A first small page measures the items' size (4 of the largest objects etcd takes, 1.5 MiB,
/// still fit in `PAGE_BYTES`); each next page holds what fits in `PAGE_BYTES`, between one item
/// and `MAX_PAGE_SIZE`. A page is held up to four times over (its response, the parsed list, the
/// page waiting for the tarball writer and the one being compressed).
const FIRST_PAGE_SIZE: u32 = 4;
const MAX_PAGE_SIZE: u32 = 500;
const PAGE_BYTES: usize = 4 << 20;

/// The next page's size after a page of `items` items that took `bytes` bytes.
fn next_page_size(items: usize, bytes: usize) -> u32 {
    if items == 0 || bytes == 0 {
        return MAX_PAGE_SIZE;
    }
    let per_item = bytes.div_ceil(items);
    (PAGE_BYTES / per_item).clamp(1, MAX_PAGE_SIZE as usize) as u32
}

/// First pages asked for at once (each at most `FIRST_PAGE_SIZE` items).
const LISTS_AT_ONCE: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("discovering the cluster's resources: {0}")]
    Discovery(kube::Error),
    #[error("writing scratch files: {0}")]
    Io(#[from] std::io::Error),
    #[error("listing namespaces: {0}")]
    Namespaces(kube::Error),
}

/// What a backup takes, as its validation read the spec.
pub struct Selection {
    pub namespaces: IncludesExcludes,
    pub resources: ResourceFilter,
    pub labels: LabelSelection,
    /// `orderedResources`: by resource plural, the items (`namespace/name`, or `name` when
    /// cluster-scoped) backed up first, in that order.
    pub ordered: BTreeMap<String, Vec<String>>,
    /// Every version the cluster serves each resource in, not only the preferred one (Velero's
    /// `EnableAPIGroupVersions`): a restore into a cluster that serves other versions picks one.
    pub every_version: bool,
}

impl Selection {
    /// The selector every list request carries: the spec's, when it has exactly one, and items
    /// labelled to be excluded left out whatever else selects them (an item without the label
    /// matches).
    fn for_listing(&self) -> Selector {
        let mut selector = self.labels.for_listing().cloned().unwrap_or_default();
        selector.extend([Expression::NotEqual(
            labels::EXCLUDE_FROM_BACKUP.into(),
            "true".into(),
        )]);
        selector
    }

    /// Whether the Namespace objects written are only those of namespaces that hold a listed
    /// item or whose labels match the selection, as Velero's namespace tracker has it when a
    /// backup of every namespace selects by labels (vmware-tanzu/velero#7105).
    fn namespaces_by_items(&self) -> bool {
        self.labels.by_labels()
            && self.namespaces.includes_everything()
            && self.namespaces.excludes_nothing()
    }
}

pub struct Collected {
    pub tarball: std::fs::File,
    pub resource_list: std::fs::File,
    pub items: i64,
    /// Every pod that had hooks, with each hook's outcome.
    pub hook_results: Vec<ark_api::hooks::PodHookResults>,
    /// The PodVolumeBackups the backup made, as they ended.
    pub pod_volume_backups: Vec<ark_api::PodVolumeBackup>,
    /// What came of each claim's CSI snapshot.
    pub snapshots: Vec<std::sync::Arc<Cut>>,
}

struct Plan {
    namespaces: Vec<String>,
    /// List namespaced resources once across the cluster, keeping the included namespaces' items,
    /// rather than once per namespace: when at least half of the namespaces are included, that
    /// reads at most twice what is kept, in one paged list instead of one per namespace.
    cluster_wide: bool,
    resources: Vec<(ApiResource, ApiCapabilities)>,
    /// The planned resources at their other versions, when the backup takes every version.
    other_versions: Vec<(ApiResource, ApiCapabilities)>,
    /// The cluster-scoped resources listed (others are taken only when an item names them).
    cluster_scoped_listed: BTreeSet<String>,
}

/// What a backup is collected from: its selection, its pods' work and claims' snapshots, where
/// its files are written, and its record.
pub struct Collection<'a> {
    pub client: &'a Client,
    pub selection: &'a Selection,
    pub pod_work: PodWork,
    pub snapshots: ClaimSnapshots,
    pub scratch: &'a Path,
    pub record: &'a mut Recorder,
    pub progress: &'a tokio::sync::watch::Sender<(i64, i64)>,
}

/// Collects the backup: a plan (the namespaces and resources to list), the listings in the
/// tarball's order, each item through the item actions as it is written, then the items they
/// named, and what the backup's pods and claims came to.
pub async fn collect(collection: Collection<'_>) -> Result<Collected, EngineError> {
    let Collection {
        client,
        selection,
        pod_work,
        snapshots,
        scratch,
        record,
        progress,
    } = collection;
    let plan = plan(client, selection, record).await?;
    let actions = Actions::for_backup(snapshots.clone());
    let mut added_later = actions.adds();
    added_later.insert(CUSTOM_RESOURCE_DEFINITIONS);
    // A pod with hooks is written once its pre hooks end, after other pods.
    added_later.insert(PODS);
    let mut run = Run {
        client,
        selection,
        listing_selector: selection.for_listing(),
        listed_in: BTreeSet::new(),
        included: plan.namespaces.iter().cloned().collect(),
        writer: ItemWriter::start(scratch, added_later.clone())?,
        related: Related {
            wanted: VecDeque::new(),
            written: BTreeSet::new(),
            added_later,
            backed_up: BTreeSet::new(),
        },
        actions,
        pod_work,
        snapshots,
        taken_in_order: BTreeSet::new(),
        record,
        progress,
    };
    let by_items = selection.namespaces_by_items();
    if !by_items {
        run.namespaces(&plan, None).await?;
    }
    run.listings(&listings(&plan)).await?;
    run.pods_ready(true).await?;
    run.related(&plan).await?;
    if by_items {
        let holding = std::mem::take(&mut run.listed_in);
        run.namespaces(&plan, Some(&holding)).await?;
    }
    run.finish().await
}

/// One list of a backup: a resource, in one namespace or across the cluster.
#[derive(Clone)]
struct Listing<'a> {
    resource: &'a ApiResource,
    caps: &'a ApiCapabilities,
    gr: String,
    /// The resource list's key: `v1/ConfigMap`, `apps/v1/Deployment`.
    key: String,
    namespace: Option<&'a str>,
    /// Whether this is the resource's preferred version. Another version's items are written as
    /// its copies, without the item actions (which ran on the preferred version's).
    preferred: bool,
}

impl Listing<'_> {
    fn api(&self, client: &Client) -> Api<DynamicObject> {
        match self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, self.resource),
            None => Api::all_with(client.clone(), self.resource),
        }
    }

    fn page(&self, capacity: usize) -> Page {
        Page {
            gr: self.gr.clone(),
            version: self.resource.version.clone(),
            preferred: self.preferred,
            key: self.key.clone(),
            items: Vec::with_capacity(capacity),
        }
    }
}

/// What to list, in the tarball's order: every planned resource in each included namespace (or
/// once across the cluster), cluster-scoped ones when the backup takes them, each followed by its
/// other versions when the backup takes every version; claims last, as a
/// claim is snapshotted as its item is written, and the snapshot of a pod's claim is cut after
/// the pod's pre hooks (Velero's order), which have all run by then. The Namespace objects are
/// not listed: [`Run::namespaces`] writes them.
fn listings(plan: &Plan) -> Vec<Listing<'_>> {
    let mut listings = Vec::new();
    for (resource, caps) in &plan.resources {
        let gr = group_resource(&resource.group, &resource.plural);
        let scopes: Vec<Option<&str>> = match caps.scope {
            Scope::Namespaced if plan.cluster_wide => vec![None],
            Scope::Namespaced => plan.namespaces.iter().map(|ns| Some(ns.as_str())).collect(),
            Scope::Cluster if is_namespaces(resource) => continue,
            Scope::Cluster if plan.cluster_scoped_listed.contains(&gr) => vec![None],
            Scope::Cluster => continue,
        };
        let versions = std::iter::once((resource, true)).chain(
            (plan.other_versions.iter())
                .filter(|(other, _)| {
                    other.group == resource.group && other.plural == resource.plural
                })
                .map(|(other, _)| (other, false)),
        );
        for (resource, preferred) in versions {
            let key = resource_list::key(resource);
            for namespace in &scopes {
                listings.push(Listing {
                    resource,
                    caps,
                    gr: gr.clone(),
                    key: key.clone(),
                    namespace: *namespace,
                    preferred,
                });
            }
        }
    }
    listings.sort_by_key(|listing| listing.gr == CLAIMS);
    listings
}

fn is_namespaces(resource: &ApiResource) -> bool {
    resource.group.is_empty() && resource.plural == "namespaces"
}

/// A backup being collected: where its items go, what it has written, and its record.
struct Run<'a> {
    client: &'a Client,
    selection: &'a Selection,
    /// What every list request carries (see [`Selection::for_listing`]).
    listing_selector: Selector,
    /// The namespaces of the items listed (for [`Selection::namespaces_by_items`]).
    listed_in: BTreeSet<String>,
    included: BTreeSet<String>,
    writer: ItemWriter,
    related: Related,
    actions: Actions,
    pod_work: PodWork,
    snapshots: ClaimSnapshots,
    /// The items `orderedResources` named, backed up first: (namespace, name) by resource.
    taken_in_order: BTreeSet<(String, Option<String>, String)>,
    record: &'a mut Recorder,
    progress: &'a tokio::sync::watch::Sender<(i64, i64)>,
}

impl Run<'_> {
    /// The Namespace objects of the namespaces backed up, whatever the selector says (a restore
    /// needs them): first, or, with `holding` (the namespaces of the items listed), last and only
    /// those among them or whose labels match the selection.
    async fn namespaces(
        &mut self,
        plan: &Plan,
        holding: Option<&BTreeSet<String>>,
    ) -> Result<(), EngineError> {
        let Some((resource, _)) = plan.resources.iter().find(|(r, _)| is_namespaces(r)) else {
            return Ok(());
        };
        let mut page = Page {
            gr: group_resource(&resource.group, &resource.plural),
            version: resource.version.clone(),
            preferred: true,
            key: resource_list::key(resource),
            items: Vec::new(),
        };
        let api: Api<Namespace> = Api::all(self.client.clone());
        for name in &plan.namespaces {
            match api.get_opt(name).await {
                Ok(Some(namespace))
                    if holding.is_some_and(|holding| {
                        !holding.contains(name)
                            && !self.selection.labels.matches(namespace.labels())
                    }) => {}
                // Serialized with its apiVersion and kind, as Velero writes it.
                Ok(Some(namespace)) => page.items.push(writer::Item {
                    namespace: None,
                    name: name.clone(),
                    json: serde_json::to_vec(&namespace).map_err(std::io::Error::from)?,
                }),
                Ok(None) => {}
                Err(error) => self
                    .record
                    .error(Some(name), format!("getting namespace {name}: {error}")),
            }
        }
        Ok(self.writer.write(page).await?)
    }

    /// Every listing, in order. The first pages are asked for several at a time: most resources
    /// have one page or none, and a backup of one namespace lists dozens of them. They are written
    /// in order, each listing's next pages asked for as it is written.
    async fn listings(&mut self, listings: &[Listing<'_>]) -> Result<(), EngineError> {
        let selector = self.listing_selector.clone();
        let client = self.client;
        // The futures own what they use (not a borrowed `Listing`), so the stream stays `Send`.
        let mut first_pages = futures::stream::iter(0..listings.len())
            .map(|index| {
                let params = ListParams::default()
                    .limit(FIRST_PAGE_SIZE)
                    .labels_from(&selector);
                let api = listings[index].api(client);
                async move {
                    let page = api.list(&params).await;
                    (index, api, params, page)
                }
            })
            .buffered(LISTS_AT_ONCE);
        let mut pre_hooks_ended = false;
        let mut ordered_done = BTreeSet::new();
        while let Some((index, api, params, page)) = first_pages.next().await {
            let listing = &listings[index];
            if listing.gr == CLAIMS && !pre_hooks_ended {
                pre_hooks_ended = true;
                self.pods_ready(true).await?;
            }
            if let Some(order) = self.selection.ordered.get(&listing.resource.plural)
                && listing.preferred
                && ordered_done.insert(listing.gr.clone())
            {
                self.ordered(listing, order).await?;
            }
            self.listing(listing, api, params, page).await?;
        }
        Ok(())
    }

    /// The items `orderedResources` names for the listing's resource, backed up before the
    /// listings and in that order, as Velero's `sortResourcesByOrder` puts them: each read by
    /// name, and a pod's pre hooks ended before the next is taken. One the backup does not take
    /// (another namespace, not matching the selector) is passed over; one that does not exist is
    /// a warning, as Velero warns.
    async fn ordered(
        &mut self,
        listing: &Listing<'_>,
        order: &[String],
    ) -> Result<(), EngineError> {
        for entry in order {
            let (namespace, name) = match (entry.split_once('/'), &listing.caps.scope) {
                (Some((namespace, name)), Scope::Namespaced) => (Some(namespace), name),
                (None, Scope::Cluster) => (None, entry.as_str()),
                _ => {
                    let message = format!(
                        "orderedResources: {} entry {entry:?} is not {}",
                        listing.resource.plural,
                        if listing.caps.scope == Scope::Namespaced {
                            "namespace/name"
                        } else {
                            "a name"
                        }
                    );
                    self.record.warning(None, message);
                    continue;
                }
            };
            if namespace.is_some_and(|ns| !self.included.contains(ns)) {
                continue;
            }
            let one = Listing {
                namespace,
                ..listing.clone()
            };
            let object = match one.api(self.client).get_opt(name).await {
                Ok(Some(object)) => object,
                Ok(None) => {
                    let message = format!(
                        "orderedResources names {} {entry}, which does not exist",
                        listing.gr
                    );
                    self.record.warning(namespace, message);
                    continue;
                }
                Err(error) => {
                    let message = format!("reading {} {entry}: {error}", listing.gr);
                    self.record.error(namespace, message);
                    continue;
                }
            };
            let Some(item) = self.item(&one, object).await? else {
                continue;
            };
            self.taken_in_order.insert((
                listing.gr.clone(),
                namespace.map(str::to_string),
                name.to_string(),
            ));
            let mut page = one.page(1);
            page.items.push(item);
            if listing.gr != PODS {
                self.writer.write(page).await?;
                continue;
            }
            match self.pod(page).await? {
                Ok(ready) => {
                    self.write_ready(ready).await?;
                    self.pods_ready(true).await?;
                }
                Err(page) => self.writer.write(page).await?,
            }
        }
        Ok(())
    }

    /// One listing, page after page from its first.
    async fn listing(
        &mut self,
        listing: &Listing<'_>,
        api: Api<DynamicObject>,
        mut params: ListParams,
        mut page: kube::Result<ObjectList<DynamicObject>>,
    ) -> Result<(), EngineError> {
        // Items kept per namespace (the key None for cluster-scoped ones), for the log.
        let mut seen: BTreeMap<Option<String>, i64> = BTreeMap::new();
        loop {
            let listed = match page {
                Ok(listed) => listed,
                Err(error) => {
                    match listing_failed(&listing.gr, &error) {
                        Ok(gone) => self.record.warning(listing.namespace, gone),
                        Err(failed) => self.record.error(listing.namespace, failed),
                    }
                    break;
                }
            };
            let next = listed.metadata.continue_.clone().filter(|c| !c.is_empty());
            let (count, bytes) = self.page(listing, listed.items, &mut seen).await?;
            match next {
                Some(token) => {
                    params = params
                        .continue_token(&token)
                        .limit(next_page_size(count, bytes));
                    page = api.list(&params).await;
                }
                None => break,
            }
        }
        if !seen.is_empty() {
            self.related.backed_up.insert(listing.gr.clone());
        }
        let at_version = match listing.preferred {
            true => String::new(),
            false => format!(" at version {}", listing.resource.version),
        };
        for (namespace, count) in seen {
            let in_namespace = namespace
                .map(|ns| format!(" in namespace {ns}"))
                .unwrap_or_default();
            self.record.info(&format!(
                "backed up {count} {}{at_version}{in_namespace}",
                listing.gr
            ));
        }
        Ok(())
    }

    /// One listed page: each item through the actions, written (a pod with work, once its pre
    /// hooks end); the page's item count and bytes, which size the next page.
    async fn page(
        &mut self,
        listing: &Listing<'_>,
        objects: Vec<DynamicObject>,
        seen: &mut BTreeMap<Option<String>, i64>,
    ) -> Result<(usize, usize), EngineError> {
        let (listed, mut bytes) = (objects.len(), 0);
        let mut written = listing.page(listed);
        let mut ready = Vec::new();
        if listing.gr == CLAIMS {
            // Cut at once, each awaited as its item is written.
            self.snapshots.start(&objects);
        }
        for object in objects {
            let key = (
                listing.gr.clone(),
                object.metadata.namespace.clone(),
                object.name_any(),
            );
            if listing.preferred && self.taken_in_order.contains(&key) {
                continue;
            }
            let Some(item) = self.item(listing, object).await? else {
                continue;
            };
            bytes += item.json.len();
            if listing.gr == PODS {
                let mut page = listing.page(1);
                page.items.push(item);
                match self.pod(page).await? {
                    Ok(now) => {
                        ready.extend(now);
                        continue;
                    }
                    Err(mut page) => written.items.push(page.items.remove(0)),
                }
            } else {
                written.items.push(item);
            }
            let namespace = written.items.last().and_then(|i| i.namespace.clone());
            *seen.entry(namespace).or_default() += 1;
        }
        self.writer.write(written).await?;
        self.write_ready(ready).await?;
        self.pods_ready(false).await?;
        Ok((listed, bytes))
    }

    /// A listed object as its item, after the actions ran on it; None when it is not the
    /// backup's (another included namespace's, listed across the cluster, or made by an action).
    async fn item(
        &mut self,
        listing: &Listing<'_>,
        mut object: DynamicObject,
    ) -> Result<Option<writer::Item>, EngineError> {
        // Listed across the cluster, a namespaced item says its namespace itself.
        let namespace = match (listing.namespace, &listing.caps.scope) {
            (None, Scope::Namespaced) => match object.metadata.namespace.clone() {
                Some(ns) if self.included.contains(&ns) => Some(ns),
                _ => return Ok(None),
            },
            (namespace, _) => namespace.map(str::to_string),
        };
        object.types = Some(TypeMeta {
            api_version: listing.resource.api_version.clone(),
            kind: listing.resource.kind.clone(),
        });
        if self.actions.made_here(&listing.gr, &object)
            || !self.selection.labels.matches(object.labels())
        {
            return Ok(None);
        }
        if let Some(namespace) = &namespace {
            self.listed_in.insert(namespace.clone());
        }
        if listing.preferred {
            self.related
                .found(
                    &self.actions,
                    &listing.gr,
                    &mut object,
                    self.client,
                    self.record,
                )
                .await;
        }
        Ok(Some(writer::Item {
            namespace,
            json: serde_json::to_vec(&object).map_err(std::io::Error::from)?,
            name: object.metadata.name.take().unwrap_or_default(),
        }))
    }

    /// A pod's item (alone in `page`): taken by the pod work when it has hooks or volumes (then
    /// written once its pre hooks end), given back otherwise. The pods whose pre hooks ended
    /// meanwhile come back to be written.
    async fn pod(&mut self, page: Page) -> Result<Result<Vec<Ready>, Page>, EngineError> {
        let item = &page.items[0];
        let object: DynamicObject =
            serde_json::from_slice(&item.json).map_err(std::io::Error::from)?;
        if !self.pod_work.may_take(&object) {
            return Ok(Err(page));
        }
        let pod = serde_json::from_slice(&item.json).map_err(std::io::Error::from)?;
        Ok(self.pod_work.take(&pod, page, self.record).await)
    }

    /// Writes the pods whose pre hooks have ended (`all`: waits for every one).
    async fn pods_ready(&mut self, all: bool) -> Result<(), EngineError> {
        let ready = match all {
            true => self.pod_work.rest(self.record).await,
            false => self.pod_work.ready_now(self.record),
        };
        self.write_ready(ready).await
    }

    async fn write_ready(&mut self, ready: Vec<Ready>) -> Result<(), EngineError> {
        for Ready { page, then } in ready {
            self.writer.write(page).await?;
            self.pod_work.written(then);
        }
        let items = self.writer.items();
        self.progress.send_replace((items, items));
        Ok(())
    }

    /// The items the backup's items named, not written yet.
    async fn related(&mut self, plan: &Plan) -> Result<(), EngineError> {
        let cx = RelatedContext {
            client: self.client,
            plan,
            included: &self.included,
            cluster_scoped: self.selection.resources.takes_named_cluster_scoped(),
            actions: &self.actions,
        };
        self.related
            .back_up(&cx, &mut self.writer, self.record)
            .await
    }

    /// The written files, and what the backup's pods and claims came to.
    async fn finish(self) -> Result<Collected, EngineError> {
        let Run {
            writer,
            pod_work,
            snapshots,
            record,
            ..
        } = self;
        let items = writer.items();
        let written = writer.finish().await?;
        let pod_volume_backups = pod_work.volume_backups(record).await;
        let hook_results = pod_work.finish(record).await;
        let snapshots = snapshots.finish().await;
        for cut in &snapshots {
            let namespace = cut.skipped.as_ref().map(|s| s.pvc_namespace.as_str());
            if let Some(warning) = &cut.warning {
                record.warning(namespace, warning.clone());
            }
            if let Some(error) = &cut.error {
                record.error(None, error.clone());
            }
            if let Some(snapshot) = &cut.snapshot {
                record.info(&format!(
                    "claim {}/{}: VolumeSnapshot {} cut with class {}, handle {}",
                    snapshot.namespace,
                    snapshot.claim,
                    snapshot.volume_snapshot,
                    snapshot.class,
                    snapshot.handle
                ));
            }
        }
        Ok(Collected {
            tarball: written.tarball,
            resource_list: written.resource_list,
            items,
            hook_results,
            pod_volume_backups,
            snapshots,
        })
    }
}

const CLAIMS: &str = "persistentvolumeclaims";
const CUSTOM_RESOURCE_DEFINITIONS: &str = "customresourcedefinitions.apiextensions.k8s.io";
const PODS: &str = "pods";

/// The items that the backup's items depend on (named by item actions, and the custom resources'
/// definitions), backed up after the listings unless written already.
struct Related {
    wanted: VecDeque<ItemRef>,
    /// The items written of the group-resources that may be added.
    written: BTreeSet<ItemRef>,
    added_later: BTreeSet<&'static str>,
    /// The group-resources of which at least one item is in the backup.
    backed_up: BTreeSet<String>,
}

struct RelatedContext<'a> {
    client: &'a Client,
    plan: &'a Plan,
    included: &'a BTreeSet<String>,
    /// Whether cluster-scoped items other items name are taken.
    cluster_scoped: bool,
    actions: &'a Actions,
}

impl Related {
    /// Notes an item about to be written: what its actions name, and the item itself when its
    /// resource is one that may be added.
    async fn found(
        &mut self,
        actions: &Actions,
        gr: &str,
        object: &mut DynamicObject,
        client: &Client,
        record: &mut Recorder,
    ) {
        if self.added_later.contains(gr) {
            self.written.insert(ItemRef {
                group_resource: gr.to_string(),
                namespace: object.metadata.namespace.clone(),
                name: object.metadata.name.clone().unwrap_or_default(),
            });
        }
        if !actions.applies_to(gr) {
            return;
        }
        let (named, errors) = actions.run(gr, object, client).await;
        self.wanted.extend(named);
        for error in errors {
            let message = format!("{gr} {}: {error}", shown(object));
            record.error(object.metadata.namespace.as_deref(), message);
        }
    }

    /// Backs up every related item not written yet that the backup's filters let in, as Velero
    /// does with its actions' additional items: the label selector does not apply (a pod's claim
    /// is taken without its label), but the resource and namespace filters, `includeClusterResources:
    /// false` and the exclude label do.
    async fn back_up(
        &mut self,
        cx: &RelatedContext<'_>,
        writer: &mut ItemWriter,
        record: &mut Recorder,
    ) -> Result<(), EngineError> {
        let mut definitions_looked_for = false;
        loop {
            while let Some(wanted) = self.wanted.pop_front() {
                if self.written.insert(wanted.clone()) {
                    self.related_item(cx, wanted, writer, record).await?;
                }
            }
            if definitions_looked_for {
                return Ok(());
            }
            // A custom resource's definition goes with it (Velero's backupCRD): a definition's
            // name is its group-resource, and only a group with a dot can be a custom one.
            definitions_looked_for = true;
            for gr in &self.backed_up {
                if gr.matches('.').count() >= 2 {
                    self.wanted.push_back(ItemRef {
                        group_resource: CUSTOM_RESOURCE_DEFINITIONS.into(),
                        namespace: None,
                        name: gr.clone(),
                    });
                }
            }
        }
    }
    /// Backs up one item the backup's items named, if the backup's filters let it in.
    async fn related_item(
        &mut self,
        cx: &RelatedContext<'_>,
        wanted: ItemRef,
        writer: &mut ItemWriter,
        record: &mut Recorder,
    ) -> Result<(), EngineError> {
        let Some((resource, caps)) = cx
            .plan
            .resources
            .iter()
            .find(|(r, _)| group_resource(&r.group, &r.plural) == wanted.group_resource)
        else {
            record.info(&format!(
                "not backing up {wanted}, which a backed-up item needs: the backup's \
                 resource filters leave it out"
            ));
            return Ok(());
        };
        let allowed = match (&caps.scope, wanted.namespace.as_deref()) {
            (Scope::Namespaced, Some(ns)) => cx.included.contains(ns),
            (Scope::Cluster, None) => cx.cluster_scoped,
            _ => false,
        };
        if !allowed {
            record.info(&format!(
                "not backing up {wanted}, which a backed-up item needs: the backup leaves \
                 its namespace or cluster-scoped resources out"
            ));
            return Ok(());
        }
        let api: Api<DynamicObject> = match wanted.namespace.as_deref() {
            Some(ns) => Api::namespaced_with(cx.client.clone(), ns, resource),
            None => Api::all_with(cx.client.clone(), resource),
        };
        let mut object = match api.get_opt(&wanted.name).await {
            Ok(Some(object)) => object,
            Ok(None) => {
                if wanted.group_resource != CUSTOM_RESOURCE_DEFINITIONS {
                    let message = format!("{wanted}, which a backed-up item needs, was not found");
                    record.warning(wanted.namespace.as_deref(), message);
                }
                return Ok(());
            }
            Err(error) => {
                let message = format!("getting {wanted}: {error}");
                record.error(wanted.namespace.as_deref(), message);
                return Ok(());
            }
        };
        let labelled_out = object
            .labels()
            .get(labels::EXCLUDE_FROM_BACKUP)
            .is_some_and(|v| v == "true");
        if labelled_out || object.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        object.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
        if cx.actions.applies_to(&wanted.group_resource) {
            let (named, errors) = cx
                .actions
                .run(&wanted.group_resource, &mut object, cx.client)
                .await;
            self.wanted.extend(named);
            for error in errors {
                record.error(wanted.namespace.as_deref(), error);
            }
        }
        let json = serde_json::to_vec(&object).map_err(std::io::Error::from)?;
        writer
            .write(Page {
                gr: wanted.group_resource.clone(),
                version: resource.version.clone(),
                preferred: true,
                key: resource_list::key(resource),
                items: vec![writer::Item {
                    namespace: wanted.namespace.clone(),
                    name: wanted.name.clone(),
                    json,
                }],
            })
            .await?;
        record.info(&format!("backed up {wanted}, which a backed-up item needs"));
        self.backed_up.insert(wanted.group_resource);
        Ok(())
    }
}

/// What a failed listing of `gr` comes to: `Ok` of a warning when the resource is not served any
/// more (a 404 for a list: its definition, a CRD, was removed since discovery, so there is
/// nothing of it to back up; Velero counts an error, and the backup ends PartiallyFailed for a
/// definition someone else removed); `Err` of an error otherwise.
fn listing_failed(gr: &str, error: &kube::Error) -> Result<String, String> {
    match error {
        kube::Error::Api(status) if status.code == 404 => Ok(format!(
            "{gr} is no longer served (its definition was removed during the backup): none backed up"
        )),
        error => Err(format!("listing {gr}: {error}")),
    }
}

fn shown(object: &DynamicObject) -> String {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    match &object.metadata.namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// What to back up: the namespaces that exist and are included, and the resources to list.
async fn plan(
    client: &Client,
    selection: &Selection,
    record: &mut Recorder,
) -> Result<Plan, EngineError> {
    let (namespaces, existing) = included_namespaces(client, &selection.namespaces, record).await?;
    let cluster_wide = namespaces.len() * 2 >= existing && !namespaces.is_empty();
    let (resources, other_versions, cluster_scoped_listed) =
        planned_resources(client, selection, record).await?;
    Ok(Plan {
        namespaces,
        cluster_wide,
        resources,
        other_versions,
        cluster_scoped_listed,
    })
}

/// The namespaces that exist and the filter includes, those labelled to be excluded left out (as
/// if in `excludedNamespaces`, as Velero's backup controller makes it); and how many exist.
async fn included_namespaces(
    client: &Client,
    namespace_filter: &IncludesExcludes,
    record: &mut Recorder,
) -> Result<(Vec<String>, usize), EngineError> {
    let mut all_namespaces = Vec::new();
    let mut labelled_out = BTreeSet::new();
    for namespace in Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(EngineError::Namespaces)?
        .items
    {
        let excluded = namespace
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::EXCLUDE_FROM_BACKUP))
            .is_some_and(|v| v == "true");
        if let Some(name) = namespace.metadata.name {
            if excluded {
                labelled_out.insert(name.clone());
            }
            all_namespaces.push(name);
        }
    }
    for wanted in namespace_filter.unmatched_includes(&all_namespaces) {
        let message = format!("namespace {wanted} not found: nothing backed up from it");
        record.warning(Some(wanted), message);
    }
    let existing = all_namespaces.len();
    let namespaces: Vec<String> = all_namespaces
        .into_iter()
        .filter(|ns| namespace_filter.should_include(ns))
        .filter(|ns| {
            let out = labelled_out.contains(ns);
            if out {
                record.info(&format!(
                    "namespace {ns} is labelled {}=true: left out with all it holds",
                    labels::EXCLUDE_FROM_BACKUP
                ));
            }
            !out
        })
        .collect();
    Ok((namespaces, existing))
}

/// The resources the backup may take, namespaces first (as Velero writes them), then by
/// group-resource for a stable tarball; their other versions, when the backup takes every
/// version; and the cluster-scoped ones it lists.
async fn planned_resources(
    client: &Client,
    selection: &Selection,
    record: &mut Recorder,
) -> Result<(Resources, Resources, BTreeSet<String>), EngineError> {
    let namespace_filter = &selection.namespaces;
    let served = crate::domain::discovery::discover(client)
        .await
        .map_err(EngineError::Discovery)?;
    for skipped in served.skipped {
        record.warning(None, skipped);
    }
    let names = |resource: &ApiResource| {
        let gr = group_resource(&resource.group, &resource.plural);
        let kind = resource.kind.to_lowercase();
        [resource.plural.clone(), gr, kind]
    };
    let scope_of = |name: &str| {
        served
            .resources
            .iter()
            .find(|(r, _)| names(r).iter().any(|n| n == name))
            .map(|(_, caps)| caps.scope == Scope::Namespaced)
    };
    let resource_filter = selection.resources.clone().resolved(scope_of);
    let mut resources = Vec::new();
    let mut cluster_scoped_listed = BTreeSet::new();
    for (resource, caps) in served.resources {
        if !caps.supports_operation(verbs::LIST) {
            continue;
        }
        let [plural, gr, kind] = names(&resource);
        let names = [plural.as_str(), gr.as_str(), kind.as_str()];
        let namespaced = caps.scope == Scope::Namespaced;
        if !resource_filter.admits(&names, namespaced) {
            continue;
        }
        if !namespaced && resource_filter.lists_cluster_scoped(&names, namespace_filter) {
            cluster_scoped_listed.insert(gr.clone());
        }
        resources.push((resource, caps));
    }
    resources.sort_by_key(|(r, _)| {
        (
            r.plural != "namespaces" || !r.group.is_empty(),
            group_resource(&r.group, &r.plural),
        )
    });
    let other_versions = match selection.every_version {
        true => (served.other_versions.into_iter())
            .filter(|(other, caps)| {
                caps.supports_operation(verbs::LIST)
                    && (resources.iter())
                        .any(|(r, _)| r.group == other.group && r.plural == other.plural)
            })
            .collect(),
        false => Vec::new(),
    };
    Ok((resources, other_versions, cluster_scoped_listed))
}

type Resources = Vec<(ApiResource, ApiCapabilities)>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_removed_since_discovery_is_a_warning_and_other_failures_errors() {
        let answered = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                message: "404 page not found".into(),
                ..Default::default()
            }))
        };
        assert_eq!(
            listing_failed("gauges.example.com", &answered(404)),
            Ok(
                "gauges.example.com is no longer served (its definition was removed during the \
                backup): none backed up"
                    .into()
            )
        );
        assert!(
            listing_failed("pods", &answered(500))
                .unwrap_err()
                .starts_with("listing pods: ")
        );
        assert!(listing_failed("pods", &answered(403)).is_err());
    }

    #[test]
    fn pages_hold_what_fits_in_the_byte_budget() {
        // Small ConfigMaps: the largest page.
        assert_eq!(next_page_size(4, 4 * 600), MAX_PAGE_SIZE);
        // Secrets of 1 MiB: four a page.
        assert_eq!(next_page_size(4, 4 << 20), 4);
        // One item larger than the budget: one a page, never none.
        assert_eq!(next_page_size(1, 20 << 20), 1);
        // An empty page says nothing of the sizes.
        assert_eq!(next_page_size(0, 0), MAX_PAGE_SIZE);
    }
}
