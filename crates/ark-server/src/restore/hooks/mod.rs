//! Restore hooks: which apply to a restored pod (spec hooks, or its annotations, which replace
//! them), init containers injected before the pod is created, exec hooks run once it runs.

mod annotations;
pub mod exec;

use std::time::Duration;

use ark_api::{HookErrorMode, RestoreHooks};
use k8s_openapi::api::core::v1::Container;
use serde_json::Value;

use crate::filter::IncludesExcludes;

/// Velero's volume-restore helper: it stays the first init container.
const RESTORE_WAIT: &str = "restore-wait";
const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30);

/// An exec hook with its defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecHook {
    pub container: String,
    pub command: Vec<String>,
    pub on_error: HookErrorMode,
    pub exec_timeout: Duration,
    pub wait_timeout: Option<Duration>,
    pub wait_for_ready: bool,
    /// Where it came from: `spec hook "<name>"` or `annotations`.
    pub source: String,
}

/// The hooks of one pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodHooks {
    pub init: Vec<Container>,
    pub exec: Vec<ExecHook>,
}

impl PodHooks {
    pub fn is_empty(&self) -> bool {
        self.init.is_empty() && self.exec.is_empty()
    }
}

fn duration(text: Option<&String>) -> Option<Duration> {
    text.and_then(|t| ark_api::duration::parse(t).ok())
}

fn first_container(pod: &Value) -> String {
    pod.pointer("/spec/containers/0/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The hooks for a restored pod (`pod` as it will be created: namespace already mapped).
pub fn for_pod(spec: Option<&RestoreHooks>, pod: &Value) -> PodHooks {
    if let Some(hooks) = annotations::hooks(pod) {
        return hooks;
    }
    let namespace = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let labels: std::collections::BTreeMap<String, String> =
        serde_json::from_value(pod.pointer("/metadata/labels").cloned().unwrap_or_default())
            .unwrap_or_default();
    let mut hooks = PodHooks::default();
    for resource in spec.map(|s| s.resources.as_slice()).unwrap_or_default() {
        let namespaces = IncludesExcludes::new(
            resource.included_namespaces.as_ref(),
            resource.excluded_namespaces.as_ref(),
        );
        let resources = IncludesExcludes::new(
            resource.included_resources.as_ref(),
            resource.excluded_resources.as_ref(),
        );
        if !namespaces.should_include(namespace) || !resources.should_include_any(&["pods", "pod"])
        {
            continue;
        }
        if let Some(selector) = &resource.label_selector {
            use kube::core::SelectorExt;
            match kube::core::Selector::try_from(selector.clone()) {
                Ok(selector) if selector.matches(&labels) => {}
                _ => continue,
            }
        }
        for hook in resource.post_hooks.iter().flatten() {
            if let Some(init) = &hook.init {
                hooks.init.extend(init.init_containers.iter().cloned());
            }
            if let Some(exec) = &hook.exec {
                hooks.exec.push(ExecHook {
                    container: exec
                        .container
                        .clone()
                        .filter(|c| !c.is_empty())
                        .unwrap_or_else(|| first_container(pod)),
                    command: exec.command.clone(),
                    on_error: exec.on_error.unwrap_or(HookErrorMode::Continue),
                    exec_timeout: duration(exec.exec_timeout.as_ref())
                        .unwrap_or(DEFAULT_EXEC_TIMEOUT),
                    wait_timeout: duration(exec.wait_timeout.as_ref()).filter(|d| !d.is_zero()),
                    wait_for_ready: exec.wait_for_ready.unwrap_or(false),
                    source: format!("spec hook {:?}", resource.name),
                });
            }
        }
    }
    hooks
}

/// Injects init containers: `restore-wait` (if the pod has it) first, then the hook containers in
/// order, then the pod's own init containers.
pub fn inject_init_containers(pod: &mut Value, containers: &[Container]) {
    if containers.is_empty() {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let existing: Vec<Value> = spec
        .get("initContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let (restore_wait, own): (Vec<Value>, Vec<Value>) = existing
        .into_iter()
        .partition(|c| c["name"].as_str() == Some(RESTORE_WAIT));
    let hooks = containers
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or_default());
    let ordered: Vec<Value> = restore_wait.into_iter().chain(hooks).chain(own).collect();
    spec.insert("initContainers".into(), Value::Array(ordered));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(yaml: &str) -> RestoreHooks {
        ark_api::hooks::parse_file(yaml).unwrap()
    }

    fn pod(namespace: &str, labels: Value) -> Value {
        json!({ "metadata": { "name": "db-0", "namespace": namespace, "labels": labels },
                "spec": { "containers": [{ "name": "db" }, { "name": "sidecar" }] } })
    }

    #[test]
    fn spec_hooks_apply_by_namespace_resource_and_selector() {
        let hooks = spec(
            "resources:\n- name: db\n  includedNamespaces: [shop]\n  labelSelector: {matchLabels: {app: db}}\n  postHooks:\n  - exec: {command: [warm], onError: Fail, execTimeout: 1m}\n  - exec: {container: sidecar, command: [again], waitTimeout: 10s, waitForReady: true}\n- name: not-pods\n  includedResources: [deployments]\n  postHooks:\n  - exec: {command: [never]}\n",
        );
        let found = for_pod(Some(&hooks), &pod("shop", json!({ "app": "db" })));
        assert_eq!(found.exec.len(), 2);
        assert_eq!(
            found.exec[0],
            ExecHook {
                container: "db".into(),
                command: vec!["warm".into()],
                on_error: HookErrorMode::Fail,
                exec_timeout: Duration::from_secs(60),
                wait_timeout: None,
                wait_for_ready: false,
                source: "spec hook \"db\"".into(),
            }
        );
        assert_eq!(found.exec[1].container, "sidecar");
        assert_eq!(found.exec[1].exec_timeout, DEFAULT_EXEC_TIMEOUT);
        assert_eq!(found.exec[1].wait_timeout, Some(Duration::from_secs(10)));
        assert!(found.exec[1].wait_for_ready);
        assert!(for_pod(Some(&hooks), &pod("other", json!({ "app": "db" }))).is_empty());
        assert!(for_pod(Some(&hooks), &pod("shop", json!({ "app": "web" }))).is_empty());
    }

    #[test]
    fn the_database_example_restores_data_before_the_server_starts() {
        let example = include_str!("../../../../../examples/hooks/database-restore.yaml");
        let hooks = ark_api::hooks::parse_file(example).unwrap();
        let mut pod = json!({
            "metadata": { "name": "postgres-0", "namespace": "shop", "labels": { "app": "postgres" } },
            "spec": { "initContainers": [{ "name": "chown-data" }], "containers": [{ "name": "postgres" }] },
        });
        let found = for_pod(Some(&hooks), &pod);
        assert_eq!(found.exec.len(), 1);
        assert_eq!(found.exec[0].on_error, HookErrorMode::Fail);
        assert!(found.exec[0].wait_for_ready);
        inject_init_containers(&mut pod, &found.init);
        let names: Vec<&str> = pod["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["restore-data", "chown-data"]);
    }

    #[test]
    fn init_containers_go_after_restore_wait_and_before_the_pods_own() {
        let mut pod = json!({ "spec": { "initContainers": [{ "name": "migrate" }, { "name": "restore-wait" }], "containers": [] } });
        let hook = |name: &str| Container {
            name: name.into(),
            ..Default::default()
        };
        inject_init_containers(&mut pod, &[hook("restore-db"), hook("check")]);
        let names: Vec<&str> = pod["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["restore-wait", "restore-db", "check", "migrate"]);
    }
}
