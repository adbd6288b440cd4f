//! Running a restore's exec hooks: wait (one watch over the restore's pods) until the container runs, then
//! exec through the API, each with its timeouts, never longer than the restore's overall bound.

use std::sync::{Arc, Mutex};

use ark_api::HookErrorMode;
use ark_api::hooks::HookResult;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::time::Instant;

use crate::runtime::sync::Locked;

use super::{ExecHook, command};

/// Where a container stands for its hooks.
#[derive(Debug)]
enum Readiness {
    Ready,
    NoSuchContainer,
    Finished(String),
    Deleted,
    /// Not up before the wait ended.
    TimedOut {
        /// What the kubelet last said held the container back (see [`held_back`]).
        held_back: Option<String>,
        /// The last watch error, if the watch kept failing.
        watch_error: Option<String>,
    },
}

/// What holds a container back, as the kubelet last reported it: why it waits (a missing image,
/// a crash loop) with the kubelet's message and the last exit, or how it ended, or that it runs but
/// is not ready.
fn held_back(pod: &Pod, container: &str) -> Option<String> {
    let status = pod
        .status
        .as_ref()?
        .container_statuses
        .iter()
        .flatten()
        .find(|s| s.name == container)?;
    let state = status.state.as_ref();
    let exit = |t: &k8s_openapi::api::core::v1::ContainerStateTerminated| {
        format!(
            "exited with code {}{}",
            t.exit_code,
            t.reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )
    };
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        let mut said = format!(
            "it is waiting: {}",
            waiting.reason.as_deref().unwrap_or("no reason given")
        );
        if let Some(message) = waiting.message.as_deref().filter(|m| !m.is_empty()) {
            said.push_str(&format!(": {message}"));
        }
        if let Some(last) = status
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
        {
            said.push_str(&format!(
                "; it last {} and was restarted {} times",
                exit(last),
                status.restart_count
            ));
        }
        return Some(said);
    }
    if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
        return Some(format!("it {}", exit(terminated)));
    }
    state
        .and_then(|s| s.running.as_ref())
        .filter(|_| !status.ready)
        .map(|_| "it runs but is not ready".to_string())
}

fn container_state(pod: &Pod, container: &str, want_ready: bool) -> Option<Readiness> {
    let spec = pod.spec.as_ref()?;
    if !spec.containers.iter().any(|c| c.name == container) {
        return Some(Readiness::NoSuchContainer);
    }
    let status = pod.status.as_ref()?;
    if let Some(phase @ ("Succeeded" | "Failed")) = status.phase.as_deref() {
        return Some(Readiness::Finished(phase.to_string()));
    }
    let container_status = status
        .container_statuses
        .iter()
        .flatten()
        .find(|s| s.name == container)?;
    let running = container_status
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .is_some();
    (running && (!want_ready || container_status.ready)).then_some(Readiness::Ready)
}

/// The restore's pods, watched together while their hooks wait: one watch (and one connection)
/// over the pods labelled with the restore's name, in every namespace, instead of one per pod.
pub struct RestoredPods {
    store: Store<Pod>,
    /// Counts the watch's changes; None until its first listing is in.
    changes: tokio::sync::watch::Receiver<Option<u64>>,
    /// The watch's last error, for the message of a hook whose container never came up.
    last_error: Arc<Mutex<Option<String>>>,
}

impl RestoredPods {
    /// The watch over the pods `selector` selects, and the future that keeps it going (to be
    /// polled for as long as hooks wait; it never ends).
    pub fn watch(
        client: &Client,
        selector: &str,
    ) -> (
        Self,
        impl Future<Output = std::convert::Infallible> + Send + 'static,
    ) {
        let (store, writer) = reflector::store();
        let (tell, changes) = tokio::sync::watch::channel(None);
        let last_error = Arc::new(Mutex::new(None));
        let errors = last_error.clone();
        let config = watcher::Config::default().labels(selector);
        let events = reflector::reflector(writer, watcher(Api::<Pod>::all(client.clone()), config))
            .default_backoff()
            .for_each(move |event| {
                match event {
                    Ok(watcher::Event::InitDone) => {
                        tell.send_modify(|seen| *seen = Some(seen.map_or(0, |n| n + 1)));
                    }
                    Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
                        tell.send_modify(|seen| *seen = seen.map(|n| n + 1));
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!("watching the restored pods for their hooks: {error}");
                        *errors.locked() = Some(error.to_string());
                    }
                }
                std::future::ready(())
            });
        let keep_going = async move {
            events.await;
            std::future::pending().await
        };
        let pods = RestoredPods {
            store,
            changes,
            last_error,
        };
        (pods, keep_going)
    }

    fn last_error(&self) -> Option<String> {
        self.last_error.locked().clone()
    }
}

/// Waits until the container is up, the pod is gone or finished, or `until`, on the restore's
/// watch. A pod that watch does not have (deleted, or no longer labelled) is waited for alone.
async fn wait_for_container(
    restored: &RestoredPods,
    pods: &Api<Pod>,
    namespace: &str,
    pod: &str,
    container: &str,
    want_ready: bool,
    until: Instant,
) -> Readiness {
    tracing::info!("pod {pod}: waiting for container {container} to run its hooks");
    let key = ObjectRef::<Pod>::new(pod).within(namespace);
    let mut changes = restored.changes.clone();
    loop {
        if changes.borrow_and_update().is_some() {
            match restored.store.get(&key) {
                None => return wait_alone(pods, pod, container, want_ready, until).await,
                Some(found) => {
                    if let Some(readiness) = container_state(&found, container, want_ready) {
                        return readiness;
                    }
                }
            }
        }
        match tokio::time::timeout_at(until, changes.changed()).await {
            Err(_) => {
                return Readiness::TimedOut {
                    held_back: restored
                        .store
                        .get(&key)
                        .and_then(|pod| held_back(&pod, container)),
                    watch_error: restored.last_error(),
                };
            }
            Ok(Err(_)) => return wait_alone(pods, pod, container, want_ready, until).await,
            Ok(Ok(())) => {}
        }
    }
}

/// Waits on a watch of the pod's own. A watch that fails is started again: only a pod really
/// deleted counts as deleted.
async fn wait_alone(
    pods: &Api<Pod>,
    pod: &str,
    container: &str,
    want_ready: bool,
    until: Instant,
) -> Readiness {
    let mut last_error = None;
    loop {
        let name = container.to_string();
        let condition = move |pod: Option<&Pod>| match pod {
            None => true,
            Some(pod) => container_state(pod, &name, want_ready).is_some(),
        };
        match tokio::time::timeout_at(until, await_condition(pods.clone(), pod, condition)).await {
            Err(_) => {
                return Readiness::TimedOut {
                    held_back: None,
                    watch_error: last_error,
                };
            }
            Ok(Ok(None)) => return Readiness::Deleted,
            Ok(Ok(Some(found))) => {
                return container_state(&found, container, want_ready).unwrap_or(
                    Readiness::TimedOut {
                        held_back: held_back(&found, container),
                        watch_error: last_error,
                    },
                );
            }
            Ok(Err(error)) => {
                tracing::warn!("watching pod {pod} for its hooks: {error}; watching again");
                last_error = Some(error.to_string());
                tokio::time::sleep_until((Instant::now() + WATCH_RETRY).min(until)).await;
            }
        }
    }
}

const WATCH_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// What a pod's hooks share: where they run, the bounds they run within, and the reason the pod's
/// remaining hooks stop (set by a hook that fails with `onError: Fail`).
struct PodRun<'a> {
    restored: &'a RestoredPods,
    pods: Api<Pod>,
    namespace: &'a str,
    pod: &'a str,
    /// When the restore created the pod: each `waitTimeout` counts from here, as in Velero.
    created: Instant,
    execs: &'a tokio::sync::Semaphore,
    deadline: Instant,
    stop: tokio::sync::watch::Sender<Option<String>>,
}

/// What the hooks of all the restore's pods share: the watch of its pods, the bound on commands
/// at once and the restore's hooks deadline.
pub struct Shared<'a> {
    pub client: &'a Client,
    pub restored: &'a RestoredPods,
    pub execs: &'a tokio::sync::Semaphore,
    pub deadline: Instant,
}

/// Runs a pod's exec hooks, grouped by container as Velero groups them: each container's hooks
/// run in order as soon as that container is up, whatever the other containers do. A hook that
/// fails with `onError: Fail` stops the pod's remaining hooks, in every container; those are
/// recorded as failed ("not executed"), so every hook is counted. Waiting costs only a watch;
/// running a command takes a permit from `shared.execs` (bounding commands at once), and the wait for a
/// permit never counts against a hook's `execTimeout`. Nothing outlives `shared.deadline`. Results come
/// back in the hooks' order.
pub async fn run_pod(
    shared: &Shared<'_>,
    namespace: &str,
    pod: &str,
    hooks: &[ExecHook],
    created: Instant,
) -> Vec<HookResult> {
    let run = PodRun {
        restored: shared.restored,
        pods: Api::namespaced(shared.client.clone(), namespace),
        namespace,
        pod,
        created,
        execs: shared.execs,
        deadline: shared.deadline,
        stop: tokio::sync::watch::Sender::new(None),
    };
    let mut groups: Vec<(&str, Vec<(usize, &ExecHook)>)> = Vec::new();
    for (index, hook) in hooks.iter().enumerate() {
        match groups.iter_mut().find(|(c, _)| *c == hook.container) {
            Some((_, group)) => group.push((index, hook)),
            None => groups.push((&hook.container, vec![(index, hook)])),
        }
    }
    let mut results: Vec<(usize, HookResult)> = futures::future::join_all(
        groups
            .iter()
            .map(|(container, group)| run.container(container, group)),
    )
    .await
    .into_iter()
    .flatten()
    .collect();
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

impl PodRun<'_> {
    async fn container(
        &self,
        container: &str,
        group: &[(usize, &ExecHook)],
    ) -> Vec<(usize, HookResult)> {
        let want_ready = group.iter().any(|(_, h)| h.wait_for_ready);
        // As long as the longest waitTimeout, or the restore's bound if a hook sets none.
        let wait_until = group
            .iter()
            .map(|(_, h)| {
                h.wait_timeout
                    .map(|w| (self.created + w).min(self.deadline))
            })
            .try_fold(self.created, |latest, until| until.map(|u| latest.max(u)))
            .unwrap_or(self.deadline);
        let mut stopped = self.stop.subscribe();
        let readiness = tokio::select! {
            readiness = wait_for_container(self.restored, &self.pods, self.namespace, self.pod, container, want_ready, wait_until) => Some(readiness),
            _ = stopped.wait_for(Option::is_some) => None,
        };
        let up_at = Instant::now();
        let mut results = Vec::new();
        for &(index, hook) in group {
            let started = Instant::now();
            let mut result = HookResult {
                container: hook.container.clone(),
                command: hook.command.clone(),
                source: hook.source.clone(),
                ..Default::default()
            };
            let stop_reason = self.stop.borrow().clone();
            result.error = match (stop_reason, &readiness) {
                (Some(reason), _) => Some(format!("not executed: {reason}")),
                (None, Some(readiness)) => self.not_up(hook, readiness, up_at),
                (None, None) => Some("not executed: the pod's hooks were stopped".into()),
            };
            if result.error.is_none() {
                self.exec(hook, &mut result).await;
            }
            result.duration_ms = started.elapsed().as_millis() as u64;
            if !result.succeeded
                && hook.on_error == HookErrorMode::Fail
                && self.stop.borrow().is_none()
            {
                self.stop.send_replace(Some(format!(
                    "hook {:?} in container {container:?} failed with onError: Fail",
                    hook.command.join(" ")
                )));
            }
            results.push((index, result));
        }
        results
    }

    /// Why `hook` cannot run given where its container stands, or None when it can.
    fn not_up(&self, hook: &ExecHook, readiness: &Readiness, up_at: Instant) -> Option<String> {
        let (namespace, pod) = (self.namespace, self.pod);
        let state = if hook.wait_for_ready {
            "ready"
        } else {
            "running"
        };
        // Why the container was not up, as the kubelet said, and the watch's failure if any.
        let why = |held_back: Option<&String>, watch_error: Option<&String>| {
            let held_back = held_back.map(|h| format!(": {h}")).unwrap_or_default();
            let watch_error = watch_error
                .map(|e| format!(" (the watch failed: {e})"))
                .unwrap_or_default();
            format!("{held_back}{watch_error}")
        };
        let expired = |wait: std::time::Duration, why: String| {
            format!(
                "container {:?} was not {state} within the wait timeout {} of pod {namespace}/{pod}{why}",
                hook.container,
                ark_api::duration::format(wait),
            )
        };
        match readiness {
            Readiness::NoSuchContainer => Some(format!(
                "container {:?} not found in pod {namespace}/{pod}",
                hook.container
            )),
            Readiness::Deleted => Some(format!(
                "pod {namespace}/{pod} was deleted before its hooks ran"
            )),
            Readiness::Finished(phase) => Some(format!(
                "pod {namespace}/{pod} finished ({phase}) before its hooks ran"
            )),
            Readiness::TimedOut {
                held_back,
                watch_error,
            } => {
                let why = why(held_back.as_ref(), watch_error.as_ref());
                Some(match hook.wait_timeout {
                    Some(wait) if self.created + wait < self.deadline => expired(wait, why),
                    _ => format!(
                        "container {:?} was not {state} before the restore's hooks timeout{why}",
                        hook.container,
                    ),
                })
            }
            // Up, but later than this hook was willing to wait (another hook waited longer).
            Readiness::Ready => hook
                .wait_timeout
                .filter(|wait| up_at > self.created + *wait)
                .map(|wait| expired(wait, String::new())),
        }
    }

    async fn exec(&self, hook: &ExecHook, result: &mut HookResult) {
        let Ok(Ok(_permit)) = tokio::time::timeout_at(self.deadline, self.execs.acquire()).await
        else {
            result.error = Some("no exec slot came free before the restore's hooks timeout".into());
            return;
        };
        // Its execTimeout, or what is left of the restore's hooks timeout if that is less.
        let left = self.deadline.saturating_duration_since(Instant::now());
        command::run(
            &self.pods,
            self.pod,
            hook,
            hook.exec_timeout.min(left),
            result,
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_holds_a_container_back_is_said_as_the_kubelet_says_it() {
        let pod = |status: serde_json::Value| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": { "name": "p" },
                "status": { "containerStatuses": [status] },
            }))
            .unwrap()
        };
        let never_pulled = pod(serde_json::json!({
            "name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "waiting": { "reason": "ErrImageNeverPull",
                "message": "Container image \"ark.local/absent:1\" is not present with pull policy of Never" } },
        }));
        assert_eq!(
            held_back(&never_pulled, "c").as_deref(),
            Some(
                "it is waiting: ErrImageNeverPull: Container image \"ark.local/absent:1\" is not \
                 present with pull policy of Never"
            )
        );
        let crashing = pod(serde_json::json!({
            "name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 3,
            "state": { "waiting": { "reason": "CrashLoopBackOff" } },
            "lastState": { "terminated": { "exitCode": 1, "reason": "Error" } },
        }));
        assert_eq!(
            held_back(&crashing, "c").as_deref(),
            Some(
                "it is waiting: CrashLoopBackOff; it last exited with code 1 (Error) and was \
                 restarted 3 times"
            )
        );
        let unready = pod(serde_json::json!({
            "name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "running": {} },
        }));
        assert_eq!(
            held_back(&unready, "c").as_deref(),
            Some("it runs but is not ready")
        );
        assert_eq!(held_back(&unready, "other"), None);
    }
}
