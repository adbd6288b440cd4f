//! Tenant self-service: a namespace's own people back up and restore it, and nothing more.
//!
//! An administrator delegates namespace `T` to the ark installed in namespace `N` by labelling it
//! `ark.io/tenant-of=N`. ark's tenant role (aggregated into the built-in `admin` and `edit`) lets
//! T's people create Velero's Backups, Restores, DeleteBackupRequests and DownloadRequests in T.
//! No controller acts on those requests themselves: each is checked (`requests`) and, if it asks
//! only what T's people may ask, mirrored into N as `T.<name>`, where the server acts on it as on
//! any other, with Velero's objects and bucket layout unchanged; the mirror's status is copied
//! back onto the request. A request that asks more is refused on its own status, naming each
//! field. Mirrors live where T's people cannot write, so a request cannot be edited into more
//! than was checked, and each knows its request by namespace, name and uid.

mod requests;

use std::collections::BTreeMap;
use std::sync::Arc;

use ark_api::{Backup, DeleteBackupRequest, DownloadRequest, Restore};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::runtime::context::Kube;
use crate::runtime::controller::{self, ReconcileError, Woken};
use crate::runtime::objects::{self, Readable};
use crate::runtime::patch;
use requests::Owned;

/// On a Namespace: the namespace of the ark whose server serves its people's requests.
pub const TENANT_OF: &str = "ark.io/tenant-of";
pub use ark_api::labels::TENANT_NAMESPACE;
/// On a mirror: the name and uid of the request it mirrors.
pub const TENANT_NAME: &str = "ark.io/tenant-name";
pub const TENANT_UID: &str = "ark.io/tenant-uid";
/// On a request: its mirror's name in ark's namespace, once made.
pub const MIRROR: &str = "ark.io/mirror";

/// The name of the mirror of `tenant`'s request `name`. A namespace's name holds no `.`, so no
/// two tenants' mirrors share a name.
pub fn mirror_name(tenant: &str, name: &str) -> String {
    format!("{tenant}.{name}")
}

/// The tenants' controller: the server's `Kube`, and the namespaces delegated to it, as watched.
pub struct Ctx {
    kube: Kube,
    delegated: reflector::Store<Namespace>,
}

impl AsRef<Kube> for Ctx {
    fn as_ref(&self) -> &Kube {
        &self.kube
    }
}

pub async fn run(kube: Kube) {
    let (delegated, writer) = reflector::store();
    let selected = watcher::Config::default().labels(&format!("{TENANT_OF}={}", kube.namespace));
    // A namespace delegated (or changed) wakes its requests, once the store says so.
    let (changed, _) = tokio::sync::broadcast::channel(64);
    let watched = {
        let changed = changed.clone();
        reflector::reflector(
            writer,
            watcher(Api::<Namespace>::all(kube.client.clone()), selected),
        )
        .default_backoff()
        .touched_objects()
        .for_each(move |namespace| {
            if let Ok(namespace) = namespace {
                let _ = changed.send(namespace.name_any());
            }
            async {}
        })
    };
    let ctx = Arc::new(Ctx { kube, delegated });
    tokio::select! {
        () = watched => {}
        _ = async {
            // The controllers start once the first list is in, so that a reconcile never decides
            // on a partial one.
            while !objects::cache_ready(&ctx.delegated, std::time::Duration::from_secs(60)).await {}
            tokio::join!(
                run_kind::<Backup>(ctx.clone(), changed.subscribe()),
                run_kind::<Restore>(ctx.clone(), changed.subscribe()),
                run_kind::<DeleteBackupRequest>(ctx.clone(), changed.subscribe()),
                run_kind::<DownloadRequest>(ctx.clone(), changed.subscribe()),
            );
        } => {}
    }
}

async fn run_kind<K: Request>(ctx: Arc<Ctx>, namespaces: tokio::sync::broadcast::Receiver<String>) {
    let woken = Woken::ByMirrors {
        label: TENANT_NAMESPACE,
        names: mirrored,
        namespaces,
    };
    controller::run_woken::<K, _, _, _>(ctx, K::WHAT, 0, woken, reconcile::<K>).await;
}

/// The (namespace, name) of the request a mirror mirrors.
fn mirrored(mirror: &DynamicObject) -> Option<(String, String)> {
    Some((
        mirror.labels().get(TENANT_NAMESPACE)?.clone(),
        mirror.annotations().get(TENANT_NAME)?.clone(),
    ))
}

/// What a request names that must be its tenant's own.
enum Named {
    Backup(String),
    Restore(String),
}

/// A mirror's spec, and the labels that tie it to what it names.
type MirrorBody = (Value, BTreeMap<String, String>);

/// A kind of request a tenant makes in its namespace.
trait Request:
    Resource<DynamicType = ()> + DeserializeOwned + Serialize + Clone + Send + Sync + 'static
{
    const WHAT: &'static str;
    /// The backup or restore the request names, if any.
    fn names(&self) -> Option<Named>;
    /// The mirror's spec and labels, or each reason the request is refused.
    fn mirror(&self, tenant: &str, owned: Option<&Owned>) -> Result<MirrorBody, Vec<String>>;
    /// The status that tells the requester why it was refused (a Backup's and a Restore's:
    /// `FailedValidation`, as Velero's server refuses them); None for a kind with no place for
    /// reasons (the request is removed, with a Warning event).
    fn refused(reasons: Vec<String>) -> Option<Value> {
        Some(json!({ "phase": "FailedValidation", "validationErrors": reasons }))
    }
    /// The fields of the spec the server fills in on the mirror (as Velero's server fills them in
    /// on the object itself), copied back with the status.
    const FILLED_IN: &'static [&'static str] = &[];
}

impl Request for Backup {
    const WHAT: &'static str = "tenant backup";
    // The location a backup went to, and how long it is kept: `logs`, `describe` and `download`
    // read them from the request.
    const FILLED_IN: &'static [&'static str] = &["storageLocation", "ttl"];
    fn names(&self) -> Option<Named> {
        None
    }
    fn mirror(&self, tenant: &str, _: Option<&Owned>) -> Result<MirrorBody, Vec<String>> {
        Ok((
            json!(requests::backup(&self.spec, tenant)?),
            own_labels(self),
        ))
    }
}

impl Request for Restore {
    const WHAT: &'static str = "tenant restore";
    fn names(&self) -> Option<Named> {
        Some(Named::Backup(self.spec.backup_name.clone()))
    }
    fn mirror(&self, tenant: &str, owned: Option<&Owned>) -> Result<MirrorBody, Vec<String>> {
        let spec = requests::restore(&self.spec, tenant, owned)?;
        Ok((json!(spec), own_labels(self)))
    }
}

impl Request for DeleteBackupRequest {
    const WHAT: &'static str = "tenant deletion request";
    fn names(&self) -> Option<Named> {
        Some(Named::Backup(self.spec.backup_name.clone()))
    }
    fn mirror(&self, tenant: &str, owned: Option<&Owned>) -> Result<MirrorBody, Vec<String>> {
        let spec = requests::deletion(&self.spec, tenant, owned)?;
        // Tied to the mirrored backup by its name and uid, as the deletion controller matches.
        let labels = owned
            .map(|o| ark_api::labels::for_backup(&o.name, &o.uid))
            .unwrap_or_default();
        Ok((json!(spec), labels))
    }
    fn refused(reasons: Vec<String>) -> Option<Value> {
        Some(json!({ "phase": "Processed", "errors": reasons }))
    }
}

impl Request for DownloadRequest {
    const WHAT: &'static str = "tenant download request";
    fn names(&self) -> Option<Named> {
        let target = &self.spec.target;
        Some(
            if ark_storage::layout::Layout::is_restore_target(&target.kind) {
                Named::Restore(target.name.clone())
            } else {
                Named::Backup(target.name.clone())
            },
        )
    }
    fn mirror(&self, tenant: &str, owned: Option<&Owned>) -> Result<MirrorBody, Vec<String>> {
        Ok((
            json!(requests::download(&self.spec, tenant, owned)?),
            BTreeMap::new(),
        ))
    }
    fn refused(_: Vec<String>) -> Option<Value> {
        None
    }
}

/// The request's own labels, without Velero's and ark's (which say what the server made).
fn own_labels(request: &impl Resource) -> BTreeMap<String, String> {
    (request.meta().labels.iter().flatten())
        .filter(|(key, _)| !key.contains("velero.io/") && !key.contains("ark.io/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// One tenant request's steps: is its namespace delegated to this server; is its mirror there
/// and its own (copy the status back), gone (the backup was deleted: remove the request), or
/// not made yet (check it, then mirror it or refuse it).
async fn reconcile<K: Request>(
    object: Arc<Readable<K>>,
    tenants: Arc<Ctx>,
) -> Result<Action, ReconcileError> {
    let ctx = &tenants.kube;
    let stored = &object.stored;
    let (Some(tenant), Some(uid)) = (stored.namespace(), stored.uid()) else {
        return Ok(Action::await_change());
    };
    if tenant == ctx.namespace || !tenants.is_delegated(&tenant) {
        return Ok(Action::await_change());
    }
    let name = object.name();
    let requests = Api::<DynamicObject>::namespaced_with(
        ctx.client.clone(),
        &tenant,
        &objects::resource::<K>(),
    );
    let mirrors = objects::api::<K>(&ctx.client, &ctx.namespace);
    let mirror_name = mirror_name(&tenant, &name);
    match mirrors.get_opt(&mirror_name).await? {
        Some(mirror) if is_mirror_of(&mirror, &tenant, &uid) => {
            copy_back::<K>(&requests, stored, &mirror, &mirror_name).await?;
        }
        Some(_) => {
            let taken = format!(
                "{mirror_name} in ark's namespace {} is not this request's (an earlier one of \
                 this name, kept until it expires, or an administrator's): use another name",
                ctx.namespace
            );
            refuse::<K>(ctx, &requests, stored, vec![taken]).await?;
        }
        None if stored.annotations().contains_key(MIRROR) => {
            // Its mirror was there and is gone: the backup was deleted (or the request answered
            // and expired); the request goes with it.
            patch::ignore_not_found(requests.delete(&name, &DeleteParams::background()).await)?;
        }
        None => {
            let read = match &object.read {
                Ok(read) => read,
                Err(unfit) => {
                    return refuse::<K>(ctx, &requests, stored, vec![unfit.to_string()]).await;
                }
            };
            let owned = match read.names() {
                Some(named) => owned(ctx, &tenant, &named).await?,
                None => None,
            };
            match read.mirror(&tenant, owned.as_ref()) {
                Ok((spec, labels)) => {
                    let made =
                        make_mirror::<K>(&mirrors, &tenant, stored, &mirror_name, spec, labels);
                    if let Err(invalid) = made.await? {
                        return refuse::<K>(ctx, &requests, stored, vec![invalid]).await;
                    }
                    mark_mirrored(&requests, &name, &mirror_name).await?;
                }
                Err(reasons) => return refuse::<K>(ctx, &requests, stored, reasons).await,
            }
        }
    }
    Ok(Action::await_change())
}

impl Ctx {
    /// Whether `namespace` is delegated to this server (labelled `ark.io/tenant-of=<its
    /// namespace>`), as watched (the controllers start once the first list is in).
    fn is_delegated(&self, namespace: &str) -> bool {
        self.delegated.get(&ObjectRef::new(namespace)).is_some()
    }
}

fn is_mirror_of(mirror: &DynamicObject, tenant: &str, uid: &str) -> bool {
    mirror.labels().get(TENANT_NAMESPACE).map(String::as_str) == Some(tenant)
        && mirror.annotations().get(TENANT_UID).map(String::as_str) == Some(uid)
}

/// The tenant's own backup or restore of that name (its mirror, labelled the tenant's), if any.
async fn owned(ctx: &Kube, tenant: &str, named: &Named) -> Result<Option<Owned>, ReconcileError> {
    let (resource, name) = match named {
        Named::Backup(name) => (objects::resource::<Backup>(), name),
        Named::Restore(name) => (objects::resource::<Restore>(), name),
    };
    let api = Api::<DynamicObject>::namespaced_with(ctx.client.clone(), &ctx.namespace, &resource);
    let mirror_name = mirror_name(tenant, name);
    let found = api.get_opt(&mirror_name).await?;
    Ok(found
        .filter(|m| m.labels().get(TENANT_NAMESPACE).map(String::as_str) == Some(tenant))
        .and_then(|m| {
            Some(Owned {
                uid: m.uid()?,
                name: mirror_name,
            })
        }))
}

/// Creates the mirror; the API server's reason if it refuses it as invalid (a name too long once
/// the tenant's namespace prefixes it, say), which refuses the request.
async fn make_mirror<K: Request>(
    mirrors: &Api<DynamicObject>,
    tenant: &str,
    request: &DynamicObject,
    mirror_name: &str,
    spec: Value,
    mut labels: BTreeMap<String, String>,
) -> Result<Result<(), String>, ReconcileError> {
    labels.insert(TENANT_NAMESPACE.into(), tenant.into());
    let mirror = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {
            "name": mirror_name,
            "labels": labels,
            "annotations": {
                TENANT_NAME: request.name_any(),
                TENANT_UID: request.uid().unwrap_or_default(),
            },
        },
        "spec": spec,
    });
    let mirror: DynamicObject = serde_json::from_value(mirror).expect("a mirror is an object");
    match mirrors.create(&PostParams::default(), &mirror).await {
        // Made by an earlier attempt whose answer was lost: the next reconcile finds it ours.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Ok(())),
        Err(kube::Error::Api(status)) if status.code == 422 => Ok(Err(format!(
            "its mirror in ark's namespace cannot be made: {}",
            status.message
        ))),
        made => made.map(|_| Ok(())).map_err(ReconcileError::from),
    }
}

async fn mark_mirrored(
    requests: &Api<DynamicObject>,
    name: &str,
    mirror_name: &str,
) -> Result<(), ReconcileError> {
    let marked = json!({ "metadata": { "annotations": { MIRROR: mirror_name } } });
    requests
        .patch(name, &PatchParams::default(), &Patch::Merge(marked))
        .await?;
    Ok(())
}

/// The mirror's status and filled-in fields onto the request, when they differ (and the mark, if
/// an earlier attempt made the mirror and could not mark the request).
async fn copy_back<K: Request>(
    requests: &Api<DynamicObject>,
    request: &DynamicObject,
    mirror: &DynamicObject,
    mirror_name: &str,
) -> Result<(), ReconcileError> {
    if !request.annotations().contains_key(MIRROR) {
        mark_mirrored(requests, &request.name_any(), mirror_name).await?;
    }
    let mut changed = serde_json::Map::new();
    if let Some(status) = mirror.data.get("status")
        && request.data.get("status") != Some(status)
    {
        changed.insert("status".into(), status.clone());
    }
    let spec_field =
        |object: &DynamicObject, field: &str| object.data.get("spec")?.get(field).cloned();
    let filled: serde_json::Map<String, Value> = (K::FILLED_IN.iter())
        .filter_map(|&field| {
            let value = spec_field(mirror, field)?;
            (spec_field(request, field).as_ref() != Some(&value))
                .then(|| (field.to_string(), value))
        })
        .collect();
    if !filled.is_empty() {
        changed.insert("spec".into(), Value::Object(filled));
    }
    if changed.is_empty() {
        return Ok(());
    }
    requests
        .patch(
            &request.name_any(),
            &PatchParams::default(),
            &Patch::Merge(Value::Object(changed)),
        )
        .await?;
    Ok(())
}

/// Tells the requester why its request is refused: on its status, or (a kind with no place for
/// reasons) by a Warning event and the request's removal.
async fn refuse<K: Request>(
    ctx: &Kube,
    requests: &Api<DynamicObject>,
    request: &DynamicObject,
    reasons: Vec<String>,
) -> Result<Action, ReconcileError> {
    let name = request.name_any();
    let note = format!(
        "{} {}/{name} is refused: {}",
        K::WHAT,
        request.namespace().unwrap_or_default(),
        reasons.join("; ")
    );
    let status = K::refused(reasons);
    if status.is_some() && request.data.get("status") == status.as_ref() {
        // Told already.
        return Ok(Action::await_change());
    }
    let refused = request.object_ref(&objects::resource::<K>());
    (ctx.events)
        .warn(refused, None, "Refused", "Mirror", note)
        .await;
    match status {
        Some(status) => patch::object_status(requests, &name, &status).await?,
        None => patch::ignore_not_found(requests.delete(&name, &DeleteParams::background()).await)?,
    }
    Ok(Action::await_change())
}
