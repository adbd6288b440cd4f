//! A backup's CSI snapshots of its claims, as Velero's CSI actions cut them
//! (`pkg/backup/actions/csi`): which claims, with which VolumeSnapshotClass, the VolumeSnapshot
//! made, and the wait for its storage snapshot's handle, bounded by the backup's
//! `csiSnapshotTimeout`. A claim is cut once, by whoever asks first: a pod's work after its pre
//! hooks, or the claim's own item. The snapshots become ready to use after the backup's main
//! pass; the backup waits for that as item operations (see `operations`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ark_api::{
    Backup, BackupMethod, BackupOperation, BackupOperationSpec, BackupVolumeInfo, CsiSnapshotInfo,
    OperationPhase, OperationStatus, PvInfo, ResourceIdentifier, SnapshotDataMovementInfo, labels,
};
use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt as _};
use serde_json::{Value, json};

use super::data_movement;
use super::volume_methods::VolumeMethods;
use crate::domain::csi::{self, ContentStatus, SnapshotStatus};
use crate::domain::repositories;
use crate::domain::volume_policy::VolumeAction;
use crate::runtime::sync::Locked;
use crate::runtime::{objects, patch};

/// How often a snapshot is looked at while its handle is awaited (Velero: every 5s).
const POLL: Duration = Duration::from_millis(500);

/// A snapshot this backup cut: its storage snapshot has a handle, and may not be ready to use yet.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub namespace: String,
    pub claim: String,
    pub volume: String,
    pub volume_snapshot: String,
    pub content: String,
    pub handle: String,
    pub driver: String,
    pub class: String,
    /// The content's `deletionPolicy`, as it was cut.
    pub deletion_policy: String,
    /// The storage snapshot's size in bytes, once the driver says it.
    pub restore_size: Option<i64>,
    pub started: Time,
    /// Velero's operation id: `<namespace>/<volume snapshot>/<RFC 3339 time>`, or the data
    /// upload's (`du-...`) when its data is moved.
    pub operation_id: String,
    /// The DataUpload moving its data into the location, when the backup moves data: the
    /// snapshot is then not backed up, the DataUpload is.
    pub moved_by: Option<DataUploadRef>,
    pub volume_info: PvInfo,
}

/// The DataUpload that moves a snapshot's data (in the backup's namespace).
#[derive(Clone, Debug)]
pub struct DataUploadRef {
    pub namespace: String,
    pub name: String,
}

/// What asking for one claim's snapshot came to.
#[derive(Clone, Debug, Default)]
pub struct Cut {
    pub snapshot: Option<Snapshot>,
    /// A claim whose data this backup does not hold, and why.
    pub skipped: Option<BackupVolumeInfo>,
    pub warning: Option<String>,
    pub error: Option<String>,
}

type PendingCut = Shared<BoxFuture<'static, Arc<Cut>>>;

/// One backup's CSI snapshots.
#[derive(Clone)]
pub struct ClaimSnapshots {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    backup: Backup,
    /// The backup's `snapshotVolumes` (Velero's default: on).
    enabled: bool,
    /// Whether each snapshot's data is moved into the location (`snapshotMoveData`).
    move_data: bool,
    /// The namespaces whose repository is known to exist, for the data moved.
    repositories: tokio::sync::Mutex<std::collections::BTreeSet<String>>,
    methods: VolumeMethods,
    timeout: Duration,
    cuts: Mutex<BTreeMap<(String, String), PendingCut>>,
    /// The pods of each namespace, read once, to tell claims backed up with the node agent.
    pods: tokio::sync::Mutex<BTreeMap<String, Arc<Vec<Pod>>>>,
    classes: tokio::sync::OnceCell<Vec<DynamicObject>>,
}

impl ClaimSnapshots {
    pub fn new(
        client: Client,
        backup: Backup,
        methods: VolumeMethods,
        timeout: Duration,
        move_data: bool,
    ) -> Self {
        let enabled = backup.spec.snapshot_volumes != Some(false);
        ClaimSnapshots {
            inner: Arc::new(Inner {
                client,
                backup,
                enabled,
                move_data,
                methods,
                timeout,
                repositories: Default::default(),
                cuts: Mutex::default(),
                pods: Default::default(),
                classes: Default::default(),
            }),
        }
    }

    /// The snapshot of `claim`, cut now unless it was already.
    pub async fn cut(&self, claim: &PersistentVolumeClaim) -> Arc<Cut> {
        self.pending(claim).await
    }

    /// Starts cutting the snapshots of listed claims, without waiting.
    pub fn start(&self, claims: &[DynamicObject]) {
        for claim in claims {
            if let Ok(claim) = objects::typed::<PersistentVolumeClaim>(claim) {
                drop(self.pending(&claim));
            }
        }
    }

    /// Cuts the snapshots of the claims `pod` mounts, as Velero does after the pod's pre hooks.
    /// A claim that cannot be read here is read again, and cut, when its own item is written.
    pub async fn cut_claims_of(&self, pod: &Pod) {
        let namespace = pod.namespace().unwrap_or_default();
        let claims =
            Api::<PersistentVolumeClaim>::namespaced(self.inner.client.clone(), &namespace);
        let names = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone());
        let cuts = names.map(|name| {
            let claims = claims.clone();
            async move {
                if let Ok(claim) = claims.get(&name).await {
                    self.cut(&claim).await;
                }
            }
        });
        futures::future::join_all(cuts).await;
    }

    fn pending(&self, claim: &PersistentVolumeClaim) -> PendingCut {
        let key = (claim.namespace().unwrap_or_default(), claim.name_any());
        let mut cuts = self.inner.cuts.locked();
        cuts.entry(key)
            .or_insert_with(|| {
                let (inner, claim) = (self.inner.clone(), claim.clone());
                // On the runtime: a cut goes on (and deletes what it made when it times out)
                // even when the one who asked stops waiting.
                let task = tokio::spawn(async move { Arc::new(inner.cut(&claim).await) });
                async move {
                    task.await.unwrap_or_else(|error| {
                        Arc::new(Cut::failed(format!("cutting a snapshot stopped: {error}")))
                    })
                }
                .boxed()
                .shared()
            })
            .clone()
    }

    /// The snapshot a VolumeSnapshot of this backup records, once it is cut.
    pub fn cut_as(&self, namespace: &str, volume_snapshot: &str) -> Option<Snapshot> {
        let cuts = self.inner.cuts.locked();
        cuts.values()
            .filter_map(|pending| pending.peek())
            .filter_map(|cut| cut.snapshot.as_ref())
            .find(|s| s.namespace == namespace && s.volume_snapshot == volume_snapshot)
            .cloned()
    }

    /// Whether `object` is a VolumeSnapshot this backup made: written by the action that made it,
    /// never as a listed item. Matched by uid too: another install's backup may have this name.
    pub fn made_here(&self, object: &DynamicObject) -> bool {
        let backup = &self.inner.backup;
        let wanted = labels::for_backup(&backup.name_any(), &backup.uid().unwrap_or_default());
        wanted
            .iter()
            .all(|(key, value)| object.labels().get(key) == Some(value))
    }

    /// Every claim's outcome, once every cut has ended.
    pub async fn finish(&self) -> Vec<Arc<Cut>> {
        let pending: Vec<PendingCut> = self.inner.cuts.locked().values().cloned().collect();
        futures::future::join_all(pending).await
    }
}

/// A claim to snapshot, and how.
struct Choice {
    namespace: String,
    name: String,
    /// `claim namespace/name`, as messages name it.
    shown: String,
    volume_name: String,
    driver: String,
    class: String,
    volume: PersistentVolume,
}

impl Inner {
    /// The claim's CSI snapshot: chosen (whether and with which class), then taken.
    async fn cut(&self, claim: &PersistentVolumeClaim) -> Cut {
        match self.choose(claim).await {
            Ok(choice) => self.take(claim, choice).await,
            Err(decided) => decided,
        }
    }

    /// Whether the claim is snapshotted, and with which class, by Velero's rules; what came of it
    /// (`Err`) when it is not.
    async fn choose(&self, claim: &PersistentVolumeClaim) -> Result<Choice, Cut> {
        let namespace = claim.namespace().unwrap_or_default();
        let name = claim.name_any();
        let shown = format!("claim {namespace}/{name}");
        // The claim as its volume information names it, when its data is not in the backup.
        let info = |volume: &str| BackupVolumeInfo {
            pvc_name: name.clone(),
            pvc_namespace: namespace.clone(),
            pv_name: volume.to_string(),
            skipped: true,
            ..Default::default()
        };
        let spec = claim.spec.clone().unwrap_or_default();
        let volume_name = spec.volume_name.clone().unwrap_or_default();
        let storage_class = spec.storage_class_name.clone().unwrap_or_default();
        if volume_name.is_empty() || storage_class.is_empty() {
            // Velero's rule: only a bound claim of a storage class.
            return Err(Cut::skipped(
                info(&volume_name),
                "not bound to a volume of a storage class: no CSI snapshot",
            ));
        }
        let volume = match Api::<PersistentVolume>::all(self.client.clone())
            .get(&volume_name)
            .await
        {
            Ok(volume) => volume,
            Err(error) => {
                return Err(Cut::failed(format!(
                    "{shown}: reading its volume {volume_name}: {}",
                    objects::reason(&error)
                )));
            }
        };
        // A matching volume policy decides alone; else the node agent's claims and
        // `snapshotVolumes` do.
        let by_policy = self.methods.claim_action(claim, Some(&volume));
        if let Some(action) = by_policy.filter(|a| *a != VolumeAction::Snapshot) {
            return Err(decided_by_policy(action, &shown, info(&volume_name)));
        }
        let volume_spec = volume.spec.clone().unwrap_or_default();
        let Some(driver) = volume_spec.csi.as_ref().map(|c| c.driver.clone()) else {
            return Err(Cut::skipped(
                info(&volume_name),
                "not a CSI volume: no CSI snapshot",
            ));
        };
        if by_policy.is_none() {
            let unless = info(&volume_name);
            self.not_otherwise_taken(&namespace, &name, &shown, unless)
                .await?;
        }
        let classes = match self.classes().await {
            Ok(classes) => classes,
            Err(error) => return Err(Cut::failed(format!("{shown}: {error}"))),
        };
        let class = match choose_class(
            classes,
            &driver,
            claim
                .annotations()
                .get(csi::CLAIM_CLASS)
                .map(String::as_str),
            self.backup.annotations(),
        ) {
            Ok(class) => class.name_any(),
            Err(reason) => {
                return Err(Cut {
                    warning: Some(format!(
                        "{shown} (driver {driver}) is not snapshotted: {reason}; its data is not in this backup"
                    )),
                    ..Cut::skipped(info(&volume_name), &reason)
                });
            }
        };
        Ok(Choice {
            namespace,
            name,
            shown,
            volume_name,
            driver,
            class,
            volume,
        })
    }

    /// Cuts the chosen snapshot and waits for its storage handle, within the backup's CSI
    /// snapshot timeout; labels its content with the backup. Nothing of a failed cut stays.
    async fn take(&self, claim: &PersistentVolumeClaim, choice: Choice) -> Cut {
        let Choice {
            namespace,
            name,
            shown,
            volume_name,
            driver,
            class,
            volume,
        } = choice;
        let volume_spec = volume.spec.clone().unwrap_or_default();
        let started = patch::now();
        let snapshots = csi::volume_snapshots(&self.client, &namespace);
        let made = match snapshots
            .create(&PostParams::default(), &self.volume_snapshot(claim, &class))
            .await
        {
            Ok(made) => made.name_any(),
            Err(error) => {
                return Cut::failed(format!(
                    "{shown}: creating its VolumeSnapshot: {}",
                    objects::reason(&error)
                ));
            }
        };
        let deadline = tokio::time::Instant::now() + self.timeout;
        let (content, handle, restore_size, deletion_policy) =
            match self.handle(&snapshots, &made, deadline).await {
                Ok(found) => found,
                Err(reason) => {
                    // Nothing of a failed snapshot stays in the cluster: its content goes with it
                    // (the class's policy decides for the storage snapshot).
                    let _ = snapshots.delete(&made, &DeleteParams::default()).await;
                    return Cut::failed(format!(
                        "{shown}: VolumeSnapshot {namespace}/{made}: {reason}"
                    ));
                }
            };
        // The content carries the backup's name, so that deleting the backup finds it.
        let label = json!({ "metadata": { "labels": {
            labels::BACKUP_NAME: labels::valid_label_value(&self.backup.name_any()) } } });
        if let Err(error) = csi::volume_snapshot_contents(&self.client)
            .patch(&content, &PatchParams::default(), &Patch::Merge(&label))
            .await
        {
            let _ = snapshots.delete(&made, &DeleteParams::default()).await;
            return Cut::failed(format!(
                "{shown}: labelling VolumeSnapshotContent {content}: {}",
                objects::reason(&error)
            ));
        }
        let (operation_id, moved_by) = if self.move_data {
            match self.ask_to_move(claim, &made, &class, &driver).await {
                Ok((id, upload)) => (id, Some(upload)),
                Err(error) => {
                    let _ = snapshots.delete(&made, &DeleteParams::default()).await;
                    return Cut::failed(format!("{shown}: {error}"));
                }
            }
        } else {
            (format!("{namespace}/{made}/{}", started.0), None)
        };
        Cut {
            snapshot: Some(Snapshot {
                operation_id,
                moved_by,
                namespace,
                claim: name,
                volume: volume_name,
                volume_snapshot: made,
                content,
                handle,
                driver,
                class,
                deletion_policy,
                restore_size,
                started,
                volume_info: PvInfo {
                    reclaim_policy: volume_spec
                        .persistent_volume_reclaim_policy
                        .unwrap_or_default(),
                    labels: volume.labels().clone(),
                },
            }),
            ..Default::default()
        }
    }

    /// Asks for the data of `claim`'s snapshot `made` to be moved: the operation id and the
    /// DataUpload. The data goes into the repository of the claim's namespace, made first if it is
    /// not there yet (the node agent only opens it).
    async fn ask_to_move(
        &self,
        claim: &PersistentVolumeClaim,
        made: &str,
        class: &str,
        driver: &str,
    ) -> Result<(String, DataUploadRef), String> {
        self.ensure_repository(&claim.namespace().unwrap_or_default())
            .await?;
        let id = data_movement::operation_id(&self.backup, claim);
        let source = data_movement::Source {
            volume_snapshot: made,
            snapshot_class: class,
            driver,
        };
        let upload = data_movement::data_upload(&self.backup, claim, &source, &id);
        let name = data_movement::submit(&self.client, &upload).await?;
        let namespace = self.backup.namespace().unwrap_or_default();
        Ok((id, DataUploadRef { namespace, name }))
    }

    /// Makes sure the repository of `namespace` in the backup's location exists, once per
    /// backup.
    async fn ensure_repository(&self, namespace: &str) -> Result<(), String> {
        let mut ensured = self.repositories.lock().await;
        if ensured.contains(namespace) {
            return Ok(());
        }
        let location = self
            .backup
            .spec
            .storage_location
            .clone()
            .unwrap_or_default();
        let server_namespace = self.backup.namespace().unwrap_or_default();
        repositories::ensure(&self.client, &server_namespace, &location, namespace)
            .await
            .map_err(|e| e.to_string())?;
        ensured.insert(namespace.to_string());
        Ok(())
    }

    /// The VolumeSnapshot Velero's PVC action makes.
    fn volume_snapshot(&self, claim: &PersistentVolumeClaim, class: &str) -> DynamicObject {
        // The backup's name and uid, as Velero labels the snapshots it looks for again
        // (`findExistingVSForBackup` in pkg/backup/actions/csi/pvc_action.go): a name alone
        // would also match another install's backup of that name.
        let mut snapshot_labels = claim.labels().clone();
        snapshot_labels.extend(labels::for_backup(
            &self.backup.name_any(),
            &self.backup.uid().unwrap_or_default(),
        ));
        serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1",
            "kind": "VolumeSnapshot",
            "metadata": {
                "generateName": format!("velero-{}-", claim.name_any()),
                "namespace": claim.namespace(),
                "labels": snapshot_labels,
            },
            "spec": {
                "source": { "persistentVolumeClaimName": claim.name_any() },
                "volumeSnapshotClassName": class,
            },
        }))
        .expect("a VolumeSnapshot is a valid object")
    }

    /// Waits for the snapshot's content to have a handle: the content's name, the handle, the
    /// size, and the content's deletion policy. A read that fails is tried again until the
    /// deadline; the driver's last error is in the reason given then.
    async fn handle(
        &self,
        snapshots: &Api<DynamicObject>,
        name: &str,
        deadline: tokio::time::Instant,
    ) -> Result<(String, String, Option<i64>, String), String> {
        let contents = csi::volume_snapshot_contents(&self.client);
        let mut last = String::from("the snapshot controller never bound a content to it");
        loop {
            match snapshots.get_opt(name).await {
                Ok(None) => return Err("deleted before its snapshot was cut".into()),
                Ok(Some(snapshot)) => {
                    let status = SnapshotStatus::of(&snapshot.data);
                    if let Some(error) = status.error {
                        last = format!("the snapshot controller said: {error}");
                    }
                    if let Some(bound) = status.bound_content {
                        last = format!("its content {bound} has no snapshot handle yet");
                        match contents.get_opt(bound).await {
                            Ok(Some(content)) => {
                                let content = ContentStatus::of(&content.data);
                                if let Some(error) = content.error {
                                    last = format!("the driver said: {error}");
                                }
                                if let Some(handle) = content.snapshot_handle {
                                    return Ok((
                                        bound.to_string(),
                                        handle.to_string(),
                                        content.restore_size,
                                        content.deletion_policy.to_string(),
                                    ));
                                }
                            }
                            Ok(None) => {}
                            Err(error) => {
                                last = format!("reading {bound}: {}", objects::reason(&error))
                            }
                        }
                    }
                }
                Err(error) => last = format!("reading it: {}", objects::reason(&error)),
            }
            if tokio::time::Instant::now() + POLL > deadline {
                return Err(format!(
                    "no snapshot handle within the backup's csiSnapshotTimeout of {}: {last}",
                    ark_api::duration::format(self.timeout)
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Velero's legacy rule: a claim that a pod backs up with the node agent is not snapshotted.
    /// With no policy matching the claim: `Ok` when it is to be snapshotted, as no pod sends it
    /// to the node agent and the backup snapshots volumes; what came of it otherwise.
    async fn not_otherwise_taken(
        &self,
        namespace: &str,
        claim: &str,
        shown: &str,
        skipped: BackupVolumeInfo,
    ) -> Result<(), Cut> {
        match self.backed_up_by_node_agent(namespace, claim).await {
            Ok(true) => return Err(Cut::default()),
            Ok(false) => {}
            Err(error) => return Err(Cut::failed(format!("{shown}: {error}"))),
        }
        if !self.enabled {
            return Err(Cut::skipped(
                skipped,
                "the backup does not snapshot volumes (snapshotVolumes: false)",
            ));
        }
        Ok(())
    }

    async fn backed_up_by_node_agent(&self, namespace: &str, claim: &str) -> Result<bool, String> {
        let pods = {
            let mut cached = self.pods.lock().await;
            match cached.get(namespace) {
                Some(pods) => pods.clone(),
                None => {
                    let listed = Api::<Pod>::namespaced(self.client.clone(), namespace)
                        .list(&ListParams::default())
                        .await
                        .map_err(|e| {
                            format!("listing the pods that use it: {}", objects::reason(&e))
                        })?;
                    let pods = Arc::new(listed.items);
                    cached.insert(namespace.to_string(), pods.clone());
                    pods
                }
            }
        };
        Ok(pods.iter().any(|pod| {
            pod.spec
                .iter()
                .flat_map(|s| s.volumes.iter().flatten())
                .any(|v| {
                    self.methods.annotated(pod, &v.name)
                        && v.persistent_volume_claim
                            .as_ref()
                            .is_some_and(|c| c.claim_name == claim)
                })
        }))
    }

    async fn classes(&self) -> Result<&Vec<DynamicObject>, String> {
        self.classes
            .get_or_try_init(|| async {
                csi::volume_snapshot_classes(&self.client)
                    .list(&ListParams::default())
                    .await
                    .map(|list| list.items)
                    .map_err(|e| {
                        format!("listing the VolumeSnapshotClasses: {}", objects::reason(&e))
                    })
            })
            .await
    }
}

/// Deletes the VolumeSnapshots a backup cut, in every namespace, for a backup that failed before
/// it was uploaded: no backup holds them, and their contents go with them as their classes say.
/// Chosen by the backup's uid as well as its name: a backup of that name made by another
/// install (Velero's, a second ark's) keeps its snapshots. How many went; none where the cluster
/// serves no snapshots.
pub async fn remove_cut(client: &Client, backup_name: &str, uid: &str) -> Result<usize, String> {
    let selector = labels::selector_for_backup(backup_name, uid);
    let listed = match csi::all_volume_snapshots(client)
        .list(&ListParams::default().labels(&selector))
        .await
    {
        Ok(listed) => listed.items,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(0),
        Err(error) => return Err(objects::reason(&error)),
    };
    for snapshot in &listed {
        let namespace = snapshot.namespace().unwrap_or_default();
        patch::ignore_not_found(
            csi::volume_snapshots(client, &namespace)
                .delete(&snapshot.name_any(), &DeleteParams::default())
                .await,
        )
        .map_err(|e| objects::reason(&e))?;
    }
    Ok(listed.len())
}

/// The backup's record of its volumes as its main pass ends: each snapshot not ready to use (or
/// its data not moved) yet, each claim whose data it does not hold.
pub fn volume_info(backup: &Backup, cuts: &[Arc<Cut>]) -> Vec<BackupVolumeInfo> {
    let mut volumes: Vec<BackupVolumeInfo> = cuts
        .iter()
        .flat_map(|cut| {
            let snapshot = cut.snapshot.as_ref().map(|s| match &s.moved_by {
                Some(_) => moved_volume_info(backup, s),
                None => snapshot_volume_info(s),
            });
            snapshot.into_iter().chain(cut.skipped.clone())
        })
        .collect();
    volumes.sort_by(|a, b| (&a.pvc_namespace, &a.pvc_name).cmp(&(&b.pvc_namespace, &b.pvc_name)));
    volumes
}

fn snapshot_volume_info(s: &Snapshot) -> BackupVolumeInfo {
    BackupVolumeInfo {
        pvc_name: s.claim.clone(),
        pvc_namespace: s.namespace.clone(),
        pv_name: s.volume.clone(),
        backup_method: Some(BackupMethod::CsiSnapshot),
        preserve_local_snapshot: true,
        start_timestamp: Some(s.started.clone()),
        csi_snapshot_info: Some(CsiSnapshotInfo {
            snapshot_handle: s.handle.clone(),
            size: s.restore_size.unwrap_or_default(),
            driver: s.driver.clone(),
            vsc_name: s.content.clone(),
            operation_id: s.operation_id.clone(),
            ready_to_use: Some(false),
            volume_snapshot_class: s.class.clone(),
            ..Default::default()
        }),
        pv_info: Some(s.volume_info.clone()),
        ..Default::default()
    }
}

/// A moved snapshot as Velero records it before its upload ends
/// (`generateVolumeInfoFromDataUpload`): the snapshot's own details unknown, the upload's
/// operation; the kopia snapshot, size and result are filled in when the backup is finalized.
fn moved_volume_info(backup: &Backup, s: &Snapshot) -> BackupVolumeInfo {
    const UNKNOWN: &str = "unknown";
    let data_mover = (backup.spec.datamover.clone())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "velero".into());
    BackupVolumeInfo {
        pvc_name: s.claim.clone(),
        pvc_namespace: s.namespace.clone(),
        pv_name: s.volume.clone(),
        backup_method: Some(BackupMethod::CsiSnapshot),
        snapshot_data_moved: true,
        csi_snapshot_info: Some(CsiSnapshotInfo {
            snapshot_handle: UNKNOWN.into(),
            vsc_name: UNKNOWN.into(),
            operation_id: UNKNOWN.into(),
            driver: s.driver.clone(),
            ..Default::default()
        }),
        snapshot_data_movement_info: Some(SnapshotDataMovementInfo {
            data_mover,
            uploader_type: "kopia".into(),
            operation_id: s.operation_id.clone(),
            ..Default::default()
        }),
        pv_info: Some(s.volume_info.clone()),
        ..Default::default()
    }
}

/// One operation per snapshot: the backup is finalized once each is ready to use (or its data
/// moved), or failed. What the operation names is written again then, as it ended: the
/// VolumeSnapshot and its content, or the DataUpload.
pub fn operations(backup: &Backup, cuts: &[Arc<Cut>]) -> Vec<BackupOperation> {
    let now = patch::now();
    cuts.iter()
        .filter_map(|cut| cut.snapshot.as_ref())
        .map(|s| {
            let (action, item, post_operation_items) = match &s.moved_by {
                Some(data_upload) => (
                    data_movement::PVC_ACTION,
                    ResourceIdentifier {
                        group: String::new(),
                        resource: "persistentvolumeclaims".into(),
                        namespace: s.namespace.clone(),
                        name: s.claim.clone(),
                    },
                    vec![ResourceIdentifier {
                        group: "velero.io".into(),
                        resource: "datauploads".into(),
                        namespace: data_upload.namespace.clone(),
                        name: data_upload.name.clone(),
                    }],
                ),
                None => {
                    let snapshot = ResourceIdentifier {
                        group: csi::GROUP.into(),
                        resource: "volumesnapshots".into(),
                        namespace: s.namespace.clone(),
                        name: s.volume_snapshot.clone(),
                    };
                    let content = ResourceIdentifier {
                        group: csi::GROUP.into(),
                        resource: "volumesnapshotcontents".into(),
                        namespace: String::new(),
                        name: s.content.clone(),
                    };
                    (
                        csi::SNAPSHOT_ACTION,
                        snapshot.clone(),
                        vec![snapshot, content],
                    )
                }
            };
            BackupOperation {
                spec: BackupOperationSpec {
                    backup_name: backup.name_any(),
                    backup_uid: backup.metadata.uid.clone().unwrap_or_default(),
                    backup_item_action: action.into(),
                    resource_identifier: item,
                    operation_id: s.operation_id.clone(),
                    post_operation_items,
                },
                status: OperationStatus {
                    phase: OperationPhase::InProgress,
                    created: Some(s.started.clone()),
                    started: Some(s.started.clone()),
                    updated: Some(now.clone()),
                    ..Default::default()
                },
            }
        })
        .collect()
}

impl Cut {
    /// A claim whose data this backup does not hold, and why.
    fn skipped(mut info: BackupVolumeInfo, reason: &str) -> Cut {
        info.skipped_reason = reason.to_string();
        Cut {
            skipped: Some(info),
            ..Default::default()
        }
    }

    fn failed(error: String) -> Self {
        Cut {
            error: Some(error),
            ..Default::default()
        }
    }
}

/// The VolumeSnapshotClass for a claim of `driver`, in Velero's order (`GetVolumeSnapshotClass`):
/// the claim's annotation, the backup's annotation for the driver, the class of the driver
/// labelled for Velero, the driver's default class, the driver's only class.
/// What came of a claim a volume policy does not snapshot: nothing for the node agent's (its pod's
/// volume backup holds the data); skipped, as the policy said; skipped with a warning for a custom
/// action, which Velero leaves to a plugin and ark has none of.
fn decided_by_policy(action: VolumeAction, shown: &str, skipped: BackupVolumeInfo) -> Cut {
    match action {
        VolumeAction::FsBackup => Cut::default(),
        VolumeAction::Custom => Cut {
            warning: Some(format!(
                "{shown} matches a volume policy with a custom action, which Velero leaves to a \
                 plugin and ark runs none of: its data is not in this backup"
            )),
            ..Cut::skipped(
                skipped,
                "matched action is 'custom' in chosen resource policies",
            )
        },
        _ => Cut::skipped(
            skipped,
            "matched action is 'skip' in chosen resource policies",
        ),
    }
}

fn choose_class<'a>(
    classes: &'a [DynamicObject],
    driver: &str,
    claim_annotation: Option<&str>,
    backup_annotations: &BTreeMap<String, String>,
) -> Result<&'a DynamicObject, String> {
    fn class_driver(class: &DynamicObject) -> Option<&str> {
        class.data.get("driver").and_then(Value::as_str)
    }
    let named = |name: &str, by: &str| {
        let class = classes
            .iter()
            .find(|c| c.name_any() == name)
            .ok_or_else(|| format!("VolumeSnapshotClass {name} (named by {by}) does not exist"))?;
        match class_driver(class) {
            Some(d) if d.eq_ignore_ascii_case(driver) => Ok(class),
            other => Err(format!(
                "VolumeSnapshotClass {name} (named by {by}) is for driver {:?}, not {driver}",
                other.unwrap_or_default()
            )),
        }
    };
    if let Some(name) = claim_annotation.filter(|n| !n.is_empty()) {
        return named(
            name,
            &format!("the claim's annotation {}", csi::CLAIM_CLASS),
        );
    }
    let backup_key = format!("{}{}", csi::BACKUP_CLASS_PREFIX, driver.to_lowercase());
    if let Some(name) = backup_annotations
        .get(&backup_key)
        .filter(|n| !n.is_empty())
    {
        return named(name, &format!("the backup's annotation {backup_key}"));
    }
    let of_driver: Vec<&DynamicObject> = classes
        .iter()
        .filter(|c| class_driver(c).is_some_and(|d| d.eq_ignore_ascii_case(driver)))
        .collect();
    let flagged =
        |meta: &BTreeMap<String, String>, key: &str| meta.get(key).is_some_and(|v| v == "true");
    if let Some(class) = of_driver
        .iter()
        .find(|c| flagged(c.labels(), csi::CLASS_LABEL))
    {
        return Ok(class);
    }
    if let Some(class) = of_driver
        .iter()
        .find(|c| flagged(c.annotations(), csi::DEFAULT_CLASS))
    {
        return Ok(class);
    }
    match of_driver.as_slice() {
        [only] => Ok(only),
        [] => Err("no VolumeSnapshotClass for its driver".into()),
        _ => Err(format!(
            "{} VolumeSnapshotClasses for its driver and none labelled {}=true or annotated {}=true",
            of_driver.len(),
            csi::CLASS_LABEL,
            csi::DEFAULT_CLASS
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, driver: &str, labels: Value, annotations: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": { "name": name, "labels": labels, "annotations": annotations },
            "driver": driver, "deletionPolicy": "Delete",
        }))
        .unwrap()
    }

    fn chosen(
        classes: &[DynamicObject],
        claim: Option<&str>,
        backup: &[(&str, &str)],
    ) -> Result<String, String> {
        let backup = backup
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        choose_class(classes, "disk.csi", claim, &backup).map(|c| c.name_any())
    }

    #[test]
    fn a_class_is_chosen_in_velero_s_order() {
        let none = json!({});
        let labelled = json!({ "velero.io/csi-volumesnapshot-class": "true" });
        let default = json!({ "snapshot.storage.kubernetes.io/is-default-class": "true" });
        let classes = [
            class("plain", "disk.csi", none.clone(), none.clone()),
            class("default", "disk.csi", none.clone(), default.clone()),
            class("labelled", "disk.csi", labelled.clone(), none.clone()),
            class(
                "other-driver",
                "file.csi",
                labelled.clone(),
                default.clone(),
            ),
        ];
        // The claim's annotation first, then the backup's for the driver (lower-cased).
        assert_eq!(chosen(&classes, Some("plain"), &[]).unwrap(), "plain");
        let backup = [("velero.io/csi-volumesnapshot-class_disk.csi", "default")];
        assert_eq!(chosen(&classes, None, &backup).unwrap(), "default");
        assert_eq!(chosen(&classes, Some("plain"), &backup).unwrap(), "plain");
        // Then the labelled class, the default one, the only one.
        assert_eq!(chosen(&classes, None, &[]).unwrap(), "labelled");
        assert_eq!(chosen(&classes[..2], None, &[]).unwrap(), "default");
        assert_eq!(chosen(&classes[..1], None, &[]).unwrap(), "plain");
    }

    #[test]
    fn a_claim_without_a_usable_class_is_told_why() {
        let none = json!({});
        let classes = [
            class("a", "disk.csi", none.clone(), none.clone()),
            class("b", "disk.csi", none.clone(), none.clone()),
            class("files", "file.csi", none.clone(), none.clone()),
        ];
        assert_eq!(
            chosen(&classes, None, &[]).unwrap_err(),
            "2 VolumeSnapshotClasses for its driver and none labelled velero.io/csi-volumesnapshot-class=true or annotated snapshot.storage.kubernetes.io/is-default-class=true"
        );
        assert_eq!(
            chosen(&classes[2..], None, &[]).unwrap_err(),
            "no VolumeSnapshotClass for its driver"
        );
        assert_eq!(
            chosen(&classes, Some("files"), &[]).unwrap_err(),
            "VolumeSnapshotClass files (named by the claim's annotation velero.io/csi-volumesnapshot-class) is for driver \"file.csi\", not disk.csi"
        );
        assert_eq!(
            chosen(&classes, Some("gone"), &[]).unwrap_err(),
            "VolumeSnapshotClass gone (named by the claim's annotation velero.io/csi-volumesnapshot-class) does not exist"
        );
    }
}
