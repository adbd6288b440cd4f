use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::cron::Cron;
use ark_api::{Backup, Schedule, labels};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use super::get::next_run;
use crate::cli::args::{DescribeArgs, GlobalArgs, OutputFormat};
use crate::describe::Describe;
use crate::output;
use ark_server::retention::Retention;

/// Runs shown ahead.
const NEXT_RUNS: usize = 3;

pub async fn run(global: &GlobalArgs, args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found = super::named(&client, global, &args.names).await?;
    if args.output.output != OutputFormat::Table {
        output::print_objects(args.output.output, &found.items, args.names.len() == 1)?;
        return Ok(found.exit_code());
    }
    let backups: Api<Backup> = Api::namespaced(client.clone(), &global.namespace);
    let events: Api<Event> = Api::namespaced(client, &global.namespace);
    for (index, schedule) in found.items.iter().enumerate() {
        if index > 0 {
            println!();
        }
        let name = schedule.metadata.name.clone().unwrap_or_default();
        let selector = format!("{}={name}", labels::SCHEDULE_NAME);
        let made = backups
            .list(&ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("cannot list the backups of schedule {name:?}"))?
            .items;
        let uid = schedule.metadata.uid.clone().unwrap_or_default();
        // Slots that passed without a backup of the schedule's: while no server ran, or taken
        // by a backup someone else made under the slot's name.
        let missed: Vec<Event> = events
            .list(&ListParams::default().fields(&format!("involvedObject.uid={uid}")))
            .await
            .context("cannot list the schedule's events")?
            .items
            .into_iter()
            .filter(|e| matches!(e.reason.as_deref(), Some("MissedRuns" | "SlotTaken")))
            .collect();
        print!(
            "{}",
            describe_text(schedule, &made, &missed, Timestamp::now())
        );
    }
    Ok(found.exit_code())
}

/// The schedule, with what it `made` (its backups in the cluster) and the runs it `missed`.
pub fn describe_text(
    schedule: &Schedule,
    made: &[Backup],
    missed: &[Event],
    now: Timestamp,
) -> String {
    let last = (made.iter()).max_by_key(|b| b.metadata.creation_timestamp.as_ref().map(|t| t.0));
    let spec = &schedule.spec;
    let status = schedule.status.clone().unwrap_or_default();
    let mut d = Describe::default();
    d.metadata(&schedule.metadata);
    d.blank();
    d.field("Phase", &format!("{:?}", schedule.phase()));
    if let Some(errors) = status.validation_errors.as_ref().filter(|e| !e.is_empty()) {
        d.blank();
        d.line("Validation errors:");
        for error in errors {
            d.line(&format!("  {error}"));
        }
    }
    d.blank();
    d.fields(&[
        ("Schedule", spec.schedule.clone()),
        ("Paused", spec.paused.to_string()),
    ]);
    d.blank();
    match (Cron::parse(&spec.schedule), next_run(schedule, now)) {
        (Ok(cron), Some(first)) => {
            d.line("Next runs:");
            let zone = cron.zone().clone();
            let mut at = Some(first);
            for _ in 0..NEXT_RUNS {
                let Some(run) = at else { break };
                let local = run.to_zoned(zone.clone());
                let shown = match cron.zone_name() {
                    Some(name) => format!(
                        "{} {name}  ({})",
                        local.strftime("%Y-%m-%d %H:%M:%S %Z"),
                        output::time(Some(&Time(run)))
                    ),
                    None => output::time(Some(&Time(run))),
                };
                d.line(&format!("  {shown}"));
                at = cron.next(run);
            }
        }
        _ => d.field("Next runs", "<none>"),
    }
    d.blank();
    d.line("Template:");
    let template = &spec.template;
    let list = |list: Option<&Vec<String>>, none: &str| {
        list.filter(|l| !l.is_empty())
            .map(|l| l.join(", "))
            .unwrap_or_else(|| none.to_string())
    };
    d.nested(&[
        (
            "Included namespaces",
            list(template.included_namespaces.as_ref(), "*"),
        ),
        (
            "Excluded namespaces",
            list(template.excluded_namespaces.as_ref(), "<none>"),
        ),
        (
            "Included resources",
            list(template.included_resources.as_ref(), "*"),
        ),
        (
            "Excluded resources",
            list(template.excluded_resources.as_ref(), "<none>"),
        ),
        (
            "Label selector",
            crate::describe::selector(template.label_selector.as_ref()),
        ),
        (
            "Storage location",
            template
                .storage_location
                .clone()
                .unwrap_or_else(|| "<default>".into()),
        ),
        (
            "TTL",
            template
                .ttl
                .clone()
                .unwrap_or_else(|| "<the server's default>".into()),
        ),
    ]);
    d.blank();
    let mut made_fields = vec![(
        "Last backup",
        last.map_or("<none>".to_string(), |backup| {
            format!(
                "{} ({:?}, {})",
                backup.name_any(),
                backup.phase(),
                output::time(backup.metadata.creation_timestamp.as_ref())
            )
        }),
    )];
    // Garbage collection keeps the newest Completed backup past its TTL (docs/deleting.md).
    let kept = (made.iter()).filter(|b| b.annotations().contains_key(labels::KEPT_AS_LAST_GOOD));
    for backup in kept {
        let why = format!("{} (the last good backup)", backup.name_any());
        made_fields.push(("Kept past its TTL", why));
    }
    d.fields(&made_fields);
    if let Some(policy) = schedule.annotations().get(labels::RETENTION) {
        retention_text(&mut d, schedule, policy, made, now);
    }
    if schedule
        .annotations()
        .contains_key(ark_api::restore_test::ANNOTATION)
    {
        restore_test_text(&mut d, schedule, made);
    }
    if !missed.is_empty() {
        d.blank();
        d.line("Missed runs:");
        for event in missed {
            d.line(&format!("  {}", event.message.clone().unwrap_or_default()));
        }
    }
    d.finish()
}

/// How many of the schedule's tested backups are listed.
const TESTS_SHOWN: usize = 5;

/// The schedule's restore test (how often, what it restores and checks), its last result, with
/// the check's output, and those of its backups still there, newest first.
fn restore_test_text(d: &mut Describe, schedule: &Schedule, made: &[Backup]) {
    use ark_api::restore_test::{Cadence, RestoreTest, TestResult};
    d.blank();
    let test = match RestoreTest::of(schedule) {
        Some(Ok(test)) => test,
        Some(Err(error)) => return d.field("Restore test", &format!("<unreadable: {error}>")),
        None => return,
    };
    let every = match test.every {
        Cadence::Backups(1) => "every Completed backup".to_string(),
        Cadence::Backups(n) => format!("every {n} Completed backups"),
        Cadence::Period(period) => format!("every {}", ark_api::duration::format(period)),
    };
    let check = &test.check;
    let expect = match &check.expect {
        Some(expect) => format!(", expecting {expect:?}"),
        None => ", expecting exit code 0".to_string(),
    };
    d.line("Restore test:");
    d.nested(&[
        ("Every", every),
        (
            "Namespaces",
            (test.namespaces.as_ref()).map_or("<the backup's>".into(), |n| n.join(", ")),
        ),
        ("Check", format!("{:?}{expect}", check.command)),
        ("Timeout", ark_api::duration::format(test.timeout)),
    ]);
    match TestResult::of(schedule.metadata.annotations.as_ref()) {
        None => d.line("  Last result:  <none yet>"),
        Some(result) => {
            let output = result.as_ref().ok().and_then(|r| r.output.clone());
            d.line(&format!(
                "  Last result:  {}",
                crate::describe::restore_test_text(result)
            ));
            for line in output.iter().flat_map(|o| o.trim_end().lines()) {
                d.line(&format!("    | {line}"));
            }
        }
    }
    let mut tested: Vec<(&Backup, TestResult)> = (made.iter())
        .filter_map(|backup| Some((backup, TestResult::of_backup(backup)?.ok()?)))
        .collect();
    tested.sort_by(|a, b| b.1.ended.cmp(&a.1.ended));
    if !tested.is_empty() {
        d.line("  Tested backups:");
    }
    for (_, result) in tested.into_iter().take(TESTS_SHOWN) {
        d.line(&format!(
            "    {}",
            crate::describe::restore_test_text(Ok(result))
        ));
    }
}

/// The most of the schedule's next runs retention looks at to say when a kept backup goes: an
/// hourly schedule's 4 years under `yearly=3`.
const RUNS_AHEAD: usize = 40_000;

/// The schedule's next runs, as many as `policy` needs to say when each kept backup goes (none
/// while it is paused).
fn runs_ahead(schedule: &Schedule, policy: &Retention, now: Timestamp) -> Vec<Timestamp> {
    let (Ok(cron), Some(first)) = (
        Cron::parse(&schedule.spec.schedule),
        next_run(schedule, now),
    ) else {
        return Vec::new();
    };
    let (runs, span) = policy.look_ahead();
    let until = now.saturating_add(span).unwrap_or(now);
    std::iter::successors(Some(first), |run| cron.next(*run))
        .enumerate()
        .take_while(|(i, run)| *i < runs || *run <= until)
        .map(|(_, run)| run)
        .take(RUNS_AHEAD)
        .collect()
}

/// The schedule's retention rules, which of its Completed backups they keep, by which rules (as
/// garbage collection decides: the others go at its next look), and when each goes if every run
/// from `now` on makes a Completed backup.
fn retention_text(
    d: &mut Describe,
    schedule: &Schedule,
    policy: &str,
    made: &[Backup],
    now: Timestamp,
) {
    d.blank();
    let policy = match policy.parse::<Retention>() {
        Ok(policy) => policy,
        Err(error) => {
            let unreadable =
                format!("{policy} (unreadable: {error}; none of its backups is deleted)");
            return d.field("Retention", &unreadable);
        }
    };
    d.field("Retention", &policy.to_string());
    let completed = ark_server::retention::completed(made);
    let kept = policy.kept(&completed);
    let ahead = runs_ahead(schedule, &policy, now);
    let goes = policy.goes_at(&completed, &ahead);
    d.line("Kept by it (and when each goes, if every run until then completes):");
    if kept.is_empty() {
        d.line("  <none>");
    }
    for (name, rules) in kept.iter().rev() {
        let rules: Vec<String> = rules.iter().map(ToString::to_string).collect();
        let when = match goes.get(name).copied().flatten() {
            Some(at) => format!("goes after the run of {}", output::time(Some(&Time(at)))),
            None if ahead.is_empty() => "kept until later backups are made".to_string(),
            None => format!("kept past the next {} runs", ahead.len()),
        };
        d.line(&format!("  {name}  ({}; {when})", rules.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{BackupSpec, BackupStatus, ScheduleSpec, ScheduleStatus};

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// Under `last=2,daily=3`, a daily schedule's three Completed backups are kept, and each goes
    /// at the run that makes it neither one of the two newest nor one of the three newest days.
    #[test]
    fn retention_says_which_backups_it_keeps_by_which_rule_and_when_each_goes() {
        let schedule = Schedule::new(
            "daily",
            ScheduleSpec {
                schedule: "0 2 * * *".into(),
                ..Default::default()
            },
        );
        let made: Vec<Backup> = ["2026-03-04", "2026-03-05", "2026-03-06"]
            .iter()
            .map(|day| {
                let mut backup = Backup::new(&format!("daily-{day}"), BackupSpec::default());
                backup.metadata.creation_timestamp = Some(Time(at(&format!("{day}T02:00:00Z"))));
                backup.status = Some(BackupStatus {
                    phase: Some(ark_api::BackupPhase::Completed),
                    ..Default::default()
                });
                backup
            })
            .collect();
        let mut d = Describe::default();
        let now = at("2026-03-06T12:00:00Z");
        retention_text(&mut d, &schedule, "last=2,daily=3", &made, now);
        insta::assert_snapshot!(d.finish(), @r"

        Retention:  last=2,daily=3
        Kept by it (and when each goes, if every run until then completes):
          daily-2026-03-06  (last, daily; goes after the run of 2026-03-09 02:00:00 +0000 UTC)
          daily-2026-03-05  (last, daily; goes after the run of 2026-03-08 02:00:00 +0000 UTC)
          daily-2026-03-04  (daily; goes after the run of 2026-03-07 02:00:00 +0000 UTC)
        ");
        let mut paused = Describe::default();
        let schedule = Schedule {
            spec: ScheduleSpec {
                paused: true,
                ..schedule.spec
            },
            ..schedule
        };
        retention_text(&mut paused, &schedule, "last=1", &made, now);
        assert!(
            paused
                .finish()
                .ends_with("daily-2026-03-06  (last; kept until later backups are made)\n")
        );
    }

    #[test]
    fn describe_shows_the_next_runs_in_the_zone_and_utc_the_last_backup_and_missed_runs() {
        let mut schedule = Schedule::new(
            "daily",
            ScheduleSpec {
                schedule: "CRON_TZ=America/New_York 30 2 * * *".into(),
                template: BackupSpec {
                    included_namespaces: Some(vec!["shop".into()]),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        schedule.metadata.namespace = Some("velero".into());
        schedule.metadata.creation_timestamp = Some(Time(at("2026-03-01T00:00:00Z")));
        schedule.status = Some(ScheduleStatus {
            phase: Some(ark_api::SchedulePhase::Enabled),
            last_backup: Some(Time(at("2026-03-06T07:30:00Z"))),
            ..Default::default()
        });
        let mut last = Backup::new("daily-20260306073000", BackupSpec::default());
        last.metadata.creation_timestamp = Some(Time(at("2026-03-06T07:30:00Z")));
        last.status = Some(BackupStatus {
            phase: Some(ark_api::BackupPhase::Completed),
            ..Default::default()
        });
        let missed = Event {
            message: Some("missed 2 runs, the first at ... and the last at ...".into()),
            ..Default::default()
        };
        let mut kept = Backup::new("daily-20260305073000", BackupSpec::default());
        kept.metadata.creation_timestamp = Some(Time(at("2026-03-05T07:30:00Z")));
        kept.metadata.annotations =
            Some([(labels::KEPT_AS_LAST_GOOD.to_string(), "daily".to_string())].into());
        insta::assert_snapshot!(
            describe_text(&schedule, &[kept, last], &[missed], at("2026-03-06T12:00:00Z")),
            @r"
            Name:         daily
            Namespace:    velero
            Labels:       <none>
            Annotations:  <none>

            Phase:  Enabled

            Schedule:  CRON_TZ=America/New_York 30 2 * * *
            Paused:    false

            Next runs:
              2026-03-07 02:30:00 EST America/New_York  (2026-03-07 07:30:00 +0000 UTC)
              2026-03-09 02:30:00 EDT America/New_York  (2026-03-09 06:30:00 +0000 UTC)
              2026-03-10 02:30:00 EDT America/New_York  (2026-03-10 06:30:00 +0000 UTC)

            Template:
              Included namespaces:  shop
              Excluded namespaces:  <none>
              Included resources:   *
              Excluded resources:   <none>
              Label selector:       <none>
              Storage location:     <default>
              TTL:                  <the server's default>

            Last backup:        daily-20260306073000 (Completed, 2026-03-06 07:30:00 +0000 UTC)
            Kept past its TTL:  daily-20260305073000 (the last good backup)

            Missed runs:
              missed 2 runs, the first at ... and the last at ...
        "
        );
    }
}
