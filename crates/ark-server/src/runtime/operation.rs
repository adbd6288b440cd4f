//! What the backup and restore controllers share: each carries out a long operation on an object
//! whose status lives in the object, with a phase and progress, one controller loop each.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ark_api::labels::TENANT_NAMESPACE;
use ark_api::{
    Backup, BackupPhase, BackupProgress, BackupStatus, Restore, RestorePhase, RestoreProgress,
    RestoreStatus,
};
use kube::api::{DynamicObject, ListParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Phase, Summary};
use crate::runtime::patch;
use crate::runtime::sync::Locked;

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
    /// The kind's typed status; a write sets the fields it has.
    type Status: Serialize + Send + Sync;
    type Phase: Serialize + DeserializeOwned + PartialEq + Send + Copy;
    const NEW: Self::Phase;
    /// What a claim sets, and what the final status write requires.
    const IN_PROGRESS: Self::Phase;
    fn failed(reason: String) -> Self::Status;
    fn failed_validation(errors: Vec<String>) -> Self::Status;
    fn progress(done: i64, total: i64) -> Self::Status;
}

impl Operation for Backup {
    const KIND: &'static str = "backup";
    type Status = BackupStatus;
    type Phase = BackupPhase;
    const NEW: BackupPhase = BackupPhase::New;
    const IN_PROGRESS: BackupPhase = BackupPhase::InProgress;
    fn failed(reason: String) -> BackupStatus {
        BackupStatus {
            phase: Some(BackupPhase::Failed),
            failure_reason: Some(reason),
            completion_timestamp: Some(patch::now()),
            ..Default::default()
        }
    }
    fn failed_validation(errors: Vec<String>) -> BackupStatus {
        BackupStatus {
            phase: Some(BackupPhase::FailedValidation),
            validation_errors: Some(errors),
            ..Default::default()
        }
    }
    fn progress(done: i64, total: i64) -> BackupStatus {
        BackupStatus {
            progress: Some(BackupProgress {
                items_backed_up: Some(done),
                total_items: Some(total),
            }),
            ..Default::default()
        }
    }
}

impl Operation for Restore {
    const KIND: &'static str = "restore";
    type Status = RestoreStatus;
    type Phase = RestorePhase;
    const NEW: RestorePhase = RestorePhase::New;
    const IN_PROGRESS: RestorePhase = RestorePhase::InProgress;
    fn failed(reason: String) -> RestoreStatus {
        RestoreStatus {
            phase: Some(RestorePhase::Failed),
            failure_reason: Some(reason),
            completion_timestamp: Some(patch::now()),
            ..Default::default()
        }
    }
    fn failed_validation(errors: Vec<String>) -> RestoreStatus {
        RestoreStatus {
            phase: Some(RestorePhase::FailedValidation),
            validation_errors: Some(errors),
            ..Default::default()
        }
    }
    fn progress(done: i64, total: i64) -> RestoreStatus {
        RestoreStatus {
            progress: Some(RestoreProgress {
                items_restored: Some(done),
                total_items: Some(total),
            }),
            ..Default::default()
        }
    }
}

/// Why an operation (a backup, a restore) does not run now: its validation's verdict.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    /// As written, it cannot run: it ends FailedValidation with these reasons.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
    /// What validation needs could not be read (the API server failed to answer): it stays New
    /// and is validated again.
    #[error(transparent)]
    Unreadable(#[from] kube::Error),
}

/// The untyped API of the operation's kind in the server's namespace (see `objects`).
pub fn api<K: Operation>(kube: &Kube) -> Api<DynamicObject> {
    objects::api::<K>(&kube.client, &kube.namespace)
}

/// The objects a previous server left InProgress: an operation cannot be resumed (as in Velero).
pub async fn interrupted<K: Operation>(kube: &Kube) -> Vec<DynamicObject> {
    let mut interrupted = Vec::new();
    let all = ListParams::default();
    let listed = objects::each_page::<K>(&kube.client, &kube.namespace, &all, |page| {
        let in_progress = |o: &DynamicObject| objects::phase(o) == Phase::Known(K::IN_PROGRESS);
        interrupted.extend(page.into_iter().filter(in_progress));
    });
    if let Err(error) = listed.await {
        tracing::warn!("listing {}s left InProgress: {error}", K::KIND);
    }
    interrupted
}

/// Marks an interrupted operation Failed, as Velero words it.
pub async fn fail_interrupted<K: Operation>(kube: &Kube, object: &DynamicObject) {
    let reason = format!(
        "found a {} with status InProgress during the server starting, mark it as Failed",
        K::KIND
    );
    let status = K::failed(reason);
    if let Err(error) =
        patch::status_in_phase(&api::<K>(kube), &object.name_any(), K::IN_PROGRESS, &status).await
    {
        tracing::warn!("marking {} {} Failed: {error}", K::KIND, object.name_any());
    }
}

/// Runs `reconcile` for every object of the kind in the server's namespace. The controller
/// watches untyped objects, so one that ark's types cannot read is handled alone (see
/// [`claimable`]). A New object waits for a place in its [`Lanes`] lane first: the cluster's own
/// operations run `workers` at once, each delegated namespace's one at a time beside them.
pub async fn run<K, C, F, Fut>(ctx: Arc<C>, workers: u16, mut reconcile: F)
where
    K: Operation,
    C: AsRef<Kube> + Send + Sync + 'static,
    F: FnMut(Arc<Summary<K>>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let lanes = Lanes::new(workers);
    let in_lane = move |cached: Arc<Summary<K>>, ctx: Arc<C>| {
        // Only a New object has work: any other is passed over without the operation's future,
        // which is kilobytes, and a server that starts beside 10,000 backups is handed them all
        // at once (the controller bounds nothing, see below).
        let new = is_new::<K>(cached.phase()).then(|| {
            let lane = lanes.lane(cached.labels());
            let kube: Kube = (*ctx).as_ref().clone();
            (lane, kube, Box::pin(reconcile(cached, ctx)))
        });
        async move {
            let Some((lane, kube, work)) = new else {
                return Ok(Action::await_change());
            };
            let _place = tokio::select! {
                place = lane.acquire_owned() => place.ok(),
                () = kube.stopped() => None,
            };
            // A server told to stop while this waited starts nothing more.
            if kube.is_stopping() {
                return Ok(Action::await_change());
            }
            work.await
        }
    };
    // The lanes bound the work; the controller's own bound would make a tenant's operation wait
    // behind the cluster's.
    let woken = controller::Woken::Never;
    controller::run_summarized::<K, _, _, _>(ctx, K::KIND, 0, woken, in_lane).await;
}

/// Where operations wait for each other. A tenant's requests are mirrored into the server's
/// namespace labelled with the tenant's namespace (`controllers::tenants`): each tenant's run one
/// at a time in a lane of its own, so one tenant's hooks and volumes, however long they take,
/// never hold another tenant's backup or restore, nor the cluster's; a tenant holds at most one
/// operation's memory and scratch space at once. Every other operation (an administrator's, a
/// schedule's) shares the cluster's lane, `workers` at once.
struct Lanes {
    cluster: Arc<Semaphore>,
    tenants: Mutex<BTreeMap<String, Arc<Semaphore>>>,
}

impl Lanes {
    fn new(workers: u16) -> Self {
        Lanes {
            cluster: Arc::new(Semaphore::new(usize::from(workers.max(1)))),
            tenants: Mutex::default(),
        }
    }

    /// The lane of an operation labelled `labels`.
    fn lane(&self, labels: &BTreeMap<String, String>) -> Arc<Semaphore> {
        let Some(tenant) = labels.get(TENANT_NAMESPACE) else {
            return self.cluster.clone();
        };
        let mut tenants = self.tenants.locked();
        // A lane nobody is in or waiting for is forgotten: its namespace may be gone for good.
        tenants.retain(|_, lane| Arc::strong_count(lane) > 1);
        let lane = tenants.entry(tenant.clone());
        lane.or_insert_with(|| Arc::new(Semaphore::new(1))).clone()
    }
}

/// Whether an operation in `phase` is New (no phase yet, or `New`): the only phase an operation
/// starts from.
fn is_new<K: Operation>(phase: Phase<K::Phase>) -> bool {
    match phase {
        Phase::Absent => true,
        Phase::Known(phase) => phase == K::NEW,
        Phase::Unknown(_) => false,
    }
}

/// A New object as the API has it now, typed, with the resourceVersion to claim it at; None when
/// there is nothing to do. Deciding on the controller's cache, which may not have seen the
/// InProgress this server wrote, could start an operation twice. A New object that ark's types
/// cannot read ends FailedValidation with the field and the reason.
pub async fn claimable<K: Operation>(kube: &Kube, cached: &Summary<K>) -> kube::Result<Option<K>> {
    // A phase moves only forward: an object the cache has past New is not New now either, and
    // reading it again would cost a request for every event of every finished operation (each
    // backup a deletion removes brings two).
    if !is_new::<K>(cached.phase()) {
        return Ok(None);
    }
    let Some(object) = cached.read(&kube.client).await? else {
        return Ok(None);
    };
    if !is_new::<K>(object.phase()) {
        return Ok(None);
    }
    let (name, stored) = (object.name(), object.stored);
    match object.read {
        Ok(typed) => Ok(Some(typed)),
        Err(unfit) => {
            let status = K::failed_validation(vec![unfit.to_string()]);
            let _ = patch::claim(
                &api::<K>(kube),
                &name,
                stored.metadata.resource_version.as_deref(),
                json!({ "status": status }),
            )
            .await?;
            Ok(None)
        }
    }
}

/// Writes the final status, the operation's own on success, `Failed` with the reason otherwise,
/// only while the object is still InProgress: one that another server has ended meanwhile (marked
/// Failed at its start-up) keeps that end.
pub async fn finish<K: Operation>(
    api: &Api<DynamicObject>,
    name: &str,
    outcome: Result<K::Status, String>,
) -> kube::Result<patch::Claim> {
    let status = outcome.unwrap_or_else(K::failed);
    let claim = patch::final_status_in_phase(api, K::KIND, name, K::IN_PROGRESS, &status).await;
    if claim == patch::Claim::Lost {
        tracing::warn!(
            "{} {name} was no longer InProgress when it ended: its final status was not written",
            K::KIND
        );
    }
    Ok(claim)
}

/// Patches `status.progress` at most once a second while the operation's counts change. The
/// final status carries the last counts, so the reporter is stopped the moment the operation
/// ends: no wait for its pause to run out.
pub struct ProgressReporter {
    task: tokio::task::JoinHandle<()>,
}

impl ProgressReporter {
    /// Starts reporting on the object `name`; the operation sends `(done, total)` on the sender.
    pub fn start<K: Operation>(
        api: Api<DynamicObject>,
        name: String,
    ) -> (tokio::sync::watch::Sender<(i64, i64)>, Self) {
        let (progress, mut counts) = tokio::sync::watch::channel((0, 0));
        let task = tokio::spawn(async move {
            while counts.changed().await.is_ok() {
                let (done, total) = *counts.borrow_and_update();
                let _ =
                    patch::status_in_phase(&api, &name, K::IN_PROGRESS, &K::progress(done, total))
                        .await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        (progress, Self { task })
    }
}

/// Dropped, it stops at once: when its operation ends (a patch cut off in flight cannot land on
/// the final status, which is written only while the object is InProgress), or when a lost lease
/// cuts the operation off.
impl Drop for ProgressReporter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The regression behind a GET per event of every finished backup (2,500 GETs while 1,000
    /// backups were deleted): an object the cache has past New is passed over without a request.
    #[tokio::test]
    async fn an_operation_the_cache_has_past_new_is_passed_over_without_a_request() {
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counting = {
            let asked = asked.clone();
            tower::service_fn(move |_: http::Request<kube::client::Body>| {
                asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async {
                    Ok::<_, std::io::Error>(
                        http::Response::builder()
                            .status(404)
                            .body(kube::client::Body::from(
                                br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#.to_vec(),
                            ))
                            .unwrap(),
                    )
                }
            })
        };
        let (kube, _stop) = Kube::for_tests(kube::Client::new(counting, "velero"));
        let cached = |phase: &str| -> Summary<ark_api::Backup> {
            serde_json::from_value(json!({
                "apiVersion": "velero.io/v1", "kind": "Backup",
                "metadata": { "name": "b1", "namespace": "velero" },
                "status": { "phase": phase },
            }))
            .unwrap()
        };
        for phase in ["InProgress", "Completed", "Deleting", "FailedValidation"] {
            let claim = claimable::<ark_api::Backup>(&kube, &cached(phase)).await;
            assert!(matches!(claim, Ok(None)), "{phase}");
        }
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
        // A New one is read again: the cache may predate this server's own claim.
        let claim = claimable::<ark_api::Backup>(&kube, &cached("New")).await;
        assert!(matches!(claim, Ok(None)));
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    fn backup_of(tenant: Option<&str>) -> BTreeMap<String, String> {
        tenant
            .map(|t| [(TENANT_NAMESPACE.to_string(), t.to_string())].into())
            .unwrap_or_default()
    }

    #[test]
    fn a_tenant_holding_its_lane_holds_neither_another_tenant_nor_the_cluster() {
        let lanes = Lanes::new(1);
        let team_a = lanes.lane(&backup_of(Some("team-a")));
        let held = team_a.clone().try_acquire_owned().unwrap();
        // team-a's next operation waits for its first; team-b's and the cluster's do not.
        assert!(
            lanes
                .lane(&backup_of(Some("team-a")))
                .try_acquire()
                .is_err()
        );
        let team_b = lanes.lane(&backup_of(Some("team-b")));
        let _b = team_b.try_acquire().unwrap();
        let cluster = lanes.lane(&backup_of(None));
        let _c = cluster.try_acquire().unwrap();
        // The cluster's lane holds `workers` (1): its second operation waits.
        assert!(lanes.lane(&backup_of(None)).try_acquire().is_err());
        drop(held);
        assert!(lanes.lane(&backup_of(Some("team-a"))).try_acquire().is_ok());
    }

    #[test]
    fn a_lane_nobody_holds_or_waits_for_is_forgotten() {
        let lanes = Lanes::new(2);
        let kept = || -> Vec<String> { lanes.tenants.locked().keys().cloned().collect() };
        let held = lanes.lane(&backup_of(Some("team-a")));
        drop(lanes.lane(&backup_of(Some("gone"))));
        let waited_for = lanes.lane(&backup_of(Some("team-b")));
        assert_eq!(kept(), ["team-a", "team-b"]);
        drop((held, waited_for));
        drop(lanes.lane(&backup_of(Some("team-c"))));
        assert_eq!(kept(), ["team-c"]);
    }
}
