//! A node agent's DataDownloads: a restored claim's data, moved into the repository at backup,
//! written into a new volume that is then handed to the claim, as Velero's data download
//! controller and generic restore exposer do it (`pkg/controller/data_download_controller.go`,
//! `pkg/exposer/generic_restore.go`), through the phases of [`super::data_movement`]:
//!
//! - exposed: once the restored claim is consumed (a pod using it was scheduled, when its class
//!   binds on first use), a claim like it is made in ark's namespace under the DataDownload's
//!   name, on the node the scheduler selected, and a pod mounts it there;
//! - moved: that node's agent writes the kopia snapshot into the volume, then hands the volume
//!   over (Velero's `RebindVolume`): the volume is retained, the pod and the claim in ark's
//!   namespace removed, the volume's claim reference names the restored claim and its labels
//!   match the claim's selector, then the restored claim names the volume; once they are bound,
//!   the volume gets its reclaim policy back;
//! - cleaned up: the pod and the claim, with its volume if the hand-over did not happen.
//!
//! The restored claim waits all along: its selector (`velero.io/dynamic-pv-restore`) matches no
//! volume, so none is provisioned for it, and its pods start once it is bound, data in.

use std::time::Duration;

use ark_api::{DataDownload, labels};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::{Map, Value, json};

use super::data_movement::{
    self, Access, Movable, Mover, Placement, delete_and_wait, exposing_pod, failed, owned_by,
    remove_pod_and_claim,
};
use super::restore::{Stored, restore_settings};
use super::upload::Volume;
use super::{Ctx, progress};
use crate::runtime::objects;

/// How long each step of the hand-over may wait when the DataDownload sets no `operationTimeout`.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The annotation the scheduler writes on a claim bound on first use: the node it chose.
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

impl Movable for DataDownload {
    const WHAT: &'static str = "data download";
    const METRIC: &'static str = "data_download";
    const POD_LABEL: &'static str = labels::DATA_DOWNLOAD;
    const EXPOSER_GROUP: &'static str = "generic-restore-exposer";
    type Mover<'a> = Downloading<'a>;

    fn mover<'a>(download: &'a Self, ctx: &'a Ctx, name: &'a str) -> Downloading<'a> {
        Downloading {
            name,
            download,
            ctx,
        }
    }
}

/// One DataDownload, as this agent moves it.
pub struct Downloading<'a> {
    name: &'a str,
    download: &'a DataDownload,
    ctx: &'a Ctx,
}

impl Mover for Downloading<'_> {
    async fn expose(&self) -> Result<(), String> {
        let (target, node) = self.consumed_target().await?;
        let kube = &self.ctx.kube;
        let claim = claim_like(self.download, &kube.namespace, &target, node.as_deref())?;
        Api::<PersistentVolumeClaim>::namespaced(kube.client.clone(), &kube.namespace)
            .create(&PostParams::default(), &claim)
            .await
            .map_err(failed(format!(
                "creating claim {}/{}",
                kube.namespace, self.name
            )))?;
        let agents = data_movement::agents(kube).await?;
        let class = (target.spec.as_ref()).and_then(|s| s.storage_class_name.as_deref());
        let placement = Placement {
            agents: &agents,
            node: node.as_deref(),
            affinity: self.ctx.configs.affinity_for(class.unwrap_or_default()),
        };
        let volume_mode = (target.spec.as_ref()).and_then(|s| s.volume_mode.as_deref());
        let access = Access::of(volume_mode, true, false);
        let pod = exposing_pod(
            self.download,
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

    /// Writes the snapshot into the exposed volume, then hands the volume to the restored claim.
    async fn move_data(
        &self,
        volume: Volume,
        canceled: impl Future<Output = ()> + Send,
    ) -> Result<Option<Map<String, Value>>, String> {
        let ctx = self.ctx;
        let spec = &self.download.spec;
        let settings = restore_settings(
            spec.data_mover_config
                .as_ref()
                .unwrap_or(&Default::default()),
        )?;
        let stored = Stored {
            location: &spec.backup_storage_location,
            namespace: &spec.source_namespace,
            snapshot_id: &spec.snapshot_id,
        };
        let api = objects::api::<DataDownload>(&ctx.kube.client, &ctx.kube.namespace);
        let started = std::time::Instant::now();
        let (total, done) = tokio::select! {
            written = stored.write(ctx, &api, self.name, &volume, settings) => written?,
            () = canceled => return Ok(None),
        };
        let written = started.elapsed();
        // A device is closed, its data flushed, before the volume goes to the restored claim.
        drop(volume);
        self.hand_over().await?;
        let target = &spec.target_volume;
        tracing::info!(
            "data download {}: snapshot {} is in claim {}/{} ({done} bytes written in {:.1} s, \
             the volume handed over in {:.1} s)",
            self.name,
            spec.snapshot_id,
            target.namespace,
            target.pvc,
            written.as_secs_f64(),
            (started.elapsed() - written).as_secs_f64(),
        );
        let status = json!({ "progress": progress(total, done), "node": ctx.node });
        Ok(status.as_object().cloned())
    }

    /// The pod, and the claim in ark's namespace with its volume unless it was handed over; a
    /// hand-over this download's agent was stopped in the middle of is settled.
    async fn clean_up(&self) {
        let kube = &self.ctx.kube;
        remove_pod_and_claim(&kube.client, &kube.namespace, self.name, Self::WHAT).await;
        self.settle_interrupted_hand_over().await;
    }
}

impl Downloading<'_> {
    const WHAT: &'static str = DataDownload::WHAT;

    fn timeout(&self) -> Duration {
        let timeout = Some(self.download.spec.operation_timeout.as_str());
        ark_api::duration::parse_or_default(timeout, OPERATION_TIMEOUT).unwrap_or(OPERATION_TIMEOUT)
    }

    fn target_claims(&self) -> Api<PersistentVolumeClaim> {
        let namespace = &self.download.spec.target_volume.namespace;
        Api::namespaced(self.ctx.kube.client.clone(), namespace)
    }

    fn shown_target(&self) -> String {
        let target = &self.download.spec.target_volume;
        format!("claim {}/{}", target.namespace, target.pvc)
    }

    /// The restored claim once it may get its volume (Velero's `WaitPVCConsumed`): at once,
    /// unless its class binds on first use, then once the scheduler selected a node for it
    /// (that node is returned), within the prepare timeout; at once whatever its class when the
    /// agents' settings say `restorePVC.ignoreDelayBinding`. A claim already bound is refused: the
    /// data would go nowhere, or over a volume that holds other data.
    async fn consumed_target(&self) -> Result<(PersistentVolumeClaim, Option<String>), String> {
        let shown = self.shown_target();
        let claims = self.target_claims();
        let classes = Api::<StorageClass>::all(self.ctx.kube.client.clone());
        let prepare_timeout = self.ctx.prepare_timeout;
        let deadline = tokio::time::Instant::now() + prepare_timeout;
        let ignore_delay_binding =
            (self.ctx.configs.restore_pvc.as_ref()).is_some_and(|r| r.ignore_delay_binding);
        let mut on_first_use = ignore_delay_binding.then_some(false);
        let mut polls = data_movement::polls();
        loop {
            let claim = claims
                .get(&self.download.spec.target_volume.pvc)
                .await
                .map_err(failed(format!("reading {shown}")))?;
            let spec = claim.spec.clone().unwrap_or_default();
            if let Some(volume) = spec.volume_name.as_deref().filter(|v| !v.is_empty()) {
                return Err(format!("{shown} is bound to volume {volume} already"));
            }
            if on_first_use.is_none() {
                on_first_use = Some(match spec.storage_class_name.as_deref() {
                    Some(class) if !class.is_empty() => classes
                        .get(class)
                        .await
                        .map_err(failed(format!("reading StorageClass {class}")))?
                        .volume_binding_mode
                        .is_some_and(|mode| mode == "WaitForFirstConsumer"),
                    _ => false,
                });
            }
            let node = claim.annotations().get(SELECTED_NODE).cloned();
            if on_first_use == Some(false) || node.is_some() {
                return Ok((claim, node));
            }
            if tokio::time::Instant::now() + polls.pause() > deadline {
                return Err(format!(
                    "{shown} binds on first use and no pod using it was scheduled within {}",
                    ark_api::duration::format(prepare_timeout)
                ));
            }
            polls.wait().await;
        }
    }

    /// Gives the volume written to the restored claim (Velero's `RebindVolume`). The volume is
    /// retained until it is bound to the restored claim; if the hand-over fails, it is deleted.
    async fn hand_over(&self) -> Result<(), String> {
        let client = &self.ctx.kube.client;
        let namespace = &self.ctx.kube.namespace;
        let timeout = self.timeout();
        let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
        let volumes = Api::<PersistentVolume>::all(client.clone());
        let claim = claims
            .get(self.name)
            .await
            .map_err(failed(format!("reading claim {namespace}/{}", self.name)))?;
        let volume_name = (claim.spec.and_then(|s| s.volume_name))
            .ok_or_else(|| format!("claim {namespace}/{} is bound to no volume", self.name))?;
        let volume = volumes
            .get(&volume_name)
            .await
            .map_err(failed(format!("reading PersistentVolume {volume_name}")))?;
        let policy = (volume.spec.as_ref())
            .and_then(|s| s.persistent_volume_reclaim_policy.clone())
            .unwrap_or_else(|| "Delete".into());
        // Recorded first on both sides: an agent stopped from here on settles it when it starts.
        let record = json!({ "metadata": { "annotations": {
            labels::HANDING_OVER_VOLUME: volume_name } } });
        objects::api::<DataDownload>(client, namespace)
            .patch(self.name, &PatchParams::default(), &Patch::Merge(&record))
            .await
            .map_err(failed(format!("recording the hand-over of {volume_name}")))?;
        let retain = json!({
            "metadata": { "annotations": {
                labels::HANDED_OVER_BY: format!("{namespace}/{}", self.name),
                labels::RECLAIM_POLICY: policy,
            } },
            "spec": { "persistentVolumeReclaimPolicy": "Retain" },
        });
        volumes
            .patch(
                &volume_name,
                &PatchParams::default(),
                &Patch::Merge(&retain),
            )
            .await
            .map_err(failed(format!("retaining PersistentVolume {volume_name}")))?;
        if let Err(reason) = self.rebind(&volume_name, timeout).await {
            self.delete_retained(&volumes, &volume_name).await;
            return Err(reason);
        }
        self.give_back(&volumes, &volume_name, &policy).await;
        Ok(())
    }

    /// The volume of a hand-over that failed: nobody else would ever bind it (Velero deletes it
    /// too).
    async fn delete_retained(&self, volumes: &Api<PersistentVolume>, volume_name: &str) {
        let delete = json!({ "spec": { "persistentVolumeReclaimPolicy": "Delete" } });
        let _ = volumes
            .patch(volume_name, &PatchParams::default(), &Patch::Merge(&delete))
            .await;
        let deleted = volumes.delete(volume_name, &DeleteParams::default()).await;
        data_movement::warn_unless_gone(Self::WHAT, self.name, "its volume", deleted);
    }

    /// The volume, bound to the restored claim, given its reclaim policy back and its record of
    /// the hand-over taken off.
    async fn give_back(&self, volumes: &Api<PersistentVolume>, volume_name: &str, policy: &str) {
        let given_back = json!({
            "metadata": { "annotations": {
                labels::HANDED_OVER_BY: null, labels::RECLAIM_POLICY: null } },
            "spec": { "persistentVolumeReclaimPolicy": policy },
        });
        let patched = volumes
            .patch(
                volume_name,
                &PatchParams::default(),
                &Patch::Merge(&given_back),
            )
            .await;
        if let Err(error) = patched {
            tracing::warn!(
                "data download {}: PersistentVolume {volume_name} keeps reclaim policy Retain: {}",
                self.name,
                objects::reason(&error)
            );
        }
    }

    /// The volume this download's agent was handing over when it stopped, as both records say
    /// (the download's names the volume, the volume's own names the download: a record made by
    /// hand on a download alone moves nothing): bound to the restored claim, it gets its reclaim
    /// policy back; bound to nothing, nobody ever will bind it, and it is deleted as a failed
    /// hand-over's volume is.
    async fn settle_interrupted_hand_over(&self) {
        let Some(volume_name) = self.download.annotations().get(labels::HANDING_OVER_VOLUME) else {
            return;
        };
        let volumes = Api::<PersistentVolume>::all(self.ctx.kube.client.clone());
        let Ok(Some(volume)) = volumes.get_opt(volume_name).await else {
            return;
        };
        let by = format!("{}/{}", self.ctx.kube.namespace, self.name);
        if volume.annotations().get(labels::HANDED_OVER_BY) != Some(&by) {
            return;
        }
        let target = &self.download.spec.target_volume;
        let claim = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let bound = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
            && claim.is_some_and(|c| {
                c.namespace.as_deref() == Some(&target.namespace)
                    && c.name.as_deref() == Some(&target.pvc)
            });
        if bound {
            let policy = volume.annotations().get(labels::RECLAIM_POLICY);
            self.give_back(
                &volumes,
                volume_name,
                policy.map_or("Delete", String::as_str),
            )
            .await;
        } else {
            tracing::warn!(
                "data download {}: PersistentVolume {volume_name}, retained for a hand-over its \
                 agent did not finish, is deleted",
                self.name
            );
            self.delete_retained(&volumes, volume_name).await;
        }
    }

    /// The retained volume moved from ark's claim to the restored one, and bound to it. The
    /// volume is reserved for the restored claim first, and the claim names it once the
    /// persistent volume controller has seen that (the volume Available): a claim that names a
    /// volume still reserved for another is looked at again only at the controller's next
    /// resync, 15 s later by default.
    async fn rebind(&self, volume_name: &str, timeout: Duration) -> Result<(), String> {
        let client = &self.ctx.kube.client;
        let namespace = &self.ctx.kube.namespace;
        let pods = Api::<Pod>::namespaced(client.clone(), namespace);
        delete_and_wait(&pods, self.name, timeout)
            .await
            .map_err(|e| format!("removing pod {namespace}/{}: {e}", self.name))?;
        let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
        delete_and_wait(&claims, self.name, timeout)
            .await
            .map_err(|e| format!("removing claim {namespace}/{}: {e}", self.name))?;
        let shown = self.shown_target();
        let target = &self.download.spec.target_volume;
        let restored = self.target_claims();
        let selected = (restored.get(&target.pvc).await)
            .map_err(failed(format!("reading {shown}")))?
            .spec
            .and_then(|s| s.selector?.match_labels)
            .unwrap_or_default();
        let reserve = json!({
            "metadata": {
                "labels": selected,
                "annotations": { "pv.kubernetes.io/bound-by-controller": null },
            },
            "spec": { "claimRef": {
                "kind": "PersistentVolumeClaim", "apiVersion": "v1",
                "namespace": target.namespace, "name": target.pvc,
                "uid": null, "resourceVersion": null,
            } },
        });
        let volumes = Api::<PersistentVolume>::all(client.clone());
        volumes
            .patch(
                volume_name,
                &PatchParams::default(),
                &Patch::Merge(&reserve),
            )
            .await
            .map_err(failed(format!(
                "giving PersistentVolume {volume_name} to {shown}"
            )))?;
        let deadline = tokio::time::Instant::now() + timeout;
        // Bound already if the controller matched the claim's selector to it meanwhile.
        self.volume_reaches(volume_name, &["Available", "Bound"], deadline)
            .await?;
        restored
            .patch(
                &target.pvc,
                &PatchParams::default(),
                &Patch::Merge(&json!({ "spec": { "volumeName": volume_name } })),
            )
            .await
            .map_err(failed(format!("binding {shown} to {volume_name}")))?;
        self.volume_reaches(volume_name, &["Bound"], deadline).await
    }

    /// Waits until the volume, reserved for the restored claim, is in one of `phases`.
    async fn volume_reaches(
        &self,
        volume_name: &str,
        phases: &[&str],
        deadline: tokio::time::Instant,
    ) -> Result<(), String> {
        let volumes = Api::<PersistentVolume>::all(self.ctx.kube.client.clone());
        let target = &self.download.spec.target_volume;
        let mut polls = data_movement::polls();
        loop {
            let volume = volumes
                .get(volume_name)
                .await
                .map_err(failed(format!("reading PersistentVolume {volume_name}")))?;
            let phase = volume.status.as_ref().and_then(|s| s.phase.as_deref());
            let reached = phase.is_some_and(|p| phases.contains(&p));
            let to = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
            let to_target = to.is_some_and(|r| {
                r.name.as_deref() == Some(target.pvc.as_str())
                    && r.namespace.as_deref() == Some(target.namespace.as_str())
            });
            if reached && to_target {
                return Ok(());
            }
            if tokio::time::Instant::now() + polls.pause() > deadline {
                return Err(format!(
                    "PersistentVolume {volume_name} was not {} for {} within {}",
                    phases.join(" or "),
                    self.shown_target(),
                    ark_api::duration::format(self.timeout())
                ));
            }
            polls.wait().await;
        }
    }
}

/// A claim in ark's namespace like the restored one (Velero's `createRestorePVC`): its class,
/// access modes, mode and size, on the node selected for it; owned by the DataDownload.
fn claim_like(
    download: &DataDownload,
    namespace: &str,
    target: &PersistentVolumeClaim,
    node: Option<&str>,
) -> Result<PersistentVolumeClaim, String> {
    let name = download.name_any();
    let spec = target.spec.clone().unwrap_or_default();
    let annotations: Map<String, Value> = node
        .map(|node| (SELECTED_NODE.to_string(), json!(node)))
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": { labels::DATA_DOWNLOAD: name },
            "annotations": annotations,
            "ownerReferences": owned_by(download),
        },
        "spec": {
            "accessModes": spec.access_modes,
            "storageClassName": spec.storage_class_name,
            "volumeMode": spec.volume_mode,
            "resources": spec.resources,
        },
    }))
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_the_data_is_written_into_is_like_the_restored_one_on_its_node() {
        let target: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": { "name": "data", "namespace": "shop",
                "labels": { "app": "db", "velero.io/restore-name": "r" } },
            "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "csi-hostpath",
                "volumeMode": "Filesystem", "resources": { "requests": { "storage": "1Gi" } },
                "selector": { "matchLabels": { "velero.io/dynamic-pv-restore": "shop.data.abcde" } },
            },
        }))
        .unwrap();
        let claim = made_claim(&target, Some("worker-1"));
        assert_eq!(
            claim["metadata"]["annotations"],
            json!({ "volume.kubernetes.io/selected-node": "worker-1" })
        );
        assert_eq!(
            claim["metadata"]["labels"],
            json!({ "velero.io/data-download": "r-x" })
        );
        assert_eq!(
            claim["metadata"]["ownerReferences"][0]["kind"],
            "DataDownload"
        );
        // No selector: the volume provisioned for it is not the restored claim's to wait for.
        assert_eq!(
            claim["spec"],
            json!({
                "accessModes": ["ReadWriteOnce"], "storageClassName": "csi-hostpath",
                "volumeMode": "Filesystem", "resources": { "requests": { "storage": "1Gi" } },
            })
        );
        let anywhere = made_claim(&target, None);
        assert_eq!(anywhere["metadata"].get("annotations"), Some(&json!({})));
    }

    fn made_claim(target: &PersistentVolumeClaim, node: Option<&str>) -> Value {
        let download = DataDownload::new("r-x", Default::default());
        serde_json::to_value(claim_like(&download, "ark", target, node).unwrap()).unwrap()
    }
}
