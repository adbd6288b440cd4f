use std::process::ExitCode;

use ark_api::Schedule;
use ark_api::cron::Cron;

use crate::cli::args::{GetArgs, GlobalArgs};
use crate::output;

pub async fn run(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    crate::commands::lookup::get::<Schedule>(global, args, "schedule", table).await
}

/// The schedule's next run after `now`, from its last backup (or creation, or last skip), as the
/// server reckons it: `<none>` while paused or when its expression does not read.
pub fn next_run(
    schedule: &Schedule,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<k8s_openapi::jiff::Timestamp> {
    if schedule.spec.paused {
        return None;
    }
    let cron = Cron::parse(&schedule.spec.schedule).ok()?;
    cron.next(schedule.runs_from(now)).map(|next| next.max(now))
}

fn table(schedules: &[Schedule], columns: output::ObjectColumns) -> String {
    output::table(
        &columns.headers(&[
            "NAME",
            "STATUS",
            "CREATED",
            "SCHEDULE",
            "BACKUP TTL",
            "LAST BACKUP",
            "SELECTOR",
            "PAUSED",
            "NEXT",
        ]),
        schedules.iter().map(|schedule| {
            let status = schedule.status.clone().unwrap_or_default();
            let selector =
                crate::describe::selector(schedule.spec.template.label_selector.as_ref());
            let next = next_run(schedule, columns.now)
                .map(|t| {
                    output::time(Some(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        t,
                    )))
                })
                .unwrap_or_else(|| "<none>".into());
            let row = vec![
                schedule.metadata.name.clone().unwrap_or_default(),
                format!("{:?}", schedule.phase()),
                output::time(schedule.metadata.creation_timestamp.as_ref()),
                schedule.spec.schedule.clone(),
                schedule
                    .spec
                    .template
                    .ttl
                    .clone()
                    .unwrap_or_else(|| "0s".into()),
                output::age(status.last_backup.as_ref(), columns.now),
                selector,
                schedule.spec.paused.to_string(),
                next,
            ];
            columns.row(&schedule.metadata, row)
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_api::{ScheduleSpec, ScheduleStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn schedule_table() {
        let mut daily = Schedule::new(
            "daily",
            ScheduleSpec {
                schedule: "CRON_TZ=Europe/Paris 0 3 * * *".into(),
                template: ark_api::BackupSpec {
                    ttl: Some("168h0m0s".into()),
                    label_selector: Some(ark_api::selector::parse("app=shop").unwrap()),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        daily.metadata.creation_timestamp = Some(Time(at("2026-03-01T00:00:00Z")));
        daily.status = Some(ScheduleStatus {
            phase: Some(ark_api::SchedulePhase::Enabled),
            last_backup: Some(Time(at("2026-03-03T02:00:01Z"))),
            ..Default::default()
        });
        let mut paused = Schedule::new(
            "paused",
            ScheduleSpec {
                schedule: "@every 1h".into(),
                paused: true,
                ..Default::default()
            },
        );
        paused.metadata.creation_timestamp = Some(Time(at("2026-03-01T00:00:00Z")));
        let columns = output::ObjectColumns {
            now: at("2026-03-03T05:30:00Z"),
            show_labels: false,
        };
        insta::assert_snapshot!(table(&[daily, paused], columns), @r"
        NAME    STATUS   CREATED                        SCHEDULE                        BACKUP TTL  LAST BACKUP  SELECTOR  PAUSED  NEXT                           AGE
        daily   Enabled  2026-03-01 00:00:00 +0000 UTC  CRON_TZ=Europe/Paris 0 3 * * *  168h0m0s    3h29m        app=shop  false   2026-03-04 02:00:00 +0000 UTC  2d5h
        paused  New      2026-03-01 00:00:00 +0000 UTC  @every 1h                       0s          <none>       <none>    true    <none>                         2d5h
    ");
    }
}
