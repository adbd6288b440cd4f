//! Which resources a restore creates, and in which order: Velero's priorities, so that what others
//! depend on (CRDs, namespaces, storage, secrets, config maps, service accounts) exists first and
//! workloads come after the pods they would otherwise recreate.

/// Velero's default high priorities (v1.18), in order.
const HIGH: &[&str] = &[
    "customresourcedefinitions",
    "namespaces",
    "storageclasses",
    "volumesnapshotclass.snapshot.storage.k8s.io",
    "volumesnapshotcontents.snapshot.storage.k8s.io",
    "volumesnapshots.snapshot.storage.k8s.io",
    "datauploads.velero.io",
    "persistentvolumes",
    "persistentvolumeclaims",
    "clusterroles",
    "roles",
    "serviceaccounts",
    "clusterrolebindings",
    "rolebindings",
    "secrets",
    "configmaps",
    "limitranges",
    "priorityclasses",
    "pods",
    "replicasets.apps",
    "clusterclasses.cluster.x-k8s.io",
    "endpoints",
    "services",
];

/// Velero's default low priorities, last, in order.
const LOW: &[&str] = &[
    "clusterbootstraps.run.tanzu.vmware.com",
    "clusters.cluster.x-k8s.io",
    "clusterresourcesets.addons.cluster.x-k8s.io",
    "apps.kappctrl.k14s.io",
    "packageinstalls.packaging.carvel.dev",
];

/// Never restored: they belong to the cluster or to the backup tool itself.
const NON_RESTORABLE: &[&str] = &[
    "nodes",
    "events",
    "events.events.k8s.io",
    "backups.velero.io",
    "restores.velero.io",
    "deletebackuprequests.velero.io",
    "resticrepositories.velero.io",
    "backuprepositories.velero.io",
    "csinodes.storage.k8s.io",
    "volumeattachments.storage.k8s.io",
    "leases.coordination.k8s.io",
    // Created by the endpoint-slice controller for each Service; restoring them only collides.
    "endpointslices.discovery.k8s.io",
];

pub fn is_restorable(group_resource: &str) -> bool {
    !NON_RESTORABLE.contains(&group_resource)
}

/// A priority entry names a resource by its group-resource, or by its plural alone.
fn position(list: &[&str], group_resource: &str) -> Option<usize> {
    let plural = group_resource.split('.').next().unwrap_or(group_resource);
    list.iter()
        .position(|p| *p == group_resource || (!p.contains('.') && *p == plural))
}

/// Orders group-resources for restoring: high priorities, then the rest by name, then low ones.
pub fn restore_order(mut resources: Vec<String>) -> Vec<String> {
    resources.sort_by_key(|gr| match (position(HIGH, gr), position(LOW, gr)) {
        (Some(i), _) => (0, i, String::new()),
        (None, Some(i)) => (2, i, String::new()),
        (None, None) => (1, 0, gr.clone()),
    });
    resources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_first_workloads_after_pods() {
        let order = restore_order(
            [
                "deployments.apps",
                "pods",
                "services",
                "replicasets.apps",
                "configmaps",
                "namespaces",
                "serviceaccounts",
                "secrets",
                "customresourcedefinitions.apiextensions.k8s.io",
                "clusters.cluster.x-k8s.io",
                "cronjobs.batch",
            ]
            .map(String::from)
            .to_vec(),
        );
        assert_eq!(
            order,
            [
                "customresourcedefinitions.apiextensions.k8s.io",
                "namespaces",
                "serviceaccounts",
                "secrets",
                "configmaps",
                "pods",
                "replicasets.apps",
                "services",
                "cronjobs.batch",
                "deployments.apps",
                "clusters.cluster.x-k8s.io",
            ]
        );
    }

    #[test]
    fn cluster_owned_resources_are_not_restored() {
        assert!(!is_restorable("nodes"));
        assert!(!is_restorable("events"));
        assert!(!is_restorable("backups.velero.io"));
        assert!(is_restorable("configmaps"));
    }
}
