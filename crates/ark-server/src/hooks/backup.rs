//! Backup hooks: exec hooks run in a pod before it is backed up (pre) and after (post). For each
//! phase, a pod's annotations replace the spec's hooks; otherwise every spec entry that applies
//! runs, in the spec's order. Only an explicit `onError: Fail` stops the pod's remaining hooks of
//! the phase, and a failed pre hook leaves the pod out of the backup. Velero v1.18's rules
//! (`internal/hook/item_hook_handler.go`, `pkg/podexec`).

use std::time::Duration;

use ark_api::hooks::{HookPhase, HookResult};
use ark_api::{BackupHooks, HookErrorMode};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use serde_json::Value;
use tokio::time::Instant;

use super::{DEFAULT_EXEC_TIMEOUT, ExecHook, PodSelector, annotations, command, first_container};
use crate::domain::filter::IncludesExcludes;

/// A Backup's `spec.hooks`, read once by its validation.
#[derive(Clone, Debug, Default)]
pub struct BackupHookSpecs {
    entries: Vec<Entry>,
    /// The server's most for one hook's timeout: a pod's annotation or a backup's spec asking for
    /// more gets this much (and a warning), so that no pod holds a backup, and the backups
    /// waiting for a worker behind it, for as long as it likes.
    max_timeout: Option<Duration>,
}

#[derive(Clone, Debug)]
struct Entry {
    name: String,
    pods: PodSelector,
    /// Whether the entry's resource filters take pods: only pods run hooks, and an entry for
    /// other resources runs none, as in Velero.
    takes_pods: bool,
    pre: Vec<SpecHook>,
    post: Vec<SpecHook>,
}

#[derive(Clone, Debug)]
struct SpecHook {
    container: Option<String>,
    command: Vec<String>,
    on_error: HookErrorMode,
    timeout: Duration,
}

/// The names a hook's resource filter may give pods by.
const POD_NAMES: [&str; 3] = ["pods", "pod", "po"];

impl BackupHookSpecs {
    /// Reads `spec.hooks`; what cannot be read (a label selector, a timeout) is an error naming
    /// its field. Velero fails such a backup once it runs; ark refuses it before anything runs.
    pub fn read(hooks: Option<&BackupHooks>, max_timeout: Duration) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let mut entries = Vec::new();
        for (i, resource) in hooks
            .map(|h| h.resources.as_slice())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let at = format!("hooks.resources[{i}]");
            let labels = match resource
                .label_selector
                .clone()
                .map(kube::core::Selector::try_from)
            {
                Some(Ok(selector)) => Some(selector),
                Some(Err(error)) => {
                    errors.push(format!("{at}.labelSelector: {error}"));
                    None
                }
                None => None,
            };
            let mut phase = |hooks: Option<&Vec<ark_api::BackupResourceHook>>, key: &str| {
                let mut read = Vec::new();
                for (j, hook) in hooks.into_iter().flatten().enumerate() {
                    let exec = &hook.exec;
                    let timeout = match exec.timeout.as_deref().map(ark_api::duration::parse) {
                        Some(Ok(timeout)) if !timeout.is_zero() => timeout,
                        None | Some(Ok(_)) => DEFAULT_EXEC_TIMEOUT,
                        Some(Err(error)) => {
                            errors.push(format!("{at}.{key}[{j}].exec.timeout: {error}"));
                            DEFAULT_EXEC_TIMEOUT
                        }
                    };
                    read.push(SpecHook {
                        container: exec.container.clone().filter(|c| !c.is_empty()),
                        command: exec.command.clone(),
                        on_error: exec.on_error.unwrap_or(HookErrorMode::Continue),
                        timeout,
                    });
                }
                read
            };
            let pre = phase(resource.pre.as_ref(), "pre");
            let post = phase(resource.post.as_ref(), "post");
            let resources = IncludesExcludes::new(
                resource.included_resources.as_ref(),
                resource.excluded_resources.as_ref(),
            );
            entries.push(Entry {
                name: resource.name.clone(),
                pods: PodSelector {
                    namespaces: IncludesExcludes::new(
                        resource.included_namespaces.as_ref(),
                        resource.excluded_namespaces.as_ref(),
                    ),
                    labels,
                },
                takes_pods: resources.should_include_any(&POD_NAMES),
                pre,
                post,
            });
        }
        if errors.is_empty() {
            Ok(BackupHookSpecs {
                entries,
                max_timeout: Some(max_timeout),
            })
        } else {
            Err(errors)
        }
    }

    /// Whether a pod with these annotations may have hooks: cheap enough to ask of every pod
    /// before it is read as JSON.
    pub fn may_apply(
        &self,
        annotations: Option<&std::collections::BTreeMap<String, String>>,
    ) -> bool {
        !self.entries.is_empty()
            || annotations.is_some_and(|a| a.keys().any(|k| k.contains("hook.backup.velero.io/")))
    }

    /// The hooks of `phase` for `pod` (as listed), and a warning for each annotation that could
    /// not be read.
    pub fn for_pod(&self, pod: &Value, phase: HookPhase) -> (Vec<ExecHook>, Vec<String>) {
        let (annotated, mut warnings) = annotations::backup_hook(pod, phase);
        let mut hooks = match annotated {
            Some(hook) => vec![hook],
            None => self.spec_hooks(pod, phase),
        };
        if let Some(max) = self.max_timeout {
            for hook in hooks.iter_mut().filter(|hook| hook.exec_timeout > max) {
                warnings.push(format!(
                    "pod {}: {phase} hook {:?} ({}) asks for a timeout of {}, more than the \
                     server's --max-backup-hook-timeout: {} is used",
                    super::pod_reference(pod),
                    hook.command.join(" "),
                    hook.source,
                    ark_api::duration::format(hook.exec_timeout),
                    ark_api::duration::format(max),
                ));
                hook.exec_timeout = max;
            }
        }
        (hooks, warnings)
    }

    /// The hooks of `phase` that `spec.hooks` gives `pod`.
    fn spec_hooks(&self, pod: &Value, phase: HookPhase) -> Vec<ExecHook> {
        self.entries
            .iter()
            .filter(|entry| entry.takes_pods && entry.pods.matches(pod))
            .flat_map(|entry| {
                let hooks = match phase {
                    HookPhase::Pre => &entry.pre,
                    HookPhase::Post => &entry.post,
                };
                hooks.iter().map(|hook| ExecHook {
                    container: hook
                        .container
                        .clone()
                        .unwrap_or_else(|| first_container(pod)),
                    command: hook.command.clone(),
                    on_error: hook.on_error,
                    exec_timeout: hook.timeout,
                    wait_timeout: None,
                    wait_for_ready: false,
                    source: format!("spec hook {:?}", entry.name),
                })
            })
            .collect()
    }
}

/// What a pod's hooks of one phase came to.
#[derive(Debug, Default)]
pub struct PhaseRun {
    /// One per hook, in order, run or not.
    pub results: Vec<HookResult>,
    /// Set when a hook with `onError: Fail` failed: why the pod's later hooks did not run.
    pub failed: Option<String>,
}

/// Runs a pod's hooks of one phase in order, each within its timeout. A pod that has finished
/// (Succeeded or Failed, as listed) runs none, and that counts as success, as in Velero.
pub async fn run(pods: &Api<Pod>, pod: &Value, hooks: &[ExecHook], phase: HookPhase) -> PhaseRun {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let finished = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .filter(|p| matches!(*p, "Succeeded" | "Failed"));
    let containers: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let mut run = PhaseRun::default();
    for hook in hooks {
        let started = Instant::now();
        let mut result = HookResult {
            phase: Some(phase),
            container: hook.container.clone(),
            command: hook.command.clone(),
            source: hook.source.clone(),
            ..Default::default()
        };
        if let Some(pod_phase) = finished {
            result.succeeded = true;
            result.skipped = Some(format!("pod {namespace}/{name} had finished ({pod_phase})"));
        } else if let Some(reason) = &run.failed {
            result.skipped = Some(format!("not run: {reason}"));
        } else if !containers.contains(&hook.container.as_str()) {
            result.error = Some(format!(
                "container {:?} not found in pod {namespace}/{name}",
                hook.container
            ));
        } else {
            command::run(pods, name, hook, hook.exec_timeout, &mut result).await;
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
        if result.error.is_some() && hook.on_error == HookErrorMode::Fail {
            run.failed = Some(format!(
                "{phase} hook {:?} in container {:?} failed with onError: Fail",
                hook.command.join(" "),
                hook.container
            ));
        }
        run.results.push(result);
    }
    run
}

/// The results of hooks that were not run, and why.
pub fn not_run(hooks: &[ExecHook], phase: HookPhase, reason: &str) -> Vec<HookResult> {
    hooks
        .iter()
        .map(|hook| HookResult {
            phase: Some(phase),
            container: hook.container.clone(),
            command: hook.command.clone(),
            source: hook.source.clone(),
            skipped: Some(format!("not run: {reason}")),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs(value: Value) -> BackupHookSpecs {
        let hooks: BackupHooks = serde_json::from_value(value).unwrap();
        BackupHookSpecs::read(Some(&hooks), Duration::from_secs(3600)).unwrap()
    }

    fn pod(namespace: &str, labels: Value, annotations: Value) -> Value {
        json!({ "metadata": { "name": "db-0", "namespace": namespace, "labels": labels,
                              "annotations": annotations },
                "spec": { "containers": [{ "name": "db" }, { "name": "sidecar" }] } })
    }

    fn commands(hooks: &[ExecHook]) -> Vec<String> {
        hooks.iter().map(|h| h.command.join(" ")).collect()
    }

    #[test]
    fn spec_hooks_apply_by_namespace_glob_resource_and_selector_in_the_spec_s_order() {
        let specs = specs(json!({ "resources": [
            { "name": "dump", "includedNamespaces": ["shop-*"],
              "labelSelector": { "matchLabels": { "app": "db" } },
              "pre": [{ "exec": { "command": ["freeze"], "onError": "Fail", "timeout": "1m" } },
                      { "exec": { "container": "sidecar", "command": ["flush"] } }],
              "post": [{ "exec": { "command": ["thaw"] } }] },
            { "name": "deployments-only", "includedResources": ["deployments"],
              "pre": [{ "exec": { "command": ["never"] } }] },
            { "name": "every-pod", "includedResources": ["po"], "excludedNamespaces": ["kube-*"],
              "pre": [{ "exec": { "command": ["sync"], "timeout": "0s" } }] },
        ] }));
        let db = pod("shop-eu", json!({ "app": "db" }), json!({}));
        assert!(specs.may_apply(None));
        assert!(!BackupHookSpecs::default().may_apply(None));
        let (pre, warnings) = specs.for_pod(&db, HookPhase::Pre);
        assert!(warnings.is_empty());
        assert_eq!(commands(&pre), ["freeze", "flush", "sync"]);
        assert_eq!(pre[0].container, "db");
        assert_eq!(pre[0].on_error, HookErrorMode::Fail);
        assert_eq!(pre[0].exec_timeout, Duration::from_secs(60));
        assert_eq!(pre[1].container, "sidecar");
        assert_eq!(pre[1].on_error, HookErrorMode::Continue);
        assert_eq!(pre[2].exec_timeout, DEFAULT_EXEC_TIMEOUT);
        assert_eq!(pre[0].source, "spec hook \"dump\"");
        assert_eq!(commands(&specs.for_pod(&db, HookPhase::Post).0), ["thaw"]);
        let web = pod("shop-eu", json!({ "app": "web" }), json!({}));
        assert_eq!(commands(&specs.for_pod(&web, HookPhase::Pre).0), ["sync"]);
        let system = pod("kube-system", json!({ "app": "db" }), json!({}));
        assert!(specs.for_pod(&system, HookPhase::Pre).0.is_empty());
    }

    #[test]
    fn annotations_replace_the_spec_hooks_of_their_phase_only() {
        let specs = specs(json!({ "resources": [{ "name": "all",
            "pre": [{ "exec": { "command": ["spec-pre"] } }],
            "post": [{ "exec": { "command": ["spec-post"] } }] }] }));
        let annotated = pod(
            "shop",
            json!({}),
            json!({ "pre.hook.backup.velero.io/command": "[\"/bin/sh\", \"-c\", \"dump\"]",
                    "pre.hook.backup.velero.io/container": "sidecar",
                    "pre.hook.backup.velero.io/on-error": "Fail",
                    "pre.hook.backup.velero.io/timeout": "2m" }),
        );
        let (pre, _) = specs.for_pod(&annotated, HookPhase::Pre);
        assert_eq!(
            pre,
            [ExecHook {
                container: "sidecar".into(),
                command: vec!["/bin/sh".into(), "-c".into(), "dump".into()],
                on_error: HookErrorMode::Fail,
                exec_timeout: Duration::from_secs(120),
                wait_timeout: None,
                wait_for_ready: false,
                source: "annotations".into(),
            }]
        );
        assert_eq!(
            commands(&specs.for_pod(&annotated, HookPhase::Post).0),
            ["spec-post"]
        );
    }

    #[test]
    fn a_hook_asking_for_more_than_the_servers_most_gets_that_most_and_the_backup_a_warning() {
        let specs = specs(json!({ "resources": [{ "name": "slow",
            "pre": [{ "exec": { "command": ["dump"], "timeout": "2h" } },
                    { "exec": { "command": ["sync"], "timeout": "1h" } }] }] }));
        let (pre, warnings) = specs.for_pod(&pod("shop", json!({}), json!({})), HookPhase::Pre);
        assert_eq!(pre[0].exec_timeout, Duration::from_secs(3600));
        assert_eq!(pre[1].exec_timeout, Duration::from_secs(3600));
        assert_eq!(
            warnings,
            [
                "pod shop/db-0: pre hook \"dump\" (spec hook \"slow\") asks for a timeout of 2h0m0s, \
              more than the server's --max-backup-hook-timeout: 1h0m0s is used"
            ]
        );
        let holding = pod(
            "tenant",
            json!({}),
            json!({ "pre.hook.backup.velero.io/command": "sleep infinity",
                    "pre.hook.backup.velero.io/timeout": "100000h" }),
        );
        let (pre, warnings) = specs.for_pod(&holding, HookPhase::Pre);
        assert_eq!(pre[0].exec_timeout, Duration::from_secs(3600));
        assert_eq!(
            warnings,
            [
                "pod tenant/db-0: pre hook \"sleep infinity\" (annotations) asks for a timeout of \
              100000h0m0s, more than the server's --max-backup-hook-timeout: 1h0m0s is used"
            ]
        );
    }

    #[test]
    fn legacy_annotations_are_pre_hooks_and_bad_values_fall_back_with_a_warning() {
        let specs = BackupHookSpecs::default();
        let legacy = pod(
            "shop",
            json!({}),
            json!({ "hook.backup.velero.io/command": "fsfreeze --freeze /data",
                    "hook.backup.velero.io/on-error": "Abort",
                    "hook.backup.velero.io/timeout": "soon" }),
        );
        let keys: std::collections::BTreeMap<String, String> =
            serde_json::from_value(legacy["metadata"]["annotations"].clone()).unwrap();
        assert!(specs.may_apply(Some(&keys)));
        let (pre, warnings) = specs.for_pod(&legacy, HookPhase::Pre);
        assert_eq!(commands(&pre), ["fsfreeze --freeze /data"]);
        assert_eq!(pre[0].command.len(), 1, "one argument, not split on spaces");
        assert_eq!(pre[0].container, "db");
        assert_eq!(pre[0].on_error, HookErrorMode::Continue);
        assert_eq!(pre[0].exec_timeout, DEFAULT_EXEC_TIMEOUT);
        assert_eq!(
            warnings,
            [
                "pod shop/db-0: annotation hook.backup.velero.io/timeout \"soon\" is not a duration; the default 30s is used"
            ]
        );
        assert!(specs.for_pod(&legacy, HookPhase::Post).0.is_empty());
        // The phased key wins over the legacy one.
        let both = pod(
            "shop",
            json!({}),
            json!({ "hook.backup.velero.io/command": "old", "pre.hook.backup.velero.io/command": "new" }),
        );
        assert_eq!(commands(&specs.for_pod(&both, HookPhase::Pre).0), ["new"]);
    }

    /// Nothing here reaches an API server: the pod is finished, or the container is missing.
    fn nowhere() -> Api<Pod> {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        Api::namespaced(kube::Client::try_from(config).unwrap(), "shop")
    }

    fn hook(container: &str, command: &str, on_error: HookErrorMode) -> ExecHook {
        ExecHook {
            container: container.into(),
            command: vec![command.into()],
            on_error,
            exec_timeout: DEFAULT_EXEC_TIMEOUT,
            wait_timeout: None,
            wait_for_ready: false,
            source: "annotations".into(),
        }
    }

    #[tokio::test]
    async fn a_failed_fail_hook_stops_the_phase_and_only_it_counts_as_failed() {
        let pod = pod("shop", json!({}), json!({}));
        let hooks = [
            hook("db", "first", HookErrorMode::Continue),
            hook("gone", "second", HookErrorMode::Fail),
            hook("db", "third", HookErrorMode::Continue),
        ];
        // The first hook fails (Continue) as its exec cannot reach the API server; the second
        // names a container the pod lacks and stops the third.
        let run = run(&nowhere(), &pod, &hooks, HookPhase::Pre).await;
        assert_eq!(run.results.len(), 3);
        assert!(run.results[0].error.is_some());
        assert_eq!(
            run.results[1].error.as_deref(),
            Some("container \"gone\" not found in pod shop/db-0")
        );
        assert_eq!(run.results[2].error, None);
        assert!(!run.results[2].succeeded);
        assert_eq!(
            run.results[2].skipped.as_deref(),
            Some("not run: pre hook \"second\" in container \"gone\" failed with onError: Fail")
        );
        assert!(run.failed.is_some());
        assert!(run.results.iter().all(|r| r.phase == Some(HookPhase::Pre)));
    }

    #[tokio::test]
    async fn a_finished_pod_runs_no_hook_and_that_is_a_success() {
        let mut pod = pod("shop", json!({}), json!({}));
        pod["status"] = json!({ "phase": "Succeeded" });
        let hooks = [hook("db", "x", HookErrorMode::Fail)];
        let run = run(&nowhere(), &pod, &hooks, HookPhase::Post).await;
        assert!(run.failed.is_none());
        assert!(run.results[0].succeeded);
        assert_eq!(
            run.results[0].skipped.as_deref(),
            Some("pod shop/db-0 had finished (Succeeded)")
        );
    }

    #[test]
    fn unreadable_selectors_and_timeouts_are_refused_at_their_fields() {
        let hooks: BackupHooks = serde_json::from_value(json!({ "resources": [{ "name": "x",
            "labelSelector": { "matchExpressions": [{ "key": "app", "operator": "Near" }] },
            "post": [{ "exec": { "command": ["y"], "timeout": "a while" } }] }] }))
        .unwrap();
        let errors = BackupHookSpecs::read(Some(&hooks), Duration::from_secs(3600)).unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].starts_with("hooks.resources[0].labelSelector: "),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("hooks.resources[0].post[0].exec.timeout: "),
            "{errors:?}"
        );
    }
}
