//! Schedules on the local cluster: ark's server makes a schedule's backups at its slots, named and
//! labelled as Velero names and labels them, and none while it is paused.

use crate::common;

use std::time::{Duration, Instant};

use ark_api::{Backup, BackupPhase, Schedule, SchedulePhase, ScheduleSpec, labels};
use ark_tests::{ArkServer, Cluster, wait_for};
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};

const WAIT: Duration = Duration::from_secs(90);

async fn backups_of(api: &Api<Backup>, schedule: &str) -> Vec<Backup> {
    let selector = format!("{}={schedule}", labels::SCHEDULE_NAME);
    let mut backups = api
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items;
    backups.sort_by_key(|b| b.metadata.name.clone());
    backups
}

#[tokio::test]
async fn an_every_5s_schedule_makes_a_backup_at_each_slot_and_none_while_paused() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let mut settings = ConfigMap::default();
    settings.metadata.name = Some("settings".into());
    Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .create(&PostParams::default(), &settings)
        .await
        .unwrap();

    let schedules = Api::<Schedule>::namespaced(client.clone(), &ns.name);
    let mut every = Schedule::new(
        "every",
        ScheduleSpec {
            schedule: "@every 5s".into(),
            template: ark_api::BackupSpec {
                included_namespaces: Some(vec![app.name.clone()]),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    every.metadata.annotations = Some([("team".to_string(), "shop".to_string())].into());
    let created = schedules
        .create(&PostParams::default(), &every)
        .await
        .unwrap();
    let created_at = created.metadata.creation_timestamp.unwrap().0;
    wait_for(
        schedules.clone(),
        "every",
        |s: Option<&Schedule>| s.is_some_and(|s| s.phase() == ark_api::SchedulePhase::Enabled),
        WAIT,
    )
    .await
    .unwrap();

    // Two backups, one a slot, each Completed.
    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    let deadline = Instant::now() + WAIT;
    let made = loop {
        let made = backups_of(&backups, "every").await;
        let completed = made
            .iter()
            .filter(|b| b.phase() == BackupPhase::Completed)
            .count();
        if completed >= 2 {
            break made;
        }
        assert!(
            Instant::now() < deadline,
            "two completed backups within {WAIT:?}: {:?}",
            made.iter()
                .map(|b| (b.metadata.name.clone(), b.phase()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let first = &made[0];
    let name = first.metadata.name.clone().unwrap();
    let stamp = name
        .strip_prefix("every-")
        .expect("named after the schedule");
    assert_eq!(stamp.len(), 14, "{name}");
    assert!(stamp.chars().all(|c| c.is_ascii_digit()), "{name}");
    // The first slot is 5 s after the schedule's creation, not at it (later if the server was
    // not leading yet).
    let first_slot = (created_at + k8s_openapi::jiff::SignedDuration::from_secs(5))
        .strftime("%Y%m%d%H%M%S")
        .to_string();
    assert!(stamp >= first_slot.as_str(), "{stamp} before {first_slot}");
    assert_eq!(
        first.metadata.annotations.as_ref().unwrap()["team"],
        "shop",
        "the schedule's annotations"
    );
    assert_eq!(
        first.spec.included_namespaces.as_deref(),
        Some(&[app.name.clone()][..])
    );
    let schedule = schedules.get("every").await.unwrap();
    assert!(schedule.status.unwrap().last_backup.is_some());

    // Paused: no more backups, over more than two slots.
    schedules
        .patch(
            "every",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "paused": true } })),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = backups_of(&backups, "every").await.len();
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(backups_of(&backups, "every").await.len(), before);
}

#[tokio::test]
async fn ark_schedule_commands_refuse_a_bad_expression_and_never_delete_backups() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("app").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let schedules = Api::<Schedule>::namespaced(client.clone(), &ns.name);

    // Refused before anything is made, the field at fault shown.
    let refused = ark(
        Some(&cluster),
        &[
            "schedule",
            "create",
            "bad",
            "--schedule",
            "0 25 * * *",
            "-n",
            &ns.name,
        ],
    );
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains(
            "invalid schedule: hour: end of range (25) above maximum (23): 25\n  0 25 * * *\n    ^^\n"
        ),
        "{stderr}"
    );
    assert!(schedules.get_opt("bad").await.unwrap().is_none());
    // A restore test that does not read: every error at its field, line and column; nothing made.
    let dir = tempfile::tempdir().unwrap();
    let test = dir.path().join("test.yaml");
    std::fs::write(
        &test,
        "every: 0\ncheck:\n  command: [psql]\n  waitTimeout: soon\n",
    )
    .unwrap();
    let test = test.to_str().unwrap();
    let args = [
        "schedule",
        "create",
        "bad",
        "--schedule",
        "@daily",
        "--restore-test-file",
        test,
        "-n",
        &ns.name,
    ];
    let refused = ark(Some(&cluster), &args);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        format!(
            "error: invalid restore test file {test}; nothing was created:\n  \
             {test}:1:1: every: a number of backups must be at least 1\n  \
             {test}:4:3: check.waitTimeout: invalid duration \"soon\": expected a number (expected a Go duration such as 30s, 5m or 720h)\n"
        )
    );
    assert!(schedules.get_opt("bad").await.unwrap().is_none());

    assert_eq!(
        ark_ok(
            &cluster,
            &ns.name,
            &[
                "schedule",
                "create",
                "often",
                "--schedule",
                "@every 5s",
                "--include-namespaces",
                &app.name,
                "--ttl",
                "1h",
            ],
        ),
        "Schedule \"often\" created successfully.\n"
    );
    wait_for(
        schedules.clone(),
        "often",
        |s: Option<&Schedule>| {
            s.is_some_and(|s| s.status.as_ref().is_some_and(|st| st.last_backup.is_some()))
        },
        WAIT,
    )
    .await
    .unwrap();
    let listed = ark_ok(&cluster, &ns.name, &["schedule", "get", "often"]);
    assert!(
        listed.contains("Enabled") && listed.contains("@every 5s") && listed.contains("1h0m0s"),
        "{listed}"
    );
    let described = ark_ok(&cluster, &ns.name, &["schedule", "describe", "often"]);
    assert!(described.contains("Last backup:  often-"), "{described}");
    assert!(described.contains("Next runs:"), "{described}");

    // Backups and restores from the schedule, by hand.
    let out = ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "by-hand",
            "--from-schedule",
            "often",
            "--wait",
        ],
    );
    assert!(out.contains("Completed"), "{out}");
    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    let by_hand = backups.get("by-hand").await.unwrap();
    assert_eq!(by_hand.labels()[labels::SCHEDULE_NAME], "often");
    assert_eq!(
        by_hand.spec.included_namespaces.as_deref(),
        Some(&[app.name.clone()][..])
    );
    let out = ark_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "again",
            "--from-schedule",
            "often",
            "--wait",
        ],
    );
    assert!(
        out.contains("Restore completed with status: Completed"),
        "{out}"
    );
    let restore = Api::<ark_api::Restore>::namespaced(client.clone(), &ns.name)
        .get("again")
        .await
        .unwrap();
    let from = backups.get(&restore.spec.backup_name).await.unwrap();
    assert_eq!(from.labels()[labels::SCHEDULE_NAME], "often");
    assert_eq!(from.phase(), BackupPhase::Completed);
    assert_eq!(restore.spec.unmodelled["scheduleName"], "often");

    assert_eq!(
        ark_ok(&cluster, &ns.name, &["schedule", "pause", "often"]),
        "Schedule \"often\" paused.\n"
    );
    assert_eq!(
        ark_ok(&cluster, &ns.name, &["schedule", "pause", "often"]),
        "Schedule \"often\" is already paused.\n"
    );
    let made = backups_of(&backups, "often").await.len();
    assert!(made >= 1);
    assert_eq!(
        ark_ok(
            &cluster,
            &ns.name,
            &["schedule", "delete", "often", "--confirm"]
        ),
        "Schedule \"often\" deleted; its backups are kept.\n"
    );
    assert!(schedules.get_opt("often").await.unwrap().is_none());
    assert_eq!(backups_of(&backups, "often").await.len(), made);
}

/// A schedule named past 63 characters (a valid name, which Velero's CLI takes): its backups'
/// `velero.io/schedule-name` label could never be written, so the server fails its validation
/// with the reason rather than trying at every slot, and `ark schedule create` refuses it.
#[tokio::test]
async fn a_schedule_whose_name_is_too_long_for_its_backups_label_fails_validation() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let schedules = Api::<Schedule>::namespaced(client.clone(), &ns.name);
    let name = "n".repeat(64);
    let reason = "the schedule's name is 64 characters long: its backups carry it as the label \
                  velero.io/schedule-name, whose value holds at most 63";

    let refused = ark(
        Some(&cluster),
        &[
            "schedule",
            "create",
            &name,
            "--schedule",
            "@every 5s",
            "-n",
            &ns.name,
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        format!("error: {reason}; nothing was created\n")
    );
    assert!(schedules.get_opt(&name).await.unwrap().is_none());

    let spec = ScheduleSpec {
        schedule: "@every 5s".into(),
        ..Default::default()
    };
    (schedules
        .create(&PostParams::default(), &Schedule::new(&name, spec))
        .await)
        .unwrap();
    let failed = wait_for(
        schedules.clone(),
        &name,
        |s: Option<&Schedule>| s.is_some_and(|s| s.phase() == SchedulePhase::FailedValidation),
        WAIT,
    )
    .await
    .unwrap();
    let errors = failed.status.unwrap().validation_errors.unwrap();
    assert_eq!(errors, [reason]);
    // Past a slot of `@every 5s`: still no backup, nor an attempt at one.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    assert!(
        backups
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// A schedule whose server was down for an hour: ark makes one backup, for the last slot (no
/// catch-up, as Velero), and says which slots were missed in a `MissedRuns` Warning event on the
/// schedule, which `ark schedule describe` shows.
/// A schedule `@every 10m` of `template`, whose last backup was `minutes` ago (to the second),
/// as a server that ran then left it; that time. (Velero's CRD gives Schedules no status
/// subresource: the status is patched as the object.)
async fn every_ten_minutes_since(
    schedules: &Api<Schedule>,
    name: &str,
    template: ark_api::BackupSpec,
    minutes: i64,
) -> k8s_openapi::jiff::Timestamp {
    let spec = ScheduleSpec {
        schedule: "@every 10m".into(),
        template,
        ..Default::default()
    };
    schedules
        .create(&PostParams::default(), &Schedule::new(name, spec))
        .await
        .unwrap();
    let last =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_mins(minutes);
    let last = last.round(k8s_openapi::jiff::Unit::Second).unwrap();
    let status = serde_json::json!({
        "status": { "phase": "Enabled", "lastBackup": last.to_string() },
    });
    schedules
        .patch(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    last
}

#[tokio::test]
async fn after_an_hour_down_one_backup_is_made_and_the_missed_runs_are_a_warning_event() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let schedules = Api::<Schedule>::namespaced(client.clone(), &ns.name);
    // Its last backup 65 minutes ago: the slots 10 to 50 minutes after it were missed while no
    // server ran, the one 60 minutes after it (5 minutes ago) is due.
    let last = every_ten_minutes_since(&schedules, "ten-minutes", Default::default(), 65).await;
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    let served = last + k8s_openapi::jiff::SignedDuration::from_mins(60);
    let name = format!("ten-minutes-{}", served.strftime("%Y%m%d%H%M%S"));
    wait_for(
        backups.clone(),
        &name,
        |b: Option<&Backup>| b.is_some(),
        WAIT,
    )
    .await
    .unwrap();
    let event = ark_tests::warning_event(&client, &ns.name, "MissedRuns", WAIT)
        .await
        .unwrap();
    let note = event.note.unwrap_or_default();
    let first = last + k8s_openapi::jiff::SignedDuration::from_mins(10);
    let last_missed = last + k8s_openapi::jiff::SignedDuration::from_mins(50);
    assert!(
        note.starts_with(&format!(
            "missed 5 runs, the first at {first} and the last at {last_missed}"
        )),
        "{note}"
    );
    // One backup only: the next slot is 5 minutes away.
    assert_eq!(backups_of(&backups, "ten-minutes").await.len(), 1);
    let described = ark_ok(&cluster, &ns.name, &["schedule", "describe", "ten-minutes"]);
    assert!(described.contains("missed 5 runs"), "{described}");
}

/// Someone who may create Backups takes the name of a schedule's next backup first, with the
/// schedule's label and another spec: the schedule does not count it as its own. The slot is a
/// Warning event naming the backup and what differs, `schedule describe` shows it, the other
/// backup is left as it is, and the schedule goes on to its next slot.
#[tokio::test]
async fn a_backup_made_by_someone_else_under_a_slots_name_is_not_counted_as_the_schedules() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let schedules = Api::<Schedule>::namespaced(client.clone(), &ns.name);
    let template = ark_api::BackupSpec {
        included_namespaces: Some(vec!["shop".into()]),
        ..Default::default()
    };
    let last = every_ten_minutes_since(&schedules, "taken", template, 15).await;
    let slot = last + k8s_openapi::jiff::SignedDuration::from_mins(10);
    let name = format!("taken-{}", slot.strftime("%Y%m%d%H%M%S"));
    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    let mut forged = Backup::new(
        &name,
        ark_api::BackupSpec {
            included_namespaces: Some(vec!["shop".into()]),
            excluded_resources: Some(vec!["*".into()]),
            ..Default::default()
        },
    );
    forged.metadata.labels =
        Some([(labels::SCHEDULE_NAME.to_string(), "taken".to_string())].into());
    backups
        .create(&PostParams::default(), &forged)
        .await
        .unwrap();

    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let event = ark_tests::warning_event(&client, &ns.name, "SlotTaken", WAIT)
        .await
        .unwrap();
    let note = event.note.unwrap_or_default();
    assert_eq!(
        note,
        format!(
            "the slot at {slot} has no backup: backup {name}, which it is named for, was made by \
             someone else and asks for another backup than the schedule's template \
             (spec.excludedResources); the schedule goes on at its next slot"
        )
    );
    // Moved on to its next slot, 5 minutes away.
    wait_for(
        schedules.clone(),
        "taken",
        |s: Option<&Schedule>| {
            s.and_then(|s| s.status.as_ref()?.last_backup.as_ref())
                .is_some_and(|recorded| recorded.0 > last)
        },
        WAIT,
    )
    .await
    .unwrap();
    let kept = backups.get(&name).await.unwrap();
    assert_eq!(kept.spec.excluded_resources, Some(vec!["*".to_string()]));
    assert_eq!(backups_of(&backups, "taken").await.len(), 1);
    let described = ark_ok(&cluster, &ns.name, &["schedule", "describe", "taken"]);
    assert!(
        described.contains(&format!("Missed runs:\n  the slot at {slot} has no backup")),
        "{described}"
    );
}
