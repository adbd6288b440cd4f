//! A backup's file-system backups of pod volumes, as Velero's `podvolume.Backupper` makes them:
//! which volumes of a pod are taken, a PodVolumeBackup for each (carried out by the node agent on
//! the pod's node), and the wait for them to end, bounded by the backup's pod volume timeout.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use ark_api::{
    Backup, PodReference, PodVolumeBackup, PodVolumeBackupSpec, PodVolumePhase, UPLOADER_KOPIA,
    labels,
};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ListParams, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, ResourceExt as _};
use tokio::sync::watch;

use super::volume_methods::{VOLUMES_TO_BACK_UP, VolumeMethods};
use crate::domain::repositories;
use crate::runtime::objects;
use crate::runtime::sync::Locked;

/// The label Velero's node agent pods carry, by which the server finds one on a node.
pub const NODE_AGENT_ROLE: (&str, &str) = ("role", "node-agent");

/// Whether a pod runs as Velero's `IsPodRunning` requires: on a node, Running, not terminating.
fn is_running(pod: &Pod) -> bool {
    let on_node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some_and(|n| !n.is_empty());
    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    on_node && running && pod.metadata.deletion_timestamp.is_none()
}

/// What starting a pod's volume backups came to.
#[derive(Default)]
pub struct Started {
    /// The PodVolumeBackups made.
    pub names: Vec<String>,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
}

/// One backup's PodVolumeBackups: made as its pods are taken, watched until they end.
pub struct PodVolumes {
    client: Client,
    namespace: String,
    backup: Backup,
    location: String,
    methods: VolumeMethods,
    deadline: tokio::time::Instant,
    /// The namespaces whose repository is known to exist in this backup.
    ensured: tokio::sync::Mutex<BTreeSet<String>>,
    /// The backup's PodVolumeBackups as last seen, by name (a deleted one as Failed).
    seen: watch::Receiver<BTreeMap<String, PodVolumeBackup>>,
    made: Mutex<Vec<String>>,
    _watch: AbortOnDrop,
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A running pod whose volumes are backed up, on a node whose agent runs.
struct PodOnNode<'a> {
    pod: &'a Pod,
    /// `namespace/name`, as messages name it.
    pod_name: String,
    node: String,
    spec: PodSpec,
    /// Volumes mounted by a container, and those attached as block devices.
    mounted: BTreeSet<String>,
    devices: BTreeSet<String>,
    /// Claims of the pod's namespace.
    claims: Api<PersistentVolumeClaim>,
}

impl PodVolumes {
    pub fn new(
        client: Client,
        namespace: String,
        backup: Backup,
        location: String,
        methods: VolumeMethods,
        timeout: Duration,
    ) -> Self {
        let (seen_tx, seen) = watch::channel(BTreeMap::new());
        let api = Api::<PodVolumeBackup>::namespaced(client.clone(), &namespace);
        let selector = format!(
            "{}={}",
            labels::BACKUP_UID,
            backup.metadata.uid.as_deref().unwrap_or_default()
        );
        // The watch restarts on its own (with backoff) when the API server goes away a while.
        let watching = tokio::spawn(async move {
            let events = watcher(api, watcher::Config::default().labels(&selector))
                .default_backoff()
                .filter_map(|event| async move { event.ok() });
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    watcher::Event::Apply(pvb) | watcher::Event::InitApply(pvb) => seen_tx
                        .send_modify(|seen| {
                            seen.insert(pvb.name_any(), pvb);
                        }),
                    watcher::Event::Delete(mut pvb) => seen_tx.send_modify(|seen| {
                        let status = pvb.status.get_or_insert_with(Default::default);
                        if !status.phase.is_some_and(PodVolumePhase::is_final) {
                            status.phase = Some(PodVolumePhase::Failed);
                            status.message = Some("deleted before it ended".into());
                        }
                        seen.insert(pvb.name_any(), pvb);
                    }),
                    watcher::Event::Init | watcher::Event::InitDone => {}
                }
            }
        });
        PodVolumes {
            client,
            namespace,
            backup,
            location,
            methods,
            deadline: tokio::time::Instant::now() + timeout,
            ensured: Default::default(),
            seen,
            made: Mutex::default(),
            _watch: AbortOnDrop(watching),
        }
    }

    /// Whether `pod` has volumes this backup may take (checked further once it is taken).
    pub fn may_take(&self, pod: &Pod) -> bool {
        self.methods.may_back_up_files(pod)
    }

    /// Makes the PodVolumeBackups of `pod`'s chosen volumes. A pod that is not running is
    /// skipped with a warning (Velero skips it in silence); a pod on a node without a running
    /// node agent, or whose namespace's repository cannot be made, is an error.
    pub async fn start(&self, pod: &Pod) -> Started {
        let mut started = Started::default();
        let volumes = match self.methods.backed_up_files(pod).await {
            Ok(volumes) => volumes,
            Err(error) => {
                started.errors.push(error);
                return started;
            }
        };
        if volumes.is_empty() {
            return started;
        }
        let namespace = pod.namespace().unwrap_or_default();
        let pod_name = format!("{namespace}/{}", pod.name_any());
        if !is_running(pod) {
            started.warnings.push(format!(
                "pod {pod_name} is not running: its volumes {} are not backed up",
                volumes.join(", ")
            ));
            return started;
        }
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        if let Err(error) = self.agent_runs_on(&node).await {
            started.errors.push(format!(
                "pod {pod_name}: volumes {} are not backed up: {error}",
                volumes.join(", ")
            ));
            return started;
        }
        if let Err(error) = self.ensure_repository(&namespace).await {
            started.errors.push(format!(
                "pod {pod_name}: volumes {} are not backed up: {error}",
                volumes.join(", ")
            ));
            return started;
        }
        let spec = pod.spec.clone().unwrap_or_default();
        let on = PodOnNode {
            pod,
            pod_name,
            node,
            mounted: spec
                .containers
                .iter()
                .flat_map(|c| c.volume_mounts.iter().flatten())
                .map(|m| m.name.clone())
                .collect(),
            devices: spec
                .containers
                .iter()
                .flat_map(|c| c.volume_devices.iter().flatten())
                .map(|d| d.name.clone())
                .collect(),
            claims: Api::namespaced(self.client.clone(), &namespace),
            spec,
        };
        for volume_name in &volumes {
            self.start_volume(&on, volume_name, &mut started).await;
        }
        started
    }

    /// Makes the PodVolumeBackup of one of the pod's chosen volumes, unless it is one a
    /// file-system backup cannot read (skipped with a warning).
    async fn start_volume(&self, on: &PodOnNode<'_>, volume_name: &str, started: &mut Started) {
        let Some(volume) = on
            .spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == volume_name)
        else {
            started.warnings.push(format!(
                "pod {} has no volume {volume_name:?} (named in its annotation {VOLUMES_TO_BACK_UP})",
                on.pod_name
            ));
            return;
        };
        let claim = match &volume.persistent_volume_claim {
            Some(source) => match on.claims.get(&source.claim_name).await {
                Ok(claim) => Some(claim),
                Err(error) => {
                    started.errors.push(format!(
                        "pod {} volume {volume_name}: reading claim {}: {}",
                        on.pod_name,
                        source.claim_name,
                        objects::reason(&error)
                    ));
                    return;
                }
            },
            None => None,
        };
        let skipped = |why: String| format!("pod {} volume {volume_name} {why}", on.pod_name);
        if volume.host_path.is_some() {
            started.warnings.push(skipped(
                "is a hostPath volume, which a file-system backup cannot read: skipped".into(),
            ));
            return;
        }
        match self.is_host_path_claim(claim.as_ref()).await {
            Ok(false) => {}
            Ok(true) => {
                started.warnings.push(skipped(
                    "is bound to a hostPath persistent volume, which a file-system backup cannot read: skipped".into(),
                ));
                return;
            }
            Err(error) => {
                started.errors.push(skipped(format!(
                    "is not backed up: reading its persistent volume: {}",
                    objects::reason(&error)
                )));
                return;
            }
        }
        if on.devices.contains(volume_name) {
            started.warnings.push(skipped(
                "is a block volume, which a file-system backup cannot read: skipped".into(),
            ));
            return;
        }
        if !on.mounted.contains(volume_name) {
            started.warnings.push(skipped(
                "is not mounted by any container, so it has no directory: skipped".into(),
            ));
            return;
        }
        let pvb = self.request(on.pod, &on.node, volume_name, claim.as_ref());
        let api = Api::<PodVolumeBackup>::namespaced(self.client.clone(), &self.namespace);
        match api.create(&PostParams::default(), &pvb).await {
            Ok(made) => {
                let name = made.name_any();
                self.made.locked().push(name.clone());
                started.names.push(name);
            }
            Err(error) => started.errors.push(skipped(format!(
                "is not backed up: creating its PodVolumeBackup: {}",
                objects::reason(&error)
            ))),
        }
    }

    /// A PodVolumeBackup as Velero's `newPodVolumeBackup` makes it.
    fn request(
        &self,
        pod: &Pod,
        node: &str,
        volume: &str,
        claim: Option<&PersistentVolumeClaim>,
    ) -> PodVolumeBackup {
        let backup_name = self.backup.name_any();
        let backup_uid = self.backup.metadata.uid.clone().unwrap_or_default();
        let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
        let namespace = pod.namespace().unwrap_or_default();
        let mut tags = BTreeMap::from([
            ("backup".to_string(), backup_name.clone()),
            ("backup-uid".to_string(), backup_uid.clone()),
            ("pod".to_string(), pod.name_any()),
            ("pod-uid".to_string(), pod_uid.clone()),
            ("ns".to_string(), namespace.clone()),
            ("volume".to_string(), volume.to_string()),
        ]);
        let mut pvb_labels = BTreeMap::from([
            (
                labels::BACKUP_NAME.to_string(),
                labels::valid_label_value(&backup_name),
            ),
            (labels::BACKUP_UID.to_string(), backup_uid.clone()),
        ]);
        let mut annotations = None;
        if let Some(claim) = claim {
            let claim_uid = claim.metadata.uid.clone().unwrap_or_default();
            pvb_labels.insert(labels::PVC_UID.to_string(), claim_uid.clone());
            tags.insert("pvc-uid".to_string(), claim_uid);
            annotations = Some(BTreeMap::from([(
                labels::PVC_NAME.to_string(),
                claim.name_any(),
            )]));
        }
        let mut pvb = PodVolumeBackup::new(
            "",
            PodVolumeBackupSpec {
                node: node.to_string(),
                pod: PodReference {
                    kind: Some("Pod".into()),
                    namespace,
                    name: pod.name_any(),
                    uid: pod_uid,
                    ..Default::default()
                },
                volume: volume.to_string(),
                backup_storage_location: self.location.clone(),
                repo_identifier: String::new(),
                uploader_type: Some(UPLOADER_KOPIA.into()),
                tags,
                uploader_settings: (self.backup.spec.uploader_config.as_ref())
                    .map(|config| config.settings())
                    .unwrap_or_default(),
                ..Default::default()
            },
        );
        pvb.metadata.name = None;
        pvb.metadata.generate_name = Some(format!("{backup_name}-"));
        pvb.metadata.namespace = Some(self.namespace.clone());
        pvb.metadata.labels = Some(pvb_labels);
        pvb.metadata.annotations = annotations;
        pvb.metadata.owner_references = Some(vec![OwnerReference {
            api_version: ark_api::API_VERSION.into(),
            kind: "Backup".into(),
            name: backup_name,
            uid: backup_uid,
            controller: Some(true),
            ..Default::default()
        }]);
        pvb
    }

    async fn agent_runs_on(&self, node: &str) -> Result<(), String> {
        let pods = Api::<Pod>::namespaced(self.client.clone(), &self.namespace)
            .list(
                &ListParams::default()
                    .labels(&format!("{}={}", NODE_AGENT_ROLE.0, NODE_AGENT_ROLE.1)),
            )
            .await
            .map_err(|e| format!("listing the node agents: {}", objects::reason(&e)))?;
        let running = pods.items.iter().any(|p| {
            is_running(p) && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
        });
        if running {
            Ok(())
        } else {
            Err(format!(
                "no node agent runs on node {node} (install one with `ark install --use-node-agent`)"
            ))
        }
    }

    async fn ensure_repository(&self, namespace: &str) -> Result<(), String> {
        let mut ensured = self.ensured.lock().await;
        if ensured.contains(namespace) {
            return Ok(());
        }
        repositories::ensure(&self.client, &self.namespace, &self.location, namespace)
            .await
            .map_err(|e| e.to_string())?;
        ensured.insert(namespace.to_string());
        Ok(())
    }

    async fn is_host_path_claim(
        &self,
        claim: Option<&PersistentVolumeClaim>,
    ) -> Result<bool, kube::Error> {
        let Some(volume) = claim
            .and_then(|c| c.spec.as_ref())
            .and_then(|s| s.volume_name.as_deref())
            .filter(|v| !v.is_empty())
        else {
            return Ok(false);
        };
        let pv = Api::<PersistentVolume>::all(self.client.clone())
            .get(volume)
            .await?;
        Ok(pv.spec.is_some_and(|s| s.host_path.is_some()))
    }

    /// Waits for `names` to end, at most until the backup's pod volume deadline: each as it
    /// ended, or the names of those that had not.
    pub async fn wait(&self, names: &[String]) -> Result<Vec<PodVolumeBackup>, Vec<String>> {
        let mut seen = self.seen.clone();
        let ended = |seen: &BTreeMap<String, PodVolumeBackup>| {
            names.iter().all(|n| {
                seen.get(n)
                    .and_then(|p| p.status.as_ref())
                    .and_then(|s| s.phase)
                    .is_some_and(PodVolumePhase::is_final)
            })
        };
        let waited = tokio::time::timeout_at(self.deadline, seen.wait_for(|s| ended(s))).await;
        let seen = self.seen.borrow();
        match waited {
            Ok(Ok(_)) => Ok(names.iter().filter_map(|n| seen.get(n).cloned()).collect()),
            _ => Err(names
                .iter()
                .filter(|n| {
                    !seen
                        .get(*n)
                        .and_then(|p| p.status.as_ref())
                        .and_then(|s| s.phase)
                        .is_some_and(PodVolumePhase::is_final)
                })
                .cloned()
                .collect()),
        }
    }

    /// Waits for every PodVolumeBackup this backup made: all of them as they ended (or as last
    /// seen, for those the deadline cut), and the errors to record.
    pub async fn finish(&self) -> (Vec<PodVolumeBackup>, Vec<(String, String)>) {
        let names = self.made.locked().clone();
        let mut errors = Vec::new();
        if let Err(unfinished) = self.wait(&names).await {
            for name in unfinished {
                errors.push((
                    String::new(),
                    format!("pod volume backup {name} did not end before the backup's pod volume timeout"),
                ));
            }
        }
        let seen = self.seen.borrow();
        let pvbs: Vec<PodVolumeBackup> =
            names.iter().filter_map(|n| seen.get(n).cloned()).collect();
        for pvb in &pvbs {
            let status = pvb.status.clone().unwrap_or_default();
            if matches!(
                status.phase,
                Some(PodVolumePhase::Failed | PodVolumePhase::Canceled)
            ) {
                errors.push((
                    pvb.spec.pod.namespace.clone(),
                    format!(
                        "pod volume backup {} (pod {}/{} volume {}) {}: {}",
                        pvb.name_any(),
                        pvb.spec.pod.namespace,
                        pvb.spec.pod.name,
                        pvb.spec.volume,
                        if status.phase == Some(PodVolumePhase::Failed) {
                            "failed"
                        } else {
                            "was canceled"
                        },
                        status.message.unwrap_or_default()
                    ),
                ));
            }
        }
        (pvbs, errors)
    }
}
