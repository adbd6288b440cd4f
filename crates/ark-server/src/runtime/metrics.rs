//! The server's Prometheus metrics under Velero's names and labels (`pkg/metrics/metrics.go`), so
//! that the dashboards and alerts Velero users have keep working, plus a reconcile-duration
//! histogram per controller; served on `/metrics` in OpenMetrics text by the prometheus-client
//! crate, beside the liveness (`/healthz`) and readiness (`/readyz`) endpoints of the
//! Deployment's probes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Velero's label on its backup, restore and deletion metrics: the schedule that made the backup
/// (`velero.io/schedule-name`), empty for one made by hand.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Schedule {
    pub schedule: String,
}

/// Velero's labels on a backup's CSI snapshot counts (its label is `backupName`, in Go's case).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
#[allow(non_snake_case)]
struct ScheduleBackup {
    schedule: String,
    backupName: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LocationName {
    backup_location_name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RepositoryName {
    repository_name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Node {
    node: String,
}

/// Velero's labels on a pod volume operation's latency: the node, the operation
/// (`<pvb>-<location>-<pod namespace>-<uploader>-backup`), the backup (`<namespace>/<name>`) and
/// the PodVolumeBackup.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
#[allow(non_snake_case)]
pub struct PodVolumeOperation {
    pub node: String,
    pub operation: String,
    pub backupName: String,
    pub pod_volume_backup: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reconcile {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileFailure {
    controller: String,
    error: &'static str,
}

type Counters = Family<Schedule, Counter>;
type Histograms = Family<Schedule, Histogram, fn() -> Histogram>;

/// How a backup or a restore ended, as its metrics count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Success,
    PartialFailure,
    Failure,
}

pub struct Metrics {
    /// Whether this replica leads now (shown by `/readyz`).
    leading: AtomicBool,
    registry: Registry,
    backup_attempts: Counters,
    backup_successes: Counters,
    backup_partial_failures: Counters,
    backup_failures: Counters,
    backup_validation_failures: Counters,
    backup_duration: Histograms,
    backup_items: Family<Schedule, Gauge>,
    backup_item_errors: Family<Schedule, Gauge>,
    backup_last_success: Family<Schedule, Gauge<f64, AtomicU64>>,
    restore_attempts: Counters,
    restore_successes: Counters,
    restore_partial_failures: Counters,
    restore_failures: Counters,
    restore_validation_failures: Counters,
    deletion_attempts: Counters,
    deletion_successes: Counters,
    deletion_failures: Counters,
    verification_successes: Counters,
    verification_failures: Counters,
    restore_test_successes: Counters,
    restore_test_failures: Counters,
    restore_test_failing: Family<Schedule, Gauge>,
    storage: StorageMetrics,
    pod_volumes: PodVolumeMetrics,
    reconcile_duration: Family<Reconcile, Histogram, fn() -> Histogram>,
    reconcile_failures: Family<ReconcileFailure, Counter>,
}

/// Velero's metrics of volume data and storage: CSI snapshots, locations, repository maintenance.
struct StorageMetrics {
    csi_snapshot_attempts: Family<ScheduleBackup, Counter>,
    csi_snapshot_successes: Family<ScheduleBackup, Counter>,
    csi_snapshot_failures: Family<ScheduleBackup, Counter>,
    location_status: Family<LocationName, Gauge>,
    /// ark's own: sync's Backups created, and those its pass has still to create.
    synced: Family<LocationName, Counter>,
    sync_remaining: Family<LocationName, Gauge>,
    maintenance_successes: Family<RepositoryName, Counter>,
    maintenance_failures: Family<RepositoryName, Counter>,
    maintenance_duration: Family<RepositoryName, Histogram, fn() -> Histogram>,
}

impl StorageMetrics {
    fn register(r: &mut Registry) -> Self {
        let [
            csi_snapshot_attempts,
            csi_snapshot_successes,
            csi_snapshot_failures,
        ] = [
            (
                "velero_csi_snapshot_attempt",
                "Total number of CSI attempted volume snapshots",
            ),
            (
                "velero_csi_snapshot_success",
                "Total number of CSI successful volume snapshots",
            ),
            (
                "velero_csi_snapshot_failure",
                "Total number of CSI failed volume snapshots",
            ),
        ]
        .map(|(name, help)| registered(r, name, help, Family::default()));
        let location_status = registered(
            r,
            "velero_backup_location_status_gauge",
            "The status of backup location.  A value of 1 is available, 0 is unavailable",
            Family::<LocationName, Gauge>::default(),
        );
        let synced = registered(
            r,
            "ark_backup_sync_created",
            "Total number of Backup objects sync created from a location's bucket",
            Family::<LocationName, Counter>::default(),
        );
        let sync_remaining = registered(
            r,
            "ark_backup_sync_remaining",
            "Backups of a location's bucket that its sync in progress has still to create",
            Family::<LocationName, Gauge>::default(),
        );
        let [maintenance_successes, maintenance_failures] = [
            (
                "velero_repo_maintenance_success",
                "Total number of successful repo maintenance jobs",
            ),
            (
                "velero_repo_maintenance_failure",
                "Total number of failed repo maintenance jobs",
            ),
        ]
        .map(|(name, help)| registered(r, name, help, Family::default()));
        let maintenance_duration = registered(
            r,
            "velero_repo_maintenance_duration_seconds",
            "Time taken to complete repo maintenance jobs, in seconds",
            Family::<RepositoryName, Histogram, fn() -> Histogram>::new_with_constructor(
                maintenance_duration_histogram,
            ),
        );
        StorageMetrics {
            csi_snapshot_attempts,
            csi_snapshot_successes,
            csi_snapshot_failures,
            location_status,
            synced,
            sync_remaining,
            maintenance_successes,
            maintenance_failures,
            maintenance_duration,
        }
    }
}

/// Velero's node agent metrics of pod volume backups (`podVolume_*`). Velero's two counts are
/// counters whose names end in `_count`; OpenMetrics writes a counter's samples as `<name>_total`,
/// so they are gauges here (only ever increased), under the names Velero's dashboards query.
struct PodVolumeMetrics {
    backups_started: Family<Node, Gauge>,
    backups_completed: Family<Node, Gauge>,
    latency: Family<PodVolumeOperation, Histogram, fn() -> Histogram>,
    latency_gauge: Family<PodVolumeOperation, Gauge<f64, AtomicU64>>,
    /// Data uploads and downloads ended, by how (success, failure, cancel), by node.
    data_moved: BTreeMap<(&'static str, &'static str), Family<Node, Counter>>,
}

/// How a data movement request ended, in Velero's metric names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveEnded {
    Success,
    Failure,
    Cancel,
}

impl PodVolumeMetrics {
    fn register(r: &mut Registry) -> Self {
        let [backups_started, backups_completed] = [
            (
                "podVolume_pod_volume_backup_enqueue_count",
                "Total number of pod_volume_backup objects enqueued",
            ),
            (
                "podVolume_pod_volume_backup_dequeue_count",
                "Total number of pod_volume_backup objects dequeued",
            ),
        ]
        .map(|(name, help)| registered(r, name, help, Family::default()));
        let latency = registered(
            r,
            "podVolume_pod_volume_operation_latency_seconds",
            "Time taken to complete pod volume operations, in seconds",
            Family::<PodVolumeOperation, Histogram, fn() -> Histogram>::new_with_constructor(
                backup_duration_histogram,
            ),
        );
        let latency_gauge = registered(
            r,
            "podVolume_pod_volume_operation_latency_seconds_gauge",
            "Gauge metric indicating time taken, in seconds, to perform pod volume operations",
            Family::default(),
        );
        let mut data_moved = BTreeMap::new();
        for kind in ["data_upload", "data_download"] {
            for ended in ["success", "failure", "cancel"] {
                // OpenMetrics adds `_total` to a counter's name: Velero's
                // `podVolume_data_upload_success_total`.
                let name = format!("podVolume_{kind}_{ended}");
                let help = format!("Total number of {ended} {kind}s");
                data_moved.insert(
                    (kind, ended),
                    registered(r, &name, &help, Family::default()),
                );
            }
        }
        PodVolumeMetrics {
            backups_started,
            backups_completed,
            latency,
            latency_gauge,
            data_moved,
        }
    }
}

/// Velero's buckets for a backup's duration: 1 minute to 4 hours.
fn backup_duration_histogram() -> Histogram {
    Histogram::new([
        60.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 14400.0,
    ])
}

/// Velero's buckets for a repository's maintenance: 1 minute to 4 hours, as a backup's.
fn maintenance_duration_histogram() -> Histogram {
    backup_duration_histogram()
}

/// 5 ms to about 80 s: a reconcile that claims, a backup that runs for a minute.
fn reconcile_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Velero's counters by schedule, as (name, help), in the order they are registered: the order
/// of the pattern `Metrics::default` binds them to.
#[rustfmt::skip]
const COUNTERS: [(&str, &str); 17] = [
    ("velero_backup_attempt", "Total number of attempted backups"),
    ("velero_backup_success", "Total number of successful backups"),
    ("velero_backup_partial_failure", "Total number of partially failed backups"),
    ("velero_backup_failure", "Total number of failed backups"),
    ("velero_backup_validation_failure", "Total number of validation failed backups"),
    ("velero_restore_attempt", "Total number of attempted restores"),
    ("velero_restore_success", "Total number of successful restores"),
    ("velero_restore_partial_failure", "Total number of partially failed restores"),
    ("velero_restore_failed", "Total number of failed restores"),
    ("velero_restore_validation_failed", "Total number of failed restores failing validations"),
    ("velero_backup_deletion_attempt", "Total number of attempted backup deletions"),
    ("velero_backup_deletion_success", "Total number of successful backup deletions"),
    ("velero_backup_deletion_failure", "Total number of failed backup deletions"),
    // ark's own: the server's verifications of new backups (`--verify-new-backups`).
    ("ark_backup_verification_success", "Total number of backups verified without a defect"),
    ("ark_backup_verification_failure", "Total number of backups whose verification found defects"),
    // ark's own: schedules' restore tests.
    ("ark_restore_test_success", "Total number of restore tests that passed"),
    ("ark_restore_test_failure", "Total number of restore tests that failed"),
];

/// Registers `metric` under `name` and `help`; the handle to update it by.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// Registers a counter family by schedule, with the series of backups made by hand at 0.
fn schedule_counters(registry: &mut Registry, name: &str, help: &str) -> Counters {
    let family = registered(registry, name, help, Counters::default());
    // The series of backups made by hand exist from the start, at 0, as Velero's `InitSchedule`
    // makes them for each schedule: a rate has a first point.
    family
        .get_or_create(&Schedule {
            schedule: String::new(),
        })
        .inc_by(0);
    family
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let r = &mut registry;
        let [
            backup_attempts,
            backup_successes,
            backup_partial_failures,
            backup_failures,
            backup_validation_failures,
            restore_attempts,
            restore_successes,
            restore_partial_failures,
            restore_failures,
            restore_validation_failures,
            deletion_attempts,
            deletion_successes,
            deletion_failures,
            verification_successes,
            verification_failures,
            restore_test_successes,
            restore_test_failures,
        ] = COUNTERS.map(|(name, help)| schedule_counters(r, name, help));
        let backup_duration = registered(
            r,
            "velero_backup_duration_seconds",
            "Time taken to complete backup, in seconds",
            Histograms::new_with_constructor(backup_duration_histogram),
        );
        let backup_items = registered(
            r,
            "velero_backup_items_total",
            "Total number of items backed up",
            Family::<Schedule, Gauge>::default(),
        );
        let backup_item_errors = registered(
            r,
            "velero_backup_items_errors",
            "Total number of errors encountered during backup",
            Family::<Schedule, Gauge>::default(),
        );
        let backup_last_success = registered(
            r,
            "velero_backup_last_successful_timestamp",
            "Last time a backup ran successfully, Unix timestamp in seconds",
            Family::<Schedule, Gauge<f64, AtomicU64>>::default(),
        );
        let restore_test_failing = registered(
            r,
            "ark_restore_test_failing",
            "1 when a schedule's latest restore test failed or is older than its test allows",
            Family::<Schedule, Gauge>::default(),
        );
        let storage = StorageMetrics::register(r);
        let pod_volumes = PodVolumeMetrics::register(r);
        let reconcile_duration = registered(
            r,
            "ark_reconcile_duration_seconds",
            "Time taken by one reconcile of a controller, in seconds",
            Family::<Reconcile, Histogram, fn() -> Histogram>::new_with_constructor(
                reconcile_histogram,
            ),
        );
        let reconcile_failures = registered(
            r,
            "ark_reconcile_failures",
            "Reconciles that failed and will be tried again, by controller and error",
            Family::<ReconcileFailure, Counter>::default(),
        );
        Self {
            leading: AtomicBool::new(false),
            registry,
            backup_attempts,
            backup_successes,
            backup_partial_failures,
            backup_failures,
            backup_validation_failures,
            backup_duration,
            backup_items,
            backup_item_errors,
            backup_last_success,
            restore_attempts,
            restore_successes,
            restore_partial_failures,
            restore_failures,
            restore_validation_failures,
            deletion_attempts,
            deletion_successes,
            deletion_failures,
            verification_successes,
            verification_failures,
            restore_test_successes,
            restore_test_failures,
            restore_test_failing,
            storage,
            pod_volumes,
            reconcile_duration,
            reconcile_failures,
        }
    }
}

fn schedule(name: &str) -> Schedule {
    Schedule {
        schedule: name.to_string(),
    }
}

impl Metrics {
    pub fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::Relaxed);
    }

    /// A backup passed validation and started (Velero counts its attempt there).
    pub fn backup_attempted(&self, schedule_name: &str) {
        self.backup_attempts
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    pub fn backup_failed_validation(&self, schedule_name: &str) {
        self.backup_validation_failures
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    /// A backup ended after `took`, with `items` items and `errors` errors.
    pub fn backup_ended(
        &self,
        schedule_name: &str,
        ended: Ended,
        took: Duration,
        items: i64,
        errors: i64,
    ) {
        let labels = schedule(schedule_name);
        match ended {
            Ended::Success => {
                self.backup_successes.get_or_create(&labels).inc();
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                self.backup_last_success
                    .get_or_create(&labels)
                    .set(now.as_secs_f64());
            }
            Ended::PartialFailure => {
                self.backup_partial_failures.get_or_create(&labels).inc();
            }
            Ended::Failure => {
                self.backup_failures.get_or_create(&labels).inc();
            }
        }
        self.backup_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        self.backup_items.get_or_create(&labels).set(items);
        self.backup_item_errors.get_or_create(&labels).set(errors);
    }

    /// A restore was taken up (Velero counts its attempt before validating it).
    pub fn restore_attempted(&self, schedule_name: &str) {
        self.restore_attempts
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    pub fn restore_failed_validation(&self, schedule_name: &str) {
        self.restore_validation_failures
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    pub fn restore_ended(&self, schedule_name: &str, ended: Ended) {
        let labels = schedule(schedule_name);
        let counter = match ended {
            Ended::Success => &self.restore_successes,
            Ended::PartialFailure => &self.restore_partial_failures,
            Ended::Failure => &self.restore_failures,
        };
        counter.get_or_create(&labels).inc();
    }

    pub fn deletion_attempted(&self, schedule_name: &str) {
        self.deletion_attempts
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    pub fn deletion_succeeded(&self, schedule_name: &str) {
        self.deletion_successes
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    pub fn deletion_failed(&self, schedule_name: &str) {
        self.deletion_failures
            .get_or_create(&schedule(schedule_name))
            .inc();
    }

    /// The server verified a backup: without a defect, or not.
    pub fn backup_verified(&self, schedule_name: &str, passed: bool) {
        let counter = match passed {
            true => &self.verification_successes,
            false => &self.verification_failures,
        };
        counter.get_or_create(&schedule(schedule_name)).inc();
    }

    /// A schedule's restore test ended: passed, or not.
    pub fn restore_tested(&self, schedule_name: &str, passed: bool) {
        let counter = match passed {
            true => &self.restore_test_successes,
            false => &self.restore_test_failures,
        };
        counter.get_or_create(&schedule(schedule_name)).inc();
    }

    /// Whether a schedule's latest restore test failed or is overdue; None: it has no test.
    pub fn restore_test_failing(&self, schedule_name: &str, failing: Option<bool>) {
        let labels = schedule(schedule_name);
        match failing {
            Some(failing) => {
                self.restore_test_failing
                    .get_or_create(&labels)
                    .set(i64::from(failing));
            }
            None => {
                self.restore_test_failing.remove(&labels);
            }
        }
    }

    /// A backup's CSI snapshots once it ended: attempted, and of those completed (the rest failed).
    pub fn csi_snapshots(&self, schedule_name: &str, backup: &str, attempted: u64, completed: u64) {
        let labels = ScheduleBackup {
            schedule: schedule_name.to_string(),
            backupName: backup.to_string(),
        };
        if attempted == 0 {
            return;
        }
        self.storage
            .csi_snapshot_attempts
            .get_or_create(&labels)
            .inc_by(attempted);
        self.storage
            .csi_snapshot_successes
            .get_or_create(&labels)
            .inc_by(completed);
        self.storage
            .csi_snapshot_failures
            .get_or_create(&labels)
            .inc_by(attempted.saturating_sub(completed));
    }

    /// A pod volume backup this node's agent took on (Velero's enqueue count).
    pub fn pod_volume_backup_started(&self, node: &str) {
        let node = Node { node: node.into() };
        self.pod_volumes.backups_started.get_or_create(&node).inc();
    }

    /// A pod volume backup this node's agent completed after `took` (Velero's dequeue count, and
    /// the operation's latency, in whole seconds as Velero counts it). A failed one counts in
    /// neither, as in Velero.
    pub fn pod_volume_backup_completed(&self, operation: PodVolumeOperation, took: Duration) {
        let seconds = took.as_secs() as f64;
        let node = Node {
            node: operation.node.clone(),
        };
        self.pod_volumes
            .backups_completed
            .get_or_create(&node)
            .inc();
        (self.pod_volumes.latency.get_or_create(&operation)).observe(seconds);
        (self.pod_volumes.latency_gauge.get_or_create(&operation)).set(seconds);
    }

    /// A data upload or download (`kind`: `data_upload`, `data_download`) this node's agent
    /// ended, as Velero's node agent counts them.
    pub fn data_moved(&self, kind: &'static str, node: &str, ended: MoveEnded) {
        let ended = match ended {
            MoveEnded::Success => "success",
            MoveEnded::Failure => "failure",
            MoveEnded::Cancel => "cancel",
        };
        if let Some(counter) = self.pod_volumes.data_moved.get(&(kind, ended)) {
            counter.get_or_create(&Node { node: node.into() }).inc();
        }
    }

    /// A location's last check: 1 available, 0 not.
    pub fn location_checked(&self, location: &str, available: bool) {
        self.storage
            .location_status
            .get_or_create(&LocationName {
                backup_location_name: location.to_string(),
            })
            .set(i64::from(available));
    }

    /// Sync of `location` created a Backup.
    pub fn synced(&self, location: &str) {
        (self.storage.synced)
            .get_or_create(&LocationName {
                backup_location_name: location.to_string(),
            })
            .inc();
    }

    /// Sync of `location` has `remaining` Backups still to create in this pass.
    pub fn sync_remaining(&self, location: &str, remaining: usize) {
        (self.storage.sync_remaining)
            .get_or_create(&LocationName {
                backup_location_name: location.to_string(),
            })
            .set(i64::try_from(remaining).unwrap_or(i64::MAX));
    }

    /// A repository's maintenance ended after `took`.
    pub fn maintained(&self, repository: &str, succeeded: bool, took: Duration) {
        let labels = RepositoryName {
            repository_name: repository.to_string(),
        };
        let counter = if succeeded {
            &self.storage.maintenance_successes
        } else {
            &self.storage.maintenance_failures
        };
        counter.get_or_create(&labels).inc();
        self.storage
            .maintenance_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// One reconcile of the controller of kind `controller` took `took`; `failure` names its
    /// error when it failed.
    pub fn reconciled(&self, controller: &str, took: Duration, failure: Option<&'static str>) {
        let controller = controller.to_string();
        if let Some(error) = failure {
            self.reconcile_failures
                .get_or_create(&ReconcileFailure {
                    controller: controller.clone(),
                    error,
                })
                .inc();
        }
        self.reconcile_duration
            .get_or_create(&Reconcile { controller })
            .observe(took.as_secs_f64());
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The answer to one request: `(status line, content type, body)`.
fn answer(request: &[u8], metrics: &Metrics) -> (&'static str, &'static str, String) {
    let path = std::str::from_utf8(request)
        .ok()
        .and_then(|text| text.split_whitespace().nth(1))
        .unwrap_or_default();
    match path.split('?').next().unwrap_or_default() {
        "/metrics" => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.render(),
        ),
        // The process answers, so it lives, whatever it can reach.
        "/healthz" => ("200 OK", "text/plain", "ok\n".into()),
        // Every replica, leading or standing by, is ready (a standby that is not would keep the
        // Deployment unavailable for nothing); the body says which.
        "/readyz" => {
            let role = if metrics.leading.load(Ordering::Relaxed) {
                "ok: leading\n"
            } else {
                "ok: standing by, not leading\n"
            };
            ("200 OK", "text/plain", role.into())
        }
        _ => ("404 Not Found", "text/plain", "not found\n".into()),
    }
}

/// The request's head, up to its blank line: a client may send it in several pieces, and one
/// closed on with bytes unread gets a reset instead of its answer. At most 8 KiB, within 5 s.
async fn read_request_head(stream: &mut tokio::net::TcpStream) -> Vec<u8> {
    const MAX: usize = 8 << 10;
    let mut head = Vec::new();
    let reading = async {
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&buffer[..read]),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), reading).await;
    head
}

/// Serves the metrics and health endpoints on `address`.
pub async fn serve(address: SocketAddr, metrics: std::sync::Arc<Metrics>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
    loop {
        // A failed accept (a connection reset before it was taken, no file descriptors left)
        // concerns that connection only: the endpoint keeps serving.
        let mut stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!("metrics: accepting a connection: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let request = read_request_head(&mut stream).await;
            let (status, content_type, body) = answer(&request, &metrics);
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_under_velero_names_with_the_schedule_label() {
        let metrics = Metrics::default();
        metrics.deletion_attempted("");
        metrics.deletion_attempted("nightly");
        metrics.deletion_succeeded("");
        metrics.backup_attempted("");
        metrics.backup_ended("", Ended::PartialFailure, Duration::from_secs(90), 12, 1);
        metrics.reconciled("Backup", Duration::from_millis(3), Some("api"));
        let text = metrics.render();
        for line in [
            "# TYPE velero_backup_deletion_attempt counter\n",
            "velero_backup_deletion_attempt_total{schedule=\"\"} 1\n",
            "velero_backup_deletion_attempt_total{schedule=\"nightly\"} 1\n",
            "velero_backup_deletion_success_total{schedule=\"\"} 1\n",
            "velero_backup_deletion_failure_total{schedule=\"\"} 0\n",
            "velero_backup_attempt_total{schedule=\"\"} 1\n",
            "velero_backup_partial_failure_total{schedule=\"\"} 1\n",
            "velero_backup_success_total{schedule=\"\"} 0\n",
            "velero_backup_duration_seconds_bucket{le=\"60.0\",schedule=\"\"} 0\n",
            "velero_backup_duration_seconds_bucket{le=\"300.0\",schedule=\"\"} 1\n",
            "velero_backup_items_total{schedule=\"\"} 12\n",
            "velero_backup_items_errors{schedule=\"\"} 1\n",
            "ark_reconcile_duration_seconds_count{controller=\"Backup\"} 1\n",
            "ark_reconcile_failures_total{controller=\"Backup\",error=\"api\"} 1\n",
            "velero_restore_attempt_total{schedule=\"\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn locations_csi_snapshots_and_maintenance_are_counted_under_velero_names_and_labels() {
        let metrics = Metrics::default();
        metrics.csi_snapshots("nightly", "nightly-1", 3, 2);
        metrics.csi_snapshots("", "by-hand", 0, 0);
        metrics.location_checked("default", true);
        metrics.location_checked("offsite", false);
        metrics.synced("default");
        metrics.synced("default");
        metrics.sync_remaining("default", 7);
        metrics.maintained("shop-default-kopia", true, Duration::from_secs(90));
        metrics.maintained("shop-default-kopia", false, Duration::from_secs(5));
        let text = metrics.render();
        for line in [
            "velero_csi_snapshot_attempt_total{schedule=\"nightly\",backupName=\"nightly-1\"} 3\n",
            "velero_csi_snapshot_success_total{schedule=\"nightly\",backupName=\"nightly-1\"} 2\n",
            "velero_csi_snapshot_failure_total{schedule=\"nightly\",backupName=\"nightly-1\"} 1\n",
            "velero_backup_location_status_gauge{backup_location_name=\"default\"} 1\n",
            "velero_backup_location_status_gauge{backup_location_name=\"offsite\"} 0\n",
            "ark_backup_sync_created_total{backup_location_name=\"default\"} 2\n",
            "ark_backup_sync_remaining{backup_location_name=\"default\"} 7\n",
            "velero_repo_maintenance_success_total{repository_name=\"shop-default-kopia\"} 1\n",
            "velero_repo_maintenance_failure_total{repository_name=\"shop-default-kopia\"} 1\n",
            "velero_repo_maintenance_duration_seconds_count{repository_name=\"shop-default-kopia\"} 2\n",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
        assert!(
            !text.contains("by-hand"),
            "a backup without CSI snapshots counts none:\n{text}"
        );
    }

    #[test]
    fn pod_volume_backups_are_counted_under_velero_s_node_agent_names_and_labels() {
        let metrics = Metrics::default();
        metrics.pod_volume_backup_started("node-1");
        metrics.pod_volume_backup_started("node-1");
        let operation = PodVolumeOperation {
            node: "node-1".into(),
            operation: "b1-abcde-default-shop-kopia-backup".into(),
            backupName: "velero/b1".into(),
            pod_volume_backup: "b1-abcde".into(),
        };
        metrics.pod_volume_backup_completed(operation, Duration::from_millis(75_900));
        let text = metrics.render();
        let labels = "node=\"node-1\",operation=\"b1-abcde-default-shop-kopia-backup\",\
                      backupName=\"velero/b1\",pod_volume_backup=\"b1-abcde\"";
        for line in [
            "# TYPE podVolume_pod_volume_backup_enqueue_count gauge\n".to_string(),
            "podVolume_pod_volume_backup_enqueue_count{node=\"node-1\"} 2\n".to_string(),
            "podVolume_pod_volume_backup_dequeue_count{node=\"node-1\"} 1\n".to_string(),
            format!("podVolume_pod_volume_operation_latency_seconds_sum{{{labels}}} 75.0\n"),
            format!(
                "podVolume_pod_volume_operation_latency_seconds_bucket{{le=\"300.0\",{labels}}} 1\n"
            ),
            format!("podVolume_pod_volume_operation_latency_seconds_gauge{{{labels}}} 75.0\n"),
        ] {
            assert!(text.contains(&line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn data_movement_is_counted_under_velero_s_node_agent_names() {
        let metrics = Metrics::default();
        metrics.data_moved("data_upload", "node-1", MoveEnded::Success);
        metrics.data_moved("data_upload", "node-1", MoveEnded::Success);
        metrics.data_moved("data_download", "node-2", MoveEnded::Cancel);
        let text = metrics.render();
        for line in [
            "# TYPE podVolume_data_upload_success counter\n",
            "podVolume_data_upload_success_total{node=\"node-1\"} 2\n",
            "podVolume_data_download_cancel_total{node=\"node-2\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
        assert!(
            !text.contains("podVolume_data_download_failure_total{"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_request_sent_in_pieces_gets_its_answer() {
        let address = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        tokio::spawn(serve(address, std::sync::Arc::default()));
        let mut stream = loop {
            if let Ok(stream) = tokio::net::TcpStream::connect(address).await {
                break stream;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        stream.write_all(b"GET /metr").await.unwrap();
        stream.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        stream
            .write_all(b"ics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(
            response.contains("velero_backup_attempt_total"),
            "{response}"
        );
    }

    #[test]
    fn requests_are_answered_by_path() {
        let metrics = Metrics::default();
        let status = |request: &str| answer(request.as_bytes(), &metrics).0;
        assert_eq!(status("GET /healthz HTTP/1.1\r\n\r\n"), "200 OK");
        assert_eq!(status("GET /readyz HTTP/1.1\r\n\r\n"), "200 OK");
        assert_eq!(status("GET /metrics?x=1 HTTP/1.1\r\n\r\n"), "200 OK");
        assert_eq!(status("GET /other HTTP/1.1\r\n\r\n"), "404 Not Found");
        assert_eq!(status(""), "404 Not Found");
    }
}
