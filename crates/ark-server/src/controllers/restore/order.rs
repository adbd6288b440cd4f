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
fn position(list: &[String], group_resource: &str) -> Option<usize> {
    let plural = group_resource.split('.').next().unwrap_or(group_resource);
    list.iter()
        .position(|p| p == group_resource || (!p.contains('.') && p == plural))
}

/// The order of a restore's resources: those of `high` first, in order, then the rest by name,
/// then those of `low` (Velero's `--restore-resource-priorities`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Priorities {
    high: Vec<String>,
    low: Vec<String>,
}

impl Default for Priorities {
    /// Velero v1.18's.
    fn default() -> Self {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        Priorities {
            high: owned(HIGH),
            low: owned(LOW),
        }
    }
}

impl std::str::FromStr for Priorities {
    type Err = String;

    /// Velero's form: `high,...,-,low,...` (the `-` and either side optional). A resource named
    /// twice, or a second `-`, is refused (Velero would take the first place in silence).
    fn from_str(text: &str) -> Result<Self, String> {
        let entries: Vec<&str> = text.split(',').map(str::trim).collect();
        let separators = entries.iter().filter(|e| **e == "-").count();
        if separators > 1 {
            return Err("multiple priority separators \"-\" found".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = entries.iter().find(|e| **e != "-" && !seen.insert(**e)) {
            return Err(format!("{twice:?} is named twice"));
        }
        if entries.iter().any(|e| e.is_empty()) {
            return Err("an empty resource name (two commas in a row, or one at an end)".into());
        }
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        let (high, low) = match entries.iter().position(|e| *e == "-") {
            Some(at) => (owned(&entries[..at]), owned(&entries[at + 1..])),
            None => (owned(&entries), Vec::new()),
        };
        Ok(Priorities { high, low })
    }
}

impl Priorities {
    /// Orders group-resources for restoring: high priorities, then the rest by name, then low
    /// ones.
    pub fn order(&self, mut resources: Vec<String>) -> Vec<String> {
        resources.sort_by_key(
            |gr| match (position(&self.high, gr), position(&self.low, gr)) {
                (Some(i), _) => (0, i, String::new()),
                (None, Some(i)) => (2, i, String::new()),
                (None, None) => (1, 0, gr.clone()),
            },
        );
        resources
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_first_workloads_after_pods() {
        let order = Priorities::default().order(
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
    fn priorities_are_read_in_velero_s_form() {
        let read = |text: &str| text.parse::<Priorities>();
        let order = |text: &str| {
            read(text).unwrap().order(
                [
                    "pods",
                    "configmaps",
                    "secrets",
                    "services",
                    "deployments.apps",
                ]
                .map(String::from)
                .to_vec(),
            )
        };
        assert_eq!(
            order("secrets,pods,-,configmaps"),
            [
                "secrets",
                "pods",
                "deployments.apps",
                "services",
                "configmaps"
            ]
        );
        assert_eq!(
            order("-,pods"),
            [
                "configmaps",
                "deployments.apps",
                "secrets",
                "services",
                "pods"
            ]
        );
        assert_eq!(
            order("services,-"),
            [
                "services",
                "configmaps",
                "deployments.apps",
                "pods",
                "secrets"
            ]
        );
        assert_eq!(
            read("pods,-,secrets,-").unwrap_err(),
            "multiple priority separators \"-\" found"
        );
        assert_eq!(
            read("pods,secrets,pods").unwrap_err(),
            "\"pods\" is named twice"
        );
        assert!(
            read("pods,,secrets")
                .unwrap_err()
                .contains("empty resource name")
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
