//! How each volume's data is taken: by the node agent, by a CSI snapshot, or not at all, as
//! Velero's volume helper (`internal/volumehelper`) decides for both: the first volume policy
//! that matches the volume, else the pods' annotations and `defaultVolumesToFsBackup` (the opt-in
//! and opt-out ways), else the backup's `snapshotVolumes`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, Volume};
use kube::{Api, Client, ResourceExt as _};

use crate::domain::volume_policy::{ResourcePolicies, VolumeAction, VolumeFacts};
use crate::runtime::objects;

/// Velero's pod annotations naming the volumes to back up, or (when every volume is backed up by
/// default) those not to.
pub const VOLUMES_TO_BACK_UP: &str = "backup.velero.io/backup-volumes";
pub const VOLUMES_TO_EXCLUDE: &str = "backup.velero.io/backup-volumes-excludes";

/// A backup's rules for its volumes' data.
#[derive(Clone)]
pub struct VolumeMethods {
    client: Client,
    policies: Option<Arc<ResourcePolicies>>,
    /// Whether every pod volume goes to the node agent unless excluded (opt-out), or only those
    /// a pod names (opt-in).
    by_default: bool,
}

impl VolumeMethods {
    pub fn new(client: Client, policies: Option<Arc<ResourcePolicies>>, by_default: bool) -> Self {
        VolumeMethods {
            client,
            policies,
            by_default,
        }
    }

    /// Whether some volume of `pod` may go to the node agent, before any claim is read.
    pub fn may_back_up_files(&self, pod: &Pod) -> bool {
        let by_policy = self.policies.as_ref().is_some_and(|p| p.backs_up_files())
            && volumes(pod).any(holds_own_data);
        by_policy || !by_annotations(pod, self.by_default).is_empty()
    }

    /// The volumes of `pod` the node agent backs up, Velero's `ShouldPerformFSBackup` for each:
    /// those a policy sends there, and those the annotations choose that no policy matches. (A
    /// name the annotation gives that the pod lacks stays, to be reported.)
    pub async fn backed_up_files(&self, pod: &Pod) -> Result<Vec<String>, String> {
        let chosen = by_annotations(pod, self.by_default);
        let Some(policies) = &self.policies else {
            return Ok(chosen);
        };
        let mut taken = Vec::new();
        for volume in volumes(pod) {
            let by_annotation = chosen.contains(&volume.name);
            let take = if holds_own_data(volume) {
                match policies.action(&self.facts_of(pod, volume).await?) {
                    Some(action) => action == VolumeAction::FsBackup,
                    None => by_annotation,
                }
            } else {
                // Never the node agent's; kept when named, to be skipped with its reason.
                by_annotation
            };
            if take {
                taken.push(volume.name.clone());
            }
        }
        let unknown = chosen
            .iter()
            .filter(|name| !volumes(pod).any(|v| &v.name == *name));
        taken.extend(unknown.cloned());
        Ok(taken)
    }

    /// Whether a pod's annotations (or the opt-out default) send its volume `name` to the node
    /// agent: Velero's legacy rule, which decides when no policy matches.
    pub fn annotated(&self, pod: &Pod, name: &str) -> bool {
        by_annotations(pod, self.by_default)
            .iter()
            .any(|v| v == name)
    }

    /// The action of the first policy matching a claim and its volume (none when the backup has
    /// no policies).
    pub fn claim_action(
        &self,
        claim: &PersistentVolumeClaim,
        volume: Option<&PersistentVolume>,
    ) -> Option<VolumeAction> {
        let policies = self.policies.as_ref()?;
        policies.action(&VolumeFacts::of_claim(volume, claim))
    }

    /// What the policies look at in a pod's volume: its claim and persistent volume, or the
    /// volume itself.
    async fn facts_of(&self, pod: &Pod, volume: &Volume) -> Result<VolumeFacts, String> {
        let Some(source) = &volume.persistent_volume_claim else {
            return Ok(VolumeFacts::of_pod_volume(volume));
        };
        let namespace = pod.namespace().unwrap_or_default();
        let shown = format!("pod {namespace}/{} volume {}", pod.name_any(), volume.name);
        let claim = Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), &namespace)
            .get(&source.claim_name)
            .await
            .map_err(|error| {
                format!(
                    "{shown}: reading claim {}: {}",
                    source.claim_name,
                    objects::reason(&error)
                )
            })?;
        let bound = claim.spec.as_ref().and_then(|s| s.volume_name.clone());
        let persistent = match bound.filter(|name| !name.is_empty()) {
            None => None,
            Some(name) => Api::<PersistentVolume>::all(self.client.clone())
                .get_opt(&name)
                .await
                .map_err(|error| {
                    format!(
                        "{shown}: reading its volume {name}: {}",
                        objects::reason(&error)
                    )
                })?,
        };
        Ok(VolumeFacts::of_claim(persistent.as_ref(), &claim))
    }
}

fn volumes(pod: &Pod) -> impl Iterator<Item = &Volume> {
    pod.spec.iter().flat_map(|s| s.volumes.iter().flatten())
}

/// Whether a volume holds data of its own, which a file-system backup may take: not the cluster's
/// (secrets, config maps, projected, downward API, service account tokens) nor outside the
/// kubelet's directory (host paths). Velero's `shouldIncludeVolumeInBackup`.
fn holds_own_data(volume: &Volume) -> bool {
    volume.host_path.is_none()
        && volume.secret.is_none()
        && volume.config_map.is_none()
        && volume.projected.is_none()
        && volume.downward_api.is_none()
        && !volume.name.starts_with("default-token")
}

/// The volumes of `pod` its annotations choose, as Velero's `GetVolumesByPod` reads them: those
/// named to back up, or, when volumes are backed up by default, every volume holding its own data
/// but those named not to.
fn by_annotations(pod: &Pod, by_default: bool) -> Vec<String> {
    let annotation = |key: &str| -> Vec<String> {
        pod.annotations()
            .get(key)
            .filter(|v| !v.is_empty())
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    };
    if !by_default {
        return annotation(VOLUMES_TO_BACK_UP);
    }
    let excluded = annotation(VOLUMES_TO_EXCLUDE);
    volumes(pod)
        .filter(|v| holds_own_data(v) && !excluded.contains(&v.name))
        .map(|v| v.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "db", "namespace": "shop", "annotations": annotations },
            "spec": { "containers": [], "volumes": [
                { "name": "data", "persistentVolumeClaim": { "claimName": "db-data" } },
                { "name": "scratch", "emptyDir": {} },
                { "name": "host", "hostPath": { "path": "/var/log" } },
                { "name": "conf", "configMap": { "name": "c" } },
                { "name": "token", "projected": { "sources": [] } },
                { "name": "default-token-x", "emptyDir": {} },
            ] },
        }))
        .unwrap()
    }

    #[test]
    fn volumes_are_chosen_by_annotations_as_velero_chooses_them() {
        let none = pod(serde_json::json!({}));
        assert!(by_annotations(&none, false).is_empty());
        assert_eq!(by_annotations(&none, true), ["data", "scratch"]);
        let named = pod(serde_json::json!({ VOLUMES_TO_BACK_UP: "data,host" }));
        // Named ones are taken as named (a host path is refused when its backup is made).
        assert_eq!(by_annotations(&named, false), ["data", "host"]);
        let excluded = pod(serde_json::json!({ VOLUMES_TO_EXCLUDE: "scratch" }));
        assert_eq!(by_annotations(&excluded, true), ["data"]);
        // Velero splits the annotation on commas without trimming.
        let spaced = pod(serde_json::json!({ VOLUMES_TO_BACK_UP: "data, scratch" }));
        assert_eq!(by_annotations(&spaced, false), ["data", " scratch"]);
    }
}
