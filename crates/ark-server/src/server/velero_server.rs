//! ark's server and Velero's must not act on one namespace at once: both would claim the same
//! Backups, Restores and DeleteBackupRequests. Velero's server takes no lease, so ark looks for it
//! the two ways it can be seen: its Deployment (as `velero install` creates it) with a replica
//! available, and an answer to a ServerStatusRequest (what `velero version` asks; only a running
//! Velero server processes one, wherever it runs).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

/// Velero's server was found active in the namespace.
#[derive(Debug, thiserror::Error)]
pub enum VeleroServerActive {
    #[error(
        "Velero's server is running in namespace {namespace}: Deployment {namespace}/{deployment} \
         has {available} available replica(s). ark's server and Velero's cannot act on one \
         namespace at once; scale the Deployment to 0 or run ark in another namespace"
    )]
    Deployment {
        namespace: String,
        deployment: String,
        available: i32,
    },
    #[error(
        "Velero's server {version} is running in namespace {namespace}: it answered \
         ServerStatusRequest {namespace}/{request}. ark's server and Velero's cannot act on one \
         namespace at once; stop it or run ark in another namespace"
    )]
    StatusRequest {
        namespace: String,
        request: String,
        version: String,
    },
}

/// Fails when Velero's server is active in `namespace`; `answer_timeout` bounds how long a
/// ServerStatusRequest may go unanswered before ark concludes that no Velero server runs.
pub async fn ensure_absent(
    client: &kube::Client,
    namespace: &str,
    answer_timeout: Duration,
) -> Result<(), VeleroServerActive> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    match deployments.list(&Default::default()).await {
        Ok(list) => {
            if let Some((deployment, available)) = active_velero_deployment(&list.items) {
                return Err(VeleroServerActive::Deployment {
                    namespace: namespace.into(),
                    deployment,
                    available,
                });
            }
        }
        Err(error) => tracing::warn!(
            "cannot list Deployments in {namespace} to look for Velero's server: {error}"
        ),
    }
    match status_request_answer(client, namespace, answer_timeout).await {
        Ok(Some((request, version))) => Err(VeleroServerActive::StatusRequest {
            namespace: namespace.into(),
            request,
            version,
        }),
        Ok(None) => Ok(()),
        // No ServerStatusRequest CRD, or no right to create one: no Velero server can answer
        // there, or ark cannot tell; the Deployment check above still stands.
        Err(error) => {
            tracing::warn!("cannot ask for Velero's server in {namespace}: {error}");
            Ok(())
        }
    }
}

/// The Deployment `velero install` creates (named `velero`, or labelled `component: velero`
/// and `deploy: velero`) with at least one available replica, and that count.
fn active_velero_deployment(deployments: &[Deployment]) -> Option<(String, i32)> {
    deployments.iter().find_map(|deployment| {
        let labels = deployment.labels();
        let is_velero = deployment.name_any() == "velero"
            || (labels.get("component").map(String::as_str) == Some("velero")
                && labels.get("deploy").map(String::as_str) == Some("velero"));
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        (is_velero && available > 0).then(|| (deployment.name_any(), available))
    })
}

/// Creates a ServerStatusRequest and waits up to `timeout` for a server to process it: the
/// request's name and the server's version when one does. The request is removed either way.
async fn status_request_answer(
    client: &kube::Client,
    namespace: &str,
    timeout: Duration,
) -> kube::Result<Option<(String, String)>> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "velero.io",
        "v1",
        "ServerStatusRequest",
    ));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let mut request = DynamicObject::new("", &resource).within(namespace);
    request.metadata.name = None;
    request.metadata.generate_name = Some("ark-server-probe-".into());
    request.data = serde_json::json!({ "spec": {} });
    let request = api.create(&PostParams::default(), &request).await?;
    let name = request.name_any();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let answered = watcher(api.clone(), config)
        .applied_objects()
        .filter_map(|object| async move { object.ok().and_then(|o| processed_version(&o)) });
    let answer = tokio::time::timeout(timeout, std::pin::pin!(answered).next())
        .await
        .ok()
        .flatten();
    if let Err(error) = api.delete(&name, &DeleteParams::background()).await {
        tracing::warn!("removing ServerStatusRequest {namespace}/{name}: {error}");
    }
    Ok(answer.map(|version| (name, version)))
}

/// `status.serverVersion` of a ServerStatusRequest processed by a Velero server (ark's leader,
/// which answers them too, names itself: a standby replica starting beside it goes on).
fn processed_version(request: &DynamicObject) -> Option<String> {
    let status = &request.data["status"];
    let version = status["serverVersion"]
        .as_str()
        .unwrap_or("(unknown version)");
    (status["phase"] == "Processed" && !version.starts_with(ark_api::ARK_SERVER_VERSION_PREFIX))
        .then(|| version.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(name: &str, labels: serde_json::Value, available: Option<i32>) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": labels },
            "status": { "availableReplicas": available },
        }))
        .unwrap()
    }

    #[test]
    fn velero_s_deployment_counts_only_with_a_replica_available() {
        let none = serde_json::json!({});
        assert_eq!(
            active_velero_deployment(&[
                deployment("web", none.clone(), Some(2)),
                deployment("velero", none.clone(), Some(1)),
            ]),
            Some(("velero".into(), 1))
        );
        assert_eq!(
            active_velero_deployment(&[deployment("velero", none.clone(), Some(0))]),
            None
        );
        assert_eq!(
            active_velero_deployment(&[deployment("velero", none.clone(), None)]),
            None
        );
        let installed = serde_json::json!({ "component": "velero", "deploy": "velero" });
        assert_eq!(
            active_velero_deployment(&[deployment("backup-server", installed, Some(1))]),
            Some(("backup-server".into(), 1))
        );
    }

    #[test]
    fn only_a_processed_request_is_an_answer() {
        let mut request = DynamicObject::new(
            "r",
            &ApiResource::from_gvk(&GroupVersionKind::gvk(
                "velero.io",
                "v1",
                "ServerStatusRequest",
            )),
        );
        request.data = serde_json::json!({ "status": { "phase": "New" } });
        assert_eq!(processed_version(&request), None);
        request.data =
            serde_json::json!({ "status": { "phase": "Processed", "serverVersion": "v1.18.3" } });
        assert_eq!(processed_version(&request), Some("v1.18.3".into()));
        request.data =
            serde_json::json!({ "status": { "phase": "Processed", "serverVersion": "ark 0.1.0" } });
        assert_eq!(processed_version(&request), None, "ark's own leader");
    }
}
