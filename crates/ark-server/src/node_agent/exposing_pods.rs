//! What Velero's node agent settings say of the pods that expose volumes for data movement
//! (`podResources`, `priorityClassName`, `podLabels`, `podAnnotations`), read once when the agent
//! starts, as Velero's agent reads them: resources that do not fit, or a priority class that is
//! not there, are named in a warning and left aside.

use std::collections::BTreeMap;

use ark_api::{NodeAgentConfigs, PodResources};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use serde_json::{Map, Value, json};

use crate::domain::quantity;

/// The settings of the pods that expose volumes.
#[derive(Default)]
pub struct ExposingPods {
    /// Their container's resources; None: ark's own (the pod only holds the volume).
    pub resources: Option<Value>,
    pub priority_class_name: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl ExposingPods {
    pub async fn read(client: &kube::Client, configs: &NodeAgentConfigs) -> ExposingPods {
        let resources = (configs.pod_resources.as_ref()).and_then(|r| match requirements(r) {
            Ok(resources) => Some(resources),
            Err(reason) => {
                tracing::warn!("podResources: {reason}; the exposing pods get ark's own");
                None
            }
        });
        let name = configs.priority_class_name.as_str();
        let priority_class_name = match name {
            "" => None,
            name => match Api::<PriorityClass>::all(client.clone())
                .get_opt(name)
                .await
            {
                Ok(Some(_)) => Some(name.to_string()),
                found => {
                    let reason = match found {
                        Err(error) => format!("reading PriorityClass {name}: {error}"),
                        _ => format!("PriorityClass {name} is not there"),
                    };
                    tracing::warn!(
                        "priorityClassName: {reason}; the exposing pods get the default priority"
                    );
                    None
                }
            },
        };
        ExposingPods {
            resources,
            priority_class_name,
            labels: configs.pod_labels.clone(),
            annotations: configs.pod_annotations.clone(),
        }
    }
}

/// The container resources `resources` say, as Velero's `ParseResourceRequirements` reads them:
/// each of CPU and memory a quantity, ephemeral storage `0` unless given, `0` leaving one unset,
/// and no request above its limit.
fn requirements(resources: &PodResources) -> Result<Value, String> {
    let or_zero = |given: &str| match given {
        "" => "0".to_string(),
        given => given.to_string(),
    };
    let cpu: fn(&str) -> Option<i64> = quantity::milli_units;
    let kinds = [
        (
            "cpu",
            "CPU",
            resources.cpu_request.clone(),
            resources.cpu_limit.clone(),
            cpu,
        ),
        (
            "memory",
            "memory",
            resources.memory_request.clone(),
            resources.memory_limit.clone(),
            quantity::bytes,
        ),
        (
            "ephemeral-storage",
            "ephemeral storage",
            or_zero(&resources.ephemeral_storage_request),
            or_zero(&resources.ephemeral_storage_limit),
            quantity::bytes,
        ),
    ];
    let (mut requests, mut limits) = (Map::new(), Map::new());
    for (resource, shown, request, limit, read) in kinds {
        let read = |what: &str, given: &str| {
            read(given).ok_or_else(|| format!("{shown} {what} {given:?} is not a quantity"))
        };
        let (request_units, limit_units) = (read("request", &request)?, read("limit", &limit)?);
        if limit_units != 0 && request_units > limit_units {
            return Err(format!(
                "{shown} request {request:?} is more than its limit {limit:?}"
            ));
        }
        if request_units != 0 {
            requests.insert(resource.into(), json!(request));
        }
        if limit_units != 0 {
            limits.insert(resource.into(), json!(limit));
        }
    }
    let mut requirements = Map::new();
    for (field, quantities) in [("requests", requests), ("limits", limits)] {
        if !quantities.is_empty() {
            requirements.insert(field.into(), Value::Object(quantities));
        }
    }
    Ok(Value::Object(requirements))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(json: Value) -> PodResources {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn pod_resources_are_read_as_velero_reads_them() {
        let given = resources(json!({ "cpuRequest": "500m", "cpuLimit": "1",
            "memoryRequest": "128Mi", "memoryLimit": "0", "ephemeralStorageLimit": "1Gi" }));
        assert_eq!(
            requirements(&given).unwrap(),
            json!({ "requests": { "cpu": "500m", "memory": "128Mi" },
                "limits": { "cpu": "1", "ephemeral-storage": "1Gi" } })
        );
        let above = resources(json!({ "cpuRequest": "1100m", "cpuLimit": "1.05",
            "memoryRequest": "0", "memoryLimit": "0" }));
        assert_eq!(
            requirements(&above).unwrap_err(),
            r#"CPU request "1100m" is more than its limit "1.05""#
        );
        // Velero refuses a missing one too: an empty string is no quantity.
        let missing = resources(json!({ "cpuRequest": "1", "cpuLimit": "1" }));
        assert_eq!(
            requirements(&missing).unwrap_err(),
            r#"memory request "" is not a quantity"#
        );
    }
}
