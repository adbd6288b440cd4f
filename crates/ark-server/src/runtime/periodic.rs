//! The one periodic mechanism: a kube-runtime Controller over one kind that reconciles each object
//! when it appears, when its spec changes, and again after the interval its last run asked for (a
//! requeue), or never again until its spec changes when it asked for none (a location whose
//! `validationFrequency` is 0). Location checks, backup sync and garbage collection run on it. An
//! entry of the schedule goes once its time has passed (a run is due then anyway), so entries of
//! objects that are gone, or of specs they no longer have, last one interval; one that waits for a
//! spec change stays (one per such object and spec).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Resource;
use kube::runtime::controller::Action;

use crate::runtime::context::Kube;
use crate::runtime::controller;
use crate::runtime::objects::{Readable, Summary};
use crate::runtime::sync::Locked;
use serde::de::DeserializeOwned;

/// How many objects' runs go at once: a server that starts beside thousands of backups looks at
/// each in turn, not at all of them together (each run holds its own copy of its object).
const AT_ONCE: u16 = 16;

/// Runs `reconcile` for every object of kind `K` in the server's namespace until the server stops;
/// each run returns when to run again (`None`: only once the object's spec changes). The watch
/// keeps summaries ([`controller::run_summarized`]); a run that is due reads its object first.
pub async fn run<K, C, F, Fut>(ctx: Arc<C>, reconcile: F)
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
    C: AsRef<Kube> + Send + Sync + 'static,
    F: Fn(Arc<Readable<K>>, Arc<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Duration>> + Send + 'static,
{
    // Status is part of these objects (Velero's CRDs have no status subresource), so a run's own
    // status write comes back as a change: only a new object or a changed spec runs out of turn.
    let due: Arc<Mutex<Due>> = Arc::default();
    let reconcile = Arc::new(reconcile);
    let run_when_due = move |summary: Arc<Summary<K>>, ctx: Arc<C>| {
        let (due, reconcile) = (due.clone(), reconcile.clone());
        async move {
            let key = identity_and_spec(&summary);
            let now = Instant::now();
            let waiting = due.locked().not_before(key, now);
            match waiting {
                Some(Wait::Until(next_run)) => return Ok(Action::requeue(next_run - now)),
                Some(Wait::SpecChange) => return Ok(Action::await_change()),
                None => {}
            }
            let kube: &Kube = (*ctx).as_ref();
            let Some(object) = summary.read(&kube.client).await? else {
                return Ok(Action::await_change());
            };
            let interval = reconcile(Arc::new(object), ctx).await;
            due.locked().ran(key, now, interval);
            Ok(interval.map_or_else(Action::await_change, Action::requeue))
        }
    };
    let woken = controller::Woken::Never;
    controller::run_summarized::<K, _, _, _>(ctx, "periodic", AT_ONCE, woken, run_when_due).await;
}

/// When each object (by [`identity_and_spec`]) may run next: at an instant, or (`None`) once its
/// spec changes.
#[derive(Default)]
struct Due(HashMap<u64, Option<Instant>>);

/// Why an object may not run now.
#[derive(Debug, PartialEq)]
enum Wait {
    Until(Instant),
    SpecChange,
}

impl Due {
    /// Why the object may not run now, if it may not.
    fn not_before(&self, key: u64, now: Instant) -> Option<Wait> {
        match self.0.get(&key)? {
            Some(at) if *at > now => Some(Wait::Until(*at)),
            Some(_) => None,
            None => Some(Wait::SpecChange),
        }
    }

    /// It ran at `now` and asked to run again after `interval` (`None`: once its spec changes);
    /// entries past their time go.
    fn ran(&mut self, key: u64, now: Instant, interval: Option<Duration>) {
        self.0.retain(|_, at| at.is_none_or(|at| at > now));
        self.0.insert(key, interval.map(|interval| now + interval));
    }
}

/// What makes a run due out of turn: the object's identity and spec.
fn identity_and_spec<K>(summary: &Summary<K>) -> u64
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    summary.meta.uid.hash(&mut hasher);
    summary.spec_digest().hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_go_once_their_time_has_passed() {
        let mut due = Due::default();
        let start = Instant::now();
        let minute = Duration::from_secs(60);
        due.ran(1, start, Some(minute));
        due.ran(2, start, Some(minute * 2));
        due.ran(4, start, None);
        assert_eq!(due.not_before(1, start), Some(Wait::Until(start + minute)));
        assert_eq!(due.not_before(1, start + minute), None);
        // Object 3 runs after 1's time: 1's entry goes, 2's and 4's stay.
        due.ran(3, start + minute, Some(minute));
        assert_eq!(due.0.len(), 3);
        assert_eq!(
            due.not_before(2, start + minute),
            Some(Wait::Until(start + minute * 2))
        );
        // 4 asked to run again only once its spec changes (a new key): never by the clock.
        assert_eq!(
            due.not_before(4, start + minute * 1000),
            Some(Wait::SpecChange)
        );
    }

    #[test]
    fn a_status_write_does_not_run_an_object_out_of_turn_a_spec_change_does() {
        // Read as the watch reads it.
        let object = |uid: &str, spec: serde_json::Value, status: serde_json::Value| {
            serde_json::from_value::<Summary<ark_api::BackupStorageLocation>>(serde_json::json!({
                "metadata": { "name": "default", "uid": uid }, "spec": spec, "status": status,
            }))
            .unwrap()
        };
        let checked = object(
            "u1",
            serde_json::json!({ "bucket": "b" }),
            serde_json::json!({}),
        );
        let available = object(
            "u1",
            serde_json::json!({ "bucket": "b" }),
            serde_json::json!({ "phase": "Available" }),
        );
        let moved = object(
            "u1",
            serde_json::json!({ "bucket": "c" }),
            serde_json::json!({}),
        );
        let recreated = object(
            "u2",
            serde_json::json!({ "bucket": "b" }),
            serde_json::json!({}),
        );
        let hash = identity_and_spec;
        assert_eq!(hash(&checked), hash(&available));
        assert_ne!(hash(&checked), hash(&moved));
        assert_ne!(hash(&checked), hash(&recreated));
    }
}
