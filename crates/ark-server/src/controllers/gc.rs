//! Garbage collection: an expired backup (past its TTL), or a half-deleted one (Deleting) whose
//! request is gone, gets a DeleteBackupRequest, unless one is already pending for it; when its location is missing or read-only the backup is labelled
//! `velero.io/gc-failure` with the reason instead. A schedule's newest Completed backup is kept
//! past its TTL while the schedule exists: its last good backup, whatever came after it.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{Backup, BackupPhase, DeleteBackupRequest, DeleteBackupRequestPhase, labels};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use crate::domain::locations::{self, LocationError};
use crate::domain::retention::{self, Retention, RetentionError};
use crate::runtime::context::Kube;
use crate::runtime::objects::Readable;
use crate::runtime::{objects, periodic};

pub struct Ctx {
    pub kube: Kube,
    /// How often each backup is looked at (`--garbage-collection-frequency`); also how long a
    /// failed deletion holds back the next request for its backup.
    pub frequency: Duration,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    // Every backup is looked at again, expired or not.
    periodic::run::<Backup, _, _, _>(ctx, async |object, ctx| Some(collect(object, ctx).await))
        .await;
}

/// One backup's garbage collection; again after `--garbage-collection-frequency`, or when the
/// backup expires if that is sooner.
async fn collect(object: Arc<Readable<Backup>>, ctx: Arc<Ctx>) -> Duration {
    let Ok(backup) = &object.read else {
        return ctx.frequency;
    };
    if let Err(error) = collect_one(&ctx, backup).await {
        tracing::warn!(
            "garbage collection of backup {}: {error}",
            backup.name_any()
        );
    }
    let until_expiry = backup
        .status
        .as_ref()
        .and_then(|s| s.expiration.as_ref())
        .and_then(|e| Timestamp::now().duration_until(e.0).try_into().ok())
        .filter(|left: &Duration| !left.is_zero());
    until_expiry.map_or(ctx.frequency, |left| {
        left.min(ctx.frequency) + Duration::from_millis(100)
    })
}

/// Whether a backup expires at or before its own start: nobody asks for a backup to be deleted
/// as it is made. That is a TTL of zero read as zero (Velero's CLI writes `ttl: 0s` for "the
/// server's default", and ark's servers before it read it so kept none), and such a backup is
/// warned about, never deleted by expiry.
pub fn expires_at_its_start(backup: &Backup) -> bool {
    let status = backup.status.as_ref();
    match (
        status.and_then(|s| s.start_timestamp.as_ref()),
        status.and_then(|s| s.expiration.as_ref()),
    ) {
        (Some(start), Some(expiration)) => expiration.0 <= start.0,
        _ => false,
    }
}

/// Whether a backup is past its expiration and in a phase where deletion makes sense.
pub fn is_expired(backup: &Backup, now: Timestamp) -> bool {
    let expired = backup
        .status
        .as_ref()
        .and_then(|s| s.expiration.as_ref())
        .is_some_and(|e| e.0 <= now);
    expired
        && !expires_at_its_start(backup)
        && !matches!(
            backup.phase(),
            BackupPhase::New | BackupPhase::InProgress | BackupPhase::Deleting
        )
}

/// Whether an automatic request (garbage collection, sync) for the request's backup must wait:
/// while one is pending (Velero #685: one is enough), and for `backoff` after one failed, so that
/// a deletion that keeps failing is tried once a period, not without end.
pub fn holds_back_new_requests(
    request: &DeleteBackupRequest,
    now: Timestamp,
    backoff: std::time::Duration,
) -> bool {
    match request.phase() {
        None | Some(DeleteBackupRequestPhase::New) | Some(DeleteBackupRequestPhase::InProgress) => {
            true
        }
        Some(DeleteBackupRequestPhase::Processed) => {
            let failed = request
                .status
                .as_ref()
                .and_then(|s| s.errors.as_ref())
                .is_some_and(|e| !e.is_empty());
            let recent = request
                .metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| {
                    now.duration_since(t.0) < SignedDuration::try_from(backoff).unwrap_or_default()
                });
            failed && recent
        }
    }
}

/// Asks for the deletion of `backup`, unless a request for it holds that back (see above, with
/// `backoff` after a failed one).
pub async fn request_deletion(
    kube: &Kube,
    backup: &Backup,
    why: &str,
    backoff: Duration,
) -> kube::Result<()> {
    let name = backup.name_any();
    let selector =
        labels::selector_for_backup(&name, backup.metadata.uid.as_deref().unwrap_or_default());
    let now = Timestamp::now();
    let held_back = objects::list::<DeleteBackupRequest>(
        &kube.client,
        &kube.namespace,
        &ListParams::default().labels(&selector),
    )
    .await?
    .iter()
    .any(|r| holds_back_new_requests(r, now, backoff));
    if !held_back {
        Api::<DeleteBackupRequest>::namespaced(kube.client.clone(), &kube.namespace)
            .create(
                &PostParams::default(),
                &DeleteBackupRequest::for_backup(backup),
            )
            .await?;
        tracing::info!("backup {name} {why}; deletion requested");
    }
    Ok(())
}

async fn collect_one(ctx: &Ctx, backup: &Backup) -> kube::Result<()> {
    let kube = &ctx.kube;
    if expires_at_its_start(backup) && backup.phase().is_terminal() {
        let note = format!(
            "backup {} expires at or before its start (status.expiration {}): a TTL of 0 that \
             meant the default; it is kept, not deleted (delete it with ark backup delete, or give \
             it a later status.expiration)",
            backup.name_any(),
            backup
                .status
                .as_ref()
                .and_then(|s| s.expiration.as_ref())
                .map(|e| e.0.to_string())
                .unwrap_or_default(),
        );
        kube.events
            .warn(
                backup.object_ref(&()),
                None,
                "ExpiresAtItsStart",
                "GarbageCollection",
                note,
            )
            .await;
    }
    match verdict(kube, backup).await? {
        Verdict::Keep => Ok(()),
        Verdict::KeepAsLastGood(schedule) => keep_as_last_good(kube, backup, &schedule).await,
        Verdict::Held { schedule, error } => {
            let note = format!(
                "schedule {}: annotation {}: {error}; none of its backups is deleted until it reads",
                schedule.name_any(),
                labels::RETENTION
            );
            (kube.events)
                .warn(
                    schedule.object_ref(&()),
                    None,
                    "RetentionUnreadable",
                    "GarbageCollection",
                    note,
                )
                .await;
            Ok(())
        }
        Verdict::Delete(why) => delete(ctx, backup, &why).await,
    }
}

/// What garbage collection does with a backup.
enum Verdict {
    Keep,
    /// Past its TTL, kept as the newest Completed backup of this schedule, which exists.
    KeepAsLastGood(String),
    /// Past its TTL, but its schedule's retention rules do not read: nothing of the schedule's
    /// is deleted.
    Held {
        schedule: Box<ark_api::Schedule>,
        error: RetentionError,
    },
    /// Deleted, for this reason (for the log).
    Delete(String),
}

/// Half-deleted backups whose request is gone (removed by hand, or its server stopped) are
/// deleted: a new request finishes what the last one started. A schedule's backups go by its
/// retention rules when it has some (instead of their TTL: only failed ones expire), else by
/// their TTL, but for its last good backup. Any other backup goes at its TTL.
async fn verdict(kube: &Kube, backup: &Backup) -> kube::Result<Verdict> {
    let phase = backup.phase();
    if phase == BackupPhase::Deleting {
        return Ok(Verdict::Delete(
            "is Deleting with no request left to finish it".into(),
        ));
    }
    let expired = is_expired(backup, Timestamp::now());
    let at_its_ttl = || match expired {
        true => Verdict::Delete("expired".into()),
        false => Verdict::Keep,
    };
    let Some(schedule) = schedule_of(kube, backup).await? else {
        return Ok(at_its_ttl());
    };
    let policy = match schedule.annotations().get(labels::RETENTION) {
        None => None,
        Some(text) => match text.parse::<Retention>() {
            Ok(policy) => Some(policy),
            // Nothing of the schedule's goes; said whenever that holds back what its TTL asks.
            Err(error) if expired => {
                let schedule = Box::new(schedule);
                return Ok(Verdict::Held { schedule, error });
            }
            Err(_) => return Ok(Verdict::Keep),
        },
    };
    if phase != BackupPhase::Completed || (policy.is_none() && !expired) {
        return Ok(at_its_ttl());
    }
    let label = backup.labels().get(labels::SCHEDULE_NAME);
    let made = retention::completed_of(kube, label.map_or("", String::as_str)).await?;
    let name = backup.name_any();
    Ok(match policy {
        Some(policy) if policy.kept(&made).contains_key(name.as_str()) => Verdict::Keep,
        Some(policy) => Verdict::Delete(format!(
            "is kept by no retention rule of schedule {} ({policy})",
            schedule.name_any()
        )),
        None if newest(&made) == Some(name.as_str()) => {
            Verdict::KeepAsLastGood(schedule.name_any())
        }
        None => Verdict::Delete("expired".into()),
    })
}

/// The schedule that made `backup` (by its label, which holds the name as a label value holds
/// it: shortened past 63 characters, Velero's rule), while it exists.
async fn schedule_of(kube: &Kube, backup: &Backup) -> kube::Result<Option<ark_api::Schedule>> {
    let Some(label) = backup.labels().get(labels::SCHEDULE_NAME) else {
        return Ok(None);
    };
    // A label value that is not shortened is the schedule's name.
    if label.len() < labels::MAX_LABEL_VALUE {
        let schedule = objects::get::<ark_api::Schedule>(&kube.client, &kube.namespace, label);
        return Ok(schedule.await?.and_then(Result::ok));
    }
    let all = ListParams::default();
    let schedules = objects::list::<ark_api::Schedule>(&kube.client, &kube.namespace, &all);
    Ok((schedules.await?.into_iter()).find(|s| labels::valid_label_value(&s.name_any()) == *label))
}

/// The newest of `made` (by start, then name: a schedule's names sort by time).
fn newest(made: &[(String, Timestamp)]) -> Option<&str> {
    let newest = made.iter().max_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    newest.map(|(name, _)| name.as_str())
}

/// Requests the backup's deletion, unless its location is missing, read-only or unavailable
/// (labelled `velero.io/gc-failure` with why, for the first two).
async fn delete(ctx: &Ctx, backup: &Backup, why: &str) -> kube::Result<()> {
    let kube = &ctx.kube;
    let backups = objects::api::<Backup>(&kube.client, &kube.namespace);
    let name = backup.name_any();
    let location = backup.spec.storage_location.clone().unwrap_or_default();
    let found = locations::get(&kube.client, &kube.namespace, &location).await;
    let failure = match &found {
        Ok(found) if found.is_read_only() => Some("BSLReadOnly"),
        Ok(_) => None,
        Err(LocationError::NotFound(_)) => Some("BSLNotFound"),
        Err(_) => Some("BSLCannotGet"),
    };
    let current = backup.labels().get(labels::GC_FAILURE).map(String::as_str);
    if current != failure {
        let patch = json!({ "metadata": { "labels": { labels::GC_FAILURE: failure } } });
        backups
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    if failure.is_some() {
        return Ok(());
    }
    if let Ok(found) = &found
        && let Some(reason) = found.unavailable()
    {
        tracing::info!(
            "garbage collection: backup {name} {why}; its location {location} is unavailable ({reason}), so it waits"
        );
        return Ok(());
    }
    request_deletion(kube, backup, why, ctx.frequency).await
}

/// Marks the backup kept (once: the mark and a Normal event say why), and requests nothing.
async fn keep_as_last_good(kube: &Kube, backup: &Backup, schedule: &str) -> kube::Result<()> {
    if backup
        .annotations()
        .get(labels::KEPT_AS_LAST_GOOD)
        .map(String::as_str)
        == Some(schedule)
    {
        return Ok(());
    }
    let name = backup.name_any();
    let marked = json!({ "metadata": { "annotations": { labels::KEPT_AS_LAST_GOOD: schedule } } });
    let backups = objects::api::<Backup>(&kube.client, &kube.namespace);
    (backups.patch(&name, &PatchParams::default(), &Patch::Merge(&marked))).await?;
    let note = format!(
        "backup {name} expired, and is kept: it is the newest Completed backup of schedule \
         {schedule}, which still exists; it goes once a later backup of the schedule completes, \
         or the schedule is deleted"
    );
    (kube.events)
        .normal(
            backup.object_ref(&()),
            "KeptAsLastGood",
            "GarbageCollection",
            note,
        )
        .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupSpec, BackupStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn backup(phase: BackupPhase, expires_in_secs: i64) -> Backup {
        let mut backup = Backup::new("b", BackupSpec::default());
        backup.status = Some(BackupStatus {
            phase: Some(phase),
            expiration: Some(Time(
                Timestamp::now() + SignedDuration::from_secs(expires_in_secs),
            )),
            ..Default::default()
        });
        backup
    }

    #[test]
    fn only_finished_backups_past_their_ttl_expire() {
        let now = Timestamp::now();
        assert!(is_expired(&backup(BackupPhase::Completed, -10), now));
        assert!(is_expired(&backup(BackupPhase::Failed, -10), now));
        assert!(!is_expired(&backup(BackupPhase::Completed, 3600), now));
        assert!(!is_expired(&backup(BackupPhase::InProgress, -10), now));
        assert!(!is_expired(&backup(BackupPhase::Deleting, -10), now));
        assert!(!is_expired(&Backup::new("b", BackupSpec::default()), now));
    }

    #[test]
    fn a_backup_that_expires_at_its_own_start_is_never_expired() {
        let now = Timestamp::now();
        let mut zero_ttl = backup(BackupPhase::Completed, -10);
        let status = zero_ttl.status.as_mut().unwrap();
        status.start_timestamp = status.expiration.clone();
        assert!(expires_at_its_start(&zero_ttl));
        assert!(!is_expired(&zero_ttl, now));
        // A start one second before its expiration: a TTL of 1s, which expires.
        let mut one_second = backup(BackupPhase::Completed, -10);
        let status = one_second.status.as_mut().unwrap();
        status.start_timestamp = Some(Time(
            status.expiration.as_ref().unwrap().0 - SignedDuration::from_secs(1),
        ));
        assert!(!expires_at_its_start(&one_second));
        assert!(is_expired(&one_second, now));
    }

    #[test]
    fn the_last_good_backup_is_the_newest_by_start_then_name() {
        let at = |h: i64| Timestamp::now() - SignedDuration::from_hours(h);
        let made = |list: &[(&str, i64)]| -> Vec<(String, Timestamp)> {
            list.iter().map(|(n, h)| (n.to_string(), at(*h))).collect()
        };
        let t = at(5);
        assert_eq!(
            newest(&made(&[("daily-1", 72), ("daily-2", 48)])),
            Some("daily-2")
        );
        let tie = vec![("daily-b".to_string(), t), ("daily-a".to_string(), t)];
        assert_eq!(newest(&tie), Some("daily-b"));
        assert_eq!(newest(&[]), None);
    }

    #[test]
    fn a_failed_request_holds_back_new_ones_for_one_period() {
        let period = std::time::Duration::from_secs(3600);
        let now = Timestamp::now();
        let request = |phase: Option<DeleteBackupRequestPhase>, errors: &[&str], age_secs: i64| {
            let mut r = DeleteBackupRequest::for_backup(&Backup::new("b", BackupSpec::default()));
            r.metadata.creation_timestamp = Some(Time(now - SignedDuration::from_secs(age_secs)));
            r.status = Some(ark_api::DeleteBackupRequestStatus {
                phase,
                errors: Some(errors.iter().map(|e| e.to_string()).collect()),
                ..Default::default()
            });
            r
        };
        use DeleteBackupRequestPhase::*;
        assert!(holds_back_new_requests(&request(None, &[], 0), now, period));
        assert!(holds_back_new_requests(
            &request(Some(New), &[], 7200),
            now,
            period
        ));
        assert!(holds_back_new_requests(
            &request(Some(InProgress), &[], 7200),
            now,
            period
        ));
        assert!(holds_back_new_requests(
            &request(Some(Processed), &["x"], 60),
            now,
            period
        ));
        assert!(!holds_back_new_requests(
            &request(Some(Processed), &["x"], 7200),
            now,
            period
        ));
        assert!(!holds_back_new_requests(
            &request(Some(Processed), &[], 60),
            now,
            period
        ));
    }
}
