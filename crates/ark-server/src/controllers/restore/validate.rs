//! A New restore's validation: its spec read once into the values the restore runs on, its backup
//! and its resource modifiers read and checked, or every reason it cannot run. Failing to read
//! them (the API server gone a moment) is neither: the restore stays New and is validated again.

use std::time::Duration;

use ark_api::{Backup, BackupPhase, Restore, RestoreSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};

use super::Config;
use super::actions::ResourceModifiers;
use super::api_versions::{USER_PRIORITIES_CONFIG_MAP, USER_PRIORITIES_KEY, UserPriorities};
use super::engine::{ExistingResourcePolicy, Selection};
use crate::domain::filter::{IncludesExcludes, LabelSelection};
use crate::runtime::objects;
use crate::runtime::operation::Rejected;

/// A restore ready to run.
pub(super) struct ValidatedRestore {
    pub selection: Selection,
    pub item_operation_timeout: Duration,
    /// Its backup, Completed or PartiallyFailed.
    pub backup: Backup,
    pub resource_modifiers: Option<ResourceModifiers>,
}

/// Validates a restore before anything is done: its own spec first, then (if that holds) its
/// backup and its resource modifiers against the cluster. Every reason found is given at once.
pub(super) async fn validate(
    restore: &Restore,
    client: &Client,
    namespace: &str,
    config: &Config,
) -> Result<ValidatedRestore, Rejected> {
    let spec = &restore.spec;
    let mut errors = Vec::new();
    let read = read_spec(spec, config, &mut errors);
    if !errors.is_empty() {
        return Err(Rejected::Invalid(errors));
    }
    let resource_modifiers = read_resource_modifiers(spec, client, namespace)
        .await?
        .map_err(|error| errors.push(error))
        .ok()
        .flatten();
    let backup_name = &spec.backup_name;
    let backup = match objects::get::<Backup>(client, namespace, backup_name).await? {
        None => Err(format!("backup {backup_name:?} not found")),
        Some(Err(unfit)) => Err(format!("backup {backup_name:?} cannot be read: {unfit}")),
        Some(Ok(found))
            if !matches!(
                found.phase(),
                BackupPhase::Completed | BackupPhase::PartiallyFailed
            ) =>
        {
            Err(format!(
                "backup {backup_name:?} is {:?}: only Completed or PartiallyFailed backups can be restored",
                found.phase()
            ))
        }
        Some(Ok(found)) => Ok(found),
    };
    let backup = backup.map_err(|error| errors.push(error)).ok();
    match (read, backup) {
        (Some((mut selection, item_operation_timeout)), Some(backup)) if errors.is_empty() => {
            selection.api_versions = api_versions(&backup, client, namespace, config).await?;
            Ok(ValidatedRestore {
                selection,
                item_operation_timeout,
                backup,
                resource_modifiers,
            })
        }
        _ => Err(Rejected::Invalid(errors)),
    }
}

/// The restore's own spec: what it selects and its item operation timeout (Velero's default
/// applied); each error found goes into `errors`.
fn read_spec(
    spec: &RestoreSpec,
    config: &Config,
    errors: &mut Vec<String>,
) -> Option<(Selection, Duration)> {
    let item_operation_timeout = ark_api::duration::parse_or_default(
        spec.item_operation_timeout.as_deref(),
        config.default_item_operation_timeout,
    )
    .map_err(|e| errors.push(format!("itemOperationTimeout: {e}")))
    .ok();
    if spec.backup_name.is_empty() {
        errors.push("spec.backupName is required".to_string());
    }
    if let Some(hooks) = &spec.hooks {
        errors.extend(
            ark_api::hooks::validate(hooks, ark_api::hooks::Rules::Velero)
                .iter()
                .map(|e| format!("spec.hooks.{e}")),
        );
    }
    let namespaces = IncludesExcludes::checked(
        spec.included_namespaces.as_ref(),
        spec.excluded_namespaces.as_ref(),
        "namespace",
        errors,
    );
    let resources = IncludesExcludes::checked(
        spec.included_resources.as_ref(),
        spec.excluded_resources.as_ref(),
        "resource",
        errors,
    );
    let existing = match spec.existing_resource_policy.as_deref() {
        None | Some("") | Some("none") => Some(ExistingResourcePolicy::None),
        Some("update") => Some(ExistingResourcePolicy::Update),
        Some(other) => {
            errors.push(format!(
                "invalid existingResourcePolicy {other:?}: expected none or update"
            ));
            None
        }
    };
    let labels = LabelSelection::read(
        spec.label_selector.as_ref(),
        spec.or_label_selectors.as_deref(),
        "restore",
        errors,
    );
    let selection = Selection {
        namespaces,
        resources,
        labels,
        include_cluster_resources: spec.include_cluster_resources,
        existing: existing?,
        priorities: config.priorities.clone(),
        api_versions: None,
        status: spec.restore_status.as_ref().map(|status| {
            IncludesExcludes::checked(
                status.included_resources.as_ref(),
                status.excluded_resources.as_ref(),
                "restoreStatus resource",
                errors,
            )
        }),
    };
    Some((selection, item_operation_timeout?))
}

/// The users' version priorities when the restore chooses the version of each resource (Velero
/// chooses for backups of format 1.1.0 or later, the first to hold every version); None when it
/// does not choose.
async fn api_versions(
    backup: &Backup,
    client: &Client,
    namespace: &str,
    config: &Config,
) -> Result<Option<UserPriorities>, kube::Error> {
    let format = backup
        .status
        .as_ref()
        .and_then(|s| s.format_version.as_deref());
    // Velero compares the version strings.
    if !config.every_api_version || format.unwrap_or_default() < "1.1.0" {
        return Ok(None);
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let config_map = api.get_opt(USER_PRIORITIES_CONFIG_MAP).await?;
    let data = config_map.and_then(|c| c.data).unwrap_or_default();
    let user = data.get(USER_PRIORITIES_KEY).map(String::as_str);
    Ok(Some(UserPriorities::parse(user.unwrap_or_default())))
}

/// The restore's resource modifiers, read from their ConfigMap in the restore's namespace and
/// checked; the validation error, in Velero's words, when they cannot be used.
async fn read_resource_modifiers(
    spec: &RestoreSpec,
    client: &Client,
    namespace: &str,
) -> Result<Result<Option<ResourceModifiers>, String>, kube::Error> {
    let Some(reference) = &spec.resource_modifier else {
        return Ok(Ok(None));
    };
    let shown = format!("{namespace}/{}", reference.name);
    if !reference.kind.eq_ignore_ascii_case("configmap") {
        return Ok(Err(format!(
            "resourceModifier: kind {:?} is not supported: resource modifiers are read from a ConfigMap",
            reference.kind
        )));
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let config_map = match api.get_opt(&reference.name).await {
        Ok(Some(config_map)) => config_map,
        Ok(None) => {
            return Ok(Err(format!(
                "failed to get resource modifiers configmap {shown}: not found"
            )));
        }
        Err(kube::Error::Api(status)) if status.code == 403 => {
            return Ok(Err(format!(
                "failed to get resource modifiers configmap {shown}: {}",
                status.message
            )));
        }
        Err(error) => return Err(error),
    };
    Ok(
        ResourceModifiers::from_config_map_data(&config_map.data.unwrap_or_default())
            .map(Some)
            .map_err(|e| format!("resource modifiers configmap {shown}: {e}")),
    )
}
