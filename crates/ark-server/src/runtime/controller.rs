//! The one controller loop every controller runs on: kube-runtime's Controller over one kind in
//! the server's namespace, watched untyped or as summaries (an object ark's types cannot read is
//! for the reconcile to handle, never breaks the watch), at most `concurrency` reconciles at once
//! (0: no bound), stopping gracefully when the server is told to stop. A failed reconcile is
//! logged, counted by the kind of failure, and tried again after a pause that kind calls for.

use std::sync::Arc;
use std::time::Duration;

use ark_api::PodVolumePhase;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{self, ObjectRef, reflector};
use kube::runtime::{WatchStreamExt, watcher};

use crate::runtime::context::Kube;
use crate::runtime::objects::{self, Readable, Summary};
use serde::de::DeserializeOwned;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileError(#[from] kube::Error);

impl ReconcileError {
    /// The label of the failures counter: what kind of failure it was, never the whole message.
    pub fn metric_label(&self) -> &'static str {
        match &self.0 {
            kube::Error::Api(status) if status.code == 409 => "conflict",
            kube::Error::Api(status) if status.code == 404 => "not_found",
            kube::Error::Api(status) if status.code == 429 => "throttled",
            kube::Error::Api(status) if status.code >= 500 => "api_server",
            kube::Error::Api(_) => "refused",
            kube::Error::HyperError(_) | kube::Error::Service(_) => "unreachable",
            _ => "other",
        }
    }

    /// When to try again: soon after a conflict (the object changed; decide on it as it is now),
    /// in a few seconds when the API server failed to answer, later when it refused (a missing
    /// permission waits for a person).
    pub fn retry_after(&self) -> Duration {
        match &self.0 {
            kube::Error::Api(status) if status.code == 409 => Duration::from_secs(1),
            error if objects::is_transient(error) => Duration::from_secs(5),
            _ => Duration::from_secs(15),
        }
    }
}

/// Runs `reconcile` over the objects of kind `K`, each read as `K` (or not) at this boundary,
/// with the controller's own context `C`.
pub async fn run<K, C, F, Fut>(ctx: Arc<C>, what: &'static str, concurrency: u16, reconcile: F)
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
    C: AsRef<Kube> + Send + Sync + 'static,
    F: FnMut(Arc<Readable<K>>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    run_woken::<K, C, F, Fut>(ctx, what, concurrency, Woken::Never, reconcile).await;
}

/// What else wakes an object of a controller's kind than a change of its own, in the server's
/// namespace.
pub enum Woken {
    Never,
    /// A change of a pod labelled so: the object named as the pod (a data movement request, when
    /// its exposing pod runs, rather than at its next look).
    ByPodsLabelled(&'static str),
    /// An object of this kind that ends (its `status.phase` a final phase of Velero's volume
    /// requests): the objects that own it (a backup, when a DataUpload it waits on ends, rather
    /// than at its next check).
    ByEndOf(ApiResource),
    /// The objects are watched in every namespace (a tenant's requests, see
    /// `controllers::tenants`), and each is also woken by a change of its mirror: an object of the
    /// same kind in the server's namespace labelled `label`, which `names` reads the
    /// (namespace, name) of the object it mirrors from; and every object of a namespace whose
    /// name `namespaces` sends (a namespace delegated after its requests were made).
    ByMirrors {
        label: &'static str,
        names: fn(&DynamicObject) -> Option<(String, String)>,
        namespaces: tokio::sync::broadcast::Receiver<String>,
    },
}

/// [`run`], objects of kind `K` also reconciled as `woken` says.
pub async fn run_woken<K, C, F, Fut>(
    ctx: Arc<C>,
    what: &'static str,
    concurrency: u16,
    woken: Woken,
    reconcile: F,
) where
    K: Resource<DynamicType = ()> + DeserializeOwned,
    C: AsRef<Kube> + Send + Sync + 'static,
    F: FnMut(Arc<Readable<K>>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let kube = ctx.as_ref().as_ref();
    let resource = objects::resource::<K>();
    let (api, watched) = match woken {
        // Tenants' requests are in their own namespaces: the server's, where thousands of Backups
        // may be, is left out (its mirrors wake their requests by their label, below).
        Woken::ByMirrors { .. } => (
            kube::Api::all_with(kube.client.clone(), &resource),
            watcher::Config::default().fields(&format!("metadata.namespace!={}", kube.namespace)),
        ),
        _ => (
            objects::api::<K>(&kube.client, &kube.namespace),
            watcher::Config::default(),
        ),
    };
    // The cache holds every object of the kind for the controller's life, as it was stored.
    let writer = reflector::store::Writer::new(resource.clone());
    let cache = writer.as_reader();
    let watch = watcher(api, watched).modify(objects::trim_cached);
    let objects = reflector(writer, watch).applied_objects();
    let controller = Controller::for_stream_with(objects, cache, resource.clone());
    let source = Source {
        controller,
        dyntype: resource,
        handed: |object| Arc::new(Readable::new(object.as_ref().clone())),
    };
    drive::<K, _, _, _, _, _>(ctx, what, concurrency, woken, source, reconcile).await;
}

/// [`run_woken`] for a kind of which a namespace may hold thousands (Backups, Restores): the
/// controller follows the term's one watch of the kind ([`SharedWatches`]), whose cache keeps each
/// object's [`Summary`]; each reconcile, handed the summary, reads the object when it has work to
/// do. This is what keeps the server's memory from growing with the number of backups.
///
/// [`SharedWatches`]: crate::runtime::watches::SharedWatches
pub async fn run_summarized<K, C, F, Fut>(
    ctx: Arc<C>,
    what: &'static str,
    concurrency: u16,
    woken: Woken,
    reconcile: F,
) where
    K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
    C: AsRef<Kube> + Send + Sync + 'static,
    F: FnMut(Arc<Summary<K>>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let kube = ctx.as_ref().as_ref();
    let (cache, objects) = kube.watches.follow::<K>(&kube.client, &kube.namespace);
    let source = Source {
        controller: Controller::for_shared_stream_with(objects, cache, ()),
        dyntype: (),
        handed: |summary| summary,
    };
    drive::<K, _, _, _, _, _>(ctx, what, concurrency, woken, source, reconcile).await;
}

/// A controller over kind `K`'s objects as `W` (what its cache keeps of each), and what a
/// reconcile is handed of each.
struct Source<W, T>
where
    W: Resource + Clone + std::fmt::Debug + 'static,
    W::DynamicType: Clone + Eq + std::hash::Hash,
{
    controller: Controller<W>,
    dyntype: W::DynamicType,
    handed: fn(Arc<W>) -> Arc<T>,
}

async fn drive<K, W, T, C, F, Fut>(
    ctx: Arc<C>,
    what: &'static str,
    concurrency: u16,
    woken: Woken,
    source: Source<W, T>,
    mut reconcile: F,
) where
    K: Resource<DynamicType = ()>,
    W: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    W::DynamicType: Clone + Eq + std::hash::Hash + std::fmt::Debug + Unpin + Send + Sync,
    C: AsRef<Kube> + Send + Sync + 'static,
    F: FnMut(Arc<T>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let kube = ctx.as_ref().as_ref().clone();
    let Source {
        controller,
        dyntype,
        handed,
    } = source;
    let error_policy = move |_: Arc<W>, error: &ReconcileError, _: Arc<C>| {
        let retry = error.retry_after();
        tracing::warn!("{what} reconcile failed: {error}; again in {retry:?}");
        Action::requeue(retry)
    };
    // kube-runtime's graceful shutdown never ends a Controller told to stop before its cache was
    // ready (its runner waits for a readiness that the stopped watch can no longer bring), so
    // the loop also ends once it is told to stop and no reconcile runs; none starts after that.
    let running = Arc::new(tokio::sync::watch::Sender::new(0usize));
    let counted = {
        let running = running.clone();
        move |object: Arc<W>, ctx: Arc<C>| {
            let kube: &Kube = (*ctx).as_ref();
            let stopping = kube.is_stopping();
            let metrics = kube.metrics.clone();
            let work = (!stopping).then(|| {
                running.send_modify(|n| *n += 1);
                (Running(running.clone()), reconcile(handed(object), ctx))
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
    let controller = woken_also::<K, W>(controller, dyntype, woken, &kube);
    let controller = controller
        .with_config(Config::default().concurrency(concurrency))
        .graceful_shutdown_on(kube.stopped())
        .run(counted, error_policy, ctx)
        .for_each(|_| async {});
    let stopped_and_idle = async {
        kube.stopped().await;
        let _ = running.subscribe().wait_for(|n| *n == 0).await;
    };
    tokio::select! {
        () = controller => {}
        () = stopped_and_idle => {}
    }
}

/// The controller, also woken as `woken` says.
fn woken_also<K, W>(
    controller: Controller<W>,
    dyntype: W::DynamicType,
    woken: Woken,
    kube: &Kube,
) -> Controller<W>
where
    K: Resource<DynamicType = ()>,
    W: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    W::DynamicType: Clone + Eq + std::hash::Hash + std::fmt::Debug + Unpin + Send + Sync,
{
    let namespace = kube.namespace.clone();
    let object = {
        let dyntype = dyntype.clone();
        move |name: &str| ObjectRef::new_with(name, dyntype.clone()).within(&namespace)
    };
    match woken {
        Woken::Never => controller,
        Woken::ByPodsLabelled(label) => {
            let pods = kube::Api::<Pod>::namespaced(kube.client.clone(), &kube.namespace);
            let labelled = watcher::Config::default().labels(label);
            let named_as = move |pod: Pod| Some(object(pod.metadata.name.as_deref()?));
            controller.watches_with(pods, (), labelled, named_as)
        }
        Woken::ByEndOf(ended) => {
            let owner_kind = K::kind(&()).into_owned();
            let owned = kube::Api::<DynamicObject>::namespaced_with(
                kube.client.clone(),
                &kube.namespace,
                &ended,
            );
            let owners = move |owned: DynamicObject| {
                let phase = objects::phase::<PodVolumePhase>(&owned);
                let is_final = matches!(phase, objects::Phase::Known(p) if p.is_final());
                let references = owned.metadata.owner_references.unwrap_or_default();
                (references.into_iter())
                    .filter(|r| is_final && r.kind == owner_kind)
                    .map(|r| object(&r.name))
                    .collect::<Vec<_>>()
            };
            controller.watches_with(owned, ended, watcher::Config::default(), owners)
        }
        Woken::ByMirrors {
            label,
            names,
            namespaces,
        } => {
            let mirrors = objects::api::<K>(&kube.client, &kube.namespace);
            let kind = dyntype.clone();
            let mirrored = move |mirror: DynamicObject| {
                let (namespace, name) = names(&mirror)?;
                Some(ObjectRef::new_with(&name, kind.clone()).within(&namespace))
            };
            let labelled = watcher::Config::default().labels(label);
            let controller =
                controller.watches_with(mirrors, objects::resource::<K>(), labelled, mirrored);
            let cached = controller.store();
            let named = futures::stream::unfold(namespaces, |mut namespaces| async move {
                loop {
                    match namespaces.recv().await {
                        Ok(name) => return Some((name, namespaces)),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    }
                }
            });
            let within = named.flat_map(move |name| {
                let refs: Vec<_> = (cached.state().into_iter())
                    .filter(|object| object.meta().namespace.as_deref() == Some(&name))
                    .map(|object| ObjectRef::from_obj_with(object.as_ref(), dyntype.clone()))
                    .collect();
                futures::stream::iter(refs)
            });
            controller.reconcile_on(within)
        }
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

    fn api_error(code: u16) -> ReconcileError {
        ReconcileError(kube::Error::Api(Box::new(
            kube::core::Status::failure("test", "Test").with_code(code),
        )))
    }

    #[test]
    fn retries_follow_the_kind_of_failure() {
        assert_eq!(api_error(409).retry_after(), Duration::from_secs(1));
        for transient in [429, 500, 503, 504] {
            assert_eq!(api_error(transient).retry_after(), Duration::from_secs(5));
        }
        for refused in [400, 403, 422] {
            assert_eq!(api_error(refused).retry_after(), Duration::from_secs(15));
        }
        assert_eq!(api_error(403).metric_label(), "refused");
        assert_eq!(api_error(429).metric_label(), "throttled");
    }

    /// The regression behind a shutdown that waited out its whole grace: told to stop before its
    /// first list came back, the controller ends at once.
    #[tokio::test]
    async fn a_controller_told_to_stop_before_its_cache_is_ready_ends() {
        // An API server that never answers: the controller's first list never completes.
        let never = tower::service_fn(|_: http::Request<kube::client::Body>| {
            std::future::pending::<Result<http::Response<kube::client::Body>, std::io::Error>>()
        });
        let (kube, stop) = Kube::for_tests(kube::Client::new(never, "velero"));
        let controller =
            run::<ark_api::Restore, _, _, _>(Arc::new(kube), "test", 1, |_, _| async {
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
