//! ark's CRDs against Velero's (../shared/reference/velero-crds/, beside the repository): every
//! field ark declares exists in Velero's schema under the same path with the same type, every enum
//! value ark may write is one Velero accepts, and status is served the same way. So objects written
//! by ark are accepted by a cluster that has Velero's CRDs installed, and the other way round.

use std::path::PathBuf;

use serde_json::Value;

fn velero_crds_dir() -> PathBuf {
    std::env::var_os("ARK_VELERO_CRDS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/velero-crds"),
        PathBuf::from,
    )
}

fn schema_of(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

/// Walks ark's schema and reports each place where Velero's differs.
fn compare(path: &str, ours: &Value, theirs: &Value, problems: &mut Vec<String>) {
    if theirs.is_null() {
        problems.push(format!("{path}: not in Velero's schema"));
        return;
    }
    // Velero keeps some objects opaque; anything ark writes there is accepted.
    if theirs["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true)
        && theirs["properties"].is_null()
        && theirs["items"].is_null()
    {
        return;
    }
    if ours["type"] != theirs["type"] {
        problems.push(format!(
            "{path}: type {} but Velero has {}",
            ours["type"], theirs["type"]
        ));
    }
    // Velero's integers are Go `int`s (64 bits) with no format; ark's say int64, the same range.
    let format_matches = ours["format"] == theirs["format"]
        || (theirs["format"].is_null() && ours["format"] == "int64");
    if !format_matches {
        problems.push(format!(
            "{path}: format {} but Velero has {}",
            ours["format"], theirs["format"]
        ));
    }
    // A field ark requires that Velero does not would make ark's CRD refuse Velero's objects.
    let velero_required = theirs["required"].as_array().cloned().unwrap_or_default();
    for field in ours["required"].as_array().into_iter().flatten() {
        // Every object of both tools has a spec, so requiring it at the top refuses nothing.
        let top_level_spec = path.ends_with(".yaml") && field == "spec";
        if !top_level_spec && !velero_required.contains(field) {
            problems.push(format!("{path}: requires {field}, Velero does not"));
        }
    }
    if let Some(values) = ours["enum"].as_array() {
        let accepted = theirs["enum"].as_array().cloned().unwrap_or_default();
        for value in values.iter().filter(|v| !v.is_null()) {
            if !accepted.contains(value) {
                problems.push(format!("{path}: enum value {value} not accepted by Velero"));
            }
        }
    }
    if let Some(properties) = ours["properties"].as_object() {
        for (name, schema) in properties {
            compare(
                &format!("{path}.{name}"),
                schema,
                &theirs["properties"][name],
                problems,
            );
        }
    }
    if let Some(values) = ours["additionalProperties"].as_object() {
        compare(
            &format!("{path}[*]"),
            &Value::Object(values.clone()),
            &theirs["additionalProperties"],
            problems,
        );
    }
    if !ours["items"].is_null() {
        compare(
            &format!("{path}[]"),
            &ours["items"],
            &theirs["items"],
            problems,
        );
    }
}

#[test]
fn ark_crds_match_velero_crds() {
    let dir = velero_crds_dir();
    let mut problems = Vec::new();
    for (file, crd) in ark_api::crd::all() {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "Velero's CRD {} is needed for this check: {e}",
                path.display()
            )
        });
        let theirs: Value = serde_saphyr::from_str(&text).unwrap();
        let ours = serde_json::to_value(&crd).unwrap();
        assert_eq!(
            ours["spec"]["names"]["kind"],
            theirs["spec"]["names"]["kind"]
        );
        assert_eq!(ours["spec"]["scope"], theirs["spec"]["scope"], "{file}");
        assert_eq!(
            ours["spec"]["versions"][0]["subresources"].is_null(),
            theirs["spec"]["versions"][0]["subresources"].is_null(),
            "{file}: status must be served the way Velero serves it"
        );
        compare(file, schema_of(&ours), schema_of(&theirs), &mut problems);
    }
    assert!(
        problems.is_empty(),
        "ark's CRDs differ from Velero's:\n{}",
        problems.join("\n")
    );
}
