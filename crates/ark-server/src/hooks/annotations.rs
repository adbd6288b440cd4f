//! Hooks from a pod's annotations, by Velero's rules. At restore, `post.hook.restore.velero.io/*`
//! for an exec hook and `init.hook.restore.velero.io/*` for an init container, each replacing the
//! Restore's spec hooks of its own kind. At backup, `pre.hook.backup.velero.io/*` and
//! `post.hook.backup.velero.io/*` (the legacy `hook.backup.velero.io/*` as a pre hook), each
//! replacing the Backup's spec hooks of its phase.

use std::collections::BTreeMap;

use ark_api::HookErrorMode;
use ark_api::hooks::HookPhase;
use k8s_openapi::api::core::v1::Container;
use serde_json::Value;

use super::{DEFAULT_EXEC_TIMEOUT, ExecHook, first_container};

const POST: &str = "post.hook.restore.velero.io/";
const BACKUP_PRE: &str = "pre.hook.backup.velero.io/";
const BACKUP_POST: &str = "post.hook.backup.velero.io/";
/// Velero's first keys, without a phase: pre hooks when no `pre.` command is set.
const BACKUP_LEGACY: &str = "hook.backup.velero.io/";
const INIT: &str = "init.hook.restore.velero.io/";

/// A command annotation: a JSON array when it starts with `[`, else one argument.
pub fn command(text: &str) -> Vec<String> {
    let trimmed = text.trim();
    if trimmed.starts_with('[')
        && let Ok(list) = serde_json::from_str::<Vec<String>>(trimmed)
    {
        return list;
    }
    vec![text.to_string()]
}

/// Velero's generated name for an unnamed init container: stable for the same pod and command.
fn generated_name(pod: &Value, command: &[String]) -> String {
    use sha2::Digest;
    let seed = format!(
        "{}/{}/{}",
        pod.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        pod.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        command.join(" ")
    );
    let digest = sha2::Sha256::digest(seed.as_bytes());
    format!(
        "velero-restore-init-{}",
        digest
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

/// The hooks a pod's annotations give: an exec hook when `post.hook.restore.velero.io/command` is
/// set, an init container when `init.hook.restore.velero.io/container-image` is (its command is
/// optional: the image's entrypoint runs, as in Velero).
#[derive(Debug, Default, PartialEq)]
pub struct AnnotatedHooks {
    pub exec: Option<ExecHook>,
    pub init: Option<Container>,
}

fn annotations_of(pod: &Value) -> BTreeMap<String, String> {
    serde_json::from_value(
        pod.pointer("/metadata/annotations")
            .cloned()
            .unwrap_or_default(),
    )
    .unwrap_or_default()
}

/// The backup hook a pod's annotations give for `phase`, if they set its command, and a warning
/// for a timeout that does not parse (the default is used, as in Velero). An `on-error` other
/// than `Fail` or `Continue` is read as unset, which continues.
pub fn backup_hook(pod: &Value, phase: HookPhase) -> (Option<ExecHook>, Vec<String>) {
    let annotations = annotations_of(pod);
    let prefixes: &[&str] = match phase {
        HookPhase::Pre => &[BACKUP_PRE, BACKUP_LEGACY],
        HookPhase::Post => &[BACKUP_POST],
    };
    let Some((prefix, text)) = prefixes.iter().find_map(|prefix| {
        annotations
            .get(&format!("{prefix}command"))
            .filter(|v| !v.is_empty())
            .map(|text| (*prefix, text))
    }) else {
        return (None, Vec::new());
    };
    let get = |key: &str| {
        annotations
            .get(&format!("{prefix}{key}"))
            .filter(|v| !v.is_empty())
    };
    let mut warnings = Vec::new();
    let exec_timeout = match get("timeout") {
        None => DEFAULT_EXEC_TIMEOUT,
        Some(text) => match ark_api::duration::parse(text) {
            Ok(timeout) if !timeout.is_zero() => timeout,
            Ok(_) => DEFAULT_EXEC_TIMEOUT,
            Err(_) => {
                warnings.push(format!(
                    "pod {}: annotation {prefix}timeout {text:?} is not a duration; the default {} is used",
                    super::pod_reference(pod),
                    ark_api::duration::format(DEFAULT_EXEC_TIMEOUT),
                ));
                DEFAULT_EXEC_TIMEOUT
            }
        },
    };
    let hook = ExecHook {
        container: get("container")
            .cloned()
            .unwrap_or_else(|| first_container(pod)),
        command: command(text),
        on_error: match get("on-error").map(String::as_str) {
            Some("Fail") => HookErrorMode::Fail,
            _ => HookErrorMode::Continue,
        },
        exec_timeout,
        wait_timeout: None,
        wait_for_ready: false,
        source: "annotations".into(),
    };
    (Some(hook), warnings)
}

pub fn hooks(pod: &Value) -> AnnotatedHooks {
    let annotations = annotations_of(pod);
    let get = |prefix: &str, key: &str| {
        annotations
            .get(&format!("{prefix}{key}"))
            .filter(|v| !v.trim().is_empty())
    };
    let mut hooks = AnnotatedHooks::default();
    if let Some(text) = get(POST, "command") {
        let duration = |key| super::duration(get(POST, key));
        hooks.exec = Some(ExecHook {
            container: get(POST, "container")
                .cloned()
                .unwrap_or_else(|| first_container(pod)),
            command: command(text),
            on_error: match get(POST, "on-error").map(String::as_str) {
                Some("Fail") => HookErrorMode::Fail,
                _ => HookErrorMode::Continue,
            },
            exec_timeout: duration("exec-timeout").unwrap_or(DEFAULT_EXEC_TIMEOUT),
            wait_timeout: duration("wait-timeout"),
            wait_for_ready: get(POST, "wait-for-ready")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            source: "annotations".into(),
        });
    }
    if let Some(image) = get(INIT, "container-image") {
        let command = get(INIT, "command").map(|text| command(text));
        hooks.init = Some(Container {
            name: get(INIT, "container-name")
                .cloned()
                .unwrap_or_else(|| generated_name(pod, command.as_deref().unwrap_or_default())),
            image: Some(image.clone()),
            command,
            ..Default::default()
        });
    }
    hooks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_are_json_arrays_or_one_argument() {
        assert_eq!(
            command(r#"["/bin/sh", "-c", "echo hi"]"#),
            ["/bin/sh", "-c", "echo hi"]
        );
        assert_eq!(command("/usr/bin/warm-cache"), ["/usr/bin/warm-cache"]);
        assert_eq!(command("[not json"), ["[not json"]);
    }

    #[test]
    fn annotations_make_exec_and_init_hooks() {
        let pod = json!({
            "metadata": { "name": "db-0", "namespace": "shop", "annotations": {
                "post.hook.restore.velero.io/command": "[\"/bin/sh\", \"-c\", \"warm\"]",
                "post.hook.restore.velero.io/container": "db",
                "post.hook.restore.velero.io/on-error": "Fail",
                "post.hook.restore.velero.io/exec-timeout": "45s",
                "post.hook.restore.velero.io/wait-timeout": "2m",
                "post.hook.restore.velero.io/wait-for-ready": "true",
                "init.hook.restore.velero.io/container-image": "busybox",
                "init.hook.restore.velero.io/command": "[\"restore-db\"]",
            } },
            "spec": { "containers": [{ "name": "app" }, { "name": "db" }] },
        });
        let hooks = hooks(&pod);
        assert_eq!(
            hooks.exec,
            Some(ExecHook {
                container: "db".into(),
                command: vec!["/bin/sh".into(), "-c".into(), "warm".into()],
                on_error: HookErrorMode::Fail,
                exec_timeout: std::time::Duration::from_secs(45),
                wait_timeout: Some(std::time::Duration::from_secs(120)),
                wait_for_ready: true,
                source: "annotations".into(),
            })
        );
        let init = hooks.init.unwrap();
        assert!(init.name.starts_with("velero-restore-init-"));
        assert_eq!(init.name.len(), "velero-restore-init-".len() + 8);
        assert_eq!(init.image.as_deref(), Some("busybox"));
        assert_eq!(init.command, Some(vec!["restore-db".to_string()]));
    }

    #[test]
    fn no_annotations_no_hooks() {
        assert_eq!(
            hooks(&json!({ "metadata": { "annotations": { "other": "x" } } })),
            AnnotatedHooks::default()
        );
    }
}
