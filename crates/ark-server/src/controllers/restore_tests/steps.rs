//! One restore test: plan the throwaway namespaces (one per namespace restored, named after it),
//! create them labelled as the test's, restore the backup into them (never cluster-scoped
//! objects, never over anything that exists, with the test's hooks), wait for the check's pod to
//! run, run the check, and remove the namespaces, whatever happened; all within the test's
//! timeout.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use ark_api::hooks::HookResult;
use ark_api::restore_test::{BY_LABEL, OF_LABEL, TestResult, ValidCheck, ValidTest};
use ark_api::verification::Outcome;
use ark_api::{Backup, HookErrorMode, Restore, RestoreHooks, RestorePhase, RestoreSpec, Schedule};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;

use super::Ctx;
use crate::hooks::{self, ExecHook};
use crate::runtime::objects;
use crate::runtime::sync::Locked;

/// How often the test looks at its restore and its pod.
const POLL: Duration = Duration::from_secs(2);
/// The longest source namespace name kept in a throwaway namespace's name.
const NAME_KEPT: usize = 48;

/// Why a test failed, and the check's output if it ran.
struct Failure {
    reason: String,
    output: Option<String>,
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure {
            reason,
            output: None,
        }
    }
}

/// What a test restores, and where.
struct Plan {
    /// Each namespace restored, and its throwaway namespace.
    mapping: BTreeMap<String, String>,
    restore: String,
    /// The throwaway namespace the check runs in.
    check_namespace: String,
}

fn now_text() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Runs the test of `backup`, and says how it went.
pub async fn run(ctx: &Ctx, schedule: &Schedule, test: &ValidTest, backup: &Backup) -> TestResult {
    let started = now_text();
    let result = |restore: &str, outcome: Result<String, Failure>| {
        let (outcome, reason, output) = match outcome {
            Ok(output) => (Outcome::Passed, None, Some(output)),
            Err(failure) => (Outcome::Failed, Some(failure.reason), failure.output),
        };
        TestResult {
            outcome,
            backup: backup.name_any(),
            restore: restore.to_string(),
            started: started.clone(),
            ended: now_text(),
            reason,
            output: output.map(|o| TestResult::tail(&o)),
        }
    };
    let plan = match plan(test, backup) {
        Ok(plan) => plan,
        Err(reason) => return result("", Err(reason.into())),
    };
    ctx.running.locked().extend(plan.mapping.values().cloned());
    let steps = steps(ctx, schedule, test, backup, &plan);
    let outcome = match tokio::time::timeout(test.timeout, steps).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!(
            "the test did not end within its timeout of {}",
            ark_api::duration::format(test.timeout)
        )
        .into()),
    };
    let namespaces = Api::<Namespace>::all(ctx.kube.client.clone());
    for throwaway in plan.mapping.values() {
        remove_namespace(&namespaces, throwaway).await;
        ctx.running.locked().remove(throwaway);
    }
    result(&plan.restore, outcome)
}

/// The namespaces to restore (the test's, or the backup's included names) and their throwaway
/// namespaces: `<namespace>-test-<suffix>`, the suffix new for each test.
fn plan(test: &ValidTest, backup: &Backup) -> Result<Plan, String> {
    let included = backup.spec.included_namespaces.clone().unwrap_or_default();
    let sources = match &test.namespaces {
        Some(names) => names.clone(),
        None if !included.is_empty() && included.iter().all(|n| !n.contains(['*', '?', '['])) => {
            included
        }
        None => {
            return Err(format!(
                "the test names no namespaces to restore, and backup {} includes {:?}: name \
                 them in the test's `namespaces`",
                backup.name_any(),
                included
            ));
        }
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (backup.uid(), Timestamp::now()).hash(&mut hasher);
    let suffix = format!("{:06x}", hasher.finish() & 0xff_ffff);
    let mapping: BTreeMap<String, String> = (sources.iter())
        .map(|source| {
            let kept = &source[..source.len().min(NAME_KEPT)];
            let name = format!("{}-test-{suffix}", kept.trim_end_matches('-'));
            (source.clone(), name)
        })
        .collect();
    let check_source = test
        .check
        .namespace
        .clone()
        .unwrap_or_else(|| sources[0].clone());
    let Some(check_namespace) = mapping.get(&check_source).cloned() else {
        return Err(format!(
            "the check's namespace {check_source:?} is not one of those restored ({sources:?})"
        ));
    };
    let backup_name = backup.name_any();
    Ok(Plan {
        mapping,
        restore: format!(
            "{}-test-{suffix}",
            &backup_name[..backup_name.len().min(200)]
        ),
        check_namespace,
    })
}

/// The test's steps, from its namespaces to the check's output.
async fn steps(
    ctx: &Ctx,
    schedule: &Schedule,
    test: &ValidTest,
    backup: &Backup,
    plan: &Plan,
) -> Result<String, Failure> {
    let client = &ctx.kube.client;
    let of = schedule.uid().unwrap_or_default();
    let namespaces = Api::<Namespace>::all(client.clone());
    for (source, throwaway) in &plan.mapping {
        let namespace = serde_json::from_value(json!({ "metadata": {
            "name": throwaway,
            "labels": { OF_LABEL: of, BY_LABEL: ctx.kube.namespace },
            "annotations": { "ark.io/restore-test-source": format!("{}/{}", backup.name_any(), source) },
        } }))
        .expect("a namespace");
        if let Err(error) = namespaces.create(&PostParams::default(), &namespace).await {
            return Err(format!(
                "cannot create namespace {throwaway}: {}",
                objects::reason(&error)
            )
            .into());
        }
    }
    let restore = restore_of(test, backup, plan, &of);
    let restores = Api::<Restore>::namespaced(client.clone(), &ctx.kube.namespace);
    if let Err(error) = restores.create(&PostParams::default(), &restore).await {
        let reason = format!(
            "cannot create restore {}: {}",
            plan.restore,
            objects::reason(&error)
        );
        return Err(reason.into());
    }
    restored(&restores, &plan.restore).await?;
    let pods = Api::<Pod>::namespaced(client.clone(), &plan.check_namespace);
    let (pod, container) = running_pod(&pods, &test.check, &plan.check_namespace).await?;
    check(&pods, &pod, container, &test.check).await
}

/// The test's Restore: the backup's namespaces into the throwaway ones, no cluster-scoped objects,
/// nothing that exists touched, volume data back, and the test's hooks with their namespaces
/// mapped (hooks name the namespaces pods are restored into).
fn restore_of(test: &ValidTest, backup: &Backup, plan: &Plan, of: &str) -> Restore {
    let map = |names: &Option<Vec<String>>| {
        names.as_ref().map(|names| {
            (names.iter())
                .map(|name| plan.mapping.get(name).unwrap_or(name).clone())
                .collect()
        })
    };
    let hooks = test.hooks.clone().map(|mut hooks: RestoreHooks| {
        for resource in &mut hooks.resources {
            resource.included_namespaces = map(&resource.included_namespaces);
            resource.excluded_namespaces = map(&resource.excluded_namespaces);
        }
        hooks
    });
    let mut restore = Restore::new(
        &plan.restore,
        RestoreSpec {
            backup_name: backup.name_any(),
            included_namespaces: Some(plan.mapping.keys().cloned().collect()),
            namespace_mapping: Some(plan.mapping.clone()),
            include_cluster_resources: Some(false),
            existing_resource_policy: Some("none".into()),
            restore_pvs: Some(true),
            hooks,
            ..Default::default()
        },
    );
    restore.metadata.labels = Some([(OF_LABEL.to_string(), of.to_string())].into());
    restore
}

/// Waits for the restore to end: Completed, or the reason it did not.
async fn restored(restores: &Api<Restore>, name: &str) -> Result<(), Failure> {
    loop {
        let restore = restores
            .get_opt(name)
            .await
            .map_err(|e| objects::reason(&e));
        let restore = restore?.ok_or_else(|| format!("restore {name} was deleted"))?;
        let phase = restore.phase();
        if !phase.is_terminal() {
            tokio::time::sleep(POLL).await;
            continue;
        }
        if phase == RestorePhase::Completed {
            return Ok(());
        }
        let status = restore.status.unwrap_or_default();
        let mut why = vec![format!("restore {name} ended {phase:?}")];
        why.extend(status.failure_reason);
        why.extend(status.validation_errors.into_iter().flatten());
        if let Some(errors) = status.errors.filter(|n| *n > 0) {
            why.push(format!(
                "{errors} errors (ark restore describe {name} --details)"
            ));
        }
        return Err(why.join(": ").into());
    }
}

/// The first pod (by name) matching the check's selector whose container runs and is ready, and
/// that container; or, past the check's `waitTimeout`, why none is.
async fn running_pod(
    pods: &Api<Pod>,
    check: &ValidCheck,
    namespace: &str,
) -> Result<(String, String), Failure> {
    let mut params = ListParams::default();
    if let Some(selector) = check.label_selector.clone() {
        let selector = kube::core::Selector::try_from(selector).map_err(|e| e.to_string())?;
        params = params.labels_from(&selector);
    }
    let deadline = tokio::time::Instant::now() + check.wait_timeout;
    loop {
        let mut found = pods
            .list(&params)
            .await
            .map_err(|e| objects::reason(&e))?
            .items;
        found.sort_by_key(|pod| pod.name_any());
        let container = |pod: &Pod| {
            check.container.clone().or_else(|| {
                let spec = pod.spec.as_ref()?;
                spec.containers.first().map(|c| c.name.clone())
            })
        };
        let ready = found.iter().find_map(|pod| {
            let name = container(pod)?;
            let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
            let status = statuses.iter().find(|s| s.name == name)?;
            status.ready.then(|| (pod.name_any(), name))
        });
        if let Some(ready) = ready {
            return Ok(ready);
        }
        if tokio::time::Instant::now() >= deadline {
            let waited = ark_api::duration::format(check.wait_timeout);
            let state = match found.first() {
                Some(pod) => format!("pod {}: {}", pod.name_any(), pod_state(pod)),
                None => "no pod matches the check's selector".to_string(),
            };
            return Err(format!(
                "no pod of namespace {namespace} was ready for the check within {waited}: {state}"
            )
            .into());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What keeps a pod from running: each container's state that is not running.
fn pod_state(pod: &Pod) -> String {
    let Some(status) = &pod.status else {
        return "no status yet".into();
    };
    let containers = (status.init_container_statuses.iter().flatten())
        .map(|s| ("init container", s))
        .chain(
            status
                .container_statuses
                .iter()
                .flatten()
                .map(|s| ("container", s)),
        );
    let mut states = Vec::new();
    for (kind, container) in containers {
        let state = container.state.as_ref();
        let last = container
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref());
        if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
            let mut text = format!(
                "{kind} {} waiting ({})",
                container.name,
                waiting.reason.clone().unwrap_or_default()
            );
            if let Some(last) = last {
                text.push_str(&format!(", last exited with code {}", last.exit_code));
            }
            states.push(text);
        } else if let Some(ended) = state.and_then(|s| s.terminated.as_ref())
            && ended.exit_code != 0
        {
            states.push(format!(
                "{kind} {} exited with code {}",
                container.name, ended.exit_code
            ));
        } else if !container.ready && kind == "container" {
            states.push(format!("container {} not ready", container.name));
        }
    }
    let phase = status.phase.clone().unwrap_or_default();
    match states.is_empty() {
        true => format!("phase {phase}"),
        false => format!("phase {phase}; {}", states.join("; ")),
    }
}

/// Runs the check's command: its output, or why it failed (it failed, or printed other than
/// `expect`).
async fn check(
    pods: &Api<Pod>,
    pod: &str,
    container: String,
    check: &ValidCheck,
) -> Result<String, Failure> {
    let hook = ExecHook {
        container: container.clone(),
        command: check.command.clone(),
        on_error: HookErrorMode::Fail,
        exec_timeout: check.exec_timeout,
        wait_timeout: None,
        wait_for_ready: true,
        source: "restore test".into(),
    };
    let mut ran = HookResult {
        container,
        command: check.command.clone(),
        source: hook.source.clone(),
        ..Default::default()
    };
    hooks::command::run(pods, pod, &hook, check.exec_timeout, &mut ran).await;
    let output = ran.output_tail;
    if let Some(error) = ran.error {
        return Err(Failure {
            reason: format!("the check in pod {pod} failed: {error}"),
            output: Some(output),
        });
    }
    match &check.expect {
        Some(expect) if output.trim() != expect.trim() => Err(Failure {
            reason: format!(
                "the check in pod {pod} printed {:?}, not the expected {:?}",
                TestResult::tail(output.trim()),
                expect.trim()
            ),
            output: Some(output),
        }),
        _ => Ok(output),
    }
}

/// Deletes a throwaway namespace (its objects go with it); one already gone is no error.
pub async fn remove_namespace(namespaces: &Api<Namespace>, name: &str) {
    match namespaces.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => tracing::warn!("removing namespace {name}: {}", objects::reason(&error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_namespace_restored_gets_a_throwaway_one_and_the_hooks_follow_it() {
        let test = ark_api::restore_test::parse(
            "every: 1\nnamespaces: [shop, a-namespace-whose-name-is-longer-than-forty-eight-chars]\n\
             hooks:\n  resources:\n  - name: load\n    includedNamespaces: [shop, other]\n    postHooks:\n    - exec: {command: [x]}\n\
             check: {command: [true]}",
        )
        .and_then(|test| test.validate())
        .unwrap();
        let backup = Backup::new("nightly-20261207030000", Default::default());
        let planned = plan(&test, &backup).unwrap();
        let shop = &planned.mapping["shop"];
        assert!(shop.starts_with("shop-test-") && shop.len() == 16, "{shop}");
        assert_eq!(&planned.check_namespace, shop);
        let long = &planned.mapping["a-namespace-whose-name-is-longer-than-forty-eight-chars"];
        assert!(
            long.starts_with("a-namespace-whose-name-is-longer-than-forty-eigh-test-"),
            "{long}"
        );
        assert!(long.len() <= 63);
        let suffix = &shop["shop-test-".len()..];
        assert!(
            planned.restore.ends_with(&format!("-test-{suffix}")),
            "{}",
            planned.restore
        );
        let restore = restore_of(&test, &backup, &planned, "uid-1");
        assert_eq!(restore.spec.include_cluster_resources, Some(false));
        assert_eq!(
            restore.spec.existing_resource_policy.as_deref(),
            Some("none")
        );
        let hooks = restore.spec.hooks.unwrap();
        assert_eq!(
            hooks.resources[0].included_namespaces,
            Some(vec![shop.clone(), "other".to_string()])
        );
        let unnamed = ark_api::restore_test::parse("every: 1\ncheck: {command: [true]}");
        let unnamed = unnamed.and_then(|test| test.validate()).unwrap();
        let mut wildcard = backup.clone();
        wildcard.spec.included_namespaces = Some(vec!["shop-*".into()]);
        assert!(
            plan(&unnamed, &wildcard)
                .err()
                .unwrap()
                .contains("name them in the test's `namespaces`")
        );
        wildcard.spec.included_namespaces = Some(vec!["shop".into()]);
        assert_eq!(plan(&unnamed, &wildcard).unwrap().mapping.len(), 1);
    }
}
