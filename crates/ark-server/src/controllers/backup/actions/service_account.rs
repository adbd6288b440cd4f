//! A service account's cluster role bindings, and the cluster roles they grant, go with it
//! (Velero's service account backup action): restored alone, the account would lack its rights.

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client};
use tokio::sync::OnceCell;

use super::{BackupItemAction, Executed, ItemRef};

const BINDINGS: &str = "clusterrolebindings.rbac.authorization.k8s.io";
const ROLES: &str = "clusterroles.rbac.authorization.k8s.io";

/// The cluster's bindings are listed once per backup, at its first service account.
#[derive(Default)]
pub struct ServiceAccountAction {
    bindings: OnceCell<Result<Vec<ClusterRoleBinding>, String>>,
}

impl BackupItemAction for ServiceAccountAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "serviceaccounts"
    }

    fn adds(&self) -> &'static [&'static str] {
        &[BINDINGS, ROLES]
    }

    fn execute<'a>(
        &'a self,
        item: &'a DynamicObject,
        client: &'a Client,
    ) -> BoxFuture<'a, Result<Executed, String>> {
        Box::pin(async move {
            let bindings = self
                .bindings
                .get_or_init(|| async {
                    Api::<ClusterRoleBinding>::all(client.clone())
                        .list(&ListParams::default())
                        .await
                        .map(|list| list.items)
                        .map_err(|e| format!("listing cluster role bindings: {e}"))
                })
                .await
                .as_ref()
                .map_err(Clone::clone)?;
            Ok(Executed::adding(related(item, bindings)))
        })
    }
}

fn related(account: &DynamicObject, bindings: &[ClusterRoleBinding]) -> Vec<ItemRef> {
    let (namespace, name) = (
        account.metadata.namespace.as_deref(),
        account.metadata.name.as_deref(),
    );
    let mut related = Vec::new();
    for binding in bindings {
        let subject = binding.subjects.iter().flatten().any(|s| {
            s.kind == "ServiceAccount"
                && s.namespace.as_deref() == namespace
                && Some(s.name.as_str()) == name
        });
        if !subject {
            continue;
        }
        related.push(ItemRef {
            group_resource: BINDINGS.into(),
            namespace: None,
            name: binding.metadata.name.clone().unwrap_or_default(),
        });
        if binding.role_ref.kind == "ClusterRole" {
            related.push(ItemRef {
                group_resource: ROLES.into(),
                namespace: None,
                name: binding.role_ref.name.clone(),
            });
        }
    }
    related
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_account_names_the_bindings_it_is_a_subject_of_and_their_cluster_roles() {
        let account: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": { "name": "web", "namespace": "shop" },
        }))
        .unwrap();
        let binding = |name: &str, subject_ns: &str| -> ClusterRoleBinding {
            serde_json::from_value(json!({
                "metadata": { "name": name },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{name}-role") },
                "subjects": [{ "kind": "ServiceAccount", "name": "web", "namespace": subject_ns }],
            }))
            .unwrap()
        };
        let found = related(
            &account,
            &[binding("mine", "shop"), binding("other", "tools")],
        );
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "clusterrolebindings.rbac.authorization.k8s.io mine",
                "clusterroles.rbac.authorization.k8s.io mine-role"
            ]
        );
    }
}
