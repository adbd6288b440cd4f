//! A backup that moves its CSI snapshots' data (`snapshotMoveData`): for each snapshot cut, a
//! DataUpload as Velero's CSI PVC action makes it (`pkg/backup/actions/csi/pvc_action.go`), which a
//! node agent carries out. The backup waits for it as an item operation, and the DataUpload, as
//! it ended, goes into the tarball: the restore reads the moved data's place from it.

use ark_api::{Backup, CsiSnapshotSpec, DataUpload, DataUploadSpec, labels, uploader};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt as _};

use crate::runtime::objects;

/// The item action Velero records a data upload's operation under.
pub const PVC_ACTION: &str = "velero.io/csi-pvc-backupper";

/// Velero's operation id for a claim's data upload: `du-<backup uid>.<claim uid>`, made a valid
/// label value (the DataUpload is found again by it).
pub fn operation_id(backup: &Backup, claim: &PersistentVolumeClaim) -> String {
    labels::valid_label_value(&format!(
        "du-{}.{}",
        backup.uid().unwrap_or_default(),
        claim.uid().unwrap_or_default()
    ))
}

/// What the DataUpload names of the snapshot it moves.
pub struct Source<'a> {
    pub volume_snapshot: &'a str,
    pub snapshot_class: &'a str,
    pub driver: &'a str,
}

/// The DataUpload of `claim`'s snapshot, in the backup's namespace, owned by the backup.
pub fn data_upload(
    backup: &Backup,
    claim: &PersistentVolumeClaim,
    source: &Source,
    operation_id: &str,
) -> DataUpload {
    let spec = &backup.spec;
    let claim_spec = claim.spec.clone().unwrap_or_default();
    let parallel = (spec.uploader_config.as_ref())
        .and_then(|c| c.parallel_files_upload)
        .filter(|n| *n > 0);
    let mut metadata_labels =
        labels::for_backup(&backup.name_any(), &backup.uid().unwrap_or_default());
    metadata_labels.insert(labels::PVC_UID.into(), claim.uid().unwrap_or_default());
    metadata_labels.insert(labels::ASYNC_OPERATION_ID.into(), operation_id.into());
    DataUpload {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", backup.name_any())),
            namespace: backup.namespace(),
            owner_references: Some(vec![OwnerReference {
                api_version: "velero.io/v1".into(),
                kind: "Backup".into(),
                name: backup.name_any(),
                uid: backup.uid().unwrap_or_default(),
                controller: Some(true),
                ..Default::default()
            }]),
            labels: Some(metadata_labels),
            ..Default::default()
        },
        spec: DataUploadSpec {
            snapshot_type: "CSI".into(),
            csi_snapshot: Some(CsiSnapshotSpec {
                volume_snapshot: source.volume_snapshot.into(),
                storage_class: claim_spec.storage_class_name.unwrap_or_default(),
                snapshot_class: Some(source.snapshot_class.into()),
                driver: Some(source.driver.into()),
                ..Default::default()
            }),
            source_pvc: claim.name_any(),
            source_namespace: claim.namespace().unwrap_or_default(),
            datamover: spec.datamover.clone().filter(|d| !d.is_empty()),
            backup_storage_location: spec.storage_location.clone().unwrap_or_default(),
            data_mover_config: parallel
                .map(|n| [(uploader::PARALLEL_FILES_UPLOAD.to_string(), n.to_string())].into()),
            operation_timeout: spec.csi_snapshot_timeout.clone().unwrap_or_default(),
            ..Default::default()
        },
        status: None,
    }
}

/// Creates the DataUpload: its name.
pub async fn submit(client: &Client, data_upload: &DataUpload) -> Result<String, String> {
    let namespace = data_upload.namespace().unwrap_or_default();
    Api::<DataUpload>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), data_upload)
        .await
        .map(|made| made.name_any())
        .map_err(|e| format!("creating its DataUpload: {}", objects::reason(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claim_s_data_upload_is_velero_s() {
        let backup: Backup = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": { "name": "nightly", "namespace": "velero",
                "uid": "0b5c6f1e-8f0e-4d8a-9a44-7f0d2c3b9e11" },
            "spec": { "storageLocation": "default", "csiSnapshotTimeout": "10m0s",
                "snapshotMoveData": true, "uploaderConfig": { "parallelFilesUpload": 4 } },
        }))
        .unwrap();
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": { "name": "data", "namespace": "shop",
                "uid": "5d0e0a8c-1c1b-4a57-8c2f-2f6b3d1e0a99" },
            "spec": { "storageClassName": "fast" },
        }))
        .unwrap();
        let id = operation_id(&backup, &claim);
        // 76 characters made 63 as Velero's GetValidName makes them.
        assert_eq!(id.len(), 63);
        assert!(id.starts_with("du-0b5c6f1e-8f0e-4d8a-9a44-7f0d2c3b9e11.5d0e0a8c-1c1b-4a5"));
        let source = Source {
            volume_snapshot: "velero-data-x7k2p",
            snapshot_class: "csi-class",
            driver: "disk.csi",
        };
        let made = serde_json::to_value(data_upload(&backup, &claim, &source, &id)).unwrap();
        assert_eq!(
            made,
            json!({
                "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
                "metadata": {
                    "generateName": "nightly-", "namespace": "velero",
                    "labels": {
                        "velero.io/backup-name": "nightly",
                        "velero.io/backup-uid": "0b5c6f1e-8f0e-4d8a-9a44-7f0d2c3b9e11",
                        "velero.io/pvc-uid": "5d0e0a8c-1c1b-4a57-8c2f-2f6b3d1e0a99",
                        "velero.io/async-operation-id": id,
                    },
                    "ownerReferences": [{ "apiVersion": "velero.io/v1", "kind": "Backup",
                        "name": "nightly", "uid": "0b5c6f1e-8f0e-4d8a-9a44-7f0d2c3b9e11",
                        "controller": true }],
                },
                "spec": {
                    "snapshotType": "CSI",
                    "csiSnapshot": { "volumeSnapshot": "velero-data-x7k2p", "storageClass": "fast",
                        "snapshotClass": "csi-class", "driver": "disk.csi" },
                    "sourcePVC": "data", "sourceNamespace": "shop",
                    "backupStorageLocation": "default",
                    "dataMoverConfig": { "ParallelFilesUpload": "4" },
                    "operationTimeout": "10m0s",
                },
            })
        );
    }
}
