//! A node agent's DataUploads: a CSI snapshot's data moved into the location's kopia repository,
//! as Velero's data upload controller and CSI snapshot exposer move it (`pkg/controller/
//! data_upload_controller.go`, `pkg/exposer/csi_snapshot.go`), through the phases of
//! [`super::data_movement`]:
//!
//! - exposed: the VolumeSnapshot and its content are taken over into ark's namespace under the
//!   DataUpload's name (the storage snapshot kept), a claim is made from it there, and a pod
//!   mounts that claim on a node the node agent runs on (the DaemonSet's node selection and
//!   tolerations);
//! - moved: that node's agent snapshots the volume under Velero's source
//!   (`snapshot-data-upload-download/kopia/<ns>/<claim>`), incrementally against the claim's last
//!   upload, and the upload ends Completed with the kopia snapshot's ID;
//! - cleaned up: everything the exposure made is removed (the storage snapshot goes with it).

use std::time::Duration;

use ark_api::{DataUpload, labels, uploader};
use ark_kopia::velero::{self, Requester};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::{Map, Value, json};

use super::data_movement::{
    self, Access, Movable, Mover, Placement, delete_and_wait, exposing_pod, failed, owned_by,
    remove_pod_and_claim, warn_unless_gone,
};
use super::upload::{Upload, Uploaded, Volume, is_empty};
use super::{Ctx, progress};
use crate::domain::csi::{self, ContentStatus, SnapshotStatus, text};
use crate::runtime::objects;

/// How long the exposure waits for the snapshot when the DataUpload sets no `operationTimeout`.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Velero's message for an upload of an empty volume.
const EMPTY_VOLUME: &str = "volume was empty so no data was upload";

impl Movable for DataUpload {
    const WHAT: &'static str = "data upload";
    const METRIC: &'static str = "data_upload";
    const POD_LABEL: &'static str = labels::DATA_UPLOAD;
    const EXPOSER_GROUP: &'static str = "snapshot-exposer";
    type Mover<'a> = Uploading<'a>;

    fn mover<'a>(upload: &'a Self, ctx: &'a Ctx, name: &'a str) -> Uploading<'a> {
        Uploading { name, upload, ctx }
    }
}

/// One DataUpload, as this agent moves it.
pub struct Uploading<'a> {
    name: &'a str,
    upload: &'a DataUpload,
    ctx: &'a Ctx,
}

impl Mover for Uploading<'_> {
    async fn expose(&self) -> Result<(), String> {
        let found = self.ready_snapshot().await?;
        self.take_over(&found).await?;
        let kube = &self.ctx.kube;
        let class = self.source_class();
        let settings = self.ctx.configs.backup_pvc.get(class);
        let claim = backup_claim(self.upload, &kube.namespace, &found, settings)?;
        Api::<PersistentVolumeClaim>::namespaced(kube.client.clone(), &kube.namespace)
            .create(&PostParams::default(), &claim)
            .await
            .map_err(failed(format!(
                "creating claim {}/{}",
                kube.namespace, self.name
            )))?;
        let agents = data_movement::agents(kube).await?;
        let placement = Placement {
            agents: &agents,
            node: None,
            affinity: self.ctx.configs.affinity_for(class),
        };
        let read_only = settings.is_some_and(|s| s.read_only);
        let access = Access::of(found.volume_mode.as_deref(), false, read_only);
        let pod = exposing_pod(
            self.upload,
            &kube.namespace,
            &placement,
            &self.ctx.exposing_pods,
            access,
        )?;
        Api::<Pod>::namespaced(kube.client.clone(), &kube.namespace)
            .create(&PostParams::default(), &pod)
            .await
            .map_err(failed(format!(
                "creating pod {}/{}",
                kube.namespace, self.name
            )))?;
        Ok(())
    }

    /// Snapshots the exposed volume into the repository of the claim's namespace.
    async fn move_data(
        &self,
        volume: Volume,
        canceled: impl Future<Output = ()> + Send,
    ) -> Result<Option<Map<String, Value>>, String> {
        let ctx = self.ctx;
        let spec = &self.upload.spec;
        // Velero's: where the data mover reads it (a device's path in its pod).
        let shown_path = match &volume {
            Volume::Mounted(path) => path.display().to_string(),
            Volume::Device { name, .. } => name.clone(),
        };
        if let Volume::Mounted(path) = &volume
            && is_empty(path)?
        {
            return Ok(Some(fields(
                json!({ "path": shown_path, "message": EMPTY_VOLUME }),
            )));
        }
        let files_at_once = uploader::files_at_once(
            spec.data_mover_config
                .as_ref()
                .unwrap_or(&Default::default()),
            uploader::PARALLEL_FILES_UPLOAD,
        )?;
        let operation_id =
            (self.upload.labels().get(labels::ASYNC_OPERATION_ID)).map_or("", String::as_str);
        let upload = Upload {
            location: &spec.backup_storage_location,
            namespace: &spec.source_namespace,
            volume,
            source: velero::data_mover_source(&spec.source_namespace, &spec.source_pvc),
            requester: Requester::DataMover { operation_id },
            files_at_once,
        };
        let api = objects::api::<DataUpload>(&ctx.kube.client, &ctx.kube.namespace);
        let started = std::time::Instant::now();
        let Some(uploaded) = upload.run(ctx, &api, self.name, canceled).await? else {
            return Ok(None);
        };
        let Uploaded {
            snapshot_id,
            total,
            done,
            added,
        } = uploaded;
        tracing::info!(
            "data upload {}: claim {}/{} is snapshot {snapshot_id} ({done} bytes, {added} added, \
             in {:.1} s)",
            self.name,
            spec.source_namespace,
            spec.source_pvc,
            started.elapsed().as_secs_f64(),
        );
        Ok(Some(fields(json!({
            "path": shown_path,
            "snapshotID": snapshot_id,
            "progress": progress(total, done),
            "incrementalBytes": added,
            "node": ctx.node,
        }))))
    }

    /// The pod, the claim and its volume, ark's snapshot (its content and the storage snapshot
    /// go with it) and the original snapshot if it is still there.
    async fn clean_up(&self) {
        let client = &self.ctx.kube.client;
        let namespace = &self.ctx.kube.namespace;
        let warn =
            |removing: &str, result| warn_unless_gone("data upload", self.name, removing, result);
        remove_pod_and_claim(client, namespace, self.name, "data upload").await;
        let deleted = (csi::volume_snapshots(client, namespace))
            .delete(self.name, &DeleteParams::default())
            .await;
        // Gone at once (no finalizer: the snapshot controller had not bound it yet) or gone
        // already: nothing else deletes the content made for it, nor the storage snapshot.
        let unbound = match &deleted {
            Ok(deleting) => deleting.is_right(),
            Err(kube::Error::Api(status)) => status.code == 404,
            Err(_) => false,
        };
        warn("its VolumeSnapshot", deleted);
        if unbound {
            self.remove_own_content().await;
        }
        if let Some(source) = &self.upload.spec.csi_snapshot {
            let snapshots = csi::volume_snapshots(client, &self.upload.spec.source_namespace);
            // Only the snapshot this upload's backup cut, as it was read: never one that
            // merely has the name the upload gives.
            match snapshots.get_opt(&source.volume_snapshot).await {
                Ok(Some(snapshot)) if self.cut_for_this_upload(&snapshot).is_ok() => {
                    let deleted = snapshots
                        .delete(
                            &source.volume_snapshot,
                            &DeleteParams::default().preconditions(kube::api::Preconditions {
                                uid: snapshot.metadata.uid.clone(),
                                resource_version: None,
                            }),
                        )
                        .await;
                    warn("the claim's VolumeSnapshot", deleted);
                }
                Ok(_) => {}
                Err(error) => warn("the claim's VolumeSnapshot", Err(error)),
            }
        }
    }
}

/// A status's fields, as a map.
fn fields(status: Value) -> Map<String, Value> {
    match status {
        Value::Object(fields) => fields,
        _ => Map::new(),
    }
}

impl Uploading<'_> {
    /// The claim's snapshot, once ready to use, and its content.
    async fn ready_snapshot(&self) -> Result<Found, String> {
        let client = &self.ctx.kube.client;
        let spec = &self.upload.spec;
        if spec.snapshot_type != "CSI" {
            return Err(format!("snapshot type {:?} is not CSI", spec.snapshot_type));
        }
        let source = (spec.csi_snapshot.as_ref()).ok_or("it names no CSI snapshot")?;
        let shown_claim = format!("claim {}/{}", spec.source_namespace, spec.source_pvc);
        let claim =
            Api::<PersistentVolumeClaim>::namespaced(client.clone(), &spec.source_namespace)
                .get(&spec.source_pvc)
                .await
                .map_err(failed(format!("reading {shown_claim}")))?;
        let claim_spec = claim.spec.unwrap_or_default();
        let timeout = ark_api::duration::parse_or_default(
            Some(spec.operation_timeout.as_str()),
            OPERATION_TIMEOUT,
        )
        .unwrap_or(OPERATION_TIMEOUT);
        let snapshots = csi::volume_snapshots(client, &spec.source_namespace);
        let shown_snapshot = format!(
            "VolumeSnapshot {}/{}",
            spec.source_namespace, source.volume_snapshot
        );
        let snapshot = ready(&snapshots, &source.volume_snapshot, timeout)
            .await
            .map_err(|e| format!("{shown_snapshot}: {e}"))?;
        self.cut_for_this_upload(&snapshot)
            .map_err(|e| format!("{shown_snapshot} {e}"))?;
        let content_name = (SnapshotStatus::of(&snapshot.data).bound_content)
            .ok_or_else(|| format!("{shown_snapshot} has no content"))?
            .to_string();
        let content = csi::volume_snapshot_contents(client)
            .get(&content_name)
            .await
            .map_err(failed(format!(
                "reading VolumeSnapshotContent {content_name}"
            )))?;
        // As large as the snapshot, or as the claim asks when the snapshot does not say.
        let size = (ContentStatus::of(&content.data).restore_size)
            .filter(|s| *s > 0)
            .map(|s| s.to_string())
            .or_else(|| {
                let claim_spec = serde_json::to_value(&claim_spec).unwrap_or_default();
                text(&claim_spec, "/resources/requests/storage").map(str::to_string)
            })
            .ok_or_else(|| {
                format!("{shown_claim} asks for no storage and the snapshot has no size")
            })?;
        Ok(Found {
            shown_snapshot,
            snapshot,
            content,
            size,
            volume_mode: claim_spec.volume_mode,
            timeout,
        })
    }

    /// A snapshot and content of ark's own, in its namespace, bound to the same storage snapshot
    /// (deleted with it once the data is moved); the original content retained while the original
    /// snapshot and content are removed from the claim's namespace.
    async fn take_over(&self, found: &Found) -> Result<(), String> {
        let client = &self.ctx.kube.client;
        let namespace = &self.ctx.kube.namespace;
        let (snapshot, content) = (&found.snapshot, &found.content);
        let own_snapshot: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
            // Owned by the upload: removed with it, were it deleted with no agent to clean up.
            "metadata": { "name": self.name, "namespace": namespace,
                "annotations": snapshot.metadata.annotations,
                "ownerReferences": owned_by(self.upload) },
            "spec": {
                "source": { "volumeSnapshotContentName": self.name },
                "volumeSnapshotClassName": snapshot.data.pointer("/spec/volumeSnapshotClassName"),
            },
        }))
        .map_err(|e| e.to_string())?;
        let made = csi::volume_snapshots(client, namespace)
            .create(&PostParams::default(), &own_snapshot)
            .await
            .map_err(failed(format!(
                "creating VolumeSnapshot {namespace}/{}",
                self.name
            )))?;
        let content_status = ContentStatus::of(&content.data);
        let handle = (content_status.snapshot_handle).ok_or_else(|| {
            format!(
                "VolumeSnapshotContent {} has no snapshot handle",
                content.name_any()
            )
        })?;
        // The snapshotter of a distributed driver manages only the contents of its node.
        let managed_by = "snapshot.storage.kubernetes.io/managed-by";
        let own_labels: std::collections::BTreeMap<&str, &String> =
            (content.labels().get(managed_by).map(|m| (managed_by, m)))
                .into_iter()
                .collect();
        let own_content: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
            "metadata": { "name": self.name, "annotations": content.metadata.annotations,
                "labels": own_labels },
            "spec": {
                "volumeSnapshotRef": { "name": self.name, "namespace": namespace,
                    "uid": made.metadata.uid, "resourceVersion": made.metadata.resource_version },
                "source": { "snapshotHandle": handle },
                "deletionPolicy": "Delete",
                "driver": content_status.driver,
                "volumeSnapshotClassName": content.data.pointer("/spec/volumeSnapshotClassName"),
            },
        }))
        .map_err(|e| e.to_string())?;
        let contents = csi::volume_snapshot_contents(client);
        contents
            .create(&PostParams::default(), &own_content)
            .await
            .map_err(failed(format!(
                "creating VolumeSnapshotContent {}",
                self.name
            )))?;
        let content_name = content.name_any();
        let retain = json!({ "spec": { "deletionPolicy": "Retain" } });
        contents
            .patch(
                &content_name,
                &PatchParams::default(),
                &Patch::Merge(&retain),
            )
            .await
            .map_err(failed(format!(
                "retaining VolumeSnapshotContent {content_name}"
            )))?;
        let source_namespace = &self.upload.spec.source_namespace;
        delete_and_wait(
            &csi::volume_snapshots(client, source_namespace),
            &snapshot.name_any(),
            found.timeout,
        )
        .await
        .map_err(|e| format!("removing {}: {e}", found.shown_snapshot))?;
        delete_and_wait(&contents, &content_name, found.timeout)
            .await
            .map_err(|e| format!("removing VolumeSnapshotContent {content_name}: {e}"))
    }

    /// The content this upload made for ark's snapshot, once that snapshot went unbound: marked
    /// as the snapshot controller marks the content of a snapshot being deleted, so that the
    /// driver's snapshotter deletes the storage snapshot before it lets the content go. Only a
    /// content that names ark's snapshot of this upload as its own.
    async fn remove_own_content(&self) {
        let client = &self.ctx.kube.client;
        let contents = csi::volume_snapshot_contents(client);
        let content = match contents.get_opt(self.name).await {
            Ok(Some(content)) => content,
            Ok(None) => return,
            Err(error) => {
                return warn_unless_gone(
                    "data upload",
                    self.name,
                    "its content",
                    Err::<(), _>(error),
                );
            }
        };
        let reference =
            |field: &str| text(&content.data, &format!("/spec/volumeSnapshotRef/{field}"));
        if reference("namespace") != Some(&self.ctx.kube.namespace)
            || reference("name") != Some(self.name)
        {
            return;
        }
        let being_deleted = json!({ "metadata": { "annotations": { csi::BEING_DELETED: "yes" } } });
        let marked = contents
            .patch(
                self.name,
                &PatchParams::default(),
                &Patch::Merge(&being_deleted),
            )
            .await;
        warn_unless_gone("data upload", self.name, "marking its content", marked);
        let deleted = contents.delete(self.name, &DeleteParams::default()).await;
        warn_unless_gone("data upload", self.name, "its content", deleted);
    }

    /// Whether `snapshot` is the one this upload's backup cut of its claim: labelled with the
    /// upload's backup, as Velero's PVC action labels it, and of the upload's claim. An upload
    /// made by hand could otherwise take any snapshot of any namespace over, and delete it.
    fn cut_for_this_upload(&self, snapshot: &DynamicObject) -> Result<(), String> {
        let backup = self.upload.labels().get(labels::BACKUP_NAME);
        let Some(backup) = backup.filter(|b| !b.is_empty()) else {
            return Err(format!(
                "is not moved: the upload has no {} label",
                labels::BACKUP_NAME
            ));
        };
        if snapshot.labels().get(labels::BACKUP_NAME) != Some(backup) {
            return Err(format!("was not cut by backup {backup}"));
        }
        let claim = text(&snapshot.data, "/spec/source/persistentVolumeClaimName");
        if claim != Some(self.upload.spec.source_pvc.as_str()) {
            return Err(format!(
                "is not a snapshot of claim {}",
                self.upload.spec.source_pvc
            ));
        }
        Ok(())
    }

    /// The class of the claim the snapshot was cut from.
    fn source_class(&self) -> &str {
        let snapshot = self.upload.spec.csi_snapshot.as_ref();
        snapshot.map_or("", |s| s.storage_class.as_str())
    }
}

/// The claim made from ark's snapshot of `upload`, in ark's namespace `namespace`, owned by the
/// upload, as large as the snapshot and of the source claim's volume mode: of the source claim's
/// class, unless the agents' settings for that class (Velero's `backupPVC`) name another;
/// `ReadOnlyMany` when they say `readOnly`.
fn backup_claim(
    upload: &DataUpload,
    namespace: &str,
    found: &Found,
    settings: Option<&ark_api::BackupPvc>,
) -> Result<PersistentVolumeClaim, String> {
    let name = upload.name_any();
    let source_class = (upload.spec.csi_snapshot.as_ref()).map_or("", |s| s.storage_class.as_str());
    let class = (settings.map(|s| s.storage_class.as_str()))
        .filter(|class| !class.is_empty())
        .unwrap_or(source_class);
    let read_only = settings.is_some_and(|s| s.read_only);
    let access = if read_only {
        "ReadOnlyMany"
    } else {
        "ReadWriteOnce"
    };
    let annotations = settings.map(|s| s.annotations.clone()).unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": namespace, "ownerReferences": owned_by(upload),
            "annotations": annotations },
        "spec": {
            "accessModes": [access],
            "storageClassName": class,
            "volumeMode": found.volume_mode.as_deref().unwrap_or("Filesystem"),
            "dataSource": { "apiGroup": csi::GROUP, "kind": "VolumeSnapshot", "name": name },
            "resources": { "requests": { "storage": found.size } },
        },
    }))
    .map_err(|e| e.to_string())
}

/// The claim's snapshot, ready to use, and what exposing it needs.
struct Found {
    shown_snapshot: String,
    snapshot: DynamicObject,
    content: DynamicObject,
    /// The size of the claim made from it.
    size: String,
    /// The source claim's volume mode: the claim made from it has it too.
    volume_mode: Option<String>,
    /// How long each step of the exposure may wait.
    timeout: Duration,
}

/// The VolumeSnapshot once ready to use, within `timeout`.
async fn ready(
    snapshots: &Api<DynamicObject>,
    name: &str,
    timeout: Duration,
) -> Result<DynamicObject, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::from("not ready to use");
    let mut polls = data_movement::polls();
    loop {
        match snapshots.get_opt(name).await {
            Ok(None) => return Err("it is gone".into()),
            Ok(Some(snapshot)) => {
                let status = SnapshotStatus::of(&snapshot.data);
                if status.ready_to_use {
                    return Ok(snapshot);
                }
                if let Some(error) = status.error {
                    last = format!("the snapshot controller said: {error}");
                }
            }
            Err(error) => last = format!("reading it: {}", objects::reason(&error)),
        }
        if tokio::time::Instant::now() + polls.pause() > deadline {
            return Err(format!(
                "not ready to use within {}: {last}",
                ark_api::duration::format(timeout)
            ));
        }
        polls.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_made_from_a_snapshot_follows_the_agents_backup_pvc_settings() {
        let upload: DataUpload = serde_json::from_value(json!({
            "apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
            "metadata": { "name": "b-1", "namespace": "ark", "uid": "u1" },
            "spec": { "snapshotType": "CSI", "sourcePVC": "data", "sourceNamespace": "shop",
                "csiSnapshot": { "volumeSnapshot": "s", "storageClass": "ssd" },
                "backupStorageLocation": "default", "operationTimeout": "10m0s" },
        }))
        .unwrap();
        let found = |volume_mode: Option<&str>| Found {
            shown_snapshot: String::new(),
            snapshot: serde_json::from_value(json!({ "metadata": {} })).unwrap(),
            content: serde_json::from_value(json!({ "metadata": {} })).unwrap(),
            size: "1Gi".into(),
            volume_mode: volume_mode.map(str::to_string),
            timeout: Duration::from_secs(1),
        };
        let claim = |settings: Option<&ark_api::BackupPvc>| {
            let claim = backup_claim(&upload, "ark", &found(None), settings).unwrap();
            serde_json::to_value(claim).unwrap()
        };
        let plain = claim(None);
        assert_eq!(plain["spec"]["storageClassName"], "ssd");
        assert_eq!(plain["spec"]["volumeMode"], "Filesystem");
        assert_eq!(plain["spec"]["resources"]["requests"]["storage"], "1Gi");
        let block = backup_claim(&upload, "ark", &found(Some("Block")), None).unwrap();
        assert_eq!(block.spec.unwrap().volume_mode.as_deref(), Some("Block"));
        assert_eq!(plain["spec"]["accessModes"], json!(["ReadWriteOnce"]));
        assert_eq!(plain["spec"]["dataSource"]["name"], "b-1");
        let settings = ark_api::BackupPvc {
            storage_class: "ssd-from-snapshot".into(),
            read_only: true,
            annotations: [("a".to_string(), "b".to_string())].into(),
            ..Default::default()
        };
        let set = claim(Some(&settings));
        assert_eq!(set["spec"]["storageClassName"], "ssd-from-snapshot");
        assert_eq!(set["spec"]["accessModes"], json!(["ReadOnlyMany"]));
        assert_eq!(set["metadata"]["annotations"], json!({ "a": "b" }));
    }
}
