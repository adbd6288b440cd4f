//! What the backup and restore controllers share: each carries out a long operation on an object
//! whose status lives in the object, with a phase and progress, one controller loop each.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ark_api::{Backup, BackupPhase, Restore, RestorePhase};
use futures::StreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::{Context, patch};

pub trait Operation:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// `backup` or `restore`, for messages.
    const KIND: &'static str;
    /// The progress field counting items done.
    const DONE_FIELD: &'static str;
    fn is_in_progress(&self) -> bool;
}

impl Operation for Backup {
    const KIND: &'static str = "backup";
    const DONE_FIELD: &'static str = "itemsBackedUp";
    fn is_in_progress(&self) -> bool {
        self.phase() == BackupPhase::InProgress
    }
}

impl Operation for Restore {
    const KIND: &'static str = "restore";
    const DONE_FIELD: &'static str = "itemsRestored";
    fn is_in_progress(&self) -> bool {
        self.phase() == RestorePhase::InProgress
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileError(#[from] kube::Error);

/// Marks what a previous server left InProgress as Failed (as Velero does: it cannot be resumed),
/// then runs `reconcile` for every object of the kind in the server's namespace.
pub async fn run<K, F, Fut>(ctx: Arc<Context>, reconcile: F)
where
    K: Operation,
    F: FnMut(Arc<K>, Arc<Context>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    if let Ok(list) = api.list(&Default::default()).await {
        for object in list.items.iter().filter(|o| o.is_in_progress()) {
            let reason = format!(
                "found a {} with status InProgress during the server starting, mark it as Failed",
                K::KIND
            );
            let status = json!({ "phase": "Failed", "failureReason": reason, "completionTimestamp": patch::now() });
            let _ = patch::object_status(&api, &object.name_any(), status).await;
        }
    }
    let error_policy = |_: Arc<K>, error: &ReconcileError, _: Arc<Context>| {
        tracing::warn!("{} reconcile failed: {error}", K::KIND);
        Action::requeue(Duration::from_secs(5))
    };
    Controller::new(api, watcher::Config::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(ctx.workers))
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// Writes the final status: the operation's own on success, `Failed` with the reason otherwise.
pub async fn finish<K: Operation>(
    api: &Api<K>,
    name: &str,
    outcome: Result<serde_json::Value, String>,
) -> kube::Result<()> {
    let status = outcome.unwrap_or_else(|reason| {
        json!({ "phase": "Failed", "failureReason": reason, "completionTimestamp": patch::now() })
    });
    patch::object_status(api, name, status).await.map(|_| ())
}

/// The object as the API has it now. An operation runs once: deciding on the controller's cache,
/// which may not have seen the InProgress this server wrote, could start it twice.
pub async fn fresh<K: Operation>(ctx: &Context, cached: &K) -> kube::Result<Option<K>> {
    Api::<K>::namespaced(ctx.client.clone(), &ctx.namespace)
        .get_opt(&cached.name_any())
        .await
}

/// Patches `status.progress` at most once a second while `progress` changes.
pub async fn report_progress<K: Operation>(
    api: Api<K>,
    name: String,
    mut progress: tokio::sync::watch::Receiver<(i64, i64)>,
) {
    while progress.changed().await.is_ok() {
        let (done, total) = *progress.borrow_and_update();
        let _ = patch::object_status(
            &api,
            &name,
            json!({ "progress": { K::DONE_FIELD: done, "totalItems": total } }),
        )
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
