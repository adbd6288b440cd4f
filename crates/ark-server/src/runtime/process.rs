//! Process shapes. Every ark process serves health and metrics for its whole life and stops on
//! SIGTERM; its controllers run in terms, each over contexts built for it alone (with its own stop
//! signal), so that nothing a cut-off term left half-done carries over into the next.
//! - The server is leader-elected: a term lasts while this replica holds the lease; a lost lease
//!   ends the term at once and the replica stands by to lead again.
//! - A per-node process (one on each node, no lease) runs one term for its whole life.
//!
//! On SIGTERM a term takes no new work and waits, up to its grace, for what runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use std::net::SocketAddr;

use crate::runtime::metrics::{self, Metrics};
use crate::runtime::sync::Locked;

/// Serving metrics and health failed: the process ends with it.
#[derive(Debug, thiserror::Error)]
#[error("serving metrics on {address}: {source}")]
pub struct ServingFailed {
    pub address: SocketAddr,
    pub source: std::io::Error,
}

/// One term's controllers, started by [`run_term`].
pub(crate) struct Term {
    /// Tells the term's controllers to take no new work.
    pub stop: tokio::sync::watch::Sender<bool>,
    /// Work done before any controller starts (while the lease is held, like the rest).
    pub start_up: BoxFuture<'static, ()>,
    /// Each controller by name, the names given when the grace runs out.
    pub controllers: Vec<(&'static str, BoxFuture<'static, ()>)>,
    /// What else the term leaves behind when the grace runs out (the backups still running).
    pub left_behind: Box<dyn Fn() -> String + Send>,
}

/// How a term ended.
pub(crate) enum TermEnd {
    /// Cut off while working: the process goes on, and may start another term.
    CutOff,
    /// Told to stop, and stopped (or its grace ran out): hand over, then end.
    Stopped,
    /// Cut off while stopping: end at once.
    CutOffWhileStopping,
    /// The process is to end with this result: its controllers ended, or serving failed.
    Ended(Result<(), ServingFailed>),
}

/// What the process holds for its whole life: its metrics (served, with health, by `serving`)
/// and the signal to stop.
pub(crate) struct Process {
    pub metrics: Arc<Metrics>,
    serving: BoxFuture<'static, Result<(), ServingFailed>>,
    shutdown: BoxFuture<'static, ()>,
}

impl Process {
    /// Starts serving metrics and health at `metrics_address` (if any) for the process's whole
    /// life, standing by too: its probes must answer. Listens for SIGTERM.
    pub fn start(metrics_address: Option<SocketAddr>) -> Process {
        let metrics = Arc::new(Metrics::default());
        let serving = {
            let metrics = metrics.clone();
            async move {
                match metrics_address {
                    Some(address) => metrics::serve(address, metrics)
                        .await
                        .map_err(|source| ServingFailed { address, source }),
                    None => std::future::pending().await,
                }
            }
        };
        Process {
            metrics,
            serving: Box::pin(serving),
            shutdown: Box::pin(shutdown_signal()),
        }
    }

    /// Waits for `work` while serving; ends early if serving fails (`Err`) or the process is told
    /// to stop (`Ok(None)`).
    pub async fn stand_by<W: Future>(
        &mut self,
        work: W,
    ) -> Result<Option<W::Output>, ServingFailed> {
        tokio::select! {
            output = work => Ok(Some(output)),
            result = &mut self.serving => result.map(|()| None),
            () = &mut self.shutdown => Ok(None),
        }
    }

    /// Runs `term` until its controllers end, the process is told to stop (then it waits up to
    /// `grace` for them, and says what it leaves behind), or `cut_off` resolves (then it drops
    /// every piece of work at once). A per-node process passes a cut-off that never comes.
    pub async fn run_term(
        &mut self,
        term: Term,
        cut_off: impl Future<Output = ()>,
        grace: Duration,
    ) -> TermEnd {
        let Term {
            stop,
            start_up,
            controllers,
            left_behind,
        } = term;
        // The controllers that have not ended yet, named if the grace runs out.
        let running = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
        let controllers = futures::future::join_all(controllers.into_iter().map(|(name, work)| {
            running.locked().insert(name);
            let running = running.clone();
            async move {
                work.await;
                running.locked().remove(name);
            }
        }));
        let controllers = async move {
            start_up.await;
            controllers.await
        };
        tokio::pin!(controllers, cut_off);
        // Cut off: dropping the controllers (when this returns) stops every piece of work at once.
        tokio::select! {
            _ = &mut controllers => return TermEnd::Ended(Ok(())),
            result = &mut self.serving => return TermEnd::Ended(result),
            () = &mut cut_off => return TermEnd::CutOff,
            () = &mut self.shutdown => {}
        }
        tracing::info!("stopping: no new work is taken; waiting up to {grace:?} for what runs");
        let _ = stop.send(true);
        tokio::select! {
            _ = &mut controllers => tracing::info!("all work finished"),
            () = tokio::time::sleep(grace) => tracing::warn!(
                "work still running after {grace:?} (controllers: {}; {}) is left to the next \
                 leader, which fails it",
                Vec::from_iter(running.locked().iter().copied()).join(", "),
                left_behind(),
            ),
            () = &mut cut_off => {
                tracing::warn!("cut off while stopping: stopped at once");
                return TermEnd::CutOffWhileStopping;
            }
        }
        TermEnd::Stopped
    }
}

/// SIGTERM (Kubernetes stopping the pod) or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => terminate,
        Err(error) => {
            tracing::warn!("cannot listen for SIGTERM: {error}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
