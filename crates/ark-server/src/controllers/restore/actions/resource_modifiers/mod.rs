//! Restore resource modifiers in Velero's format (`internal/resourcemodifiers`): a ConfigMap of
//! rules, each with conditions (group-resource glob, namespaces, name regex, label selector, JSON
//! pointer matches) and one kind of patch (JSON patches, merge patches or strategic-merge patches).
//! Rules are matched against the item as the backup holds it (before any rule changed it), in its
//! backed-up namespace, and applied in order; a failing rule is an error of that item, which is
//! restored all the same, as in Velero.

use kube::core::{Selector, SelectorExt};
use serde::Deserialize;
use serde_json::Value;

use super::{ItemCx, Output, RestoreCx, RestoreItemAction};
use crate::domain::filter::{IncludesExcludes, glob_matches_separated};

mod strategic;

/// The rules of a restore, checked: what validation returns.
#[derive(Debug)]
pub struct ResourceModifiers {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    group_resource: String,
    namespaces: IncludesExcludes,
    name: Option<regex::Regex>,
    selector: Option<Selector>,
    /// JSON pointers and the values that must be found there.
    matches: Vec<(String, Value)>,
    patch: RulePatch,
}

#[derive(Debug)]
enum RulePatch {
    Json(json_patch::Patch),
    Merge(Vec<Value>),
    Strategic(Vec<Value>),
}

/// The ConfigMap's document, as Velero reads it (strictly: an unknown field is an error).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    version: String,
    #[serde(default)]
    resource_modifier_rules: Vec<RuleDocument>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RuleDocument {
    conditions: Conditions,
    #[serde(default)]
    patches: Vec<JsonPatchDocument>,
    #[serde(default)]
    merge_patches: Vec<PatchData>,
    #[serde(default)]
    strategic_patches: Vec<PatchData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Conditions {
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    group_resource: String,
    #[serde(default)]
    resource_name_regex: String,
    #[serde(default)]
    label_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    #[serde(default)]
    matches: Vec<MatchRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchRule {
    #[serde(default)]
    path: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonPatchDocument {
    #[serde(default)]
    operation: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PatchData {
    #[serde(default)]
    patch_data: String,
}

/// A patch value as Velero reads the string it is given: `null`, booleans, numbers, objects and
/// arrays are JSON; a value in double quotes is the string inside them; anything else (the empty
/// string included) is a string.
fn patch_value(text: &str) -> Result<Value, String> {
    if text.len() >= 2 && text.starts_with('"') && text.ends_with('"') {
        return Ok(Value::String(text[1..text.len() - 1].to_string()));
    }
    match text.to_ascii_lowercase().as_str() {
        "null" if text == "null" => return Ok(Value::Null),
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    if text.starts_with('{') || text.starts_with('[') {
        return serde_json::from_str(text).map_err(|e| format!("value {text:?} is not JSON: {e}"));
    }
    if let Ok(number) = serde_json::from_str::<serde_json::Number>(text) {
        return Ok(Value::Number(number));
    }
    Ok(Value::String(text.to_string()))
}

fn operation(
    op: &str,
    path: &str,
    from: &str,
    value: &str,
) -> Result<json_patch::PatchOperation, String> {
    let mut json = serde_json::json!({ "op": op.to_ascii_lowercase(), "path": path });
    match op.to_ascii_lowercase().as_str() {
        "add" | "replace" | "test" => json["value"] = patch_value(value)?,
        "move" | "copy" => json["from"] = Value::String(from.to_string()),
        "remove" => {}
        other => return Err(format!("unsupported operation {other}")),
    }
    serde_json::from_value(json).map_err(|e| format!("operation {op} at {path:?}: {e}"))
}

impl ResourceModifiers {
    /// Reads the rules from the ConfigMap's data, which must hold exactly one document, and checks
    /// them as Velero's validation does; the error says what is wrong.
    pub fn from_config_map_data(
        data: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let [(_, text)] = data.iter().collect::<Vec<_>>()[..] else {
            return Err(format!(
                "it must hold one data key with the rules, and holds {}",
                data.len()
            ));
        };
        let document: Document = serde_saphyr::from_str(text)
            .map_err(|e| format!("not resource modifiers: {}", e.without_snippet()))?;
        if !document.version.eq_ignore_ascii_case("v1") {
            return Err(format!(
                "unsupported resource modifier version {:?}",
                document.version
            ));
        }
        if document.resource_modifier_rules.is_empty() {
            return Err("resource modifier rules cannot be empty".into());
        }
        let rules = document
            .resource_modifier_rules
            .into_iter()
            .enumerate()
            .map(|(index, rule)| {
                Rule::new(rule).map_err(|e| format!("resourceModifierRules[{index}]: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// Applies every rule that matches `item` (an item of `group_resource` from namespace
    /// `namespace` of the backup); the errors of the rules that failed.
    pub fn apply(
        &self,
        item: &mut Value,
        group_resource: &str,
        namespace: Option<&str>,
    ) -> Vec<String> {
        // Each rule is matched against the item as it came; a copy is needed only when an earlier
        // rule may have changed it.
        let origin = (self.rules.len() > 1).then(|| item.clone());
        let mut errors = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            let matched = rule.matches(origin.as_ref().unwrap_or(item), group_resource, namespace);
            if !matched {
                continue;
            }
            if let Err(error) = rule.apply(item, group_resource) {
                errors.push(format!("resource modifier rule {index}: {error}"));
            }
        }
        errors
    }
}

impl Rule {
    fn new(rule: RuleDocument) -> Result<Self, String> {
        let conditions = rule.conditions;
        if conditions.group_resource.is_empty() {
            return Err("conditions.groupResource cannot be empty".into());
        }
        let name = (!conditions.resource_name_regex.is_empty())
            .then(|| regex::Regex::new(&conditions.resource_name_regex))
            .transpose()
            .map_err(|e| format!("conditions.resourceNameRegex: {e}"))?;
        let selector = conditions
            .label_selector
            .map(Selector::try_from)
            .transpose()
            .map_err(|e| format!("conditions.labelSelector: {e}"))?;
        let matches = conditions
            .matches
            .iter()
            .map(|m| {
                if m.path.is_empty() {
                    return Err("conditions.matches: path is required".to_string());
                }
                Ok((m.path.clone(), patch_value(&m.value)?))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let yaml_documents = |patches: Vec<PatchData>, what: &str| {
            patches
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    serde_saphyr::from_str::<Value>(&p.patch_data)
                        .map_err(|e| format!("{what}[{i}].patchData: {}", e.without_snippet()))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let kinds = [
            !rule.patches.is_empty(),
            !rule.merge_patches.is_empty(),
            !rule.strategic_patches.is_empty(),
        ];
        let patch = match kinds {
            [true, false, false] => RulePatch::Json(json_patch::Patch(
                rule.patches
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        if p.path.is_empty() {
                            return Err(format!("patches[{i}]: path cannot be empty"));
                        }
                        operation(&p.operation, &p.path, &p.from, &p.value)
                            .map_err(|e| format!("patches[{i}]: {e}"))
                    })
                    .collect::<Result<_, _>>()?,
            )),
            [false, true, false] => {
                RulePatch::Merge(yaml_documents(rule.merge_patches, "mergePatches")?)
            }
            [false, false, true] => {
                RulePatch::Strategic(yaml_documents(rule.strategic_patches, "strategicPatches")?)
            }
            [false, false, false] => return Err("no patch data found".into()),
            _ => {
                return Err(
                    "only one of patches, mergePatches, strategicPatches can be specified".into(),
                );
            }
        };
        Ok(Rule {
            group_resource: conditions.group_resource,
            namespaces: IncludesExcludes::new(Some(&conditions.namespaces), None),
            name,
            selector,
            matches,
            patch,
        })
    }

    fn matches(&self, item: &Value, group_resource: &str, namespace: Option<&str>) -> bool {
        if let Some(namespace) = namespace.filter(|ns| !ns.is_empty())
            && !self.namespaces.should_include(namespace)
        {
            return false;
        }
        if !glob_matches_separated(&self.group_resource, group_resource, Some('.')) {
            return false;
        }
        let name = item.pointer("/metadata/name").and_then(Value::as_str);
        if let Some(regex) = &self.name
            && !regex.is_match(name.unwrap_or_default())
        {
            return false;
        }
        if let Some(selector) = &self.selector {
            let labels: std::collections::BTreeMap<String, String> = item
                .pointer("/metadata/labels")
                .cloned()
                .and_then(|l| serde_json::from_value(l).ok())
                .unwrap_or_default();
            if !selector.matches(&labels) {
                return false;
            }
        }
        // A path that is missing, or holds another value, is no match.
        self.matches
            .iter()
            .all(|(path, value)| item.pointer(path) == Some(value))
    }

    fn apply(&self, item: &mut Value, group_resource: &str) -> Result<(), String> {
        match &self.patch {
            RulePatch::Json(patch) => {
                let mut patched = item.clone();
                match json_patch::patch(&mut patched, patch) {
                    Ok(()) => *item = patched,
                    // A failed test leaves the item as it was, as in Velero.
                    Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => {}
                    Err(e) => return Err(format!("applying JSON patch: {e}")),
                }
            }
            RulePatch::Merge(patches) => {
                for patch in patches {
                    json_patch::merge(item, patch);
                }
            }
            RulePatch::Strategic(patches) => {
                for patch in patches {
                    *item = strategic::patch(item, patch, group_resource)
                        .map_err(|e| format!("applying strategic merge patch: {e}"))?;
                }
            }
        }
        Ok(())
    }
}

pub struct ResourceModifierAction;

impl RestoreItemAction for ResourceModifierAction {
    fn applies_to(&self, _: &str) -> bool {
        true
    }

    fn execute(
        &self,
        item: &mut Value,
        restore: &RestoreCx<'_>,
        cx: &ItemCx<'_>,
        out: &mut Output,
    ) {
        let Some(modifiers) = restore.resource_modifiers else {
            return;
        };
        let namespace = cx.source_namespace;
        // The namespace the rules see is the backed-up one, as in Velero, where the mapped
        // namespace is set after the modifiers ran.
        let mapped = item.pointer("/metadata/namespace").cloned();
        if let (Some(ns), Some(metadata)) = (namespace, item.get_mut("metadata")) {
            metadata["namespace"] = Value::String(ns.to_string());
        }
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        for error in modifiers.apply(item, cx.group_resource, namespace) {
            let shown = match namespace {
                Some(ns) => format!("{ns}/{name}"),
                None => name.clone(),
            };
            out.errors
                .push(format!("{} {shown}: {error}", cx.group_resource));
        }
        if let (Some(mapped), Some(metadata)) = (mapped, item.get_mut("metadata")) {
            metadata["namespace"] = mapped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(yaml: &str) -> Result<ResourceModifiers, String> {
        ResourceModifiers::from_config_map_data(
            &[("rules.yaml".to_string(), yaml.to_string())].into(),
        )
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "web-1", "namespace": "shop", "labels": { "app": "web" } },
            "spec": { "replicas": 3, "template": { "spec": { "containers": [
                { "name": "web", "image": "nginx:1.25", "env": [{ "name": "A", "value": "1" }] },
                { "name": "side", "image": "busybox" },
            ] } } },
        })
    }

    #[test]
    fn json_patches_apply_to_matching_items_with_velero_value_rules() {
        let modifiers = rules(
            r#"
version: v1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
    resourceNameRegex: "^web-.*$"
    namespaces: [shop]
    labelSelector: { matchLabels: { app: web } }
    matches:
    - path: /spec/replicas
      value: "3"
  patches:
  - operation: replace
    path: /spec/replicas
    value: "1"
  - operation: add
    path: /metadata/labels/restored
    value: '"true"'
  - operation: remove
    path: /spec/template/spec/containers/1
"#,
        )
        .unwrap();
        let mut item = deployment();
        assert_eq!(
            modifiers.apply(&mut item, "deployments.apps", Some("shop")),
            Vec::<String>::new()
        );
        assert_eq!(item["spec"]["replicas"], 1);
        assert_eq!(item["metadata"]["labels"]["restored"], "true");
        assert_eq!(
            item["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // Another namespace, name, group-resource or value: untouched.
        for (gr, ns) in [("deployments.apps", "other"), ("statefulsets.apps", "shop")] {
            let mut item = deployment();
            modifiers.apply(&mut item, gr, Some(ns));
            assert_eq!(item, deployment(), "{gr} in {ns}");
        }
        let mut two = deployment();
        two["spec"]["replicas"] = json!(2);
        let before = two.clone();
        modifiers.apply(&mut two, "deployments.apps", Some("shop"));
        assert_eq!(two, before);
    }

    #[test]
    fn merge_and_strategic_patches_apply_in_order() {
        let merge = rules(
            r#"
version: v1
resourceModifierRules:
- conditions: { groupResource: "*.apps" }
  mergePatches:
  - patchData: |
      metadata: { annotations: { note: restored } }
      spec: { replicas: null }
"#,
        )
        .unwrap();
        let mut item = deployment();
        merge.apply(&mut item, "deployments.apps", Some("shop"));
        assert_eq!(item["metadata"]["annotations"]["note"], "restored");
        assert!(item["spec"].get("replicas").is_none());

        let strategic = rules(
            r#"
version: v1
resourceModifierRules:
- conditions: { groupResource: deployments.apps }
  strategicPatches:
  - patchData: |
      spec: { template: { spec: { containers: [{ name: web, image: "nginx:1.27", env: [{ name: B, value: "2" }] }] } } }
"#,
        )
        .unwrap();
        let mut item = deployment();
        assert_eq!(
            strategic.apply(&mut item, "deployments.apps", Some("shop")),
            Vec::<String>::new()
        );
        let containers = &item["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["image"], "nginx:1.27");
        assert_eq!(
            containers[0]["env"],
            json!([{ "name": "A", "value": "1" }, { "name": "B", "value": "2" }])
        );
        assert_eq!(containers[1], json!({ "name": "side", "image": "busybox" }));
    }

    #[test]
    fn the_group_resource_glob_stops_at_dots_unless_doubled() {
        assert!(glob_matches_separated(
            "*.apps",
            "deployments.apps",
            Some('.')
        ));
        assert!(!glob_matches_separated("*", "deployments.apps", Some('.')));
        assert!(glob_matches_separated("**", "deployments.apps", Some('.')));
        assert!(!glob_matches_separated("*.io", "a.b.io", Some('.')));
        assert!(glob_matches_separated("*", "a.b.io", None));
    }

    #[test]
    fn invalid_rules_are_refused_naming_what_is_wrong() {
        let cases = [
            (
                "version: v2\nresourceModifierRules: []",
                "unsupported resource modifier version \"v2\"",
            ),
            (
                "version: v1\nresourceModifierRules: []",
                "resource modifier rules cannot be empty",
            ),
            (
                "version: v1\nresourceModifierRules:\n- conditions: { groupResource: pods }",
                "resourceModifierRules[0]: no patch data found",
            ),
            (
                "version: v1\nresourceModifierRules:\n- conditions: {}\n  patches: [{operation: remove, path: /a}]",
                "resourceModifierRules[0]: conditions.groupResource cannot be empty",
            ),
            (
                "version: v1\nresourceModifierRules:\n- conditions: { groupResource: pods }\n  patches: [{operation: frobnicate, path: /a}]",
                "resourceModifierRules[0]: patches[0]: unsupported operation frobnicate",
            ),
            (
                "version: v1\nresourceModifierRules:\n- conditions: { groupResource: pods }\n  patches: [{operation: remove, path: /a}]\n  mergePatches: [{patchData: '{}'}]",
                "resourceModifierRules[0]: only one of patches, mergePatches, strategicPatches can be specified",
            ),
        ];
        for (yaml, expected) in cases {
            assert_eq!(rules(yaml).unwrap_err(), expected, "{yaml}");
        }
        assert!(
            rules("version: v1\nunknown: 1")
                .unwrap_err()
                .starts_with("not resource modifiers:")
        );
        let two_keys = [
            ("a".to_string(), String::new()),
            ("b".to_string(), String::new()),
        ]
        .into();
        assert_eq!(
            ResourceModifiers::from_config_map_data(&two_keys).unwrap_err(),
            "it must hold one data key with the rules, and holds 2"
        );
    }

    #[test]
    fn velero_reads_patch_values_as_json_unless_quoted() {
        assert_eq!(patch_value("3").unwrap(), json!(3));
        assert_eq!(patch_value("true").unwrap(), json!(true));
        assert_eq!(patch_value("null").unwrap(), json!(null));
        assert_eq!(patch_value("\"3\"").unwrap(), json!("3"));
        assert_eq!(patch_value("premium").unwrap(), json!("premium"));
        assert_eq!(patch_value("").unwrap(), json!(""));
        assert_eq!(patch_value("{\"a\":[1]}").unwrap(), json!({ "a": [1] }));
    }
}
