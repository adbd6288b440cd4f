//! A restore's pod volume data, as Velero's `podvolume.Restorer` brings it back: a restored pod
//! whose volumes the backup holds starts with the `restore-wait` init container, its claims are
//! provisioned anew (their volumes are not restored), and once the pod is created a
//! PodVolumeRestore per volume asks the node agent on its node to write the snapshot into the
//! volume; the helper lets the pod's own containers start once every volume holds its data.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ark_api::{
    PodReference, PodVolumeBackup, PodVolumePhase, PodVolumeRestore, PodVolumeRestoreSpec,
    UPLOADER_KOPIA, labels,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt as _};
use serde_json::{Value, json};

use super::requests::{self, Seen};
use crate::runtime::objects;

/// The init container that holds a restored pod until its volumes hold their data (Velero's name;
/// `restic-wait` is its older one).
pub const RESTORE_WAIT: &str = "restore-wait";
/// Where it mounts each restored volume.
const RESTORES: &str = "/restores";

/// The volumes a backup holds the data of, by the pod they were backed up from.
#[derive(Default)]
pub struct BackedUp {
    by_pod: BTreeMap<(String, String), Vec<PodVolumeBackup>>,
}

impl BackedUp {
    /// From the backup's PodVolumeBackups: those that ended with a snapshot (an empty volume has
    /// none, and is left to come back empty).
    pub fn new(pvbs: Vec<PodVolumeBackup>) -> Self {
        let mut by_pod: BTreeMap<(String, String), Vec<PodVolumeBackup>> = BTreeMap::new();
        for pvb in pvbs {
            let status = pvb.status.clone().unwrap_or_default();
            let snapshot = status.snapshot_id.filter(|id| !id.is_empty());
            if status.phase == Some(PodVolumePhase::Completed) && snapshot.is_some() {
                let key = (pvb.spec.pod.namespace.clone(), pvb.spec.pod.name.clone());
                by_pod.entry(key).or_default().push(pvb);
            }
        }
        BackedUp { by_pod }
    }

    pub fn of_pod(&self, namespace: &str, pod: &str) -> &[PodVolumeBackup] {
        self.by_pod
            .get(&(namespace.to_string(), pod.to_string()))
            .map_or(&[], Vec::as_slice)
    }

    /// The claims (namespace, name) whose data the backup holds: their volumes are not restored,
    /// and they are provisioned anew (Velero's `hasPodVolumeBackup`).
    pub fn claims(&self) -> BTreeSet<(String, String)> {
        self.by_pod
            .values()
            .flatten()
            .filter_map(|pvb| {
                let claim = pvb.annotations().get(labels::PVC_NAME)?;
                Some((pvb.spec.pod.namespace.clone(), claim.clone()))
            })
            .collect()
    }
}

/// What a restore's actions need to give a pod its `restore-wait` container.
pub struct VolumeData<'a> {
    pub backed_up: &'a BackedUp,
    /// The helper's image (the server's own); without one, no volume data is restored.
    pub helper_image: Option<&'a str>,
    pub restore_uid: &'a str,
}

/// The `restore-wait` container, as Velero's pod volume restore action makes it: ark's
/// `restore-helper` waiting for `.velero/<restore uid>` in each of `volumes`, mounted under
/// `/restores`, with the pod's first container's security context (else a restricted one).
pub fn restore_wait(image: &str, restore_uid: &str, volumes: &[String], pod: &Value) -> Value {
    let security = pod
        .pointer("/spec/containers/0/securityContext")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| {
            json!({
                "runAsUser": 1000,
                "runAsNonRoot": true,
                "allowPrivilegeEscalation": false,
                "capabilities": { "drop": ["ALL"] },
                "seccompProfile": { "type": "RuntimeDefault" },
            })
        });
    let field = |path: &str| json!({ "fieldRef": { "fieldPath": path } });
    json!({
        "name": RESTORE_WAIT,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/ark"],
        "args": ["restore-helper", restore_uid],
        "env": [
            { "name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace") },
            { "name": "POD_NAME", "valueFrom": field("metadata.name") },
        ],
        "volumeMounts": volumes
            .iter()
            .map(|v| json!({ "name": v, "mountPath": format!("{RESTORES}/{v}") }))
            .collect::<Vec<_>>(),
        "resources": {
            "requests": { "cpu": "100m", "memory": "128Mi" },
            "limits": { "cpu": "100m", "memory": "128Mi" },
        },
        "securityContext": security,
    })
}

/// A restored pod whose volumes get their data back.
pub struct PodWithVolumeData {
    /// Where it was restored to.
    pub namespace: String,
    pub name: String,
    /// The backup's PodVolumeBackups of it.
    pub backups: Vec<PodVolumeBackup>,
}

/// Makes a PodVolumeRestore for each volume of each pod, as Velero's `RestorePodVolumes` makes
/// them, then waits for them all to end, at most `timeout`: each as it ended (or as last seen),
/// and the errors to record, by namespace.
pub async fn restore(
    client: &Client,
    namespace: &str,
    restore: &ark_api::Restore,
    location: &str,
    pods: Vec<PodWithVolumeData>,
    timeout: Duration,
) -> (Vec<PodVolumeRestore>, Vec<(String, String)>) {
    let mut errors = Vec::new();
    // No watch for a restore without pod volume data.
    if pods.is_empty() {
        return (Vec::new(), errors);
    }
    let api = Api::<PodVolumeRestore>::namespaced(client.clone(), namespace);
    let restore_uid = restore.metadata.uid.clone().unwrap_or_default();
    let mut seen = Seen::start(api.clone(), &restore_uid);
    let mut made = Vec::new();
    for pod in pods {
        let shown = format!("{}/{}", pod.namespace, pod.name);
        let created = Api::<Pod>::namespaced(client.clone(), &pod.namespace)
            .get(&pod.name)
            .await;
        let created = match created {
            Ok(created) => created,
            Err(error) => {
                errors.push((
                    pod.namespace.clone(),
                    format!(
                        "pod {shown}: its volumes' data is not restored: reading the pod: {}",
                        objects::reason(&error)
                    ),
                ));
                continue;
            }
        };
        let pod_uid = created.metadata.uid.clone().unwrap_or_default();
        for pvb in &pod.backups {
            let pvr = volume_restore(pvb, &pod, &pod_uid, restore, location, namespace);
            match api.create(&PostParams::default(), &pvr).await {
                Ok(made_pvr) => made.push(made_pvr.name_any()),
                Err(error) => errors.push((
                    pod.namespace.clone(),
                    format!(
                        "pod {shown} volume {}: its data is not restored: creating its \
                         PodVolumeRestore: {}",
                        pvb.spec.volume,
                        objects::reason(&error)
                    ),
                )),
            }
        }
    }
    if made.is_empty() {
        return (Vec::new(), errors);
    }
    let phase = |pvr: &PodVolumeRestore| pvr.status.as_ref()?.phase;
    let waited = seen.wait(&made, timeout, phase).await;
    let (pvrs, ended_errors) = as_ended(&made, &seen, waited, timeout);
    errors.extend(ended_errors);
    (pvrs, errors)
}

/// The PodVolumeRestore of `pvb`'s volume into the restored pod (`pod_uid`), as Velero makes it:
/// named after the restore, labelled with it, the pod and the claim, owned by the restore.
fn volume_restore(
    pvb: &PodVolumeBackup,
    pod: &PodWithVolumeData,
    pod_uid: &str,
    restore: &ark_api::Restore,
    location: &str,
    namespace: &str,
) -> PodVolumeRestore {
    let status = pvb.status.clone().unwrap_or_default();
    let mut pvr_labels = vec![(labels::POD_UID.to_string(), pod_uid.to_string())];
    if let Some(claim_uid) = pvb.labels().get(labels::PVC_UID) {
        pvr_labels.push((labels::PVC_UID.to_string(), claim_uid.clone()));
    }
    let mut pvr = PodVolumeRestore::new(
        "",
        PodVolumeRestoreSpec {
            pod: PodReference {
                kind: Some("Pod".into()),
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                uid: pod_uid.to_string(),
                ..Default::default()
            },
            volume: pvb.spec.volume.clone(),
            backup_storage_location: location.to_string(),
            repo_identifier: String::new(),
            uploader_type: Some(UPLOADER_KOPIA.into()),
            snapshot_id: status.snapshot_id.unwrap_or_default(),
            snapshot_size: status.progress.and_then(|p| p.total_bytes),
            source_namespace: pvb.spec.pod.namespace.clone(),
            uploader_settings: (restore.spec.uploader_config.as_ref())
                .map(|config| config.settings())
                .unwrap_or_default(),
            ..Default::default()
        },
    );
    pvr.metadata = requests::metadata(restore, namespace, pvr_labels);
    pvr
}

/// The PodVolumeRestores `made`, each as last `seen`, and the errors of those that failed, were
/// never seen, or (when the wait did not end with them all, `waited` false) had not ended within
/// `timeout`, by namespace.
fn as_ended(
    made: &[String],
    seen: &Seen<PodVolumeRestore>,
    waited: bool,
    timeout: Duration,
) -> (Vec<PodVolumeRestore>, Vec<(String, String)>) {
    let (mut pvrs, mut errors) = (Vec::new(), Vec::new());
    for name in made {
        let Some(pvr) = seen.get(name) else {
            errors.push((
                String::new(),
                format!("pod volume restore {name} was never seen"),
            ));
            continue;
        };
        let status = pvr.status.clone().unwrap_or_default();
        let what = format!(
            "pod volume restore {name} (pod {}/{} volume {})",
            pvr.spec.pod.namespace, pvr.spec.pod.name, pvr.spec.volume
        );
        match status.phase {
            Some(PodVolumePhase::Completed) => {}
            Some(PodVolumePhase::Failed | PodVolumePhase::Canceled) => errors.push((
                pvr.spec.pod.namespace.clone(),
                format!("{what} failed: {}", status.message.unwrap_or_default()),
            )),
            _ if !waited => errors.push((
                pvr.spec.pod.namespace.clone(),
                format!(
                    "{what} did not end within {} (is a node agent running on the pod's node?)",
                    ark_api::duration::format(timeout)
                ),
            )),
            _ => {}
        }
        pvrs.push(pvr);
    }
    (pvrs, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_wait_mounts_every_restored_volume_and_waits_for_this_restore() {
        let pod = json!({ "spec": { "containers": [{ "name": "db", "securityContext": { "runAsUser": 999 } }] } });
        let container = restore_wait(
            "ark.local/ark:1",
            "uid-1",
            &["data".into(), "logs".into()],
            &pod,
        );
        assert_eq!(container["name"], "restore-wait");
        assert_eq!(container["args"], json!(["restore-helper", "uid-1"]));
        assert_eq!(
            container["volumeMounts"],
            json!([
                { "name": "data", "mountPath": "/restores/data" },
                { "name": "logs", "mountPath": "/restores/logs" },
            ])
        );
        assert_eq!(container["securityContext"], json!({ "runAsUser": 999 }));
        let bare = restore_wait("i", "u", &[], &json!({ "spec": { "containers": [{}] } }));
        assert_eq!(bare["securityContext"]["runAsNonRoot"], true);
    }

    #[test]
    fn only_volumes_with_a_snapshot_are_restored_and_their_claims_provisioned_anew() {
        let pvb = |pod: &str, volume: &str, snapshot: &str, claim: Option<&str>| {
            serde_json::from_value::<PodVolumeBackup>(json!({
                "apiVersion": "velero.io/v1", "kind": "PodVolumeBackup",
                "metadata": { "name": format!("b-{volume}"), "annotations": claim.map(|c| json!({ "velero.io/pvc-name": c })) },
                "spec": { "node": "n", "pod": { "namespace": "shop", "name": pod, "uid": "u" }, "volume": volume,
                          "backupStorageLocation": "default", "repoIdentifier": "" },
                "status": { "phase": "Completed", "snapshotID": snapshot },
            }))
            .unwrap()
        };
        let backed_up = BackedUp::new(vec![
            pvb("db", "data", "s1", Some("db-data")),
            pvb("db", "empty", "", None),
            pvb("web", "cache", "s2", None),
        ]);
        let volumes: Vec<&str> = backed_up
            .of_pod("shop", "db")
            .iter()
            .map(|p| p.spec.volume.as_str())
            .collect();
        assert_eq!(volumes, ["data"]);
        assert!(backed_up.of_pod("other", "db").is_empty());
        assert_eq!(
            backed_up.claims(),
            BTreeSet::from([("shop".to_string(), "db-data".to_string())])
        );
    }
}
