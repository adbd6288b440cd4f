//! A restored pod is scheduled anew and gets a fresh service-account token volume.

use serde_json::Value;

use super::{ItemCx, Output, RestoreCx, RestoreItemAction, spec_mut};

pub struct PodAction;

impl RestoreItemAction for PodAction {
    fn applies_to(&self, group_resource: &str) -> bool {
        group_resource == "pods"
    }

    fn execute(&self, item: &mut Value, _: &RestoreCx<'_>, _: &ItemCx<'_>, _: &mut Output) {
        let Some(spec) = spec_mut(item) else {
            return;
        };
        spec.remove("nodeName");
        // The priority follows from the class in the new cluster.
        if spec.contains_key("priorityClassName") {
            spec.remove("priority");
        }
        let is_token_volume = |name: &str| name.starts_with("kube-api-access-");
        let mut token_volumes = Vec::new();
        if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
            volumes.retain(|v| {
                let name = v["name"].as_str().unwrap_or_default();
                let token = is_token_volume(name);
                if token {
                    token_volumes.push(name.to_string());
                }
                !token
            });
        }
        for key in ["containers", "initContainers"] {
            if let Some(Value::Array(containers)) = spec.get_mut(key) {
                for container in containers {
                    if let Some(Value::Array(mounts)) = container.get_mut("volumeMounts") {
                        mounts.retain(|m| !token_volumes.iter().any(|t| m["name"] == t.as_str()));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing;
    use serde_json::json;

    #[test]
    fn pods_are_rescheduled_without_their_old_token_volume() {
        let (pod, _) = testing::run(
            "pods",
            json!({
                "metadata": { "name": "p" },
                "spec": {
                    "nodeName": "node-1",
                    "volumes": [{ "name": "kube-api-access-x1" }, { "name": "data" }],
                    "containers": [{ "name": "c", "volumeMounts": [{ "name": "kube-api-access-x1" }, { "name": "data" }] }],
                },
            }),
            &[],
            &[],
            testing::spec(),
        );
        assert_eq!(
            pod["spec"],
            json!({
                "volumes": [{ "name": "data" }],
                "containers": [{ "name": "c", "volumeMounts": [{ "name": "data" }] }],
            })
        );
    }
}
