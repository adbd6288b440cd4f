//! Subjects in a mapped namespace follow it (Velero's role-binding and cluster-role-binding restore
//! actions).

use serde_json::Value;

use super::{ItemCx, Output, RestoreCx, RestoreItemAction};

pub struct RoleBindingAction;

impl RestoreItemAction for RoleBindingAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        matches!(
            group_resource,
            "rolebindings.rbac.authorization.k8s.io"
                | "clusterrolebindings.rbac.authorization.k8s.io"
        )
    }

    fn execute(&self, item: &mut Value, restore: &RestoreCx<'_>, _: &ItemCx<'_>, _: &mut Output) {
        let subjects = item.get_mut("subjects").and_then(Value::as_array_mut);
        for subject in subjects.into_iter().flatten() {
            if let Some(Value::String(ns)) = subject.get("namespace") {
                let mapped = restore.target_namespace(ns).to_string();
                subject["namespace"] = Value::String(mapped);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing;
    use serde_json::json;

    #[test]
    fn binding_subjects_follow_the_namespace_mapping() {
        for resource in [
            "rolebindings.rbac.authorization.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
        ] {
            let (binding, _) = testing::run(
                resource,
                json!({
                    "metadata": { "name": "b" },
                    "roleRef": { "kind": "Role", "name": "reader", "apiGroup": "rbac.authorization.k8s.io" },
                    "subjects": [
                        { "kind": "ServiceAccount", "name": "web", "namespace": "shop" },
                        { "kind": "ServiceAccount", "name": "ci", "namespace": "tools" },
                        { "kind": "User", "name": "ann", "apiGroup": "rbac.authorization.k8s.io" },
                    ],
                }),
                &[("shop", "shop-copy")],
                &[],
                testing::spec(),
            );
            let namespaces: Vec<_> = binding["subjects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.get("namespace").cloned())
                .collect();
            assert_eq!(
                namespaces,
                [Some(json!("shop-copy")), Some(json!("tools")), None],
                "{resource}"
            );
            assert_eq!(binding["roleRef"]["name"], "reader");
        }
    }
}
