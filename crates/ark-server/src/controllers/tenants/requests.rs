//! What a tenant's request asks, checked and made into the request ark's namespace acts on (its
//! mirror): everything a namespace's own people may ask, pinned to their namespace, or each
//! reason it cannot be, naming the field. Pure: the one thing looked up (is the backup or restore
//! a request names this namespace's?) is passed in.

use ark_api::{BackupSpec, DeleteBackupRequestSpec, DownloadRequestSpec, RestoreSpec};

/// A backup or restore that a request names, found among the tenant's mirrors: its name in ark's
/// namespace, and its uid there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owned {
    pub name: String,
    pub uid: String,
}

/// Kinds a tenant's restore leaves out, because the server would write them with its own rights,
/// not the tenant's: the namespace's policy, which its administrator sets and its own people may
/// not (quotas, limit ranges) or may grant only within their own rights (RBAC: a grant taken
/// away since the backup would come back); and endpoints, which the built-in roles no longer
/// let a namespace's people write (they could send a Service's traffic anywhere,
/// CVE-2021-25740). An administrator restores them. And the tenant's own requests to ark found in
/// the backup: restored, a deletion request would delete its backup again.
pub const LEFT_OUT: &[&str] = &[
    "resourcequotas",
    "limitranges",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "endpoints",
    "endpointslices.discovery.k8s.io",
    "deletebackuprequests.velero.io",
    "downloadrequests.velero.io",
];

/// The namespaces a tenant's request may name: its own, or every one it may see (`*`), which
/// for a tenant is its own.
fn only_own(field: &str, names: Option<&Vec<String>>, tenant: &str, why: &str) -> Vec<String> {
    names
        .into_iter()
        .flatten()
        .filter(|name| name.as_str() != tenant && name.as_str() != "*")
        .map(|name| format!("{field} names namespace {name:?}: {why}"))
        .collect()
}

/// Why a request naming `name` (a backup or restore, `what`) at `field` is refused: it is not
/// among the tenant's own.
fn not_own(field: &str, name: &str, what: &str, tenant: &str) -> String {
    format!("{field} {name:?}: no {what} of that name was made in namespace {tenant}")
}

/// A backup made in namespace `tenant`: of that namespace only, its hooks there only; no
/// cluster-scoped resource asked for; no volume policy (a ConfigMap in ark's namespace, not the
/// tenant's).
pub fn backup(spec: &BackupSpec, tenant: &str) -> Result<BackupSpec, Vec<String>> {
    let why = format!("a backup made in namespace {tenant} holds {tenant} only");
    let mut refused = only_own(
        "spec.includedNamespaces",
        spec.included_namespaces.as_ref(),
        tenant,
        &why,
    );
    for (at, hook) in spec.hooks.iter().flat_map(|h| &h.resources).enumerate() {
        refused.extend(only_own(
            &format!("spec.hooks.resources[{at}].includedNamespaces"),
            hook.included_namespaces.as_ref(),
            tenant,
            &format!("hooks of a backup made in namespace {tenant} run there only"),
        ));
    }
    if spec.include_cluster_resources == Some(true) {
        refused.push(format!(
            "spec.includeClusterResources is true: a backup made in namespace {tenant} holds no \
             cluster-scoped resources but those its items use"
        ));
    }
    if spec
        .included_cluster_scoped_resources
        .as_ref()
        .is_some_and(|r| !r.is_empty())
    {
        refused.push(format!(
            "spec.includedClusterScopedResources is set: a backup made in namespace {tenant} \
             holds no cluster-scoped resources but those its items use"
        ));
    }
    if spec.resource_policy.is_some() {
        refused.push(
            "spec.resourcePolicy names a ConfigMap of ark's namespace, which only its \
             administrators write: a namespace's own backups take none"
                .to_string(),
        );
    }
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut mirror = spec.clone();
    mirror.included_namespaces = Some(vec![tenant.to_string()]);
    mirror.excluded_namespaces = None;
    Ok(mirror)
}

/// A restore made in namespace `tenant`: of one of its own backups (`owned`, if the named backup
/// is one), into that namespace only, of no cluster-scoped resource and none of [`LEFT_OUT`],
/// with no resource modifier (a ConfigMap in ark's namespace) and no schedule.
pub fn restore(
    spec: &RestoreSpec,
    tenant: &str,
    owned: Option<&Owned>,
) -> Result<RestoreSpec, Vec<String>> {
    let into = format!("a restore made in namespace {tenant} restores into {tenant} only");
    let mut refused = Vec::new();
    if owned.is_none() {
        refused.push(not_own(
            "spec.backupName",
            &spec.backup_name,
            "backup",
            tenant,
        ));
    }
    if spec.unmodelled.contains_key("scheduleName") {
        refused.push(format!(
            "spec.scheduleName is set: a restore made in namespace {tenant} names one of its \
             backups"
        ));
    }
    refused.extend(only_own(
        "spec.includedNamespaces",
        spec.included_namespaces.as_ref(),
        tenant,
        &into,
    ));
    for (from, to) in spec.namespace_mapping.iter().flatten() {
        if from != tenant || to != tenant {
            refused.push(format!(
                "spec.namespaceMapping maps {from:?} to {to:?}: {into}"
            ));
        }
    }
    for (at, hook) in spec.hooks.iter().flat_map(|h| &h.resources).enumerate() {
        refused.extend(only_own(
            &format!("spec.hooks.resources[{at}].includedNamespaces"),
            hook.included_namespaces.as_ref(),
            tenant,
            &into,
        ));
    }
    if spec.include_cluster_resources == Some(true) {
        refused.push(format!(
            "spec.includeClusterResources is true: a restore made in namespace {tenant} creates \
             no cluster-scoped resource"
        ));
    }
    if spec.resource_modifier.is_some() {
        refused.push(
            "spec.resourceModifier names a ConfigMap of ark's namespace, which only its \
             administrators write: a namespace's own restores take none"
                .to_string(),
        );
    }
    let Some(owned) = owned.filter(|_| refused.is_empty()) else {
        return Err(refused);
    };
    let mut mirror = spec.clone();
    mirror.backup_name = owned.name.clone();
    mirror.included_namespaces = Some(vec![tenant.to_string()]);
    mirror.excluded_namespaces = None;
    mirror.namespace_mapping = None;
    mirror.include_cluster_resources = Some(false);
    let excluded = mirror.excluded_resources.get_or_insert_with(Vec::new);
    for kind in LEFT_OUT {
        if !excluded.iter().any(|k| k == kind) {
            excluded.push(kind.to_string());
        }
    }
    Ok(mirror)
}

/// A deletion asked in namespace `tenant`: of one of its own backups.
pub fn deletion(
    spec: &DeleteBackupRequestSpec,
    tenant: &str,
    owned: Option<&Owned>,
) -> Result<DeleteBackupRequestSpec, Vec<String>> {
    let owned = owned.ok_or_else(|| {
        vec![not_own(
            "spec.backupName",
            &spec.backup_name,
            "backup",
            tenant,
        )]
    })?;
    let mut mirror = spec.clone();
    mirror.backup_name = owned.name.clone();
    Ok(mirror)
}

/// A file asked for in namespace `tenant`: of one of its own backups or restores.
pub fn download(
    spec: &DownloadRequestSpec,
    tenant: &str,
    owned: Option<&Owned>,
) -> Result<DownloadRequestSpec, Vec<String>> {
    let what = if ark_storage::layout::Layout::is_restore_target(&spec.target.kind) {
        "restore"
    } else {
        "backup"
    };
    let owned =
        owned.ok_or_else(|| vec![not_own("spec.target.name", &spec.target.name, what, tenant)])?;
    let mut mirror = spec.clone();
    mirror.target.name = owned.name.clone();
    Ok(mirror)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn owned() -> Owned {
        Owned {
            name: "team-a.b".into(),
            uid: "u".into(),
        }
    }

    fn restore_spec(value: serde_json::Value) -> RestoreSpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_tenants_backup_holds_its_namespace_whatever_it_leaves_unsaid() {
        for included in [
            None,
            Some(vec!["*".to_string()]),
            Some(vec!["team-a".into()]),
        ] {
            let spec = BackupSpec {
                included_namespaces: included,
                ..Default::default()
            };
            let mirror = backup(&spec, "team-a").unwrap();
            assert_eq!(mirror.included_namespaces, Some(vec!["team-a".into()]));
        }
    }

    #[test]
    fn a_tenants_backup_of_another_namespace_its_hooks_elsewhere_or_cluster_resources_is_refused_naming_each_field()
     {
        let spec: BackupSpec = serde_json::from_value(serde_json::json!({
            "includedNamespaces": ["team-a", "kube-system"],
            "includeClusterResources": true,
            "resourcePolicy": { "kind": "configmap", "name": "p" },
            "hooks": { "resources": [{ "name": "h", "includedNamespaces": ["team-b"] }] },
        }))
        .unwrap();
        let refused = backup(&spec, "team-a").unwrap_err();
        assert_eq!(
            refused,
            [
                "spec.includedNamespaces names namespace \"kube-system\": a backup made in \
                 namespace team-a holds team-a only",
                "spec.hooks.resources[0].includedNamespaces names namespace \"team-b\": hooks of \
                 a backup made in namespace team-a run there only",
                "spec.includeClusterResources is true: a backup made in namespace team-a holds \
                 no cluster-scoped resources but those its items use",
                "spec.resourcePolicy names a ConfigMap of ark's namespace, which only its \
                 administrators write: a namespace's own backups take none",
            ]
        );
    }

    #[test]
    fn a_tenants_restore_is_of_its_own_backup_into_its_namespace_without_cluster_or_policy_kinds() {
        let spec = restore_spec(serde_json::json!({
            "backupName": "b",
            "namespaceMapping": { "team-a": "team-a" },
            "excludedResources": ["secrets"],
        }));
        let mirror = restore(&spec, "team-a", Some(&owned())).unwrap();
        assert_eq!(mirror.backup_name, "team-a.b");
        assert_eq!(mirror.included_namespaces, Some(vec!["team-a".into()]));
        assert_eq!(mirror.namespace_mapping, None);
        assert_eq!(mirror.include_cluster_resources, Some(false));
        assert_eq!(
            mirror.excluded_resources.unwrap(),
            [
                "secrets",
                "resourcequotas",
                "limitranges",
                "roles.rbac.authorization.k8s.io",
                "rolebindings.rbac.authorization.k8s.io",
                "endpoints",
                "endpointslices.discovery.k8s.io",
                "deletebackuprequests.velero.io",
                "downloadrequests.velero.io",
            ]
        );
    }

    #[test]
    fn a_tenants_restore_into_another_namespace_of_anothers_backup_or_with_a_modifier_is_refused() {
        for (target, expected) in [
            ("kube-system", "\"team-a\" to \"kube-system\""),
            ("velero", "\"team-a\" to \"velero\""),
            ("team-b", "\"team-a\" to \"team-b\""),
        ] {
            let spec = restore_spec(serde_json::json!({
                "backupName": "b",
                "namespaceMapping": { "team-a": target },
            }));
            assert_eq!(
                restore(&spec, "team-a", Some(&owned())).unwrap_err(),
                [format!(
                    "spec.namespaceMapping maps {expected}: a restore made in namespace team-a \
                     restores into team-a only"
                )]
            );
        }
        let spec = restore_spec(serde_json::json!({
            "backupName": "theirs",
            "includeClusterResources": true,
            "resourceModifier": { "kind": "configmap", "name": "m" },
            "scheduleName": "s",
        }));
        assert_eq!(
            restore(&spec, "team-a", None).unwrap_err(),
            [
                "spec.backupName \"theirs\": no backup of that name was made in namespace team-a",
                "spec.scheduleName is set: a restore made in namespace team-a names one of its \
                 backups",
                "spec.includeClusterResources is true: a restore made in namespace team-a \
                 creates no cluster-scoped resource",
                "spec.resourceModifier names a ConfigMap of ark's namespace, which only its \
                 administrators write: a namespace's own restores take none",
            ]
        );
    }

    #[test]
    fn deletions_and_downloads_name_the_tenants_own_mirror_or_are_refused() {
        let deletion_spec = DeleteBackupRequestSpec {
            backup_name: "b".into(),
            unmodelled: BTreeMap::new().into_iter().collect(),
        };
        assert_eq!(
            deletion(&deletion_spec, "team-a", Some(&owned()))
                .unwrap()
                .backup_name,
            "team-a.b"
        );
        assert!(deletion(&deletion_spec, "team-a", None).is_err());
        let download_spec: DownloadRequestSpec = serde_json::from_value(
            serde_json::json!({ "target": { "kind": "RestoreLog", "name": "r" } }),
        )
        .unwrap();
        assert_eq!(
            download(&download_spec, "team-a", None).unwrap_err(),
            ["spec.target.name \"r\": no restore of that name was made in namespace team-a"]
        );
        assert_eq!(
            download(&download_spec, "team-a", Some(&owned()))
                .unwrap()
                .target
                .name,
            "team-a.b"
        );
    }
}
