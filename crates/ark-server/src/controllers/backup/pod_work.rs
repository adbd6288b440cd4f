//! The backup's pods that have work around their item: hooks, and volumes to back up with the
//! node agent. In Velero's order: a pod's pre hooks run before the engine writes its item, then
//! its claims' CSI snapshots are cut and its PodVolumeBackups are made; its post hooks run once
//! the item is written and those have ended. A pod whose pre hook fails with `onError: Fail` is left out, volumes and all. Pods' work
//! runs concurrently, at most `at_once` pods at a time and at most `at_once` pods held waiting, so
//! a backup of many pods holds a bounded number of them; the hooks of one pod run in order. Each
//! task runs on the runtime, so the work goes on while the engine lists and writes, and dropping
//! the backup's work drops it all.

use std::sync::Arc;

use ark_api::PodVolumeBackup;
use ark_api::hooks::{HookPhase, PodHookResults};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::pod_volumes::{PodVolumes, Started};
use super::volume_snapshots::ClaimSnapshots;
use super::writer::Page;
use crate::hooks::ExecHook;
use crate::hooks::backup::{self, BackupHookSpecs};
use crate::records::recorder::Recorder;

pub struct PodWork {
    client: Client,
    specs: BackupHookSpecs,
    volumes: Arc<PodVolumes>,
    snapshots: ClaimSnapshots,
    slots: Arc<Semaphore>,
    at_once: usize,
    pre: JoinSet<PreDone>,
    post: JoinSet<PodHookResults>,
    done: Vec<PodHookResults>,
}

/// A pod whose pre hooks have run.
struct PreDone {
    page: Page,
    pod: Value,
    post: Vec<ExecHook>,
    results: PodHookResults,
    failed: Option<String>,
    volumes: Started,
}

/// A pod to write, and then to run the post hooks of.
pub struct Ready {
    pub page: Page,
    pub then: PostHooks,
}

/// What [`PodWork::written`] starts once the pod is written.
pub struct PostHooks(Option<PendingPost>);

struct PendingPost {
    pod: Value,
    hooks: Vec<ExecHook>,
    results: PodHookResults,
    /// The pod's PodVolumeBackups, which end before its post hooks run.
    volume_backups: Vec<String>,
}

impl PodWork {
    pub fn new(
        client: Client,
        specs: BackupHookSpecs,
        volumes: PodVolumes,
        snapshots: ClaimSnapshots,
        at_once: u16,
    ) -> Self {
        let at_once = usize::from(at_once.max(1));
        PodWork {
            client,
            specs,
            volumes: Arc::new(volumes),
            snapshots,
            slots: Arc::new(Semaphore::new(at_once)),
            at_once,
            pre: JoinSet::new(),
            post: JoinSet::new(),
            done: Vec::new(),
        }
    }

    /// Whether a listed pod may have hooks or volumes to back up (otherwise it is written as it
    /// comes).
    pub fn may_take(&self, pod: &kube::api::DynamicObject) -> bool {
        self.specs.may_apply(pod.metadata.annotations.as_ref())
            || serde_json::to_value(pod)
                .ok()
                .and_then(|v| serde_json::from_value::<Pod>(v).ok())
                .is_some_and(|pod| self.volumes.may_take(&pod))
    }

    /// Takes a listed pod (its item in `page`) if it has hooks or volumes to back up, starting
    /// its pre hooks; gives it back otherwise. What pods finished their pre hooks (and made their
    /// PodVolumeBackups) meanwhile is returned to be written.
    pub async fn take(
        &mut self,
        pod: &Value,
        page: Page,
        record: &mut Recorder,
    ) -> Result<Vec<Ready>, Page> {
        let (pre, mut warnings) = self.specs.for_pod(pod, HookPhase::Pre);
        let (post, post_warnings) = self.specs.for_pod(pod, HookPhase::Post);
        warnings.extend(post_warnings);
        for warning in warnings {
            record.warning(namespace(pod), warning);
        }
        let typed: Option<Pod> = serde_json::from_value(pod.clone()).ok();
        let has_volumes = typed.as_ref().is_some_and(|p| self.volumes.may_take(p));
        if pre.is_empty() && post.is_empty() && !has_volumes {
            return Err(page);
        }
        let mut ready = Vec::new();
        while self.pre.len() >= self.at_once {
            ready.extend(self.next_pre(record).await);
        }
        let (client, slots, pod) = (self.client.clone(), self.slots.clone(), pod.clone());
        let (volumes, snapshots) = (self.volumes.clone(), self.snapshots.clone());
        self.pre.spawn(async move {
            let (run, started) = {
                let _slot = slots.acquire_owned().await;
                let run = backup::run(&pods_api(&client, &pod), &pod, &pre, HookPhase::Pre).await;
                // A pod left out by its pre hooks has no volume backed up either.
                let started = match (&run.failed, typed) {
                    (None, Some(typed)) => {
                        snapshots.cut_claims_of(&typed).await;
                        volumes.start(&typed).await
                    }
                    _ => Started::default(),
                };
                (run, started)
            };
            PreDone {
                results: PodHookResults {
                    namespace: namespace(&pod).unwrap_or_default().to_string(),
                    pod: name(&pod).to_string(),
                    hooks: run.results,
                    ..Default::default()
                },
                failed: run.failed,
                page,
                pod,
                post,
                volumes: started,
            }
        });
        Ok(ready)
    }

    /// The pods whose pre hooks have ended, without waiting.
    pub fn ready_now(&mut self, record: &mut Recorder) -> Vec<Ready> {
        let mut ready = Vec::new();
        while let Some(done) = self.pre.try_join_next() {
            ready.extend(self.settle(done, record));
        }
        ready
    }

    /// Waits for the next pod's pre hooks to end: the pod to write, unless they left it out.
    async fn next_pre(&mut self, record: &mut Recorder) -> Option<Ready> {
        let done = self.pre.join_next().await?;
        self.settle(done, record)
    }

    /// Waits for every pod's pre hooks to end: the pods to write.
    pub async fn rest(&mut self, record: &mut Recorder) -> Vec<Ready> {
        let mut ready = Vec::new();
        while !self.pre.is_empty() {
            ready.extend(self.next_pre(record).await);
        }
        ready
    }

    fn settle(
        &mut self,
        done: Result<PreDone, tokio::task::JoinError>,
        record: &mut Recorder,
    ) -> Option<Ready> {
        let done = match done {
            Ok(done) => done,
            Err(error) => {
                // A panic in a hook task: the pod it held cannot be named, the backup says so.
                let message = format!("a pod's pre hooks stopped: {error}");
                record.error(None, message);
                return None;
            }
        };
        let mut pod_results = done.results;
        for warning in done.volumes.warnings {
            record.warning(Some(&pod_results.namespace), warning);
        }
        for error in done.volumes.errors {
            record.error(Some(&pod_results.namespace), error);
        }
        if let Some(reason) = done.failed {
            let message = format!(
                "pod {}/{} is left out of the backup: {reason}",
                pod_results.namespace, pod_results.pod
            );
            record.error(Some(&pod_results.namespace), message);
            pod_results.left_out = Some(reason);
            self.done.push(pod_results);
            return None;
        }
        if done.post.is_empty() {
            self.done.push(pod_results);
            return Some(Ready {
                page: done.page,
                then: PostHooks(None),
            });
        }
        Some(Ready {
            page: done.page,
            then: PostHooks(Some(PendingPost {
                pod: done.pod,
                hooks: done.post,
                results: pod_results,
                volume_backups: done.volumes.names,
            })),
        })
    }

    /// Starts the post hooks of a pod the engine has written, once its volume backups end (not
    /// at all if they do not end before the backup's pod volume timeout, as in Velero).
    pub fn written(&mut self, then: PostHooks) {
        let Some(PendingPost {
            pod,
            hooks,
            results: mut pod_results,
            volume_backups,
        }) = then.0
        else {
            return;
        };
        let (client, slots) = (self.client.clone(), self.slots.clone());
        let volumes = self.volumes.clone();
        self.post.spawn(async move {
            if let Err(unfinished) = volumes.wait(&volume_backups).await {
                let reason = format!(
                    "its pod volume backups ({}) did not end before the backup's pod volume timeout",
                    unfinished.join(", ")
                );
                pod_results
                    .hooks
                    .extend(backup::not_run(&hooks, HookPhase::Post, &reason));
                return pod_results;
            }
            let _slot = slots.acquire_owned().await;
            let run = backup::run(&pods_api(&client, &pod), &pod, &hooks, HookPhase::Post).await;
            pod_results.hooks.extend(run.results);
            pod_results
        });
    }

    /// Waits for every PodVolumeBackup the backup made to end: each as it ended, for the
    /// backup's file of them; those that failed, or did not end in time, are its errors.
    pub async fn volume_backups(&self, record: &mut Recorder) -> Vec<PodVolumeBackup> {
        let (pvbs, errors) = self.volumes.finish().await;
        for (namespace, error) in errors {
            let namespace = Some(namespace.as_str()).filter(|n| !n.is_empty());
            record.error(namespace, error);
        }
        pvbs
    }

    /// Waits for every post hook, then logs each hook's outcome (failures are the backup's errors,
    /// as Velero logs them) and returns every pod's results, by namespace and name.
    pub async fn finish(mut self, record: &mut Recorder) -> Vec<PodHookResults> {
        while let Some(done) = self.post.join_next().await {
            match done {
                Ok(pod_results) => self.done.push(pod_results),
                Err(error) => {
                    let message = format!("a pod's post hooks stopped: {error}");
                    record.error(None, message);
                }
            }
        }
        let mut done = self.done;
        done.sort_by(|a, b| (&a.namespace, &a.pod).cmp(&(&b.namespace, &b.pod)));
        record.hook_outcomes(&done);
        done
    }
}

fn namespace(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/namespace").and_then(Value::as_str)
}

fn name(pod: &Value) -> &str {
    pod.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn pods_api(client: &Client, pod: &Value) -> Api<Pod> {
    Api::namespaced(client.clone(), namespace(pod).unwrap_or_default())
}
