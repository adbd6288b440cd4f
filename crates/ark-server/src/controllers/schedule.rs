//! Schedules, as Velero's schedule controller runs them: a Schedule whose cron expression is valid
//! is Enabled (or FailedValidation, with the reason), and, unless paused, makes a Backup of its
//! template once a slot of the expression has passed since its last backup (or its creation, or
//! its last skip), never while one of its backups is New or InProgress, and never more than one
//! to catch up. Each schedule is looked at again at its next slot, not polled.
//!
//! Beyond Velero, slots missed while no server ran are not lost in silence: a Warning event on
//! the Schedule counts them, with the first and the last.

use std::sync::Arc;
use std::time::Duration;

use ark_api::cron::Cron;
use ark_api::{Backup, BackupPhase, Schedule, SchedulePhase, labels, schedule_name_error};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource};
use serde_json::json;

use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError};
use crate::runtime::objects::{self, Phase, Readable};
use crate::runtime::patch;

/// How often a due schedule looks again while one of its backups runs.
const WHILE_A_BACKUP_RUNS: Duration = Duration::from_secs(5);
/// At most this many slots are counted when runs were missed; more are reported as "at least".
const MAX_COUNTED_SLOTS: u64 = 100_000;

pub struct Ctx {
    pub kube: Kube,
    /// The server's `--schedule-skip-immediately`: what a schedule that does not set
    /// `skipImmediately` does, as in Velero.
    pub skip_immediately: bool,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(ctx: Arc<Ctx>) {
    controller::run::<Schedule, _, _, _>(ctx, "schedule", 0, reconcile).await;
}

/// Slots that passed without a backup, before the one served now.
#[derive(Debug, PartialEq)]
pub struct Missed {
    pub count: u64,
    /// Whether there were more than `count` (too many to count).
    pub at_least: bool,
    pub first: Timestamp,
    pub last: Timestamp,
}

/// What a schedule comes to at `now`.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Paused, or its failed validation already written: nothing until it changes.
    Wait,
    /// A merge patch to write first (phase, validation errors, a skip); decided again after.
    Write(serde_json::Value),
    /// Not due: looked at again at this time.
    NotBefore(Timestamp),
    /// Due: a backup for the slot `slot` (the last one passed).
    Due {
        slot: Timestamp,
        missed: Option<Missed>,
    },
}

/// Velero's rules, from the schedule as read, the time (which tests set) and the server's
/// `--schedule-skip-immediately`.
pub fn decide(schedule: &Schedule, now: Timestamp, server_skips: bool) -> Decision {
    let spec = &schedule.spec;
    if spec.paused {
        return Decision::Wait;
    }
    if spec.skip_immediately.unwrap_or(server_skips) {
        return Decision::Write(json!({
            "spec": { "skipImmediately": false },
            "status": { "lastSkipped": now.to_string() },
        }));
    }
    let status = schedule.status.clone().unwrap_or_default();
    let name = schedule.metadata.name.as_deref().unwrap_or_default();
    let cron = match (Cron::parse(&spec.schedule), schedule_name_error(name)) {
        (Ok(cron), None) => cron,
        (cron, name_error) => {
            let errors: Vec<String> = (cron.err().map(|error| error.message).into_iter())
                .chain(name_error)
                .collect();
            let written = schedule.phase() == SchedulePhase::FailedValidation
                && status.validation_errors.as_ref() == Some(&errors);
            return if written {
                Decision::Wait
            } else {
                Decision::Write(json!({ "status": {
                    "phase": SchedulePhase::FailedValidation,
                    "validationErrors": errors,
                } }))
            };
        }
    };
    if schedule.phase() != SchedulePhase::Enabled || status.validation_errors.is_some() {
        return Decision::Write(json!({ "status": {
            "phase": SchedulePhase::Enabled,
            "validationErrors": null,
        } }));
    }
    // Velero's test: due once now is strictly after the next slot.
    let Some(first) = cron.next(schedule.runs_from(now)) else {
        return Decision::Wait;
    };
    if now <= first {
        return Decision::NotBefore(first);
    }
    let (mut slot, mut count, mut at_least) = (first, 1u64, false);
    let mut before_slot = first;
    while let Some(next) = cron.next(slot).filter(|next| *next < now) {
        if count == MAX_COUNTED_SLOTS {
            at_least = true;
            break;
        }
        before_slot = slot;
        slot = next;
        count += 1;
    }
    let missed = (count > 1).then_some(Missed {
        count: count - 1,
        at_least,
        first,
        last: before_slot,
    });
    Decision::Due { slot, missed }
}

async fn reconcile(
    object: Arc<Readable<Schedule>>,
    ctx: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let kube = &ctx.kube;
    let api = objects::api::<Schedule>(&kube.client, &kube.namespace);
    let name = object.name();
    let version = object.stored.metadata.resource_version.as_deref();
    let schedule = match &object.read {
        Ok(schedule) => schedule,
        Err(unfit) => {
            let message = format!("the schedule cannot be read: {unfit}");
            let written = object.phase() == Phase::Known(SchedulePhase::FailedValidation)
                && object.stored.data.pointer("/status/validationErrors/0")
                    == Some(&json!(message));
            if !written {
                let status = json!({ "status": {
                    "phase": SchedulePhase::FailedValidation,
                    "validationErrors": [message],
                } });
                patch::ignore_not_found(patch::claim(&api, &name, version, status).await)?;
            }
            return Ok(Action::await_change());
        }
    };
    let now = Timestamp::now();
    match decide(schedule, now, ctx.skip_immediately) {
        Decision::Wait => Ok(Action::await_change()),
        // Lost: changed meanwhile, and decided again on the change.
        Decision::Write(patch) => {
            patch::ignore_not_found(patch::claim(&api, &name, version, patch).await)?;
            Ok(Action::await_change())
        }
        Decision::NotBefore(at) => Ok(Action::requeue(until(now, at))),
        Decision::Due { slot, missed } => {
            if let Some(missed) = missed {
                let note = format!(
                    "missed {}{} runs, the first at {} and the last at {} (no server ran the \
                     schedule then); one backup is made now, for the slot at {slot}, as Velero \
                     does (no catch-up)",
                    if missed.at_least { "at least " } else { "" },
                    missed.count,
                    missed.first,
                    missed.last,
                );
                kube.events
                    .warn(
                        schedule.object_ref(&()),
                        None,
                        "MissedRuns",
                        "Schedule",
                        note,
                    )
                    .await;
            }
            back_up(kube, schedule, slot, now).await
        }
    }
}

/// Makes the slot's backup, unless one of the schedule's backups is still New or InProgress, and
/// records it as the schedule's last.
async fn back_up(
    kube: &Kube,
    schedule: &Schedule,
    slot: Timestamp,
    now: Timestamp,
) -> Result<Action, ReconcileError> {
    let name = schedule.metadata.name.clone().unwrap_or_default();
    let selector = format!("{}={name}", labels::SCHEDULE_NAME);
    let made = ListParams::default().labels(&selector);
    let mut running = false;
    objects::each_page::<Backup>(&kube.client, &kube.namespace, &made, |page| {
        running |= page
            .iter()
            .any(|backup| match objects::phase::<BackupPhase>(backup) {
                Phase::Absent => true,
                Phase::Known(phase) => matches!(phase, BackupPhase::New | BackupPhase::InProgress),
                Phase::Unknown(_) => false,
            });
    })
    .await?;
    if running {
        tracing::info!("schedule {name}: due, but one of its backups is still running; later");
        return Ok(Action::requeue(WHILE_A_BACKUP_RUNS));
    }
    // Named after the slot, not the moment: made again for the same slot (a server stopped before
    // it recorded the backup), it is the same backup.
    let backup = Backup::from_schedule(schedule, slot);
    let backup_name = backup.metadata.name.clone().unwrap_or_default();
    match Api::<Backup>::namespaced(kube.client.clone(), &kube.namespace)
        .create(&PostParams::default(), &backup)
        .await
    {
        Ok(_) => tracing::info!("schedule {name}: created backup {backup_name}"),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let backups = objects::api::<Backup>(&kube.client, &kube.namespace);
            let existing = backups.get_opt(&backup_name).await?;
            match existing
                .as_ref()
                .map(|existing| not_made_for(existing, &backup))
            {
                // Made for this slot before (a server stopped before it recorded it).
                Some(None) => {
                    tracing::info!("schedule {name}: backup {backup_name} was already made")
                }
                // Gone meanwhile: made again at the next look.
                None => return Ok(Action::requeue(WHILE_A_BACKUP_RUNS)),
                Some(Some(difference)) => {
                    let note = format!(
                        "the slot at {slot} has no backup: backup {backup_name}, which it is \
                         named for, was made by someone else and {difference}; the schedule \
                         goes on at its next slot"
                    );
                    tracing::warn!("schedule {name}: {note}");
                    kube.events
                        .warn(
                            schedule.object_ref(&()),
                            None,
                            "SlotTaken",
                            "Schedule",
                            note,
                        )
                        .await;
                }
            }
        }
        Err(error) => return Err(error.into()),
    }
    let schedules = objects::api::<Schedule>(&kube.client, &kube.namespace);
    let recorded = json!({ "status": { "lastBackup": now.to_string() } });
    patch::ignore_not_found(
        patch::claim(
            &schedules,
            &name,
            schedule.metadata.resource_version.as_deref(),
            recorded,
        )
        .await,
    )?;
    Ok(Action::await_change())
}

/// Why `existing`, found under the name of the backup a schedule makes for a slot (`made`), is
/// not that backup, if it is not: it must carry the schedule's label and ask for what `made`
/// asks, the fields the backup controller fills in aside. Whoever may create Backups can take a
/// slot's name first; a schedule must not count what they made as its own backup.
fn not_made_for(existing: &DynamicObject, made: &Backup) -> Option<String> {
    let label = |labels: &Option<std::collections::BTreeMap<String, String>>| {
        labels
            .as_ref()
            .and_then(|labels| labels.get(labels::SCHEDULE_NAME).cloned())
    };
    let ours = label(&made.metadata.labels);
    if label(&existing.metadata.labels) != ours {
        return Some(format!(
            "is not labelled {}={}",
            labels::SCHEDULE_NAME,
            ours.unwrap_or_default()
        ));
    }
    let existing_spec = existing.data.get("spec").cloned().unwrap_or_default();
    let Ok(made_spec) = serde_json::to_value(&made.spec) else {
        return Some("its spec cannot be compared".into());
    };
    let fields = |spec: &serde_json::Value| -> std::collections::BTreeSet<String> {
        spec.as_object()
            .into_iter()
            .flatten()
            .filter(|(_, value)| !value.is_null())
            .map(|(field, _)| field.clone())
            .collect()
    };
    let differing: Vec<String> = fields(&existing_spec)
        .union(&fields(&made_spec))
        .filter(|field| {
            let asked = made_spec.get(field.as_str()).filter(|v| !v.is_null());
            let found = existing_spec.get(field.as_str()).filter(|v| !v.is_null());
            let defaulted = asked.is_none()
                && crate::controllers::backup::DEFAULTED_FIELDS.contains(&field.as_str());
            asked != found && !defaulted
        })
        .cloned()
        .collect();
    (!differing.is_empty()).then(|| {
        format!(
            "asks for another backup than the schedule's template (spec.{})",
            differing.join(", spec.")
        )
    })
}

/// How long from `now` until just past `at` (a schedule is due strictly after its slot).
fn until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or_default() + Duration::from_millis(20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{ScheduleSpec, ScheduleStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn schedule(expression: &str, created: &str) -> Schedule {
        let mut schedule = Schedule::new(
            "nightly",
            ScheduleSpec {
                schedule: expression.into(),
                ..Default::default()
            },
        );
        schedule.metadata.creation_timestamp = Some(Time(at(created)));
        schedule.status = Some(ScheduleStatus {
            phase: Some(SchedulePhase::Enabled),
            ..Default::default()
        });
        schedule
    }

    /// The backup as the API server keeps it once the backup controller has filled in its
    /// defaults.
    fn stored(backup: &Backup) -> DynamicObject {
        let mut object: DynamicObject =
            serde_json::from_value(serde_json::to_value(backup).unwrap()).unwrap();
        object.data["spec"]["ttl"] = json!("720h0m0s");
        object.data["spec"]["storageLocation"] = json!("default");
        object.data["spec"]["snapshotMoveData"] = json!(false);
        object
    }

    #[test]
    fn a_slots_backup_is_the_schedules_own_only_when_labelled_and_asking_what_its_template_asks() {
        let mut schedule = schedule("@every 1h", "2026-03-01T00:00:00Z");
        schedule.spec.template.included_namespaces = Some(vec!["shop".into()]);
        let made = Backup::from_schedule(&schedule, at("2026-03-01T01:00:00Z"));
        assert_eq!(not_made_for(&stored(&made), &made), None);

        let mut unlabelled = stored(&made);
        unlabelled.metadata.labels = None;
        assert_eq!(
            not_made_for(&unlabelled, &made).unwrap(),
            "is not labelled velero.io/schedule-name=nightly"
        );

        let mut other = stored(&made);
        other.data["spec"]["includedNamespaces"] = json!(["shop"]);
        other.data["spec"]["excludedResources"] = json!(["*"]);
        assert_eq!(
            not_made_for(&other, &made).unwrap(),
            "asks for another backup than the schedule's template (spec.excludedResources)"
        );
    }

    fn with_last_backup(mut schedule: Schedule, last: &str) -> Schedule {
        schedule.status.as_mut().unwrap().last_backup = Some(Time(at(last)));
        schedule
    }

    #[test]
    fn a_schedule_is_due_strictly_after_its_next_slot_and_then_only_at_the_following_one() {
        let daily = schedule("0 3 * * *", "2026-01-01T10:00:00Z");
        assert_eq!(
            decide(&daily, at("2026-01-02T02:59:59Z"), false),
            Decision::NotBefore(at("2026-01-02T03:00:00Z"))
        );
        assert_eq!(
            decide(&daily, at("2026-01-02T03:00:00Z"), false),
            Decision::NotBefore(at("2026-01-02T03:00:00Z"))
        );
        assert_eq!(
            decide(&daily, at("2026-01-02T03:00:00.1Z"), false),
            Decision::Due {
                slot: at("2026-01-02T03:00:00Z"),
                missed: None
            }
        );
        let done = with_last_backup(daily, "2026-01-02T03:00:00.2Z");
        assert_eq!(
            decide(&done, at("2026-01-02T03:00:01Z"), false),
            Decision::NotBefore(at("2026-01-03T03:00:00Z"))
        );
    }

    #[test]
    fn missed_slots_are_counted_and_only_the_last_is_served() {
        let daily = with_last_backup(
            schedule("0 3 * * *", "2026-01-01T00:00:00Z"),
            "2026-01-01T03:00:00Z",
        );
        // Down from the 1st to the 5th at noon: the 2nd, 3rd and 4th were missed, the 5th is served.
        assert_eq!(
            decide(&daily, at("2026-01-05T12:00:00Z"), false),
            Decision::Due {
                slot: at("2026-01-05T03:00:00Z"),
                missed: Some(Missed {
                    count: 3,
                    at_least: false,
                    first: at("2026-01-02T03:00:00Z"),
                    last: at("2026-01-04T03:00:00Z"),
                }),
            }
        );
        // An @every 1s schedule down for two days: too many to count, said so.
        let every_second = schedule("@every 1s", "2026-01-01T00:00:00Z");
        let Decision::Due {
            missed: Some(missed),
            ..
        } = decide(&every_second, at("2026-01-03T00:00:00Z"), false)
        else {
            panic!("due");
        };
        assert!(missed.at_least);
        assert_eq!(missed.count, MAX_COUNTED_SLOTS - 1);
    }

    #[test]
    fn paused_and_skipped_schedules_wait_for_their_next_slot() {
        let mut paused = schedule("@every 5s", "2026-01-01T00:00:00Z");
        paused.spec.paused = true;
        assert_eq!(
            decide(&paused, at("2026-01-02T00:00:00Z"), false),
            Decision::Wait
        );
        // Unpaused with skipImmediately: the skip is recorded, and the next slot counts from it.
        let mut unpaused = schedule("0 3 * * *", "2026-01-01T00:00:00Z");
        unpaused.spec.skip_immediately = Some(true);
        assert_eq!(
            decide(&unpaused, at("2026-01-05T12:00:00Z"), false),
            Decision::Write(json!({
                "spec": { "skipImmediately": false },
                "status": { "lastSkipped": "2026-01-05T12:00:00Z" },
            }))
        );
        // Unset, it is the server's `--schedule-skip-immediately`; set, the schedule's own.
        unpaused.spec.skip_immediately = None;
        assert!(matches!(
            decide(&unpaused, at("2026-01-05T12:00:00Z"), true),
            Decision::Write(_)
        ));
        assert!(matches!(
            decide(&unpaused, at("2026-01-05T12:00:00Z"), false),
            Decision::Due { .. }
        ));
        unpaused.spec.skip_immediately = Some(false);
        assert!(matches!(
            decide(&unpaused, at("2026-01-05T12:00:00Z"), true),
            Decision::Due { .. }
        ));
        unpaused.status.as_mut().unwrap().last_skipped = Some(Time(at("2026-01-05T12:00:00Z")));
        assert_eq!(
            decide(&unpaused, at("2026-01-05T12:00:01Z"), false),
            Decision::NotBefore(at("2026-01-06T03:00:00Z"))
        );
    }

    #[test]
    fn a_new_schedule_is_enabled_or_fails_validation_with_velero_s_message() {
        let mut new = schedule("0 3 * * *", "2026-01-01T00:00:00Z");
        new.status = None;
        assert_eq!(
            decide(&new, at("2026-01-01T00:00:01Z"), false),
            Decision::Write(json!({ "status": { "phase": "Enabled", "validationErrors": null } }))
        );
        let mut bad = schedule("0 25 * * *", "2026-01-01T00:00:00Z");
        bad.status = None;
        let message = "invalid schedule: hour: end of range (25) above maximum (23): 25";
        assert_eq!(
            decide(&bad, at("2026-01-01T00:00:01Z"), false),
            Decision::Write(json!({ "status": {
                "phase": "FailedValidation", "validationErrors": [message],
            } }))
        );
        bad.status = Some(ScheduleStatus {
            phase: Some(SchedulePhase::FailedValidation),
            validation_errors: Some(vec![message.into()]),
            ..Default::default()
        });
        assert_eq!(
            decide(&bad, at("2026-01-01T00:00:02Z"), false),
            Decision::Wait
        );
    }

    #[test]
    fn a_schedule_whose_name_cannot_label_its_backups_fails_validation() {
        // 64 characters: a valid name, but its backups' velero.io/schedule-name label would be
        // refused by the API server at every slot.
        let name = "a".repeat(64);
        let mut long = schedule("0 25 * * *", "2026-01-01T00:00:00Z");
        long.metadata.name = Some(name.clone());
        long.status = None;
        let errors = json!([
            "invalid schedule: hour: end of range (25) above maximum (23): 25",
            "the schedule's name is 64 characters long: its backups carry it as the label \
             velero.io/schedule-name, whose value holds at most 63",
        ]);
        assert_eq!(
            decide(&long, at("2026-01-01T00:00:01Z"), false),
            Decision::Write(json!({ "status": {
                "phase": "FailedValidation", "validationErrors": errors,
            } }))
        );
        long.spec.schedule = "0 3 * * *".into();
        long.status = Some(ScheduleStatus {
            phase: Some(SchedulePhase::FailedValidation),
            validation_errors: Some(vec![errors[1].as_str().unwrap().into()]),
            ..Default::default()
        });
        assert_eq!(
            decide(&long, at("2026-01-02T12:00:00Z"), false),
            Decision::Wait
        );
        long.metadata.name = Some(name[..63].into());
        assert_eq!(
            decide(&long, at("2026-01-02T12:00:00Z"), false),
            Decision::Write(json!({ "status": { "phase": "Enabled", "validationErrors": null } }))
        );
    }

    #[test]
    fn a_zoned_schedule_runs_at_its_local_time_across_a_daylight_saving_change() {
        // 02:30 in New York does not exist on 2026-03-08: that day's run is skipped, as robfig
        // does, and the next is 02:30 EDT on the 9th.
        let zoned = with_last_backup(
            schedule(
                "CRON_TZ=America/New_York 30 2 * * *",
                "2026-03-01T00:00:00Z",
            ),
            "2026-03-07T07:30:00Z",
        );
        assert_eq!(
            decide(&zoned, at("2026-03-08T12:00:00Z"), false),
            Decision::NotBefore(at("2026-03-09T06:30:00Z"))
        );
    }
}
