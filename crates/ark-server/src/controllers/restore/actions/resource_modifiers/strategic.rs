//! Strategic merge patches, as the API server applies them to Kubernetes' built-in types: maps
//! merge, `null` deletes, and a list merges by its patch merge key (containers by `name`, volume
//! mounts by `mountPath`, ...) or is replaced when it has none; the directives `$patch`
//! (`replace`, `delete`), `$retainKeys`, `$deleteFromPrimitiveList/` and `$setElementOrder/` are
//! honoured. The merge keys come from the built-in types' `patchMergeKey` tags, so, as in Velero,
//! a custom resource (whose type has none) cannot take one: a merge patch or a JSON patch can.

use serde_json::{Map, Value};

/// API groups of Kubernetes' built-in types.
const BUILT_IN_GROUPS: &[&str] = &[
    "",
    "apps",
    "batch",
    "autoscaling",
    "policy",
    "networking.k8s.io",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "node.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "certificates.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "resource.k8s.io",
];

/// Fields whose lists merge by a key, with the key (`patchMergeKey` in the built-in types).
fn merge_key(field: &str, parent: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        // A container's ports merge by container port, a Service's by port.
        "ports"
            if matches!(
                parent,
                "containers" | "initContainers" | "ephemeralContainers"
            ) =>
        {
            "containerPort"
        }
        "ports" => "port",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        "conditions" => "type",
        "ownerReferences" => "uid",
        _ => return None,
    })
}

/// Lists of values that merge as sets.
fn merges_as_set(field: &str) -> bool {
    field == "finalizers"
}

pub fn patch(original: &Value, patch: &Value, group_resource: &str) -> Result<Value, String> {
    let group = group_resource.split_once('.').map_or("", |(_, g)| g);
    if !BUILT_IN_GROUPS.contains(&group) {
        return Err(format!(
            "{group_resource} is not a built-in Kubernetes type, whose schema a strategic merge \
             patch needs; use mergePatches or patches"
        ));
    }
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        return Err("the object and the patch must both be maps".into());
    };
    let mut merged = original.clone();
    match merge_map(&mut merged, patch, "")? {
        Merged::Kept => Ok(Value::Object(merged)),
        Merged::Deleted => Err("the patch deletes the whole object".into()),
    }
}

enum Merged {
    Kept,
    Deleted,
}

/// Merges `patch` into `target`, a map that is the value of field `parent`.
fn merge_map(
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    parent: &str,
) -> Result<Merged, String> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(Merged::Deleted),
        Some("replace") => {
            target.clear();
            let rest: Map<String, Value> = patch
                .iter()
                .filter(|(k, _)| *k != "$patch")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            merge_map(target, &rest, parent)?;
            return Ok(Merged::Kept);
        }
        Some(other) => return Err(format!("unknown $patch directive {other:?}")),
        None => {}
    }
    for (key, value) in patch {
        if key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(gone)) = (target.get_mut(field), value) {
                list.retain(|v| !gone.contains(v));
            }
            continue;
        }
        if value.is_null() {
            target.remove(key);
            continue;
        }
        match (target.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(patch)) => {
                if let Merged::Deleted = merge_map(existing, patch, key)? {
                    target.remove(key);
                }
            }
            (Some(Value::Array(existing)), Value::Array(patch)) => {
                merge_list(existing, patch, key, parent)?;
            }
            (_, value) => {
                target.insert(key.clone(), fresh(value, key)?);
            }
        }
    }
    if let Some(Value::Array(retained)) = patch.get("$retainKeys") {
        target.retain(|k, _| retained.iter().any(|r| r == k));
    }
    Ok(Merged::Kept)
}

/// A patch value set where nothing was: its directives applied to nothing.
fn fresh(value: &Value, field: &str) -> Result<Value, String> {
    Ok(match value {
        Value::Object(patch) => {
            let mut map = Map::new();
            merge_map(&mut map, patch, field)?;
            Value::Object(map)
        }
        Value::Array(items) => {
            let mut list = Vec::new();
            merge_list(&mut list, items, field, "")?;
            Value::Array(list)
        }
        other => other.clone(),
    })
}

fn merge_list(
    target: &mut Vec<Value>,
    patch: &[Value],
    field: &str,
    parent: &str,
) -> Result<(), String> {
    let is_replace = |v: &Value| v.get("$patch").and_then(Value::as_str) == Some("replace");
    if patch.iter().any(is_replace) {
        target.clear();
        let rest: Vec<Value> = patch.iter().filter(|v| !is_replace(v)).cloned().collect();
        return merge_list(target, &rest, field, parent);
    }
    if merges_as_set(field) {
        for value in patch {
            if !target.contains(value) {
                target.push(value.clone());
            }
        }
        return Ok(());
    }
    let Some(key) = merge_key(field, parent) else {
        *target = patch
            .iter()
            .map(|v| fresh(v, field))
            .collect::<Result<_, _>>()?;
        return Ok(());
    };
    for element in patch {
        let Value::Object(element) = element else {
            return Err(format!(
                "{field}: an element of a list merged by {key} is not a map"
            ));
        };
        let Some(id) = element.get(key) else {
            return Err(format!("{field}: an element has no merge key {key}"));
        };
        let found = target.iter().position(|t| t.get(key) == Some(id));
        match found {
            Some(at) => {
                if let Value::Object(existing) = &mut target[at]
                    && let Merged::Deleted = merge_map(existing, element, field)?
                {
                    target.remove(at);
                }
            }
            None if element.get("$patch").and_then(Value::as_str) == Some("delete") => {}
            None => target.push(fresh(&Value::Object(element.clone()), field)?),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_merge_by_their_key_and_directives_are_honoured() {
        let pod = json!({ "metadata": { "finalizers": ["a"] }, "spec": {
            "containers": [
                { "name": "web", "image": "nginx", "ports": [{ "containerPort": 80, "name": "http" }], "args": ["-x"] },
                { "name": "side", "image": "busybox" },
            ],
            "tolerations": [{ "key": "a" }],
        } });
        let patched = patch(
            &pod,
            &json!({ "metadata": { "finalizers": ["b", "a"] }, "spec": {
            "containers": [
                { "name": "web", "ports": [{ "containerPort": 8080 }], "args": ["-y"] },
                { "name": "side", "$patch": "delete" },
                { "name": "new", "image": "x" },
            ],
            "tolerations": [{ "key": "b" }],
            "$setElementOrder/containers": [{ "name": "web" }],
        } }),
            "pods",
        )
        .unwrap();
        assert_eq!(
            patched,
            json!({ "metadata": { "finalizers": ["a", "b"] }, "spec": {
            "containers": [
                { "name": "web", "image": "nginx", "ports": [{ "containerPort": 80, "name": "http" }, { "containerPort": 8080 }], "args": ["-y"] },
                { "name": "new", "image": "x" },
            ],
            "tolerations": [{ "key": "b" }],
        } })
        );
        let replaced = patch(
            &pod,
            &json!({ "spec": { "containers": [{ "$patch": "replace" }, { "name": "only" }] } }),
            "pods",
        )
        .unwrap();
        assert_eq!(replaced["spec"]["containers"], json!([{ "name": "only" }]));
        let service = json!({ "spec": { "ports": [{ "port": 80, "targetPort": 8080 }] } });
        let patched = patch(
            &service,
            &json!({ "spec": { "ports": [{ "port": 80, "targetPort": 9090 }] } }),
            "services",
        )
        .unwrap();
        assert_eq!(
            patched["spec"]["ports"],
            json!([{ "port": 80, "targetPort": 9090 }])
        );
    }

    #[test]
    fn custom_resources_cannot_take_a_strategic_merge_patch() {
        let error = patch(&json!({}), &json!({}), "widgets.example.com").unwrap_err();
        assert!(
            error.starts_with("widgets.example.com is not a built-in Kubernetes type"),
            "{error}"
        );
    }
}
