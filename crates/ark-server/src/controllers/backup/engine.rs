//! Collecting a backup: discovery, filters, paginated lists, items written to the tarball as they
//! arrive.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use ark_api::{BackupSpec, labels};
use ark_storage::tarball::group_resource;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DynamicObject, ListParams, TypeMeta};
use kube::core::Expression;
use kube::discovery::{ApiCapabilities, Scope, verbs};
use kube::{Api, Client};

use super::writer::{self, ItemWriter, Page};
use crate::shared::filter::{IncludesExcludes, include_cluster_scoped, resource_names};
use crate::shared::operation_log::{Level, OperationLog};
use crate::shared::results::Results;

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

/// One list of a backup: a resource, in one namespace or across the cluster.
struct Listing<'a> {
    resource: &'a ApiResource,
    caps: &'a ApiCapabilities,
    gr: String,
    /// The resource list's key: `v1/ConfigMap`, `apps/v1/Deployment`.
    key: String,
    namespace: Option<&'a str>,
}

impl Listing<'_> {
    fn api(&self, client: &Client) -> Api<DynamicObject> {
        match self.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, self.resource),
            None => Api::all_with(client.clone(), self.resource),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("discovering the cluster's resources: {0}")]
    Discovery(kube::Error),
    #[error("invalid label selector: {0}")]
    Selector(String),
    #[error("writing scratch files: {0}")]
    Io(#[from] std::io::Error),
    #[error("listing namespaces: {0}")]
    Namespaces(kube::Error),
}

pub struct Collected {
    pub tarball: std::fs::File,
    pub resource_list: std::fs::File,
    pub results: Results,
    pub items: i64,
}

struct Plan {
    namespaces: Vec<String>,
    /// List namespaced resources once across the cluster, keeping the included namespaces' items,
    /// rather than once per namespace: when at least half of the namespaces are included, that
    /// reads at most twice what is kept, in one paged list instead of one per namespace.
    cluster_wide: bool,
    resources: Vec<(ApiResource, ApiCapabilities)>,
    cluster_scoped: bool,
    namespace_resource_included: bool,
}

pub async fn collect(
    client: &Client,
    spec: &BackupSpec,
    scratch: &Path,
    log: &mut OperationLog,
    progress: &tokio::sync::watch::Sender<(i64, i64)>,
) -> Result<Collected, EngineError> {
    let mut results = Results::default();
    let mut selector = match &spec.label_selector {
        Some(selector) => kube::core::Selector::try_from(selector.clone())
            .map_err(|e| EngineError::Selector(e.to_string()))?,
        None => kube::core::Selector::default(),
    };
    // Left out by the API server, whatever else selects them (an item without the label matches).
    selector.extend([Expression::NotEqual(
        labels::EXCLUDE_FROM_BACKUP.into(),
        "true".into(),
    )]);
    let plan = plan(client, spec, log, &mut results).await?;
    let included: BTreeSet<&str> = plan.namespaces.iter().map(String::as_str).collect();
    let mut writer = ItemWriter::start(scratch)?;
    let mut items = 0i64;

    // What to list, in the tarball's order; the Namespace objects (first) written on the way.
    let mut listings = Vec::new();
    for (resource, caps) in &plan.resources {
        let gr = group_resource(&resource.group, &resource.plural);
        let key = if resource.group.is_empty() {
            format!("{}/{}", resource.version, resource.kind)
        } else {
            format!("{}/{}/{}", resource.group, resource.version, resource.kind)
        };
        let scopes: Vec<Option<&str>> = match caps.scope {
            Scope::Namespaced if plan.cluster_wide => vec![None],
            Scope::Namespaced => plan.namespaces.iter().map(|ns| Some(ns.as_str())).collect(),
            Scope::Cluster if resource.group.is_empty() && resource.plural == "namespaces" => {
                // The Namespace objects of the namespaces backed up, whatever the selector says:
                // a restore needs them.
                if plan.namespace_resource_included {
                    let mut page = Page {
                        gr: gr.clone(),
                        version: resource.version.clone(),
                        key: key.clone(),
                        items: Vec::new(),
                    };
                    for name in &plan.namespaces {
                        let api: Api<Namespace> = Api::all(client.clone());
                        match api.get_opt(name).await {
                            // Serialized with its apiVersion and kind, as Velero writes it.
                            Ok(Some(namespace)) => page.items.push(writer::Item {
                                namespace: None,
                                name: name.clone(),
                                json: serde_json::to_vec(&namespace)
                                    .map_err(std::io::Error::from)?,
                            }),
                            Ok(None) => {}
                            Err(error) => {
                                let message = format!("getting namespace {name}: {error}");
                                log.log(Level::Error, &message);
                                results.errors.add(Some(name), message);
                            }
                        }
                    }
                    items += page.items.len() as i64;
                    writer = writer.write(page).await?;
                }
                continue;
            }
            Scope::Cluster if plan.cluster_scoped => vec![None],
            Scope::Cluster => continue,
        };
        for namespace in scopes {
            listings.push(Listing {
                resource,
                caps,
                gr: gr.clone(),
                key: key.clone(),
                namespace,
            });
        }
    }
    // The first pages are asked for several at a time: most resources have one page or none,
    // and a backup of one namespace lists dozens of them. They are written in order, each
    // listing's next pages asked for as it is written.
    let first_params = || {
        ListParams::default()
            .limit(FIRST_PAGE_SIZE)
            .labels_from(&selector)
    };
    // The futures own what they use (not a borrowed `Listing`), so the stream stays `Send`.
    let mut first_pages = futures::stream::iter(0..listings.len())
        .map(|index| {
            let params = first_params();
            let api = listings[index].api(client);
            async move {
                let page = api.list(&params).await;
                (index, api, params, page)
            }
        })
        .buffered(LISTS_AT_ONCE);
    while let Some((index, api, mut params, mut page)) = first_pages.next().await {
        let Listing {
            resource,
            caps,
            gr,
            key,
            namespace,
        } = &listings[index];
        let namespace = *namespace;
        // Items kept per namespace (the key None for cluster-scoped ones), for the log.
        let mut seen: BTreeMap<Option<String>, i64> = BTreeMap::new();
        loop {
            let listed_page = match page {
                Ok(page) => page,
                Err(error) => {
                    let message = format!("listing {gr}: {error}");
                    log.log(Level::Error, &message);
                    results.errors.add(namespace, message);
                    break;
                }
            };
            let next = listed_page
                .metadata
                .continue_
                .clone()
                .filter(|c| !c.is_empty());
            let (listed, mut bytes) = (listed_page.items.len(), 0);
            let mut written = Page {
                gr: gr.clone(),
                version: resource.version.clone(),
                key: key.clone(),
                items: Vec::with_capacity(listed),
            };
            for mut object in listed_page.items {
                // Listed across the cluster, a namespaced item says its namespace itself.
                let item_namespace = match (namespace, &caps.scope) {
                    (None, Scope::Namespaced) => match object.metadata.namespace.clone() {
                        Some(ns) if included.contains(ns.as_str()) => Some(ns),
                        _ => continue,
                    },
                    (namespace, _) => namespace.map(str::to_string),
                };
                object.types = Some(TypeMeta {
                    api_version: resource.api_version.clone(),
                    kind: resource.kind.clone(),
                });
                let json = serde_json::to_vec(&object).map_err(std::io::Error::from)?;
                bytes += json.len();
                items += 1;
                *seen.entry(item_namespace.clone()).or_default() += 1;
                written.items.push(writer::Item {
                    namespace: item_namespace,
                    name: object.metadata.name.unwrap_or_default(),
                    json,
                });
            }
            writer = writer.write(written).await?;
            progress.send_replace((items, items));
            match next {
                Some(token) => {
                    params = params
                        .continue_token(&token)
                        .limit(next_page_size(listed, bytes));
                    page = api.list(&params).await;
                }
                None => break,
            }
        }
        for (namespace, count) in seen {
            log.info(&format!(
                "backed up {count} {gr}{}",
                namespace
                    .map(|ns| format!(" in namespace {ns}"))
                    .unwrap_or_default()
            ));
        }
    }
    let written = writer.finish().await?;
    Ok(Collected {
        tarball: written.tarball,
        resource_list: written.resource_list,
        results,
        items,
    })
}

/// What to back up: the namespaces that exist and are included, and the resources to list.
async fn plan(
    client: &Client,
    spec: &BackupSpec,
    log: &mut OperationLog,
    results: &mut Results,
) -> Result<Plan, EngineError> {
    let namespace_filter = IncludesExcludes::new(
        spec.included_namespaces.as_ref(),
        spec.excluded_namespaces.as_ref(),
    );
    let resource_filter = IncludesExcludes::new(
        spec.included_resources.as_ref(),
        spec.excluded_resources.as_ref(),
    );
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
        log.log(Level::Warning, &message);
        results.warnings.add(Some(wanted), message);
    }
    let existing = all_namespaces.len();
    let namespaces: Vec<String> = all_namespaces
        .into_iter()
        .filter(|ns| namespace_filter.should_include(ns))
        .filter(|ns| {
            // As if in excludedNamespaces, as Velero's backup controller makes it.
            let out = labelled_out.contains(ns);
            if out {
                log.info(&format!(
                    "namespace {ns} is labelled {}=true: left out with all it holds",
                    labels::EXCLUDE_FROM_BACKUP
                ));
            }
            !out
        })
        .collect();
    let cluster_wide = namespaces.len() * 2 >= existing && !namespaces.is_empty();

    let served = crate::shared::discovery::discover(client)
        .await
        .map_err(EngineError::Discovery)?;
    for skipped in served.skipped {
        log.log(Level::Warning, &skipped);
        results.warnings.add(None, skipped);
    }
    let mut resources = Vec::new();
    let mut namespace_resource_included = false;
    for (resource, caps) in served.resources {
        if !caps.supports_operation(verbs::LIST) {
            continue;
        }
        let gr = group_resource(&resource.group, &resource.plural);
        let kind = resource.kind.to_lowercase();
        if !resource_filter.should_include_any(&resource_names(&resource.plural, &gr, &kind)) {
            continue;
        }
        if gr == "namespaces" {
            namespace_resource_included = true;
        }
        resources.push((resource, caps));
    }
    // Namespaces first, as Velero writes them, then by group-resource for a stable tarball.
    resources.sort_by_key(|(r, _)| {
        (
            r.plural != "namespaces" || !r.group.is_empty(),
            group_resource(&r.group, &r.plural),
        )
    });
    Ok(Plan {
        namespaces,
        cluster_wide,
        resources,
        cluster_scoped: include_cluster_scoped(spec.include_cluster_resources, &namespace_filter),
        namespace_resource_included,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
