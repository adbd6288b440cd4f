//! The restore of claims whose data a data mover moved: once the restore has created them
//! (waiting, through their selector, for a volume), a DataDownload per claim, as Velero's CSI PVC
//! restore action makes it (`pkg/restore/actions/csi/pvc_action.go`), asks a node agent to write
//! the data into a new volume and bind it to the claim. The restore waits for them as item
//! operations, within its `itemOperationTimeout`; those still running then are canceled.

use std::time::Duration;

use ark_api::{
    Backup, DataDownload, DataDownloadSpec, PodVolumePhase, Restore, TargetVolumeSpec, labels,
};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt as _};
use serde_json::json;

use super::engine::MovedClaim;
use super::requests::{self, Seen};
use crate::runtime::objects;

/// How long canceled DataDownloads may take to end (their agents remove what they exposed).
const CANCEL_GRACE: Duration = Duration::from_secs(60);
/// A DataDownload's `operationTimeout` when the backup sets no `csiSnapshotTimeout` (Velero's
/// default).
const OPERATION_TIMEOUT: &str = "10m0s";

/// The DataDownloads of one restore.
pub struct Downloads<'a> {
    pub client: &'a Client,
    /// ark's namespace, where they are made.
    pub namespace: &'a str,
    pub restore: &'a Restore,
    pub backup: &'a Backup,
    /// How long they may take, together.
    pub timeout: Duration,
}

impl Downloads<'_> {
    /// Makes a DataDownload for each claim and waits for them all to end: each as it ended (or
    /// as last seen), and the errors to record, by namespace.
    pub async fn run(&self, claims: Vec<MovedClaim>) -> (Vec<DataDownload>, Vec<(String, String)>) {
        let mut errors = Vec::new();
        if claims.is_empty() {
            return (Vec::new(), errors);
        }
        let api = Api::<DataDownload>::namespaced(self.client.clone(), self.namespace);
        let restore_uid = self.restore.metadata.uid.clone().unwrap_or_default();
        let mut seen = Seen::start(api.clone(), &restore_uid);
        let mut made = Vec::new();
        for claim in &claims {
            let download = data_download(self.restore, self.backup, self.namespace, claim);
            match api.create(&PostParams::default(), &download).await {
                Ok(download) => made.push(download.name_any()),
                Err(error) => errors.push((
                    claim.namespace.clone(),
                    format!(
                        "claim {}/{}: its data is not restored: creating its DataDownload: {}",
                        claim.namespace,
                        claim.claim,
                        objects::reason(&error)
                    ),
                )),
            }
        }
        let phase = |download: &DataDownload| download.status.as_ref()?.phase;
        let mut waited = seen.wait(&made, self.timeout, phase).await;
        if !waited {
            let cancel = json!({ "spec": { "cancel": true } });
            for name in &made {
                let ended = seen.get(name).as_ref().and_then(phase);
                if !ended.is_some_and(PodVolumePhase::is_final) {
                    let canceled = api
                        .patch(name, &PatchParams::default(), &Patch::Merge(&cancel))
                        .await;
                    if let Err(error) = canceled {
                        tracing::warn!("canceling DataDownload {name}: {error}");
                    }
                }
            }
            waited = seen.wait(&made, CANCEL_GRACE, phase).await;
        }
        let mut downloads = Vec::new();
        for name in &made {
            let Some(download) = seen.get(name) else {
                errors.push((String::new(), format!("DataDownload {name} was never seen")));
                continue;
            };
            if let Some(error) = error_of(&download, self.timeout, waited) {
                errors.push((download.spec.target_volume.namespace.clone(), error));
            }
            downloads.push(download);
        }
        (downloads, errors)
    }
}

/// The error to record of a DataDownload as it ended, if it did not complete.
fn error_of(download: &DataDownload, timeout: Duration, all_ended: bool) -> Option<String> {
    let target = &download.spec.target_volume;
    let status = download.status.clone().unwrap_or_default();
    let what = format!(
        "claim {}/{}: its data was not restored: DataDownload {}",
        target.namespace,
        target.pvc,
        download.name_any()
    );
    let message = status.message.unwrap_or_default();
    match status.phase {
        Some(PodVolumePhase::Completed) => None,
        Some(PodVolumePhase::Failed) => Some(format!("{what} failed: {message}")),
        Some(PodVolumePhase::Canceled) => Some(format!(
            "{what} was canceled (it did not end within {}): {message}",
            ark_api::duration::format(timeout)
        )),
        _ if !all_ended => Some(format!(
            "{what} did not end within {} (is a node agent running?)",
            ark_api::duration::format(timeout)
        )),
        _ => None,
    }
}

/// The DataDownload of a restored claim, in `namespace`, as Velero's PVC restore action makes
/// it: named after the restore, labelled with it and with the item operation it carries out
/// (`dd-<restore uid>.<claim uid>`), owned by it; what to write from the backup's DataUpload.
pub fn data_download(
    restore: &Restore,
    backup: &Backup,
    namespace: &str,
    claim: &MovedClaim,
) -> DataDownload {
    let upload = &claim.upload;
    let status = upload.status.clone().unwrap_or_default();
    let restore_uid = restore.metadata.uid.clone().unwrap_or_default();
    let claim_uid = (upload.labels().get(labels::PVC_UID)).map_or("", String::as_str);
    let operation = labels::valid_label_value(&format!("dd-{restore_uid}.{claim_uid}"));
    let operation_label = (labels::ASYNC_OPERATION_ID.to_string(), operation);
    DataDownload {
        metadata: requests::metadata(restore, namespace, [operation_label]),
        spec: DataDownloadSpec {
            target_volume: TargetVolumeSpec {
                pvc: claim.claim.clone(),
                pv: String::new(),
                namespace: claim.namespace.clone(),
                ..Default::default()
            },
            backup_storage_location: upload.spec.backup_storage_location.clone(),
            datamover: upload.spec.datamover.clone(),
            snapshot_id: status.snapshot_id.unwrap_or_default(),
            source_namespace: upload.spec.source_namespace.clone(),
            data_mover_config: (restore.spec.uploader_config.as_ref()).map(|c| c.settings()),
            cancel: None,
            operation_timeout: (backup.spec.csi_snapshot_timeout.clone())
                .unwrap_or_else(|| OPERATION_TIMEOUT.into()),
            node_os: status.node_os,
            snapshot_size: status.progress.and_then(|p| p.total_bytes),
            ..Default::default()
        },
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_s_data_download_is_velero_s() {
        let restore: Restore = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": { "name": "r1", "namespace": "velero", "uid": "ruid" },
            "spec": { "backupName": "b1", "uploaderConfig": { "writeSparseFiles": true } },
        }))
        .unwrap();
        let backup: Backup = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": { "name": "b1", "namespace": "velero" },
            "spec": { "csiSnapshotTimeout": "5m0s" },
        }))
        .unwrap();
        let upload = serde_json::from_value(json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": { "name": "b1-x", "namespace": "velero", "labels": { "velero.io/pvc-uid": "cuid" } },
            "spec": { "snapshotType": "CSI", "sourcePVC": "data", "sourceNamespace": "shop",
                "backupStorageLocation": "default", "operationTimeout": "10m0s" },
            "status": { "phase": "Completed", "snapshotID": "k1", "nodeOS": "linux",
                "progress": { "totalBytes": 4096, "bytesDone": 4096 } },
        }))
        .unwrap();
        let claim = MovedClaim {
            namespace: "shop-2".into(),
            claim: "data".into(),
            upload,
        };
        let made =
            serde_json::to_value(data_download(&restore, &backup, "velero", &claim)).unwrap();
        assert_eq!(
            made,
            json!({
                "apiVersion": "velero.io/v2alpha1", "kind": "DataDownload",
                "metadata": {
                    "generateName": "r1-", "namespace": "velero",
                    "labels": { "velero.io/restore-name": "r1", "velero.io/restore-uid": "ruid",
                        "velero.io/async-operation-id": "dd-ruid.cuid" },
                    "ownerReferences": [{ "apiVersion": "velero.io/v1", "kind": "Restore",
                        "name": "r1", "uid": "ruid", "controller": true }],
                },
                "spec": {
                    "targetVolume": { "pvc": "data", "pv": "", "namespace": "shop-2" },
                    "backupStorageLocation": "default", "snapshotID": "k1",
                    "sourceNamespace": "shop", "operationTimeout": "5m0s",
                    "dataMoverConfig": { "WriteSparseFiles": "true" },
                    "nodeOS": "linux", "snapshotSize": 4096,
                },
            })
        );
    }

    #[test]
    fn a_data_download_that_did_not_complete_is_an_error_naming_its_claim() {
        let download = |status: serde_json::Value| -> DataDownload {
            serde_json::from_value(json!({
                "apiVersion": "velero.io/v2alpha1", "kind": "DataDownload",
                "metadata": { "name": "r1-abc" },
                "spec": { "targetVolume": { "pvc": "data", "pv": "", "namespace": "shop" },
                    "backupStorageLocation": "default", "snapshotID": "k1",
                    "sourceNamespace": "shop", "operationTimeout": "10m0s" },
                "status": status,
            }))
            .unwrap()
        };
        let hour = Duration::from_secs(3600);
        let completed = download(json!({ "phase": "Completed" }));
        assert_eq!(error_of(&completed, hour, true), None);
        let failed = download(json!({ "phase": "Failed", "message": "claim shop/data is bound" }));
        assert_eq!(
            error_of(&failed, hour, true).unwrap(),
            "claim shop/data: its data was not restored: DataDownload r1-abc failed: claim \
             shop/data is bound"
        );
        let running = download(json!({ "phase": "InProgress" }));
        assert_eq!(
            error_of(&running, hour, false).unwrap(),
            "claim shop/data: its data was not restored: DataDownload r1-abc did not end within \
             1h0m0s (is a node agent running?)"
        );
    }
}
