//! A New backup's validation: its spec read once into the values the backup runs on, or every
//! reason it cannot run. Failing to read what validation needs (the API server gone a moment) is
//! neither: the backup stays New and is validated again.

use std::sync::Arc;
use std::time::Duration;

use ark_api::{Backup, BackupSpec, BackupStorageLocation};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt as _};
use serde_json::json;

use super::Config;
use super::engine::Selection;
use crate::domain::filter::{IncludesExcludes, LabelSelection, ResourceFilter};
use crate::domain::locations::{self, LocationError};
use crate::domain::volume_policy::{IncludeExcludePolicy, ResourcePolicies};
use crate::hooks::backup::BackupHookSpecs;
use crate::runtime::context::Kube;
use crate::runtime::objects;
use crate::runtime::operation::Rejected;

/// Velero's CSI snapshot timeout, for a backup that sets none (Velero has no flag for it).
const CSI_SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Velero's label key that groups claims into one VolumeGroupSnapshot, for a backup that sets none.
const VOLUME_GROUP_SNAPSHOT_LABEL_KEY: &str = "velero.io/volume-group";

/// A backup ready to run.
pub(super) struct ValidatedBackup {
    pub selection: Selection,
    pub hooks: BackupHookSpecs,
    pub durations: Durations,
    /// Its location: found, writable and, as last checked, available.
    pub location: BackupStorageLocation,
    pub location_name: String,
    /// Whether every pod volume is backed up with the node agent (the spec's
    /// `defaultVolumesToFsBackup`, else the server's default), or only those pods name.
    pub volumes_by_default: bool,
    /// Whether CSI snapshots' data is moved into the location (the spec's `snapshotMoveData`,
    /// else the server's default).
    pub move_data: bool,
    /// The backup's resource policies, when its `resourcePolicy` names some.
    pub policies: Option<Arc<ResourcePolicies>>,
}

/// A backup's durations as Velero's backup controller reads them: zero or absent means the
/// default (`velero backup create` without `--ttl` writes `ttl: 0s`).
pub(super) struct Durations {
    pub ttl: Duration,
    pub csi_snapshot_timeout: Duration,
    pub item_operation_timeout: Duration,
}

impl Durations {
    fn of(spec: &BackupSpec, config: &Config, errors: &mut Vec<String>) -> Durations {
        let mut read = |field: &str, value: &Option<String>, default| {
            ark_api::duration::parse_or_default(value.as_deref(), default).unwrap_or_else(|e| {
                errors.push(format!("{field}: {e}"));
                default
            })
        };
        Durations {
            ttl: read("ttl", &spec.ttl, config.default_ttl),
            csi_snapshot_timeout: read(
                "csiSnapshotTimeout",
                &spec.csi_snapshot_timeout,
                CSI_SNAPSHOT_TIMEOUT,
            ),
            item_operation_timeout: read(
                "itemOperationTimeout",
                &spec.item_operation_timeout,
                config.default_item_operation_timeout,
            ),
        }
    }

    /// The TTL that a backup failing validation expires after: its own if it can be read.
    pub fn ttl_or_default(spec: &BackupSpec, config: &Config) -> Duration {
        Durations::of(spec, config, &mut Vec::new()).ttl
    }
}

/// Validates a backup before anything is done: its spec, then its location. Every reason found
/// is given at once.
pub(super) async fn validate(
    backup: &Backup,
    kube: &Kube,
    config: &Config,
) -> Result<ValidatedBackup, Rejected> {
    let spec = &backup.spec;
    let mut errors = Vec::new();
    let policies = resource_policies(backup, kube)
        .await?
        .map_err(|error| errors.push(error))
        .ok()
        .flatten();
    let namespaces = IncludesExcludes::checked(
        spec.included_namespaces.as_ref(),
        spec.excluded_namespaces.as_ref(),
        "namespace",
        &mut errors,
    );
    let include_exclude = policies.as_ref().and_then(|p| p.include_exclude.as_ref());
    let resources = resource_filter(spec, include_exclude, &mut errors);
    let durations = Durations::of(spec, config, &mut errors);
    let hooks = BackupHookSpecs::read(spec.hooks.as_ref(), config.max_hook_timeout).unwrap_or_else(
        |hook_errors| {
            errors.extend(hook_errors);
            BackupHookSpecs::default()
        },
    );
    let labels = LabelSelection::read(
        spec.label_selector.as_ref(),
        spec.or_label_selectors.as_deref(),
        "backup",
        &mut errors,
    );
    let location = location(spec, kube).await?;
    let location = location.map_err(|error| errors.push(error)).ok();
    match location {
        Some((location_name, location)) if errors.is_empty() => Ok(ValidatedBackup {
            selection: Selection {
                namespaces,
                resources,
                labels,
                ordered: ordered_resources(spec),
                every_version: config.every_api_version,
            },
            hooks,
            durations,
            location,
            location_name,
            volumes_by_default: volumes_by_default(spec, config),
            move_data: spec
                .snapshot_move_data
                .unwrap_or(config.default_snapshot_move_data),
            policies: policies.map(Arc::new),
        }),
        _ => Err(Rejected::Invalid(errors)),
    }
}

/// The backup's `orderedResources`, each list split on commas as Velero splits it (entries
/// trimmed, empty ones dropped).
fn ordered_resources(spec: &BackupSpec) -> std::collections::BTreeMap<String, Vec<String>> {
    (spec.ordered_resources.iter().flatten())
        .map(|(resource, order)| {
            let names = order
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect();
            (resource.clone(), names)
        })
        .collect()
}

/// Whether every pod volume is backed up with the node agent: `defaultVolumesToRestic: true` (the
/// field's old name, kept by backups made by old versions) says so whatever else does, as Velero
/// remaps it; then `defaultVolumesToFsBackup`, then the server's default.
fn volumes_by_default(spec: &BackupSpec, config: &Config) -> bool {
    if spec.default_volumes_to_restic == Some(true) {
        return true;
    }
    spec.default_volumes_to_fs_backup
        .unwrap_or(config.default_volumes_to_fs_backup)
}

/// The resource policies of the ConfigMap the backup's `resourcePolicy` names (in the backup's
/// namespace), as Velero's `GetResourcePoliciesFromBackup` reads them; the reason they cannot be
/// used otherwise. Velero ignores a reference of another kind in silence; ark refuses it, since
/// going on would take the backup without the policies its author asked for.
async fn resource_policies(
    backup: &Backup,
    kube: &Kube,
) -> Result<Result<Option<ResourcePolicies>, String>, kube::Error> {
    let Some(reference) = &backup.spec.resource_policy else {
        return Ok(Ok(None));
    };
    let namespace = backup.namespace().unwrap_or_default();
    let shown = format!(
        "spec.resourcePolicy: ConfigMap {namespace}/{}",
        reference.name
    );
    if !reference.kind.eq_ignore_ascii_case("configmap") {
        return Ok(Err(format!(
            "spec.resourcePolicy: kind {:?} is not one Velero reads resource policies from (configmap)",
            reference.kind
        )));
    }
    let config_map = match Api::<ConfigMap>::namespaced(kube.client.clone(), &namespace)
        .get(&reference.name)
        .await
    {
        Ok(config_map) => config_map,
        Err(error) if objects::is_transient(&error) => return Err(error),
        Err(error) => return Ok(Err(format!("{shown}: {}", objects::reason(&error)))),
    };
    Ok(ResourcePolicies::from_config_map(&config_map)
        .map(Some)
        .map_err(|errors| format!("{shown}: {}", errors.join("; "))))
}

/// The backup's resource filter: the old one (`includedResources`, `excludedResources`,
/// `includeClusterResources`) unless only the scoped lists are set, as Velero's
/// `UseOldResourceFilters` decides; both at once are refused, in Velero's words. A policy's
/// `includeExcludePolicy` joins the scoped lists, which keep precedence, and cannot be used with
/// the old filters.
fn resource_filter(
    spec: &BackupSpec,
    policy: Option<&IncludeExcludePolicy>,
    errors: &mut Vec<String>,
) -> ResourceFilter {
    let set = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| !l.is_empty());
    let old = set(&spec.included_resources)
        || set(&spec.excluded_resources)
        || spec.include_cluster_resources.is_some();
    let scoped = set(&spec.included_cluster_scoped_resources)
        || set(&spec.excluded_cluster_scoped_resources)
        || set(&spec.included_namespace_scoped_resources)
        || set(&spec.excluded_namespace_scoped_resources);
    if old && scoped {
        errors.push(
            "include-resources, exclude-resources and include-cluster-resources are old filter \
             parameters.\ninclude-cluster-scoped-resources, exclude-cluster-scoped-resources, \
             include-namespace-scoped-resources and exclude-namespace-scoped-resources are new \
             filter parameters.\nThey cannot be used together"
                .to_string(),
        );
    }
    if old && policy.is_some() {
        errors.push(
            "include-resources, exclude-resources and include-cluster-resources are old filter \
             parameters.\nThey cannot be used with include-exclude policies."
                .to_string(),
        );
    }
    if (!scoped && policy.is_none()) || old {
        return ResourceFilter::Global {
            resources: IncludesExcludes::checked(
                spec.included_resources.as_ref(),
                spec.excluded_resources.as_ref(),
                "resource",
                errors,
            ),
            include_cluster_resources: spec.include_cluster_resources,
        };
    }
    let mut scoped_list = |includes, excludes, what, (policy_includes, policy_excludes)| {
        let list = IncludesExcludes::new(includes, excludes);
        errors.extend(list.validate_scoped(what));
        list.combined_with(policy_includes, policy_excludes)
    };
    let none = IncludeExcludePolicy::default();
    let policy = policy.unwrap_or(&none);
    ResourceFilter::Scoped {
        cluster: scoped_list(
            spec.included_cluster_scoped_resources.as_ref(),
            spec.excluded_cluster_scoped_resources.as_ref(),
            "cluster-scoped",
            (
                &policy.included_cluster_scoped_resources,
                &policy.excluded_cluster_scoped_resources,
            ),
        ),
        namespaced: scoped_list(
            spec.included_namespace_scoped_resources.as_ref(),
            spec.excluded_namespace_scoped_resources.as_ref(),
            "namespace-scoped",
            (
                &policy.included_namespace_scoped_resources,
                &policy.excluded_namespace_scoped_resources,
            ),
        ),
    }
}

/// The backup's location (or the default one) by name, if it can take the backup; the reason it
/// cannot otherwise.
async fn location(
    spec: &BackupSpec,
    kube: &Kube,
) -> Result<Result<(String, BackupStorageLocation), String>, kube::Error> {
    let name = match &spec.storage_location {
        Some(location) if !location.is_empty() => location.clone(),
        _ => match locations::default_name(&kube.client, &kube.namespace).await {
            Ok(location) => location,
            Err(error) => return invalid_unless_transient(error),
        },
    };
    let location = match locations::get(&kube.client, &kube.namespace, &name).await {
        Ok(location) => location,
        Err(error) => return invalid_unless_transient(error),
    };
    if location.is_read_only() {
        return Ok(Err(format!(
            "backup storage location {name:?} is read-only"
        )));
    }
    // Its last check failed: checked again now, so that a location back since (S3 gone for a
    // moment) takes backups at once, and one still down fails with today's reason.
    if location.unavailable().is_some()
        && let Err(reason) = locations::check(&kube.client, location.clone()).await
    {
        return Ok(Err(format!(
            "backup storage location {name:?} is Unavailable: {reason}"
        )));
    }
    Ok(Ok((name, location)))
}

/// A location that cannot be read is a reason not to run, unless the API server failed to answer
/// (unreachable, or a server error): then nothing is known yet.
fn invalid_unless_transient<T>(error: LocationError) -> Result<Result<T, String>, kube::Error> {
    match error {
        LocationError::Api(_, error) if objects::is_transient(&error) => Err(error),
        error => Ok(Err(error.to_string())),
    }
}

/// What Velero's backup controller writes into a backup's spec as it starts it: the location
/// chosen, and each default it applied (so that Velero, reading the backup, sees what ark did).
/// The fields of a Backup's spec that `defaulted_spec` fills in when a request leaves them unset.
pub const DEFAULTED_FIELDS: [&str; 7] = [
    "storageLocation",
    "ttl",
    "csiSnapshotTimeout",
    "itemOperationTimeout",
    "defaultVolumesToFsBackup",
    "snapshotMoveData",
    "volumeGroupSnapshotLabelKey",
];

pub(super) fn defaulted_spec(spec: &BackupSpec, validated: &ValidatedBackup) -> serde_json::Value {
    let durations = &validated.durations;
    let kept_or = |field: &str, default: serde_json::Value| {
        spec.unmodelled
            .get(field)
            .filter(|v| !v.is_null() && v.as_str() != Some(""))
            .cloned()
            .unwrap_or(default)
    };
    // In the order of DEFAULTED_FIELDS, which names them.
    let values = [
        json!(validated.location_name),
        json!(ark_api::duration::format(durations.ttl)),
        json!(ark_api::duration::format(durations.csi_snapshot_timeout)),
        json!(ark_api::duration::format(durations.item_operation_timeout)),
        json!(validated.volumes_by_default),
        json!(validated.move_data),
        kept_or(
            "volumeGroupSnapshotLabelKey",
            VOLUME_GROUP_SNAPSHOT_LABEL_KEY.into(),
        ),
    ];
    let fields = DEFAULTED_FIELDS.into_iter().map(String::from).zip(values);
    serde_json::Value::Object(fields.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An API server that answers every request with `code` (a test double: the real one cannot
    /// be made to fail one kind of request on demand).
    fn answering(code: u16) -> Kube {
        let service = tower::service_fn(move |_: http::Request<kube::client::Body>| async move {
            let status = serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": format!("answered {code}"), "code": code,
                "reason": if code == 404 { "NotFound" } else { "Test" },
            });
            Ok::<_, std::io::Error>(
                http::Response::builder()
                    .status(code)
                    .body(kube::client::Body::from(status.to_string().into_bytes()))
                    .unwrap(),
            )
        });
        Kube::for_tests(kube::Client::new(service, "velero")).0
    }

    #[test]
    fn default_volumes_to_restic_true_means_every_volume_whatever_else_says() {
        let spec = |restic: Option<bool>, fs: Option<bool>| BackupSpec {
            default_volumes_to_restic: restic,
            default_volumes_to_fs_backup: fs,
            ..Default::default()
        };
        let config = config();
        assert!(volumes_by_default(&spec(Some(true), Some(false)), &config));
        assert!(!volumes_by_default(&spec(Some(false), None), &config));
        assert!(volumes_by_default(&spec(None, Some(true)), &config));
        let by_default = Config {
            default_volumes_to_fs_backup: true,
            ..config
        };
        assert!(volumes_by_default(&spec(Some(false), None), &by_default));
    }

    fn config() -> Config {
        Config {
            workers: 1,
            default_ttl: Duration::from_secs(3600),
            default_item_operation_timeout: Duration::from_secs(3600),
            hook_pods_at_once: 4,
            max_hook_timeout: Duration::from_secs(3600),
            default_volumes_to_fs_backup: false,
            default_snapshot_move_data: false,
            pod_volume_timeout: Duration::from_secs(4 * 3600),
            every_api_version: false,
        }
    }

    fn backup_to(location: Option<&str>) -> Backup {
        Backup::new(
            "b1",
            BackupSpec {
                storage_location: location.map(str::to_string),
                ..Default::default()
            },
        )
    }

    #[tokio::test]
    async fn a_backup_whose_location_cannot_be_read_for_a_moment_is_validated_again_not_failed() {
        for code in [500, 503, 429] {
            for location in [Some("primary"), None] {
                let rejected = validate(&backup_to(location), &answering(code), &config()).await;
                assert!(
                    matches!(rejected, Err(Rejected::Unreadable(_))),
                    "{code} {location:?}: {:?}",
                    rejected.err()
                );
            }
        }
    }

    #[tokio::test]
    async fn a_backup_whose_location_is_missing_or_forbidden_fails_validation_with_every_reason() {
        let mut backup = backup_to(Some("primary"));
        backup.spec.ttl = Some("soon".into());
        let rejected = validate(&backup, &answering(404), &config()).await;
        let Err(Rejected::Invalid(errors)) = rejected else {
            panic!("{:?}", rejected.err());
        };
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("ttl: "), "{errors:?}");
        assert_eq!(errors[1], "backup storage location \"primary\" not found");
        let rejected = validate(&backup_to(Some("primary")), &answering(403), &config()).await;
        let Err(Rejected::Invalid(errors)) = rejected else {
            panic!("{:?}", rejected.err());
        };
        assert!(errors[0].contains("answered 403"), "{errors:?}");
    }
}
