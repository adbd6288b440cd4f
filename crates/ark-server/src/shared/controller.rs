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

impl ReconcileError {
    /// The label of the failures counter: what kind of failure it was, never the whole message.
    pub fn metric_label(&self) -> &'static str {
        match &self.0 {
            kube::Error::Api(status) if status.code == 409 => "conflict",
            kube::Error::Api(status) if status.code == 404 => "not_found",
            kube::Error::Api(status) if status.code >= 500 => "api_server",
            kube::Error::Api(_) => "refused",
            kube::Error::HyperError(_) | kube::Error::Service(_) => "unreachable",
            _ => "other",
        }
    }
}

pub async fn run<K, F, Fut>(
    ctx: Arc<Context>,
    what: &'static str,
    concurrency: u16,
    mut reconcile: F,
) where
    K: Resource<DynamicType = ()>,
    F: FnMut(Arc<DynamicObject>, Arc<Context>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let api = objects::api::<K>(&ctx.client, &ctx.namespace);
    let error_policy = move |_: Arc<DynamicObject>, error: &ReconcileError, _: Arc<Context>| {
        tracing::warn!("{what} reconcile failed: {error}");
        Action::requeue(RETRY)
    };
    // kube-runtime's graceful shutdown never ends a Controller told to stop before its cache was
    // ready (its runner waits for a readiness that the stopped watch can no longer bring), so
    // the loop also ends once it is told to stop and no reconcile runs; none starts after that.
    let running = Arc::new(tokio::sync::watch::Sender::new(0usize));
    let counted = {
        let running = running.clone();
        move |object, ctx: Arc<Context>| {
            let stopping = *ctx.stopping.borrow();
            let metrics = ctx.metrics.clone();
            let work = (!stopping).then(|| {
                running.send_modify(|n| *n += 1);
                (Running(running.clone()), reconcile(object, ctx))
            });
            async move {
                match work {
                    Some((_running, reconcile)) => {
                        let started = std::time::Instant::now();
                        let result = reconcile.await;
                        let failure = result.as_ref().err().map(ReconcileError::metric_label);
                        metrics.reconciled(&K::kind(&()), started.elapsed(), failure);
                        result
                    }
                    None => Ok(Action::await_change()),
                }
            }
        }
    };
    let controller =
        Controller::new_with(api, watcher::Config::default(), objects::resource::<K>())
            .with_config(Config::default().concurrency(concurrency))
            .graceful_shutdown_on(ctx.stopped())
            .run(counted, error_policy, ctx.clone())
            .for_each(|_| async {});
    let stopped_and_idle = async {
        ctx.stopped().await;
        let _ = running.subscribe().wait_for(|n| *n == 0).await;
    };
    tokio::select! {
        () = controller => {}
        () = stopped_and_idle => {}
    }
}

/// One running reconcile, counted while it lives.
struct Running(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regression behind a shutdown that waited out its whole grace: told to stop before its
    /// first list came back, the controller ends at once.
    #[tokio::test]
    async fn a_controller_told_to_stop_before_its_cache_is_ready_ends() {
        // An API server that never answers: the controller's first list never completes.
        let never = tower::service_fn(|_: http::Request<kube::client::Body>| {
            std::future::pending::<Result<http::Response<kube::client::Body>, std::io::Error>>()
        });
        let (ctx, stop) = Context::for_tests(kube::Client::new(never, "velero"));
        let controller = run::<ark_api::Restore, _, _>(Arc::new(ctx), "test", 1, |_, _| async {
            Ok(Action::await_change())
        });
        let stopped = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            stop.send_replace(true);
            std::future::pending::<()>().await
        };
        tokio::select! {
            () = controller => {}
            () = stopped => unreachable!(),
            () = tokio::time::sleep(Duration::from_secs(10)) => panic!("the controller did not end within 10 s of the stop"),
        }
    }
}
