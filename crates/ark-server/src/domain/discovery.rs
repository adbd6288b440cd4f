//! What the cluster serves, for backups and restores alike: every API group queried at once, and
//! a group whose discovery fails (an aggregated API whose backend is down) skipped with a warning
//! that names it, as Velero skips it, instead of failing the whole operation.

use std::time::Duration;

use futures::future::join_all;
use kube::Client;
use kube::discovery::{ApiCapabilities, ApiGroup, ApiResource};

/// The resources the cluster serves (each group's preferred version), and the groups skipped.
pub struct Served {
    pub resources: Vec<(ApiResource, ApiCapabilities)>,
    /// One message per group that could not be discovered, naming it and why.
    pub skipped: Vec<String>,
}

/// How long one group may take to answer. The client retries a 503 (which is what an aggregated
/// API whose backend is down answers) with backoff for minutes; a backup must not wait that long
/// for a group it will skip anyway.
const GROUP_TIMEOUT: Duration = Duration::from_secs(5);

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
        skipped: Vec::new(),
    };
    for (name, group) in found {
        match group {
            Ok(group) => served.resources.extend(group.recommended_resources()),
            Err(error) => served.skipped.push(format!(
                "API group {name:?} could not be discovered ({error}): its resources are skipped"
            )),
        }
    }
    Ok(served)
}
