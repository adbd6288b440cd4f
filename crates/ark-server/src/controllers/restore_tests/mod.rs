//! Restore tests on a schedule (ark's own, `ark_api::restore_test`): each schedule with a test is
//! looked at every minute; when its test is due, the newest Completed backup is restored into
//! throwaway namespaces and checked ([`steps`]), the result recorded on the backup and the
//! schedule, with an event and the metrics, and the namespaces removed. A test that failed, or
//! is older than its schedule says, sets the schedule's `ark_restore_test_failing` to 1 and raises
//! a Warning event.
//!
//! A server stopped mid-test leaves its throwaway namespaces behind: every namespace labelled as a
//! test of this server's (`ark.io/restore-test-by=<its namespace>`) that this process is not
//! testing in is a leftover (one server leads), and goes, at each look and every minute; another
//! install's are not this server's to touch. The test is then due again, and runs again.

mod steps;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ark_api::cron::Cron;
use ark_api::restore_test::{
    BY_LABEL, Cadence, RESULT_ANNOTATION, RestoreTest, TestResult, ValidTest,
};
use ark_api::verification::Outcome;
use ark_api::{Backup, Schedule, labels};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Resource as _, ResourceExt as _};

use crate::domain::retention;
use crate::runtime::context::Kube;
use crate::runtime::objects::{self, Readable};
use crate::runtime::periodic;
use crate::runtime::sync::Locked;

/// How often a schedule is looked at: a new Completed backup is tested within a minute.
const LOOK_EVERY: Duration = Duration::from_secs(60);

pub struct Ctx {
    pub kube: Kube,
    /// The throwaway namespaces of the tests this process runs.
    running: Mutex<HashSet<String>>,
}

impl Ctx {
    pub fn new(kube: Kube) -> Self {
        Ctx {
            kube,
            running: Mutex::default(),
        }
    }
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    let sweeping = async {
        loop {
            sweep(&ctx).await;
            tokio::time::sleep(LOOK_EVERY).await;
        }
    };
    tokio::join!(
        sweeping,
        periodic::run::<Schedule, _, _, _>(ctx.clone(), look)
    );
}

/// Removes the throwaway namespaces of tests this process does not run: leftovers of a server
/// that stopped mid-test.
async fn sweep(ctx: &Ctx) {
    let namespaces = Api::<Namespace>::all(ctx.kube.client.clone());
    let ours = format!("{BY_LABEL}={}", ctx.kube.namespace);
    let labelled = ListParams::default().labels(&ours);
    let found = match namespaces.list_metadata(&labelled).await {
        Ok(found) => found,
        Err(error) => return tracing::warn!("listing restore tests' namespaces: {error}"),
    };
    for namespace in found.items {
        let name = namespace.name_any();
        let terminating = namespace.metadata.deletion_timestamp.is_some();
        if terminating || ctx.running.locked().contains(&name) {
            continue;
        }
        tracing::info!("removing namespace {name}, left behind by a restore test that stopped");
        steps::remove_namespace(&namespaces, &name).await;
    }
}

async fn look(object: Arc<Readable<Schedule>>, ctx: Arc<Ctx>) -> Option<Duration> {
    let Ok(schedule) = &object.read else {
        return Some(LOOK_EVERY);
    };
    let kube = &ctx.kube;
    let name = schedule.name_any();
    let test = match RestoreTest::of(schedule) {
        None => {
            kube.metrics.restore_test_failing(&name, None);
            return Some(LOOK_EVERY);
        }
        Some(Ok(test)) => test,
        Some(Err(error)) => {
            let note = format!("schedule {name}: no restore test runs: {error}");
            (kube.events)
                .warn(
                    schedule.object_ref(&()),
                    None,
                    "RestoreTestUnreadable",
                    "RestoreTest",
                    note,
                )
                .await;
            kube.metrics.restore_test_failing(&name, Some(true));
            return Some(LOOK_EVERY);
        }
    };
    let last = TestResult::of(schedule.metadata.annotations.as_ref()).and_then(Result::ok);
    let label = labels::valid_label_value(&name);
    let completed = match retention::completed_of(kube, &label).await {
        Ok(completed) => completed,
        Err(error) => {
            tracing::warn!("schedule {name}: listing its backups: {error}");
            return Some(LOOK_EVERY);
        }
    };
    let now = Timestamp::now();
    let Some(due) = due(&test, last.as_ref(), &completed, now) else {
        let overdue = overdue(&test, schedule, last.as_ref(), now);
        if let Some(note) = &overdue {
            (kube.events)
                .warn(
                    schedule.object_ref(&()),
                    None,
                    "RestoreTestOverdue",
                    "RestoreTest",
                    note.clone(),
                )
                .await;
        }
        let failed = last.as_ref().is_some_and(|l| l.outcome == Outcome::Failed);
        kube.metrics
            .restore_test_failing(&name, Some(failed || overdue.is_some()));
        return Some(LOOK_EVERY);
    };
    let Ok(Some(Ok(backup))) = objects::get::<Backup>(&kube.client, &kube.namespace, &due).await
    else {
        return Some(LOOK_EVERY);
    };
    sweep(&ctx).await;
    let result = steps::run(&ctx, schedule, &test, &backup).await;
    record(kube, schedule, &backup, &result).await;
    Some(LOOK_EVERY)
}

/// The backup to test now, if one is due: the newest Completed one (by start, then name), unless
/// it was the last tested, when `every` backups started after the last tested one (or it is
/// gone, or there was no test), or when the last test ended `every` ago.
fn due(
    test: &ValidTest,
    last: Option<&TestResult>,
    completed: &[(String, Timestamp)],
    now: Timestamp,
) -> Option<String> {
    let newest = completed
        .iter()
        .max_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)))?;
    let Some(last) = last else {
        return Some(newest.0.clone());
    };
    if last.backup == newest.0 {
        return None;
    }
    let is_due = match test.every {
        Cadence::Backups(count) => {
            let tested = completed.iter().find(|(name, _)| *name == last.backup);
            let since = match tested {
                Some(&(_, started)) => completed.iter().filter(|(_, s)| *s > started).count(),
                None => usize::MAX,
            };
            since >= count as usize
        }
        Cadence::Period(period) => match last.ended.parse::<Timestamp>() {
            Ok(ended) => now.duration_since(ended) >= signed(period),
            Err(_) => true,
        },
    };
    is_due.then(|| newest.0.clone())
}

fn signed(duration: Duration) -> SignedDuration {
    SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX)
}

/// Why the schedule's last test (or, with none, its creation) is older than its test says, if it
/// is: its period, or its number of backups at the cron expression's interval, and then one more
/// interval and the test's own timeout.
fn overdue(
    test: &ValidTest,
    schedule: &Schedule,
    last: Option<&TestResult>,
    now: Timestamp,
) -> Option<String> {
    if schedule.spec.paused {
        return None;
    }
    let since = match last {
        Some(last) => last.ended.parse::<Timestamp>().ok()?,
        None => schedule.metadata.creation_timestamp.as_ref()?.0,
    };
    let cron = Cron::parse(&schedule.spec.schedule).ok()?;
    let next = cron.next(now)?;
    let interval = cron.next(next)?.duration_since(next);
    let between = match test.every {
        Cadence::Backups(count) => interval * i32::try_from(count).unwrap_or(i32::MAX),
        Cadence::Period(period) => signed(period),
    };
    let limit = between + interval + signed(test.timeout);
    (now.duration_since(since) > limit).then(|| {
        let what = match last {
            Some(last) => format!(
                "the last restore test, of backup {}, ended at {since}",
                last.backup
            ),
            None => format!("no restore test has run since the schedule was made, at {since}"),
        };
        format!(
            "{what}: longer ago than the test's cadence allows ({}); are its backups failing?",
            ark_api::duration::format(Duration::try_from(limit).unwrap_or_default()),
        )
    })
}

/// Writes the result on the backup and the schedule, raises its event and counts it.
async fn record(kube: &Kube, schedule: &Schedule, backup: &Backup, result: &TestResult) {
    let name = schedule.name_any();
    let text = serde_json::to_string(result).expect("a result serializes");
    let patch = serde_json::json!({ "metadata": { "annotations": { RESULT_ANNOTATION: text } } });
    let params = PatchParams::default();
    let backups = Api::<Backup>::namespaced(kube.client.clone(), &kube.namespace);
    let schedules = Api::<Schedule>::namespaced(kube.client.clone(), &kube.namespace);
    for written in [
        backups
            .patch(&backup.name_any(), &params, &Patch::Merge(&patch))
            .await
            .map(drop),
        schedules
            .patch(&name, &params, &Patch::Merge(&patch))
            .await
            .map(drop),
    ] {
        if let Err(error) = written {
            tracing::warn!(
                "schedule {name}: recording its restore test: {}",
                objects::reason(&error)
            );
        }
    }
    let passed = result.outcome == Outcome::Passed;
    kube.metrics.restore_tested(&name, passed);
    kube.metrics.restore_test_failing(&name, Some(!passed));
    let subject = format!(
        "restore test of backup {} (restore {})",
        result.backup, result.restore
    );
    for object in [schedule.object_ref(&()), backup.object_ref(&())] {
        match &result.reason {
            None => {
                let note = format!("{subject}: passed");
                kube.events
                    .normal(object, "RestoreTestPassed", "RestoreTest", note)
                    .await;
            }
            Some(reason) => {
                let note = format!("{subject}: failed: {reason}");
                (kube.events)
                    .warn(object, None, "RestoreTestFailed", "RestoreTest", note)
                    .await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(every: &str) -> ValidTest {
        ark_api::restore_test::parse(&format!("every: {every}\ncheck: {{command: [x]}}"))
            .unwrap()
            .validate()
            .unwrap()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn result(backup: &str, ended: &str, outcome: Outcome) -> TestResult {
        TestResult {
            outcome,
            backup: backup.into(),
            restore: format!("{backup}-test"),
            started: ended.into(),
            ended: ended.into(),
            reason: None,
            output: None,
        }
    }

    #[test]
    fn the_newest_completed_backup_is_tested_every_n_backups_or_once_the_last_test_is_old() {
        let completed = [
            ("d-1".to_string(), at("2026-12-01T03:00:00Z")),
            ("d-2".to_string(), at("2026-12-02T03:00:00Z")),
            ("d-3".to_string(), at("2026-12-03T03:00:00Z")),
        ];
        let now = at("2026-12-03T04:00:00Z");
        let every2 = test("2");
        assert_eq!(due(&every2, None, &completed, now).as_deref(), Some("d-3"));
        assert_eq!(due(&every2, None, &[], now), None);
        let tested_1 = result("d-1", "2026-12-01T03:10:00Z", Outcome::Failed);
        assert_eq!(
            due(&every2, Some(&tested_1), &completed, now).as_deref(),
            Some("d-3")
        );
        assert_eq!(due(&every2, Some(&tested_1), &completed[..2], now), None);
        let tested_3 = result("d-3", "2026-12-03T03:10:00Z", Outcome::Passed);
        assert_eq!(due(&every2, Some(&tested_3), &completed, now), None);
        // The tested backup is gone (deleted, expired): its successor is due.
        let gone = result("d-0", "2026-11-30T03:10:00Z", Outcome::Passed);
        assert_eq!(
            due(&every2, Some(&gone), &completed, now).as_deref(),
            Some("d-3")
        );
        let weekly = test("168h");
        assert_eq!(due(&weekly, Some(&tested_1), &completed, now), None);
        let week_later = at("2026-12-08T03:10:00Z");
        assert_eq!(
            due(&weekly, Some(&tested_1), &completed, week_later).as_deref(),
            Some("d-3")
        );
    }

    #[test]
    fn a_test_is_overdue_past_its_cadence_one_interval_and_its_timeout() {
        let mut schedule = Schedule::new(
            "daily",
            ark_api::ScheduleSpec {
                schedule: "0 3 * * *".into(),
                ..Default::default()
            },
        );
        schedule.metadata.creation_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at("2026-12-01T00:00:00Z")),
        );
        let every2 = test("2");
        // 2 days + 1 day + 30 minutes after creation.
        assert_eq!(
            overdue(&every2, &schedule, None, at("2026-12-04T00:29:00Z")),
            None
        );
        let note = overdue(&every2, &schedule, None, at("2026-12-04T00:31:00Z")).unwrap();
        assert_eq!(
            note,
            "no restore test has run since the schedule was made, at 2026-12-01T00:00:00Z: \
             longer ago than the test's cadence allows (72h30m0s); are its backups failing?"
        );
        let last = result("daily-1", "2026-12-03T03:00:00Z", Outcome::Passed);
        assert_eq!(
            overdue(&every2, &schedule, Some(&last), at("2026-12-06T03:29:00Z")),
            None
        );
        assert!(overdue(&every2, &schedule, Some(&last), at("2026-12-06T03:31:00Z")).is_some());
        schedule.spec.paused = true;
        assert_eq!(
            overdue(&every2, &schedule, Some(&last), at("2026-12-09T00:00:00Z")),
            None
        );
    }
}
