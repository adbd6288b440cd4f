//! Hooks, shared by backups and restores: which apply to a pod (spec hooks, or its annotations,
//! which take priority), and running a command in one of its containers
//! ([`command`]). A backup runs pre and post exec hooks around each pod ([`backup`]); a restore
//! injects init containers before the pod is created, and runs exec hooks once their container
//! runs ([`exec`]). Velero v1.18's rules throughout; docs/velero-compatibility.md's table lists
//! them.

pub(crate) mod annotations;
pub mod backup;
pub mod command;
pub mod exec;

use std::time::Duration;

use ark_api::{HookErrorMode, RestoreHooks};
use k8s_openapi::api::core::v1::Container;
use serde_json::Value;

use crate::domain::filter::IncludesExcludes;

/// Velero's volume-restore helpers (current and legacy names): init containers that wait for a pod
/// volume restore. One left in a backed-up pod would wait for data that this restore does not
/// write: it goes, as Velero removes it, and a pod whose volumes this restore writes back gets a
/// new one (see `controllers/restore/pod_volumes`).
const RESTORE_WAIT: [&str; 2] = ["restore-wait", "restic-wait"];
/// Velero's default for an exec hook's `execTimeout` when it is unset or zero.
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

/// A hook duration; zero, unset or unparsable are all "not set", as in Velero.
fn duration(text: Option<&String>) -> Option<Duration> {
    text.and_then(|t| ark_api::duration::parse(t).ok())
        .filter(|d| !d.is_zero())
}

/// `namespace/name` of a pod as listed, for messages.
fn pod_reference(pod: &Value) -> String {
    let field = |path: &str| {
        pod.pointer(path)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    format!(
        "{}/{}",
        field("/metadata/namespace"),
        field("/metadata/name")
    )
}

fn first_container(pod: &Value) -> String {
    pod.pointer("/spec/containers/0/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The hooks for a restored pod (`pod` as it will be created: namespace already mapped, so the
/// hooks' namespaces name the restored namespace, as in Velero). Annotations replace the spec
/// hooks of their own kind only: an exec annotation keeps the spec's init hooks, and the other way
/// round. A hook's resource filters are ignored: hooks apply to pods, as in Velero.
pub fn for_pod(spec: Option<&RestoreHooks>, pod: &Value) -> PodHooks {
    let mut hooks = from_spec(spec, pod);
    let annotated = annotations::hooks(pod);
    if let Some(exec) = annotated.exec {
        hooks.exec = vec![exec];
    }
    if let Some(init) = annotated.init {
        hooks.init = vec![init];
    }
    hooks
}

/// Which pods a spec hook entry applies to: its namespaces (globs) and its label selector.
#[derive(Clone, Debug, Default)]
pub struct PodSelector {
    pub namespaces: IncludesExcludes,
    pub labels: Option<kube::core::Selector>,
}

impl PodSelector {
    pub fn matches(&self, pod: &Value) -> bool {
        use kube::core::SelectorExt;
        let namespace = pod
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.namespaces.should_include(namespace) {
            return false;
        }
        let Some(selector) = &self.labels else {
            return true;
        };
        let labels: std::collections::BTreeMap<String, String> =
            serde_json::from_value(pod.pointer("/metadata/labels").cloned().unwrap_or_default())
                .unwrap_or_default();
        selector.matches(&labels)
    }
}

fn from_spec(spec: Option<&RestoreHooks>, pod: &Value) -> PodHooks {
    let mut hooks = PodHooks::default();
    for resource in spec.map(|s| s.resources.as_slice()).unwrap_or_default() {
        // The Restore's validation refused a selector that does not parse: none matches here.
        let labels = match resource
            .label_selector
            .clone()
            .map(kube::core::Selector::try_from)
        {
            Some(Ok(selector)) => Some(selector),
            Some(Err(_)) => continue,
            None => None,
        };
        let selector = PodSelector {
            namespaces: IncludesExcludes::new(
                resource.included_namespaces.as_ref(),
                resource.excluded_namespaces.as_ref(),
            ),
            labels,
        };
        if !selector.matches(pod) {
            continue;
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
                    wait_timeout: duration(exec.wait_timeout.as_ref()),
                    wait_for_ready: exec.wait_for_ready.unwrap_or(false),
                    source: format!("spec hook {:?}", resource.name),
                });
            }
        }
    }
    hooks
}

/// Warnings for hooks that filter on resources: Velero applies restore hooks to pods whatever
/// their `includedResources`/`excludedResources` say, and so does ark; the user is told.
pub fn ignored_resource_filters(spec: Option<&RestoreHooks>) -> Vec<String> {
    let pods_only = |names: &[String]| {
        names
            .iter()
            .all(|n| matches!(n.as_str(), "pods" | "pod" | "*"))
    };
    spec.map(|s| s.resources.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|resource| {
            let included = resource.included_resources.clone().unwrap_or_default();
            let excluded = resource.excluded_resources.clone().unwrap_or_default();
            (!pods_only(&included) || !excluded.is_empty()).then(|| {
                format!(
                    "restore hook {:?} filters resources (included {included:?}, excluded \
                     {excluded:?}): restore hooks apply to pods only and the filter is ignored, \
                     as in Velero",
                    resource.name
                )
            })
        })
        .collect()
}

/// Sets a restored pod's init containers: any `restore-wait` helper removed (see
/// [`RESTORE_WAIT`]), then the hook containers in order, then the pod's own.
pub fn set_init_containers(pod: &mut Value, hooks: &[Container]) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let existing: Vec<Value> = spec
        .get("initContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let own = existing
        .into_iter()
        .filter(|c| !RESTORE_WAIT.contains(&c["name"].as_str().unwrap_or_default()));
    let ordered: Vec<Value> = hooks
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or_default())
        .chain(own)
        .collect();
    if ordered.is_empty() {
        spec.remove("initContainers");
    } else {
        spec.insert("initContainers".into(), Value::Array(ordered));
    }
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
            "resources:\n- name: db\n  includedNamespaces: [shop]\n  labelSelector: {matchLabels: {app: db}}\n  postHooks:\n  - exec: {command: [warm], onError: Fail, execTimeout: 1m}\n  - exec: {container: sidecar, command: [again], waitTimeout: 10s, waitForReady: true}\n- name: not-pods\n  includedNamespaces: [elsewhere]\n  includedResources: [deployments]\n  postHooks:\n  - exec: {command: [never]}\n",
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
        let example = include_str!("../../../../examples/hooks/database-restore.yaml");
        let hooks = ark_api::hooks::parse_file(example).unwrap();
        let mut pod = json!({
            "metadata": { "name": "postgres-0", "namespace": "shop", "labels": { "app": "postgres" } },
            "spec": { "initContainers": [{ "name": "chown-data" }], "containers": [{ "name": "postgres" }] },
        });
        let found = for_pod(Some(&hooks), &pod);
        assert_eq!(found.exec.len(), 1);
        assert_eq!(found.exec[0].on_error, HookErrorMode::Fail);
        assert!(found.exec[0].wait_for_ready);
        set_init_containers(&mut pod, &found.init);
        let names: Vec<&str> = pod["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["restore-data", "chown-data"]);
    }

    fn init_names(pod: &Value) -> Vec<&str> {
        pod["spec"]["initContainers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn a_left_over_restore_wait_is_removed_and_hook_containers_go_before_the_pods_own() {
        let hook = |name: &str| Container {
            name: name.into(),
            ..Default::default()
        };
        // First or not, with or without hooks: a left-over wait (Velero's, or another restore's)
        // waits for a restore that is not this one, so nothing would ever end it; the pod
        // volumes action adds this restore's own afterwards.
        for existing in [
            json!([{ "name": "restore-wait" }, { "name": "migrate" }]),
            json!([{ "name": "migrate" }, { "name": "restic-wait" }]),
        ] {
            let mut pod = json!({ "spec": { "initContainers": existing, "containers": [] } });
            set_init_containers(&mut pod, &[hook("restore-db"), hook("check")]);
            assert_eq!(init_names(&pod), ["restore-db", "check", "migrate"]);
        }
        let mut pod =
            json!({ "spec": { "initContainers": [{ "name": "restore-wait" }], "containers": [] } });
        set_init_containers(&mut pod, &[]);
        assert_eq!(pod["spec"].get("initContainers"), None);
    }

    #[test]
    fn annotations_replace_only_the_spec_hooks_of_their_own_kind() {
        let hooks = spec(
            "resources:\n- name: both\n  postHooks:\n  - init:\n      initContainers: [{name: from-spec, image: busybox, command: [x]}]\n  - exec: {command: [spec-exec]}\n",
        );
        let with = |annotations: Value| {
            let pod = json!({ "metadata": { "name": "p", "namespace": "shop", "annotations": annotations },
                              "spec": { "containers": [{ "name": "app" }] } });
            for_pod(Some(&hooks), &pod)
        };
        let exec_annotated =
            with(json!({ "post.hook.restore.velero.io/command": "annotated-exec" }));
        assert_eq!(exec_annotated.exec.len(), 1);
        assert_eq!(exec_annotated.exec[0].command, ["annotated-exec"]);
        assert_eq!(exec_annotated.init[0].name, "from-spec");
        let init_annotated = with(json!({
            "init.hook.restore.velero.io/container-image": "busybox",
            "init.hook.restore.velero.io/container-name": "from-annotation",
        }));
        assert_eq!(init_annotated.init.len(), 1);
        assert_eq!(init_annotated.init[0].name, "from-annotation");
        assert_eq!(init_annotated.exec[0].command, ["spec-exec"]);
    }

    #[test]
    fn zero_timeouts_mean_the_defaults() {
        let hooks = spec(
            "resources:\n- name: z\n  postHooks:\n  - exec: {command: [x], execTimeout: 0s, waitTimeout: 0s}\n",
        );
        let found = for_pod(Some(&hooks), &pod("shop", json!({})));
        assert_eq!(found.exec[0].exec_timeout, DEFAULT_EXEC_TIMEOUT);
        assert_eq!(found.exec[0].wait_timeout, None);
    }

    #[test]
    fn hook_namespaces_are_globs_and_resource_filters_are_ignored_with_a_warning() {
        let hooks = spec(
            "resources:\n- name: shops\n  includedNamespaces: ['shop-*']\n  includedResources: [deployments]\n  postHooks:\n  - exec: {command: [x]}\n- name: plain\n  includedResources: [pods]\n  postHooks:\n  - exec: {command: [y]}\n",
        );
        assert_eq!(
            for_pod(Some(&hooks), &pod("shop-eu", json!({}))).exec.len(),
            2
        );
        assert_eq!(for_pod(Some(&hooks), &pod("shop", json!({}))).exec.len(), 1);
        assert_eq!(
            ignored_resource_filters(Some(&hooks)),
            [
                "restore hook \"shops\" filters resources (included [\"deployments\"], excluded []): restore hooks apply to pods only and the filter is ignored, as in Velero"
            ]
        );
    }
}
