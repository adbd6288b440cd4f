//! What the cluster serves, for backups and restores alike: every API group queried at once, and
//! a group whose discovery fails (an aggregated API whose backend is down) skipped with a warning
//! that names it, as Velero skips it, instead of failing the whole operation.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::future::join_all;
use kube::Client;
use kube::discovery::{ApiCapabilities, ApiGroup, ApiResource};

/// The resources the cluster serves, and the groups skipped.
pub struct Served {
    /// Every resource at its preferred version: the group's preferred version's resources, then
    /// those only other versions serve, each at the first of them (Velero's
    /// `ServerPreferredResources`).
    pub resources: Vec<(ApiResource, ApiCapabilities)>,
    /// Every resource at each other version its group serves it in: what a backup of every
    /// version (Velero's `EnableAPIGroupVersions`) copies too.
    pub other_versions: Vec<(ApiResource, ApiCapabilities)>,
    /// Each group's versions, by name (`""` for the core group).
    pub groups: BTreeMap<String, GroupVersions>,
    /// One message per group that could not be discovered, naming it and why.
    pub skipped: Vec<String>,
}

/// The versions a group serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupVersions {
    pub preferred: String,
    /// Every version, by Kubernetes' version priority (`v2` before `v1` before `v1beta1`).
    pub versions: Vec<String>,
}

/// How long one group may take to answer. The client retries a 503 (which is what an aggregated
/// API whose backend is down answers) with backoff for minutes; a backup must not wait that long
/// for a group it will skip anyway.
const GROUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Served resources keyed as a backup's folders name them (`deployments.apps`).
pub fn by_group_resource(
    resources: Vec<(ApiResource, ApiCapabilities)>,
) -> BTreeMap<String, (ApiResource, ApiCapabilities)> {
    resources
        .into_iter()
        .map(|(resource, caps)| {
            let gr = ark_storage::tarball::group_resource(&resource.group, &resource.plural);
            (gr, (resource, caps))
        })
        .collect()
}

/// Discovers every group in parallel. Only the list of groups itself must answer.
pub async fn discover(client: &Client) -> kube::Result<Served> {
    let groups = client.list_api_groups().await?;
    let names = std::iter::once(ApiGroup::CORE_GROUP.to_string())
        .chain(groups.groups.into_iter().map(|g| g.name));
    let found = join_all(names.map(|name| async move {
        let group = tokio::time::timeout(GROUP_TIMEOUT, kube::discovery::group(client, &name))
            .await
            .map_err(|_| format!("no answer within {}s", GROUP_TIMEOUT.as_secs()))
            .and_then(|group| group.map_err(|e| e.to_string()));
        (name, group)
    }))
    .await;
    let mut served = Served {
        resources: Vec::new(),
        other_versions: Vec::new(),
        groups: BTreeMap::new(),
        skipped: Vec::new(),
    };
    for (name, group) in found {
        match group {
            Ok(group) => served.add(&group),
            Err(error) => served.skipped.push(format!(
                "API group {name:?} could not be discovered ({error}): its resources are skipped"
            )),
        }
    }
    Ok(served)
}

impl Served {
    fn add(&mut self, group: &ApiGroup) {
        let preferred = group.preferred_version_or_latest().to_string();
        // kube sorts a group's versions by Kubernetes' priority.
        let others: Vec<&str> = group.versions().filter(|v| *v != preferred).collect();
        let mut taken: BTreeSet<String> = BTreeSet::new();
        for version in std::iter::once(preferred.as_str()).chain(others) {
            for (resource, caps) in group.versioned_resources(version) {
                if taken.insert(resource.plural.clone()) {
                    self.resources.push((resource, caps));
                } else {
                    self.other_versions.push((resource, caps));
                }
            }
        }
        let versions = group.versions().map(str::to_string).collect();
        let versions = GroupVersions {
            preferred,
            versions,
        };
        self.groups.insert(group.name().to_string(), versions);
    }
}
