//! Reading ark's kinds as the API server stores them. Velero's CRDs keep embedded objects (init
//! containers, hooks, selectors) free-form, so the API server accepts objects that ark's types
//! cannot read: each is read on its own, and one that does not fit fails alone, with the field
//! and the reason, never a whole list, a watch or a controller.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

/// The kind's objects in `namespace`, untyped.
pub fn api<K: Resource<DynamicType = ()>>(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &resource::<K>())
}

pub fn resource<K: Resource<DynamicType = ()>>() -> ApiResource {
    ApiResource::erase::<K>(&())
}

pub use ark_api::read::{Unfit, typed};

/// An object of kind `K` as its watch delivered it, read at the controller's boundary: as `K`, or
/// where and why it does not fit. The watch itself stays untyped, so that one object that does
/// not fit never breaks it; the stored object stays beside what was read, for what is read
/// whatever the object's shape (its name, version and phase, its spec as written).
pub struct Readable<K> {
    pub stored: DynamicObject,
    pub read: Result<K, Unfit>,
}

impl<K: DeserializeOwned> Readable<K> {
    pub fn new(stored: DynamicObject) -> Self {
        let read = typed(&stored);
        Readable { stored, read }
    }
}

impl<K> Readable<K> {
    pub fn name(&self) -> String {
        self.stored.name_any()
    }

    /// Its phase as stored, whether or not the rest fits.
    pub fn phase<P: DeserializeOwned>(&self) -> Phase<P> {
        phase(&self.stored)
    }
}

/// Drops from a watched object what no controller reads of its own kind's objects, before the
/// watch's cache keeps it: `metadata.managedFields` and kubectl's last-applied copy of the object.
pub fn trim_cached(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
    if let Some(annotations) = object.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// An object of kind `K` as a summarizing watch reads it: its identity and resourceVersion, the
/// labels ark decides on before reading ([`SUMMARY_LABELS`]), finalizers and deletion, its `status.phase` and a digest of its spec; not its spec, status,
/// annotations or field managers, which are most of a Backup. Enough to tell whether there is
/// work, never enough to do it: [`Summary::read`] gets the object as it is now, so each reconcile
/// acts on a fresh read, and a cache of summaries stays small whatever the number of objects.
///
/// It is read straight from the watch's JSON (no tree of the object is built), and it is a kind
/// of its own to kube ([`Resource`] with no dynamic type): its keys and queued reconciles carry
/// no description of the kind.
pub struct Summary<K> {
    pub meta: ObjectMeta,
    /// `status.phase` as stored, whatever its type.
    phase: Option<serde_json::Value>,
    spec_digest: u64,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()> + DeserializeOwned> Summary<K> {
    pub fn name(&self) -> String {
        self.meta.name.clone().unwrap_or_default()
    }

    /// Its phase as the watch saw it.
    pub fn phase<P: DeserializeOwned>(&self) -> Phase<P> {
        phase_of(self.phase.as_ref())
    }

    /// What tells its spec apart from another of the same object's.
    pub fn spec_digest(&self) -> u64 {
        self.spec_digest
    }

    /// The object as the API server has it now; None once it is gone.
    pub async fn read(&self, client: &Client) -> kube::Result<Option<Readable<K>>> {
        let api = api::<K>(client, self.meta.namespace.as_deref().unwrap_or_default());
        Ok(api.get_opt(&self.name()).await?.map(Readable::new))
    }
}

impl<K> Clone for Summary<K> {
    fn clone(&self) -> Self {
        Summary {
            meta: self.meta.clone(),
            phase: self.phase.clone(),
            spec_digest: self.spec_digest,
            kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Summary<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summary")
            .field("meta", &self.meta)
            .field("phase", &self.phase)
            .field("spec_digest", &self.spec_digest)
            .finish()
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Summary<K> {
    type DynamicType = ();
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &()) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

impl<'de, K> Deserialize<'de> for Summary<K> {
    fn deserialize<D: serde::Deserializer<'de>>(object: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<serde_json::Value>,
            #[serde(default)]
            status: PhaseOnly,
        }
        let Stored {
            metadata,
            spec,
            status,
        } = Stored::deserialize(object)?;
        Ok(Summary {
            meta: ObjectMeta {
                name: metadata.name,
                namespace: metadata.namespace,
                uid: metadata.uid,
                resource_version: metadata.resource_version,
                labels: metadata.labels.map(|labels| {
                    (labels.into_iter())
                        .filter(|(label, _)| SUMMARY_LABELS.contains(&label.as_str()))
                        .collect()
                }),
                finalizers: metadata.finalizers,
                deletion_timestamp: metadata.deletion_timestamp,
                ..ObjectMeta::default()
            },
            phase: status.0,
            spec_digest: digest(spec.as_ref()),
            kind: PhantomData,
        })
    }
}

/// The labels a summary keeps: those a controller decides on before it reads the object (the
/// tenant whose lane an operation waits in). Every other label would cost each of thousands of
/// summaries a map of its own.
const SUMMARY_LABELS: &[&str] = &[ark_api::labels::TENANT_NAMESPACE];

/// A status's `phase`, the rest of it skipped unread; a status of any shape is read (one that is
/// not an object has no phase), as the API server stores whatever Velero's CRDs let through.
#[derive(Default)]
struct PhaseOnly(Option<serde_json::Value>);

impl<'de> Deserialize<'de> for PhaseOnly {
    fn deserialize<D: serde::Deserializer<'de>>(status: D) -> Result<Self, D::Error> {
        status.deserialize_any(PhaseOnlyVisitor)
    }
}

struct PhaseOnlyVisitor;

impl<'de> serde::de::Visitor<'de> for PhaseOnlyVisitor {
    type Value = PhaseOnly;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a status")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut status: A) -> Result<PhaseOnly, A::Error> {
        let mut phase = None;
        while let Some(field) = status.next_key::<Cow<'de, str>>()? {
            if field == "phase" {
                phase = Some(status.next_value()?);
            } else {
                status.next_value::<IgnoredAny>()?;
            }
        }
        Ok(PhaseOnly(phase))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<PhaseOnly, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(PhaseOnly(None))
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, status: D) -> Result<PhaseOnly, D::Error> {
        status.deserialize_any(self)
    }

    fn visit_none<E>(self) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
    fn visit_unit<E>(self) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<PhaseOnly, E> {
        Ok(PhaseOnly(None))
    }
}

fn digest(value: Option<&serde_json::Value>) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.map(ToString::to_string).hash(&mut hasher);
    hasher.finish()
}

/// `status.phase` as stored, read on its own (the rest of the object may not fit ark's types).
#[derive(Clone, Debug, PartialEq)]
pub enum Phase<P> {
    /// No phase yet: a new object.
    Absent,
    Known(P),
    /// A phase ark's types do not know (a newer Velero's): never mistaken for a new object.
    Unknown(serde_json::Value),
}

pub fn phase<P: DeserializeOwned>(object: &DynamicObject) -> Phase<P> {
    phase_of(object.data.pointer("/status/phase"))
}

fn phase_of<P: DeserializeOwned>(stored: Option<&serde_json::Value>) -> Phase<P> {
    match stored {
        None | Some(serde_json::Value::Null) => Phase::Absent,
        Some(serde_json::Value::String(text)) if text.is_empty() => Phase::Absent,
        Some(value) => serde_json::from_value(value.clone())
            .map_or_else(|_| Phase::Unknown(value.clone()), Phase::Known),
    }
}

/// One object by name, read as `K` on its own.
pub async fn get<K>(
    client: &Client,
    namespace: &str,
    name: &str,
) -> kube::Result<Option<Result<K, Unfit>>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    Ok(api::<K>(client, namespace)
        .get_opt(name)
        .await?
        .map(|object| typed(&object)))
}

/// How many objects a listing of [`each_page`] holds at once.
const PAGE: u32 = 500;

/// The kind's objects in `namespace` as `params` select them, untyped, handed to `each` a page at
/// a time: a listing of thousands of backups is never held whole.
pub async fn each_page<K>(
    client: &Client,
    namespace: &str,
    params: &ListParams,
    mut each: impl FnMut(Vec<DynamicObject>),
) -> kube::Result<()>
where
    K: Resource<DynamicType = ()>,
{
    let api = api::<K>(client, namespace);
    let mut params = params.clone().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        let next = page.metadata.continue_.filter(|token| !token.is_empty());
        each(page.items);
        match next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

/// The same pages, each as the objects of it that fit ark's type; each one that does not is
/// logged and left out.
pub async fn each_typed_page<K>(
    client: &Client,
    namespace: &str,
    params: &ListParams,
    mut each: impl FnMut(Vec<K>),
) -> kube::Result<()>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    each_page::<K>(client, namespace, params, |page| {
        let fit = page.iter().filter_map(|object| match typed(object) {
            Ok(typed) => Some(typed),
            Err(unfit) => {
                tracing::warn!(
                    "{} {}/{} does not fit ark's type and is passed over: {unfit}",
                    K::kind(&()),
                    namespace,
                    object.name_any()
                );
                None
            }
        });
        each(fit.collect());
    })
    .await
}

/// Every object of the kind that fits ark's type (read a page at a time); each one that does not
/// is logged and left out.
pub async fn list<K>(client: &Client, namespace: &str, params: &ListParams) -> kube::Result<Vec<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let mut all = Vec::new();
    each_typed_page(client, namespace, params, |page| all.extend(page)).await?;
    Ok(all)
}

/// A Kubernetes error as a person reads it in a status or result: the API server's own message
/// for a refusal (`... is forbidden: User "..." cannot delete resource ...`), without the debug
/// dump of the whole Status that kube's `Display` appends.
pub fn reason(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Whether the API server failed to answer (unreachable, overloaded, a server error), rather than
/// answered no: asked again, it may answer.
pub fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code >= 500 || status.code == 429,
        _ => true,
    }
}

/// Whether a watched cache has had its first list, waiting at most `timeout`. kube-runtime's own
/// wait (`Store::wait_until_ready`) wakes only the last of several tasks waiting at once (its
/// readiness is one oneshot receiver, which keeps one waker), so each waiter here looks again
/// every 50 ms: any number of reconciles may wait on one cache.
pub async fn cache_ready<K>(
    cache: &kube::runtime::reflector::Store<K>,
    timeout: std::time::Duration,
) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let poll = std::time::Duration::from_millis(50);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout(poll, cache.wait_until_ready()).await {
            Ok(ready) => return ready.is_ok(),
            Err(_) if tokio::time::Instant::now() >= deadline => return false,
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_is_read_as_stored_and_one_ark_does_not_know_is_never_taken_for_a_new_object() {
        use ark_api::BackupPhase;
        let with = |status: serde_json::Value| -> DynamicObject {
            serde_json::from_value(
                serde_json::json!({ "metadata": { "name": "b" }, "status": status }),
            )
            .unwrap()
        };
        assert_eq!(
            phase::<BackupPhase>(&with(serde_json::json!(null))),
            Phase::Absent
        );
        assert_eq!(
            phase::<BackupPhase>(&with(serde_json::json!({ "phase": "" }))),
            Phase::Absent
        );
        assert_eq!(
            phase::<BackupPhase>(&with(serde_json::json!({ "phase": "Finalizing" }))),
            Phase::Known(BackupPhase::Finalizing)
        );
        assert_eq!(
            phase::<BackupPhase>(&with(serde_json::json!({ "phase": "Weird" }))),
            Phase::Unknown(serde_json::json!("Weird"))
        );
    }

    #[test]
    fn a_summary_keeps_what_controllers_decide_on_and_only_that() {
        let backup = |spec: serde_json::Value, status: serde_json::Value| {
            // Read from JSON, as the watch reads it.
            serde_json::from_value::<Summary<ark_api::Backup>>(serde_json::json!({
                "apiVersion": "velero.io/v1", "kind": "Backup",
                "metadata": {
                    "name": "nightly-1", "namespace": "velero", "uid": "u1",
                    "resourceVersion": "42",
                    "labels": { "velero.io/schedule-name": "nightly", "ark.io/tenant-namespace": "shop" },
                    "annotations": { "velero.io/source-cluster-k8s-gitversion": "v1.35.4" },
                    "finalizers": ["restores.velero.io/external-resources-finalizer"],
                    "deletionTimestamp": "2026-12-07T10:00:00Z",
                    "managedFields": [{ "manager": "velero-server", "operation": "Update" }],
                },
                "spec": spec,
                "status": status,
            }))
            .unwrap()
        };
        let spec = serde_json::json!({ "ttl": "720h0m0s", "includedNamespaces": ["shop"] });
        let status = serde_json::json!({ "progress": { "totalItems": 9 }, "phase": "Completed" });
        let summary = backup(spec.clone(), status);
        let meta = &summary.meta;
        assert_eq!(summary.name(), "nightly-1");
        assert_eq!(meta.namespace.as_deref(), Some("velero"));
        assert_eq!(meta.uid.as_deref(), Some("u1"));
        assert_eq!(meta.resource_version.as_deref(), Some("42"));
        let labels = summary.labels();
        assert_eq!(
            labels.keys().collect::<Vec<_>>(),
            ["ark.io/tenant-namespace"]
        );
        assert_eq!(meta.finalizers.as_ref().map(Vec::len), Some(1));
        assert!(meta.deletion_timestamp.is_some());
        assert_eq!(
            summary.phase::<ark_api::BackupPhase>(),
            Phase::Known(ark_api::BackupPhase::Completed)
        );
        assert!(meta.annotations.is_none() && meta.managed_fields.is_none());
        // The spec is told apart by its digest.
        let other = backup(
            serde_json::json!({ "ttl": "24h0m0s", "includedNamespaces": ["shop"] }),
            serde_json::json!({}),
        );
        assert_ne!(summary.spec_digest(), other.spec_digest());
        // A status of any shape is read: one that is not an object has no phase.
        for odd in [
            serde_json::json!(null),
            serde_json::json!("Completed"),
            serde_json::json!([1]),
        ] {
            let odd = backup(spec.clone(), odd);
            assert_eq!(odd.phase::<ark_api::BackupPhase>(), Phase::Absent);
            assert_eq!(odd.spec_digest(), summary.spec_digest());
        }
        assert_eq!(
            backup(spec, serde_json::json!({ "phase": "Weird" })).phase::<ark_api::BackupPhase>(),
            Phase::Unknown(serde_json::json!("Weird"))
        );
    }

    /// The regression behind tenants' requests never acted on (and deletions that waited out 30 s,
    /// then failed, "the cache of restores is not ready"): of several tasks waiting on a cache at
    /// once, kube-runtime wakes one.
    #[tokio::test]
    async fn every_task_waiting_on_a_cache_sees_it_ready() {
        let resource = resource::<ark_api::Restore>();
        let mut writer = kube::runtime::reflector::store::Writer::<DynamicObject>::new(resource);
        let cache = writer.as_reader();
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let cache = cache.clone();
                tokio::spawn(
                    async move { cache_ready(&cache, std::time::Duration::from_secs(5)).await },
                )
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Init);
        writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
        let ready = std::time::Instant::now();
        for waiter in waiters {
            assert!(waiter.await.unwrap());
        }
        // Not at the end of each waiter's timeout: at once.
        assert!(
            ready.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            ready.elapsed()
        );
    }
}
