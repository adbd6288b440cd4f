//! Building `describe` output in Velero's layout: `Key:  value` lines with aligned values.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Default)]
pub struct Describe {
    text: String,
}

impl Describe {
    pub fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    pub fn blank(&mut self) {
        self.text.push('\n');
    }

    pub fn field(&mut self, key: &str, value: &str) {
        self.line(&format!("{key}:  {value}"));
    }

    /// Several fields whose values line up.
    pub fn fields(&mut self, fields: &[(&str, String)]) {
        self.aligned("", fields);
    }

    /// Fields indented under a heading.
    pub fn nested(&mut self, fields: &[(&str, String)]) {
        self.aligned("  ", fields);
    }

    fn aligned(&mut self, indent: &str, fields: &[(&str, String)]) {
        let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in fields {
            let pad = " ".repeat(width - key.len());
            self.line(&format!("{indent}{key}:{pad}  {value}"));
        }
    }

    pub fn metadata(&mut self, metadata: &ObjectMeta) {
        let map = |m: Option<&std::collections::BTreeMap<String, String>>| match m {
            Some(m) if !m.is_empty() => m
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("\n              "),
            _ => "<none>".to_string(),
        };
        self.fields(&[
            ("Name", metadata.name.clone().unwrap_or_default()),
            ("Namespace", metadata.namespace.clone().unwrap_or_default()),
            ("Labels", map(metadata.labels.as_ref())),
            ("Annotations", map(metadata.annotations.as_ref())),
        ]);
    }

    pub fn finish(self) -> String {
        self.text
    }
}

/// A label selector as users write it, or `<none>`.
pub fn selector(selector: Option<&ark_api::LabelSelector>) -> String {
    selector
        .cloned()
        .and_then(|s| kube::core::Selector::try_from(s).ok())
        .map(|s| s.to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".to_string())
}

/// A restore test's result in a line: its outcome, when it ended, the backup and the restore, and
/// why it failed.
pub fn restore_test_text(result: Result<ark_api::restore_test::TestResult, String>) -> String {
    let result = match result {
        Ok(result) => result,
        Err(error) => return format!("<unreadable: {error}>"),
    };
    let mut text = format!(
        "{:?} at {} (backup {}, restore {})",
        result.outcome,
        result.ended,
        result.backup,
        if result.restore.is_empty() {
            "<none>"
        } else {
            &result.restore
        }
    );
    if let Some(reason) = &result.reason {
        text.push_str(&format!(": {reason}"));
    }
    text
}

/// Each pod's hooks, as a backup or restore recorded them: init containers injected, and every
/// exec hook with its phase (backups), container, result, exit code, duration and error or why it
/// was skipped, and a pod the backup left out; with `details`, the end of each hook's output.
pub fn hooks_text(pods: &[ark_api::hooks::PodHookResults], details: bool) -> String {
    let mut out = String::from("\nHooks:\n");
    if pods.is_empty() {
        out.push_str("  <none>\n");
    }
    for pod in pods {
        out.push_str(&format!("  {}/{}:\n", pod.namespace, pod.pod));
        if !pod.init_containers.is_empty() {
            out.push_str(&format!(
                "    init containers injected: {}\n",
                pod.init_containers.join(", ")
            ));
        }
        for hook in &pod.hooks {
            let result = match (hook.succeeded, &hook.skipped) {
                (_, Some(_)) => "Skipped",
                (true, None) => "Succeeded",
                (false, None) => "Failed",
            };
            let code = hook.exit_code.map_or("-".to_string(), |c| c.to_string());
            let phase = hook.phase.map(|p| format!("{p} ")).unwrap_or_default();
            let why = hook.error.as_ref().or(hook.skipped.as_ref());
            out.push_str(&format!(
                "    {phase}exec in {}: {:?}: {result} (exit code {code}, {:.1}s){}\n",
                hook.container,
                hook.command.join(" "),
                hook.duration_ms as f64 / 1000.0,
                why.map(|e| format!(": {e}")).unwrap_or_default()
            ));
            if details && !hook.output_tail.is_empty() {
                for line in hook.output_tail.lines() {
                    out.push_str(&format!("      | {line}\n"));
                }
            }
        }
        if let Some(reason) = &pod.left_out {
            out.push_str(&format!("    left out of the backup: {reason}\n"));
        }
    }
    out
}

/// One pod volume backup or restore, or a data upload, as `describe` lists it.
pub struct PodVolume {
    pub phase: Option<ark_api::PodVolumePhase>,
    /// `namespace/pod`, or `namespace/claim` for a data upload.
    pub pod: String,
    /// The pod's volume; empty for a data upload.
    pub volume: String,
    pub bytes_done: Option<i64>,
    pub message: Option<String>,
}

impl PodVolume {
    pub fn new(
        phase: Option<ark_api::PodVolumePhase>,
        pod: &ark_api::PodReference,
        volume: String,
        progress: Option<ark_api::PodVolumeProgress>,
        message: Option<String>,
    ) -> Self {
        PodVolume {
            phase,
            pod: format!("{}/{}", pod.namespace, pod.name),
            volume,
            bytes_done: progress.and_then(|p| p.bytes_done),
            message,
        }
    }
}

/// Velero's "Pod Volume Backups - kopia" (or Restores) section: how many in each phase, and with
/// `details` each volume; a failed one always says why. Empty when there is none.
pub fn pod_volumes_text(title: &str, mut volumes: Vec<PodVolume>, details: bool) -> String {
    if volumes.is_empty() {
        return String::new();
    }
    volumes.sort_by(|a, b| (&a.pod, &a.volume).cmp(&(&b.pod, &b.volume)));
    let mut by_phase: std::collections::BTreeMap<String, Vec<&PodVolume>> = Default::default();
    for volume in &volumes {
        let phase = volume.phase.map_or("New".to_string(), |p| format!("{p:?}"));
        by_phase.entry(phase).or_default().push(volume);
    }
    let mut out = format!("\n{title} - kopia:\n");
    for (phase, volumes) in &by_phase {
        let failed = matches!(phase.as_str(), "Failed" | "Canceled");
        if !details && !failed {
            out.push_str(&format!("  {phase}:  {}\n", volumes.len()));
            continue;
        }
        out.push_str(&format!("  {phase}:\n"));
        for volume in volumes {
            let mut line = match volume.volume.as_str() {
                "" => format!("    {}", volume.pod),
                name => format!("    {}: {name}", volume.pod),
            };
            if let Some(bytes) = volume.bytes_done.filter(|_| !failed) {
                line.push_str(&format!(" ({bytes} bytes)"));
            }
            if let Some(message) = volume.message.as_deref().filter(|m| !m.is_empty()) {
                line.push_str(&format!(": {message}"));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// A CSI snapshot kept in the storage system: its name and class, handle, size, driver, and
/// whether it is ready to use.
fn local_snapshot_text(
    info: &ark_api::CsiSnapshotInfo,
    operations: &[ark_api::BackupOperation],
) -> String {
    let operation = operations
        .iter()
        .find(|o| o.spec.operation_id == info.operation_id);
    let snapshot = operation
        .map(|o| o.spec.resource_identifier.name.clone())
        .unwrap_or_else(|| "<unknown>".into());
    let result = match operation.map(|o| (o.status.phase, o.status.error.as_str())) {
        Some((ark_api::OperationPhase::Completed, _)) => "ready to use".to_string(),
        Some((ark_api::OperationPhase::Failed, error)) => format!("failed: {error}"),
        Some((ark_api::OperationPhase::Canceled, _)) => "canceled".to_string(),
        _ if info.ready_to_use == Some(true) => "ready to use".to_string(),
        _ => "not ready to use yet".to_string(),
    };
    let class = Some(info.volume_snapshot_class.as_str())
        .filter(|c| !c.is_empty())
        .map(|c| format!(" (class {c})"))
        .unwrap_or_default();
    let mut fields = Describe::default();
    fields.nested(&[
        ("  Snapshot", format!("{snapshot}{class}")),
        ("  Storage Snapshot ID", info.snapshot_handle.clone()),
        ("  Snapshot Size (bytes)", info.size.to_string()),
        ("  CSI Driver", info.driver.clone()),
        ("  Result", result),
    ]);
    fields.finish()
}

/// A CSI snapshot's data moved into the location's repository, as Velero's describe shows it
/// (`describeDataMovement`).
fn data_movement_text(moved: &ark_api::SnapshotDataMovementInfo, result: &str) -> String {
    let data_mover = Some(moved.data_mover.as_str())
        .filter(|m| !m.is_empty())
        .unwrap_or("velero");
    let mut rows = vec![
        ("    Operation ID", moved.operation_id.clone()),
        ("    Data Mover", data_mover.to_string()),
        ("    Uploader Type", moved.uploader_type.clone()),
        ("    Snapshot ID", moved.snapshot_handle.clone()),
        ("    Moved data Size (bytes)", moved.size.to_string()),
    ];
    if moved.incremental_size > 0 {
        let incremental = moved.incremental_size.to_string();
        rows.push(("    Incremental data Size (bytes)", incremental));
    }
    rows.push(("    Result", result.to_string()));
    let mut fields = Describe::default();
    fields.nested(&rows);
    format!("    Data Movement:\n{}", fields.finish())
}

/// Each CSI snapshot of a backup (claim, snapshot and class, handle, size, driver, and whether it
/// is ready to use or what failed) and, as Velero shows it, where its data was moved (the local
/// snapshot then only when kept), and each claim whose data the backup does not hold, and why.
/// Empty when the backup recorded no volume.
pub fn volumes_text(
    volumes: &[ark_api::BackupVolumeInfo],
    operations: &[ark_api::BackupOperation],
) -> String {
    let mut out = String::new();
    let snapshots: Vec<_> = volumes
        .iter()
        .filter(|v| v.csi_snapshot_info.is_some() || v.snapshot_data_moved)
        .collect();
    if !snapshots.is_empty() {
        out.push_str("\nCSI Snapshots:\n");
        for volume in snapshots {
            out.push_str(&format!(
                "  {}/{}:\n",
                volume.pvc_namespace, volume.pvc_name
            ));
            let local = volume.csi_snapshot_info.as_ref();
            if let Some(info) =
                local.filter(|_| !volume.snapshot_data_moved || volume.preserve_local_snapshot)
            {
                out.push_str(&local_snapshot_text(info, operations));
            }
            if let Some(moved) = volume
                .snapshot_data_movement_info
                .as_ref()
                .filter(|_| volume.snapshot_data_moved)
            {
                out.push_str(&data_movement_text(moved, &volume.result));
            }
        }
    }
    let skipped: Vec<_> = volumes.iter().filter(|v| v.skipped).collect();
    if !skipped.is_empty() {
        out.push_str("\nVolumes Without Data In This Backup:\n");
        for volume in skipped {
            out.push_str(&format!(
                "  {}/{}:  {}\n",
                volume.pvc_namespace, volume.pvc_name, volume.skipped_reason
            ));
        }
    }
    out
}

/// The objects of kind `K` in `namespace` whose labels match `selector`.
pub async fn labelled<K>(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
) -> anyhow::Result<Vec<K>>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    use anyhow::Context as _;
    let listed = kube::Api::<K>::namespaced(client.clone(), namespace)
        .list(&kube::api::ListParams::default().labels(selector))
        .await
        .with_context(|| format!("cannot list {}s", K::kind(&())))?;
    Ok(listed.items)
}
