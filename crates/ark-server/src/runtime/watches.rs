//! One watch and one cache per summarized kind in a term, followed by every controller of that
//! kind: the backup, backup operations, garbage collection and verification controllers share
//! one cache of Backups rather than holding four. A follower gets every object once the kind is
//! listed, then each change as it comes, through a bounded channel that never waits for a slow
//! follower: one that falls behind, or a watch that lists its kind again, takes every object from
//! the cache again, so no change is missed and nothing grows without bound. The watches end with
//! the term.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::runtime::objects::Summary;
use crate::runtime::sync::Locked;

/// How many changes a follower may fall behind before it takes the whole cache again.
const BEHIND: usize = 1024;

/// The term's watches, one per kind, each started by its first follower.
#[derive(Default)]
pub struct SharedWatches {
    kinds: Mutex<HashMap<TypeId, Box<dyn Any + Send + Sync>>>,
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// One kind's cache of summaries, and its changes as they are applied to it.
struct Shared<K: Resource<DynamicType = ()> + 'static> {
    cache: Store<Summary<K>>,
    changes: broadcast::Sender<Change<Summary<K>>>,
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for Shared<K> {
    fn clone(&self) -> Self {
        Shared {
            cache: self.cache.clone(),
            changes: self.changes.clone(),
        }
    }
}

enum Change<W> {
    /// The object as the cache now holds it.
    Applied(Arc<W>),
    /// The kind was listed (at the start, or again after the watch lost its place).
    Listed,
}

impl<W> Clone for Change<W> {
    fn clone(&self) -> Self {
        match self {
            Change::Applied(object) => Change::Applied(object.clone()),
            Change::Listed => Change::Listed,
        }
    }
}

impl SharedWatches {
    /// The cache of kind `K`'s summaries in `namespace`, and its objects as they change (every one
    /// of them first, whenever the follower joined), the kind's watch started if it is not yet.
    pub fn follow<K>(
        &self,
        client: &kube::Client,
        namespace: &str,
    ) -> (Store<Summary<K>>, BoxStream<'static, Arc<Summary<K>>>)
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
    {
        let shared = {
            let mut kinds = self.kinds.locked();
            let kind = kinds
                .entry(TypeId::of::<K>())
                .or_insert_with(|| Box::new(self.watch::<K>(client, namespace)));
            (kind.downcast_ref::<Shared<K>>())
                .expect("a kind's watch is kept under its own type")
                .clone()
        };
        // Subscribed before the cache is read: a change between the two is seen twice, never not.
        let changes = shared.changes.subscribe();
        let objects = follower(shared.cache.clone(), changes);
        (shared.cache, objects)
    }

    fn watch<K>(&self, client: &kube::Client, namespace: &str) -> Shared<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
    {
        let api = kube::Api::<Summary<K>>::namespaced_with(client.clone(), namespace, &());
        let mut writer = Writer::<Summary<K>>::new(());
        let cache = writer.as_reader();
        let (changes, _) = broadcast::channel(BEHIND);
        let shared = Shared {
            cache: cache.clone(),
            changes: changes.clone(),
        };
        let task = tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(error) => {
                        tracing::warn!("watching {}s: {error}", K::kind(&()));
                        continue;
                    }
                };
                writer.apply_watcher_event(&event);
                // Nobody following yet is no error: each follower starts from the cache.
                match &event {
                    watcher::Event::Apply(object) => {
                        if let Some(cached) = cache.get(&ObjectRef::from_obj(object)) {
                            let _ = changes.send(Change::Applied(cached));
                        }
                    }
                    watcher::Event::InitDone => {
                        let _ = changes.send(Change::Listed);
                    }
                    _ => {}
                }
            }
        });
        self.tasks.locked().push(task.abort_handle());
        shared
    }
}

impl Drop for SharedWatches {
    fn drop(&mut self) {
        for task in self.tasks.locked().drain(..) {
            task.abort();
        }
    }
}

/// The cache's objects, then each change; the cache's objects again whenever the kind is listed
/// again or the follower has fallen behind.
fn follower<W>(
    cache: Store<W>,
    changes: broadcast::Receiver<Change<W>>,
) -> BoxStream<'static, Arc<W>>
where
    W: Resource + Clone + Send + Sync + 'static,
    W::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    let replay: VecDeque<_> = cache.state().into();
    futures::stream::unfold(
        (cache, changes, replay),
        |(cache, mut changes, mut replay)| async move {
            loop {
                if let Some(object) = replay.pop_front() {
                    return Some((object, (cache, changes, replay)));
                }
                match changes.recv().await {
                    Ok(Change::Applied(object)) => return Some((object, (cache, changes, replay))),
                    Ok(Change::Listed) | Err(RecvError::Lagged(_)) => replay = cache.state().into(),
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    )
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;

    fn backup(name: &str) -> Summary<ark_api::Backup> {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "namespace": "velero" },
        }))
        .unwrap()
    }

    fn names(objects: &[Arc<Summary<ark_api::Backup>>]) -> std::collections::BTreeSet<String> {
        objects.iter().map(|o| o.name()).collect()
    }

    /// A follower that joined before the listing and one that joined after it both see every
    /// object, however far behind they fell.
    #[tokio::test]
    async fn followers_see_every_object_whenever_they_joined_and_however_far_behind() {
        let mut writer = Writer::<Summary<ark_api::Backup>>::new(());
        let cache = writer.as_reader();
        let (changes, _) = broadcast::channel(2);
        let early = follower(cache.clone(), changes.subscribe());
        let listed = ["b1", "b2"];
        writer.apply_watcher_event(&Event::Init);
        for name in listed {
            writer.apply_watcher_event(&Event::InitApply(backup(name)));
        }
        writer.apply_watcher_event(&Event::InitDone);
        let _ = changes.send(Change::Listed);
        let late = follower(cache.clone(), changes.subscribe());
        // Three changes in room for two: both followers fall behind.
        for name in ["b3", "b4", "b5"] {
            let object = backup(name);
            writer.apply_watcher_event(&Event::Apply(object.clone()));
            let cached = cache.get(&ObjectRef::from_obj(&object)).unwrap();
            let _ = changes.send(Change::Applied(cached));
        }
        drop(changes);
        let all = ["b1", "b2", "b3", "b4", "b5"].map(String::from).into();
        for follower in [early, late] {
            let seen: Vec<_> = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                follower.collect::<Vec<_>>(),
            )
            .await
            .expect("a follower ends once the watch is gone");
            assert_eq!(names(&seen), all);
        }
    }
}
