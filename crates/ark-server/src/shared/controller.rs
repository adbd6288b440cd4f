//! The one controller loop every controller runs on: kube-runtime's Controller over one kind in
//! the server's namespace, watched untyped (an object ark's types cannot read is for the
//! reconcile to handle, never breaks the watch), at most `concurrency` reconciles at once (0: no
//! bound), stopping gracefully when the server is told to stop. A failed reconcile is logged and
//! tried again after `RETRY`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::DynamicObject;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::watcher;

use crate::Context;
use crate::shared::objects;

pub const RETRY: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileError(#[from] kube::Error);

pub async fn run<K, F, Fut>(ctx: Arc<Context>, what: &'static str, concurrency: u16, reconcile: F)
where
    K: Resource<DynamicType = ()>,
    F: FnMut(Arc<DynamicObject>, Arc<Context>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let api = objects::api::<K>(&ctx.client, &ctx.namespace);
    let error_policy = move |_: Arc<DynamicObject>, error: &ReconcileError, _: Arc<Context>| {
        tracing::warn!("{what} reconcile failed: {error}");
        Action::requeue(RETRY)
    };
    Controller::new_with(api, watcher::Config::default(), objects::resource::<K>())
        .with_config(Config::default().concurrency(concurrency))
        .graceful_shutdown_on(ctx.stopped())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {})
        .await;
}
