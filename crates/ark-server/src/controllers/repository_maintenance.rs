//! BackupRepositories maintained as Velero's repository controller maintains them: every
//! `maintenanceFrequency` (1 h for kopia), one full maintenance run with kopia's safety margins,
//! as the owner Velero sets (`default@default`), so that what forgotten snapshots held is freed
//! once nothing references it and no other writer can still need it. A repository whose
//! maintenance another owner holds is left alone. Each run is recorded in the object's status
//! (`lastMaintenanceTime`, and the last three runs in `recentMaintenance`, as Velero keeps them).

use std::sync::Arc;
use std::time::Duration;

use ark_api::BackupRepository;
use ark_kopia::maintenance::Safety;
use serde_json::{Value, json};

use crate::domain::repositories;
use crate::runtime::context::Kube;
use crate::runtime::objects::{self, Readable};
use crate::runtime::{patch, periodic};

/// Runs Velero keeps in `recentMaintenance`.
const RECENT_RUNS: usize = 3;
/// When a run failed: tried again then, not at the next frequency.
const AFTER_FAILURE: Duration = Duration::from_secs(5 * 60);

pub async fn run(kube: Arc<Kube>) {
    periodic::run::<BackupRepository, _, _, _>(kube, async |cached, kube| {
        Some(maintain(cached, kube).await)
    })
    .await;
}

async fn maintain(cached: Arc<Readable<BackupRepository>>, kube: Arc<Kube>) -> Duration {
    let Ok(repository) = &cached.read else {
        return Duration::from_secs(3600);
    };
    let name = cached.name();
    let spec = &repository.spec;
    let frequency = ark_api::duration::parse_or_default(
        Some(&spec.maintenance_frequency),
        Duration::from_secs(3600),
    )
    .unwrap_or(Duration::from_secs(3600));
    let status = repository.status.clone().unwrap_or_default();
    if status.phase != Some(ark_api::BackupRepositoryPhase::Ready) {
        return frequency;
    }
    if let Some(last) = &status.last_maintenance_time {
        let since = k8s_openapi::jiff::Timestamp::now().duration_since(last.0);
        let since = Duration::try_from(since).unwrap_or_default();
        if since < frequency {
            return frequency - since;
        }
    }
    let started = patch::now();
    let clock = std::time::Instant::now();
    let outcome = async {
        let opened = repositories::open(
            &kube.client,
            &kube.namespace,
            &spec.backup_storage_location,
            &spec.volume_namespace,
        )
        .await
        .map_err(|e| e.to_string())?;
        opened
            .run_maintenance(repositories::MAINTENANCE_OWNER, Safety::Full)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    let completed = patch::now();
    kube.metrics
        .maintained(&name, outcome.is_ok(), clock.elapsed());
    let (result, message, next) = match &outcome {
        Ok(report) => {
            tracing::info!(
                "maintained repository {name}: {} blobs deleted ({} bytes), {} contents marked deleted",
                report.deleted_blobs,
                report.deleted_bytes,
                report.marked_deleted
            );
            ("Succeeded", String::new(), frequency)
        }
        Err(error) => {
            tracing::warn!("maintaining repository {name}: {error}");
            ("Failed", error.clone(), AFTER_FAILURE.min(frequency))
        }
    };
    let mut recent: Vec<Value> = cached
        .stored
        .data
        .pointer("/status/recentMaintenance")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    recent.push(json!({
        "result": result,
        "startTimestamp": started,
        "completeTimestamp": completed,
        "message": message,
    }));
    let keep_from = recent.len().saturating_sub(RECENT_RUNS);
    let mut written = json!({ "recentMaintenance": &recent[keep_from..] });
    if outcome.is_ok() {
        written["lastMaintenanceTime"] = json!(completed);
    }
    let api = objects::api::<BackupRepository>(&kube.client, &kube.namespace);
    if let Err(error) = patch::object_status(&api, &name, &written).await {
        tracing::warn!("repository {name}: recording its maintenance: {error}");
    }
    next
}
