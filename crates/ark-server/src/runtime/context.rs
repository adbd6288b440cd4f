//! What every controller of a process works through, whatever else its own context holds: the API
//! in the server's namespace, Kubernetes events, the process's metrics, the term's shared watches,
//! and the signal to take no new work. Each controller's context holds one (`AsRef<Kube>` is what
//! the shared loops ask for); controllers that need nothing more run on it alone.

use std::sync::Arc;

use crate::runtime::events::Events;
use crate::runtime::metrics::Metrics;
use crate::runtime::watches::SharedWatches;

#[derive(Clone)]
pub struct Kube {
    pub client: kube::Client,
    /// The namespace whose ark objects this process acts on.
    pub namespace: String,
    pub events: Arc<Events>,
    pub metrics: Arc<Metrics>,
    /// The term's watches of summarized kinds, each shared by the controllers of its kind.
    pub watches: Arc<SharedWatches>,
    /// Becomes true when the process is told to stop: controllers take no new work.
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl Kube {
    /// The context of one term of work (a term of leadership, a node agent's life), and the
    /// sender that tells it to stop.
    pub fn new(
        client: kube::Client,
        namespace: String,
        identity: &str,
        metrics: Arc<Metrics>,
    ) -> (Kube, tokio::sync::watch::Sender<bool>) {
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let kube = Kube {
            events: Arc::new(Events::new(client.clone(), identity)),
            client,
            namespace,
            metrics,
            watches: Arc::default(),
            stopping,
        };
        (kube, stop)
    }

    /// Whether the process has been told to stop.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Resolves once the process is told to stop.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stopping = self.stopping.clone();
        async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        }
    }

    /// Runs `work` until the process is told to stop, then drops it: for periodic work, which
    /// holds nothing between rounds.
    pub async fn until_stopping<F: Future>(&self, work: F) {
        tokio::select! {
            _ = work => {}
            () = self.stopped() => {}
        }
    }
}

impl AsRef<Kube> for Kube {
    fn as_ref(&self) -> &Kube {
        self
    }
}

#[cfg(test)]
impl Kube {
    /// Over `client` (an API server a test stands in for), in namespace `velero`.
    pub fn for_tests(client: kube::Client) -> (Kube, tokio::sync::watch::Sender<bool>) {
        Kube::new(client, "velero".into(), "test", Arc::default())
    }
}
