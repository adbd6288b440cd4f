//! Restore hooks: checking them (in a Restore, or a `--hooks-file` before anything is created),
//! with each error at its field path, and for a file, its line and column.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{RestoreHooks, RestoreResourceHook};

/// One thing wrong with a hooks specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookError {
    /// `resources[0].postHooks[1].exec.command`.
    pub path: String,
    pub message: String,
    /// Line and column (1-based) in the file, when the hooks came from one.
    pub position: Option<(usize, usize)>,
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((line, column)) = self.position {
            write!(f, "{line}:{column}: ")?;
        }
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

fn error(path: String, message: impl Into<String>) -> HookError {
    HookError {
        path,
        message: message.into(),
        position: None,
    }
}

fn check_duration(errors: &mut Vec<HookError>, path: String, value: Option<&String>) {
    if let Some(value) = value
        && let Err(e) = crate::duration::parse(value)
    {
        errors.push(error(path, e.to_string()));
    }
}

/// Which rules restore hooks are held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// What Velero's server refuses (`FailedValidation`): init containers without a name, image
    /// or command, selectors that do not parse, durations that do not parse. The server holds a
    /// Restore to these, so a Restore that Velero would run is never refused by ark.
    Velero,
    /// Also what Velero accepts and then ignores or fails at restore time: a hook that is both or
    /// neither init and exec, an init hook without containers, a blank exec command, a resource
    /// without a name. `--hooks-file` is held to these (docs/restores-and-hooks.md).
    Strict,
}

/// What serde cannot check, under `rules`, reported all at once.
pub fn validate(hooks: &RestoreHooks, rules: Rules) -> Vec<HookError> {
    let strict = rules == Rules::Strict;
    let mut errors = Vec::new();
    for (i, resource) in hooks.resources.iter().enumerate() {
        let base = format!("resources[{i}]");
        if strict && resource.name.trim().is_empty() {
            errors.push(error(format!("{base}.name"), "a name is required"));
        }
        if let Some(selector) = &resource.label_selector {
            let before = errors.len();
            for (k, requirement) in selector.match_expressions.iter().flatten().enumerate() {
                if !matches!(
                    requirement.operator.as_str(),
                    "In" | "NotIn" | "Exists" | "DoesNotExist"
                ) {
                    errors.push(error(
                        format!("{base}.labelSelector.matchExpressions[{k}].operator"),
                        format!(
                            "unknown operator {:?} (expected In, NotIn, Exists or DoesNotExist)",
                            requirement.operator
                        ),
                    ));
                }
            }
            if errors.len() == before
                && let Err(e) = kube::core::Selector::try_from(selector.clone())
            {
                errors.push(error(
                    format!("{base}.labelSelector"),
                    format!("invalid label selector: {e}"),
                ));
            }
        }
        for (j, hook) in resource.post_hooks.iter().flatten().enumerate() {
            validate_hook(&mut errors, &format!("{base}.postHooks[{j}]"), hook, strict);
        }
    }
    errors
}

fn validate_hook(
    errors: &mut Vec<HookError>,
    path: &str,
    hook: &RestoreResourceHook,
    strict: bool,
) {
    if strict {
        match (&hook.init, &hook.exec) {
            (Some(_), Some(_)) => errors.push(error(
                path.to_string(),
                "a hook is either init or exec, not both",
            )),
            (None, None) => errors.push(error(path.to_string(), "a hook needs init or exec")),
            _ => {}
        }
    }
    if let Some(init) = &hook.init {
        if strict && init.init_containers.is_empty() {
            errors.push(error(
                format!("{path}.init.initContainers"),
                "at least one init container is required",
            ));
        }
        for (k, container) in init.init_containers.iter().enumerate() {
            let at = format!("{path}.init.initContainers[{k}]");
            if container.name.trim().is_empty() {
                errors.push(error(
                    format!("{at}.name"),
                    "an init container needs a name",
                ));
            }
            if container
                .image
                .as_deref()
                .is_none_or(|i| i.trim().is_empty())
            {
                errors.push(error(
                    format!("{at}.image"),
                    "an init container needs an image",
                ));
            }
            if container.command.as_ref().is_none_or(|c| c.is_empty()) {
                errors.push(error(
                    format!("{at}.command"),
                    "an init container needs a command",
                ));
            }
        }
        check_duration(
            errors,
            format!("{path}.init.timeout"),
            init.timeout.as_ref(),
        );
    }
    if let Some(exec) = &hook.exec {
        if strict && exec.command.iter().all(|c| c.trim().is_empty()) {
            errors.push(error(
                format!("{path}.exec.command"),
                "the command must not be empty",
            ));
        }
        check_duration(
            errors,
            format!("{path}.exec.execTimeout"),
            exec.exec_timeout.as_ref(),
        );
        check_duration(
            errors,
            format!("{path}.exec.waitTimeout"),
            exec.wait_timeout.as_ref(),
        );
    }
}

/// A hooks file is a few kilobytes; one of more is refused before it is parsed.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// A hooks file nests about eight levels; a deeper one is refused where it gets too deep, so that
/// a hostile file costs neither stack nor (with each level's path) quadratic memory.
const MAX_DEPTH: usize = 32;

/// Where each field path is in a YAML (or JSON) text: the line and column of its key, or of the
/// list item.
fn positions(text: &str) -> Result<BTreeMap<String, (usize, usize)>, HookError> {
    use serde_saphyr::granit_parser::{Event, Parser};
    enum Frame {
        Map { path: String, key: Option<String> },
        Seq { path: String, next: usize },
    }
    let mut index = BTreeMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| HookError {
            path: String::new(),
            message: e.info().to_string(),
            position: Some((e.marker().line(), e.marker().col() + 1)),
        })?;
        let at = (span.start.line(), span.start.col() + 1);
        let is_node = matches!(
            event,
            Event::Scalar(..)
                | Event::MappingStart(..)
                | Event::SequenceStart(..)
                | Event::Alias(..)
        );
        // The path of this node, or None when it is a mapping key.
        let node_path = if is_node {
            match stack.last_mut() {
                None => Some(String::new()),
                Some(Frame::Map { path, key }) => match key.take() {
                    None => {
                        if let Event::Scalar(name, ..) = &event {
                            let full = if path.is_empty() {
                                name.to_string()
                            } else {
                                format!("{path}.{name}")
                            };
                            index.insert(full, at);
                            *key = Some(name.to_string());
                        }
                        None
                    }
                    Some(name) => Some(if path.is_empty() {
                        name
                    } else {
                        format!("{path}.{name}")
                    }),
                },
                Some(Frame::Seq { path, next }) => {
                    let full = format!("{path}[{next}]");
                    *next += 1;
                    index.insert(full.clone(), at);
                    Some(full)
                }
            }
        } else {
            None
        };
        if matches!(event, Event::MappingStart(..) | Event::SequenceStart(..))
            && stack.len() >= MAX_DEPTH
        {
            return Err(HookError {
                path: String::new(),
                message: format!("nested deeper than {MAX_DEPTH} levels"),
                position: Some(at),
            });
        }
        match event {
            Event::MappingStart(..) => stack.push(Frame::Map {
                path: node_path.unwrap_or_default(),
                key: None,
            }),
            Event::SequenceStart(..) => stack.push(Frame::Seq {
                path: node_path.unwrap_or_default(),
                next: 0,
            }),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    Ok(index)
}

/// The path of an error that comes with a position only: the last field at or before it; where a
/// list item and its first key share the position, the item when the error is about the mapping
/// itself (a missing field), else the key.
fn path_at(
    index: &BTreeMap<String, (usize, usize)>,
    position: (usize, usize),
    about_mapping: bool,
) -> String {
    let last = index.values().filter(|at| **at <= position).max();
    let candidates = index
        .iter()
        .filter(|(_, at)| Some(*at) == last)
        .map(|(path, _)| path);
    let chosen = if about_mapping {
        candidates.min_by_key(|p| p.len())
    } else {
        candidates.max_by_key(|p| p.len())
    };
    chosen.cloned().unwrap_or_default()
}

/// Parses and checks a hooks file (YAML or JSON): the `spec.hooks` of a Restore. Every error names
/// its field path, line and column.
pub fn parse_file(text: &str) -> Result<RestoreHooks, Vec<HookError>> {
    let (hooks, index) = parse_located::<RestoreHooks>(text)?;
    let errors = locate(validate(&hooks, Rules::Strict), &index);
    if errors.is_empty() {
        Ok(hooks)
    } else {
        Err(errors)
    }
}

/// Where each field path of a parsed file is: its line and column.
pub type Positions = BTreeMap<String, (usize, usize)>;

/// Parses a file (YAML or JSON) of at most [`MAX_FILE_BYTES`] as `T`, with the position of each
/// field path; an error names its field path, line and column.
pub fn parse_located<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<(T, Positions), Vec<HookError>> {
    if text.len() > MAX_FILE_BYTES {
        return Err(vec![HookError {
            path: String::new(),
            message: format!("larger than the {MAX_FILE_BYTES} bytes the file may have"),
            position: None,
        }]);
    }
    let index = positions(text).map_err(|e| vec![e])?;
    let parsed: T = serde_saphyr::from_str(text).map_err(|e| {
        let position = e
            .location()
            .map(|l| (l.line() as usize, l.column() as usize));
        let rendered = e.to_string();
        let first = rendered.lines().next().unwrap_or_default();
        // "error: line 3 column 3: unknown field `bogus`, ..." -> the message alone.
        let message = first
            .split_once(": ")
            .map(|(_, rest)| rest)
            .unwrap_or(first);
        let message = message
            .split_once(": ")
            .filter(|(p, _)| p.starts_with("line "))
            .map_or(message, |(_, m)| m);
        let about_mapping = message.starts_with("missing field");
        vec![HookError {
            path: position
                .map(|p| path_at(&index, p, about_mapping))
                .unwrap_or_default(),
            message: message.to_string(),
            position,
        }]
    })?;
    Ok((parsed, index))
}

/// `errors` found by checking a parsed file, each given the position of its field, or of the
/// closest enclosing field that is there when it is absent.
pub fn locate(errors: Vec<HookError>, index: &Positions) -> Vec<HookError> {
    errors
        .into_iter()
        .map(|mut e| {
            e.position = index.get(&e.path).copied().or_else(|| {
                let mut path = e.path.as_str();
                loop {
                    let cut = path.rfind(['.', '['])?;
                    path = &path[..cut];
                    if let Some(at) = index.get(path) {
                        return Some(*at);
                    }
                }
            });
            e
        })
        .collect()
}

/// What one hook came to, as recorded in the restore's results and shown by describe.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookResult {
    /// A backup hook's phase; None for a restore hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<HookPhase>,
    pub container: String,
    pub command: Vec<String>,
    pub source: String,
    pub succeeded: bool,
    /// Why a backup hook was not run: its pod had finished (a success, as in Velero), or a hook
    /// before it failed with `onError: Fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
}

/// When a backup hook runs: before its pod is backed up, or after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookPhase {
    Pre,
    Post,
}

impl fmt::Display for HookPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HookPhase::Pre => "pre",
            HookPhase::Post => "post",
        })
    }
}

/// The hooks of one pod, as a restore records them in
/// `restores/<r>/restore-<r>-hook-results.json.gz` and a backup in
/// `backups/<b>/<b>-hook-results.json.gz`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodHookResults {
    pub namespace: String,
    pub pod: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<String>,
    pub hooks: Vec<HookResult>,
    /// Why a backup left the pod out: a pre hook failed with `onError: Fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_server_refuses_only_what_velero_refuses() {
        // Velero runs this Restore (both kinds in one hook, an empty init list, a blank command,
        // no name); the CLI refuses each, the server none.
        let hooks: super::RestoreHooks = serde_json::from_value(serde_json::json!({
            "resources": [{ "name": "", "postHooks": [
                { "init": { "initContainers": [{ "name": "i", "image": "busybox", "command": ["x"] }] },
                  "exec": { "command": ["y"] } },
                {},
                { "init": { "initContainers": [] } },
                { "exec": { "command": [" "] } },
            ] }],
        }))
        .unwrap();
        assert_eq!(super::validate(&hooks, super::Rules::Velero), []);
        let strict: Vec<String> = super::validate(&hooks, super::Rules::Strict)
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(
            strict,
            [
                "resources[0].name",
                "resources[0].postHooks[0]",
                "resources[0].postHooks[1]",
                "resources[0].postHooks[2].init.initContainers",
                "resources[0].postHooks[3].exec.command",
            ]
        );
        // What Velero's server refuses, both refuse: an init container without a command.
        let refused: super::RestoreHooks = serde_json::from_value(serde_json::json!({
            "resources": [{ "name": "r", "postHooks": [
                { "init": { "initContainers": [{ "name": "i", "image": "busybox" }] } },
            ] }],
        }))
        .unwrap();
        assert_eq!(super::validate(&refused, super::Rules::Velero).len(), 1);
    }

    use super::*;

    fn errors(text: &str) -> Vec<String> {
        parse_file(text)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_valid_file_parses_in_yaml_and_json() {
        let yaml = "resources:\n- name: db\n  includedNamespaces: [shop]\n  postHooks:\n  - init:\n      initContainers:\n      - name: restore\n        image: busybox\n        command: [sh, -c, 'true']\n      timeout: 2m\n  - exec:\n      container: db\n      command: [sh, -c, warm]\n      onError: Fail\n      execTimeout: 30s\n";
        let hooks = parse_file(yaml).unwrap();
        assert_eq!(hooks.resources[0].post_hooks.as_ref().unwrap().len(), 2);
        let json =
            r#"{"resources": [{"name": "db", "postHooks": [{"exec": {"command": ["true"]}}]}]}"#;
        assert_eq!(parse_file(json).unwrap().resources[0].name, "db");
    }

    #[test]
    fn serde_errors_have_path_line_and_column() {
        assert_eq!(
            errors("resources:\n- name: a\n  bogus: 1\n"),
            [
                "3:3: resources[0].bogus: unknown field `bogus`, expected one of name, includedNamespaces, excludedNamespaces, includedResources, excludedResources, labelSelector, postHooks"
            ]
        );
        assert_eq!(
            errors(
                "resources:\n- name: a\n  postHooks:\n  - exec:\n      command: [x]\n      onError: Sometimes\n"
            ),
            [
                "6:16: resources[0].postHooks[0].exec.onError: unknown variant `Sometimes`, expected one of Continue, Fail"
            ]
        );
        assert_eq!(errors("resources: [\n"), ["1:12: unclosed bracket '['"]);
    }

    #[test]
    fn semantic_errors_have_path_line_and_column() {
        let text = "resources:\n- name: a\n  labelSelector:\n    matchExpressions:\n    - {key: app, operator: Near, values: [x]}\n  postHooks:\n  - exec:\n      command: []\n      execTimeout: 5 minutes\n  - {}\n  - init:\n      initContainers:\n      - name: x\n    exec:\n      command: [y]\n  - init:\n      initContainers:\n      - image: busybox\n";
        assert_eq!(
            errors(text),
            [
                "5:18: resources[0].labelSelector.matchExpressions[0].operator: unknown operator \"Near\" (expected In, NotIn, Exists or DoesNotExist)",
                "8:7: resources[0].postHooks[0].exec.command: the command must not be empty",
                "9:7: resources[0].postHooks[0].exec.execTimeout: invalid duration \"5 minutes\": unknown unit (expected a Go duration such as 30s, 5m or 720h)",
                "10:5: resources[0].postHooks[1]: a hook needs init or exec",
                "11:5: resources[0].postHooks[2]: a hook is either init or exec, not both",
                "13:9: resources[0].postHooks[2].init.initContainers[0].image: an init container needs an image",
                "13:9: resources[0].postHooks[2].init.initContainers[0].command: an init container needs a command",
                "18:9: resources[0].postHooks[3].init.initContainers[0].name: an init container needs a name",
                "18:9: resources[0].postHooks[3].init.initContainers[0].command: an init container needs a command",
            ]
        );
    }
}
