//! Schedules at scale, by ark and, with `--velero DIR`, by Velero (its server from DIR), one tool
//! after the other, each with a server and an S3 location of its own:
//! - 100 schedules due at the same slot (a minute boundary): how late after the slot each backup
//!   appears (seen through a watch; the floor is 0 s, the slot itself);
//! - then 1,000 schedules that sit idle (due once a year): the server's CPU over a minute.
//!
//! Prints a Markdown table (docs/benchmarks.md says how to run it).
//!
//! cargo build --release -p ark -p ark-tests --bins
//! target/release/bench-schedules [--velero DIR]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use ark_api::{Backup, Schedule, ScheduleSpec};
use ark_tests::bench::tool;
use ark_tests::velero::VeleroServer;
use ark_tests::{ArkServer, Cluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::jiff::{SignedDuration, Timestamp, ToSpan, Unit};
use kube::api::{DeleteParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

const DUE_TOGETHER: usize = 100;
const IDLE: usize = 1000;
const IDLE_FOR: Duration = Duration::from_secs(60);

/// What a server is asked for: its CPU time so far.
trait Measured {
    fn cpu_seconds(&self) -> f64;
}

impl Measured for ArkServer {
    fn cpu_seconds(&self) -> f64 {
        ArkServer::cpu_seconds(self)
    }
}

impl Measured for VeleroServer {
    fn cpu_seconds(&self) -> f64 {
        VeleroServer::cpu_seconds(self)
    }
}

struct Row {
    late: Vec<f64>,
    idle_cpu: f64,
}

async fn create_schedules(api: &Api<Schedule>, names: Vec<String>, cron: &str, namespace: &str) {
    futures::stream::iter(names)
        .map(|name| {
            let schedule = Schedule::new(
                &name,
                ScheduleSpec {
                    schedule: cron.to_string(),
                    template: ark_api::BackupSpec {
                        included_namespaces: Some(vec![namespace.to_string()]),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            );
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &schedule)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("the schedules");
}

async fn measure(
    cluster: &Cluster,
    client: &Client,
    empty: &str,
    start: impl AsyncFnOnce(&str) -> Box<dyn Measured>,
) -> Row {
    let (tool_ns, server) = tool(cluster, client, start).await;
    let ns = tool_ns.name.as_str();
    let schedules: Api<Schedule> = Api::namespaced(client.clone(), ns);
    // The next minute boundary at least 20 s away: time to create them all before it.
    let slot = (Timestamp::now() + SignedDuration::from_secs(80))
        .round(
            k8s_openapi::jiff::TimestampRound::new()
                .smallest(Unit::Minute)
                .mode(k8s_openapi::jiff::RoundMode::Trunc),
        )
        .unwrap();
    let at = slot.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC);
    let cron = format!("{} {} * * *", at.minute(), at.hour());
    let names = (0..DUE_TOGETHER).map(|i| format!("due-{i:03}")).collect();
    create_schedules(&schedules, names, &cron, empty).await;
    // Each backup's first sight, through one watch of the namespace's Backups.
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    let mut seen: BTreeMap<String, Timestamp> = BTreeMap::new();
    let mut events = watcher(backups, watcher::Config::default())
        .applied_objects()
        .boxed();
    let give_up = slot + 3.minutes();
    while seen.len() < DUE_TOGETHER && Timestamp::now() < give_up {
        match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
            Ok(Some(Ok(backup))) => {
                let name = backup.metadata.name.unwrap_or_default();
                seen.entry(name).or_insert_with(Timestamp::now);
            }
            Ok(Some(Err(error))) => eprintln!("watch: {error}"),
            Ok(None) => break,
            Err(_) => {}
        }
    }
    assert_eq!(
        seen.len(),
        DUE_TOGETHER,
        "every due schedule made its backup"
    );
    let mut late: Vec<f64> = seen
        .values()
        .map(|t| t.duration_since(slot).as_secs_f64())
        .collect();
    late.sort_by(f64::total_cmp);

    for name in (0..DUE_TOGETHER).map(|i| format!("due-{i:03}")) {
        let _ = schedules.delete(&name, &DeleteParams::default()).await;
    }
    let names = (0..IDLE).map(|i| format!("idle-{i:04}")).collect();
    create_schedules(&schedules, names, "0 3 1 1 *", empty).await;
    // Settled: every idle schedule seen and Enabled before the minute is counted.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let before = server.cpu_seconds();
    tokio::time::sleep(IDLE_FOR).await;
    let idle_cpu = (server.cpu_seconds() - before) / IDLE_FOR.as_secs_f64();
    drop(server);
    Row { late, idle_cpu }
}

#[tokio::main]
async fn main() {
    let mut velero: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--velero" => velero = Some(args.next().expect("--velero DIR").into()),
            other => panic!("unknown argument {other}"),
        }
    }
    let binary = std::env::var("ARK_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/ark").to_string()
    });
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let empty = cluster.namespace("bench-empty").await;
    let mut rows = vec![(
        "ark",
        measure(&cluster, &client, &empty.name, async |ns: &str| {
            Box::new(ArkServer::start(&binary, &cluster, ns)) as Box<dyn Measured>
        })
        .await,
    )];
    if let Some(dir) = &velero {
        rows.push((
            "Velero v1.18.3",
            measure(&cluster, &client, &empty.name, async |ns: &str| {
                Box::new(VeleroServer::start_from(dir, &cluster, ns).await) as Box<dyn Measured>
            })
            .await,
        ));
    }
    println!(
        "| tool | schedules due at one slot | backup seen after the slot: first / median / last (s) | floor (s) | idle schedules | server CPU while idle (% of a core) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (tool, row) in rows {
        let late = &row.late;
        println!(
            "| {tool} | {DUE_TOGETHER} | {:.2} / {:.2} / {:.2} | 0 | {IDLE} | {:.2} |",
            late[0],
            late[late.len() / 2],
            late[late.len() - 1],
            row.idle_cpu * 100.0
        );
    }
}
