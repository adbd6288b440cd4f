//! ark's CRDs against Velero's (../shared/reference/velero-crds/, beside the repository).
//!
//! ark installs Velero's own CRD files (config/crd/, see its README): they must be identical to
//! Velero's in everything a client observes (names, scope, printer columns, subresources, schema),
//! and ark's Rust types must fit in them (every field ark writes exists there with the same type),
//! so nothing ark writes is pruned and every status write lands on either tool's cluster.

use std::path::{Path, PathBuf};

use kube::CustomResourceExt;
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

fn read_crd(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("a CRD is needed for this check: {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn installed_crds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/crd")
}

/// The parts of a CRD a client can observe, each compared on its own so that a difference is
/// named precisely; then the whole documents, so that nothing else differs either.
fn crd_differences(file: &str, ours: &Value, theirs: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for part in ["group", "names", "scope"] {
        if ours["spec"][part] != theirs["spec"][part] {
            problems.push(format!(
                "{file}: spec.{part} is {} but Velero's is {}",
                ours["spec"][part], theirs["spec"][part]
            ));
        }
    }
    let versions = |crd: &Value| {
        crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let (our_versions, their_versions) = (versions(ours), versions(theirs));
    if our_versions.len() != their_versions.len() {
        problems.push(format!(
            "{file}: {} versions but Velero has {}",
            our_versions.len(),
            their_versions.len()
        ));
    }
    for (ours, theirs) in our_versions.iter().zip(&their_versions) {
        let version = theirs["name"].as_str().unwrap_or("?");
        // `null`, `{}` and `{status: {}}` are three different things to the API server: only the
        // last serves /status, which is what a status write must match.
        for part in [
            "name",
            "served",
            "storage",
            "subresources",
            "additionalPrinterColumns",
            "schema",
        ] {
            if ours.get(part) != theirs.get(part) {
                problems.push(format!(
                    "{file} {version}: {part} is {} but Velero's is {}",
                    ours.get(part).map_or("absent".into(), Value::to_string),
                    theirs.get(part).map_or("absent".into(), Value::to_string)
                ));
            }
        }
    }
    if problems.is_empty() && ours != theirs {
        problems.push(format!("{file}: differs from Velero's"));
    }
    problems
}

#[test]
fn ark_crds_match_velero_crds() {
    let dir = velero_crds_dir();
    let velero_files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "Velero's CRDs are needed for this check: {}: {e}",
                dir.display()
            )
        })
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    assert!(
        velero_files.len() >= 4,
        "Velero's CRDs in {}: {velero_files:?}",
        dir.display()
    );
    let mut problems = Vec::new();
    for file in &velero_files {
        let theirs = read_crd(&dir.join(file));
        let ours = read_crd(&installed_crds_dir().join(file));
        problems.extend(crd_differences(file, &ours, &theirs));
    }
    assert!(
        problems.is_empty(),
        "ark's CRDs differ from Velero's:\n{}",
        problems.join("\n")
    );
}

/// The comparison itself: a status subresource where Velero has `subresources: {}` (the defect
/// that made every status write a 404 on Velero's CRDs) and a printer column of another type are
/// both reported.
#[test]
fn crd_differences_names_subresources_and_printer_columns() {
    let theirs = read_crd(&velero_crds_dir().join("velero.io_deletebackuprequests.yaml"));
    let mut ours = theirs.clone();
    ours["spec"]["versions"][0]["subresources"] = serde_json::json!({ "status": {} });
    ours["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = "integer".into();
    let problems = crd_differences("dbr.yaml", &ours, &theirs);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("dbr.yaml v1: subresources is {\"status\":{}} but Velero's is {}")
    );
    assert!(problems[1].starts_with("dbr.yaml v1: additionalPrinterColumns is"));
}

/// Every field of ark's types exists in the installed CRD with the same type: nothing ark writes
/// is pruned by the API server.
#[test]
fn ark_types_fit_the_installed_crds() {
    let derived = [
        ("velero.io_backups.yaml", ark_api::Backup::crd()),
        ("velero.io_restores.yaml", ark_api::Restore::crd()),
        (
            "velero.io_deletebackuprequests.yaml",
            ark_api::DeleteBackupRequest::crd(),
        ),
        (
            "velero.io_backupstoragelocations.yaml",
            ark_api::BackupStorageLocation::crd(),
        ),
        (
            "velero.io_downloadrequests.yaml",
            ark_api::DownloadRequest::crd(),
        ),
        (
            "velero.io_serverstatusrequests.yaml",
            ark_api::ServerStatusRequest::crd(),
        ),
        ("velero.io_schedules.yaml", ark_api::Schedule::crd()),
    ];
    let mut problems = Vec::new();
    for (file, crd) in derived {
        let ours = serde_json::to_value(&crd).unwrap();
        let installed = read_crd(&installed_crds_dir().join(file));
        for part in ["group", "scope"] {
            assert_eq!(
                ours["spec"][part], installed["spec"][part],
                "{file}: spec.{part}"
            );
        }
        for part in ["kind", "plural"] {
            assert_eq!(
                ours["spec"]["names"][part], installed["spec"]["names"][part],
                "{file}: {part}"
            );
        }
        compare(file, schema_of(&ours), schema_of(&installed), &mut problems);
    }
    assert!(
        problems.is_empty(),
        "ark's types do not fit the installed CRDs:\n{}",
        problems.join("\n")
    );
}
