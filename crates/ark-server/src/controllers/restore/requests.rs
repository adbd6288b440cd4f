//! What a restore asks the node agents for (PodVolumeRestores, DataDownloads): made as Velero
//! makes them, named after the restore, labelled with it and owned by it, and watched until they
//! end.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use ark_api::{PodVolumePhase, labels};
use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// The metadata of a request the restore makes in `namespace`: Velero's generated name, labels
/// (the restore's name and uid, then `labels`) and owner reference.
pub fn metadata(
    restore: &ark_api::Restore,
    namespace: &str,
    labels: impl IntoIterator<Item = (String, String)>,
) -> ObjectMeta {
    let restore_name = restore.name_any();
    let restore_uid = restore.metadata.uid.clone().unwrap_or_default();
    let mut all = BTreeMap::from([
        (
            labels::RESTORE_NAME.to_string(),
            labels::valid_label_value(&restore_name),
        ),
        (labels::RESTORE_UID.to_string(), restore_uid.clone()),
    ]);
    all.extend(labels);
    ObjectMeta {
        generate_name: Some(format!("{restore_name}-")),
        namespace: Some(namespace.to_string()),
        labels: Some(all),
        owner_references: Some(vec![OwnerReference {
            api_version: ark_api::API_VERSION.into(),
            kind: "Restore".into(),
            name: restore_name,
            uid: restore_uid,
            controller: Some(true),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// The requests of kind `K` of one restore, each as last seen by a watch of its label.
pub struct Seen<K: Clone> {
    seen: watch::Receiver<BTreeMap<String, K>>,
    watching: tokio::task::JoinHandle<()>,
}

impl<K> Seen<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Watches the requests in `api` labelled with `restore_uid`.
    pub fn start(api: Api<K>, restore_uid: &str) -> Self {
        let selector = format!("{}={restore_uid}", labels::RESTORE_UID);
        let (seen_tx, seen) = watch::channel(BTreeMap::new());
        let watching = tokio::spawn(async move {
            let events = watcher(api, watcher::Config::default().labels(&selector))
                .default_backoff()
                .applied_objects()
                .filter_map(|request| async move { request.ok() });
            futures::pin_mut!(events);
            while let Some(request) = events.next().await {
                seen_tx.send_modify(|seen| {
                    seen.insert(request.name_any(), request);
                });
            }
        });
        Seen { seen, watching }
    }

    /// Waits until each of `made` has ended (its `phase` final), at most `timeout`: whether
    /// they all did.
    pub async fn wait(
        &mut self,
        made: &[String],
        timeout: Duration,
        phase: impl Fn(&K) -> Option<PodVolumePhase>,
    ) -> bool {
        let ended = |seen: &BTreeMap<String, K>| {
            made.iter().all(|name| {
                (seen.get(name))
                    .and_then(&phase)
                    .is_some_and(PodVolumePhase::is_final)
            })
        };
        matches!(
            tokio::time::timeout(timeout, self.seen.wait_for(ended)).await,
            Ok(Ok(_))
        )
    }

    /// Request `name` as last seen.
    pub fn get(&self, name: &str) -> Option<K> {
        self.seen.borrow().get(name).cloned()
    }
}

impl<K: Clone> Drop for Seen<K> {
    fn drop(&mut self) {
        self.watching.abort();
    }
}
