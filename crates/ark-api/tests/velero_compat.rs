//! ark's CRDs against Velero's, in Velero's source as the Go module proxy serves it.
//!
//! ark installs Velero's own CRD files (config/crd/, see its README): they must be Velero's byte
//! for byte, and ark's Rust types must fit in them (every field ark writes exists there with the
//! same type), so nothing ark writes is pruned and every status write lands on either tool's
//! cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kube::CustomResourceExt;
use serde_json::Value;

/// The Velero release whose CRDs config/crd/ holds (config/crd/README.md).
const VELERO_CRDS_VERSION: &str = "v1.18.1";

/// The CRD files of Velero's source at [`VELERO_CRDS_VERSION`] (`config/crd/v1/bases/` and
/// `config/crd/v2alpha1/bases/`), by file name; fetched by `scripts/velero-build.sh
/// --print-source`, independently of this repository's copy.
fn velero_source_crds() -> BTreeMap<String, PathBuf> {
    let script = installed_crds_dir().join("../../scripts/velero-build.sh");
    let output = std::process::Command::new("bash")
        .arg(&script)
        .args(["--print-source", VELERO_CRDS_VERSION])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "Velero {VELERO_CRDS_VERSION}'s source is needed for this check: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let source = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let mut files = yaml_files(&source.join("config/crd/v1/bases"));
    files.extend(yaml_files(&source.join("config/crd/v2alpha1/bases")));
    files
}

/// The `*.yaml` files of `dir`, by file name.
fn yaml_files(dir: &Path) -> BTreeMap<String, PathBuf> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                path,
            )
        })
        .collect()
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

/// Read at run time: the build is kept between clones (scripts/build-cache.sh).
fn installed_crds_dir() -> PathBuf {
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR");
    PathBuf::from(manifest_dir).join("../../config/crd")
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

/// Where two files first differ: the line number and both lines.
fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let (ours, theirs) = (
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
    );
    let (mut our_lines, mut their_lines) = (ours.lines(), theirs.lines());
    for line in 1.. {
        match (our_lines.next(), their_lines.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => return "the line ends differ".into(),
            (a, b) => {
                return format!(
                    "line {line}: ours {:?}, Velero's {:?}",
                    a.unwrap_or("(end of file)"),
                    b.unwrap_or("(end of file)")
                );
            }
        }
    }
    unreachable!()
}

/// config/crd/ is Velero's CRD files byte for byte, in both directions: a file of one side
/// missing from the other fails too. A difference is named by file, by the part a client would
/// observe where it can be, and by its first line.
#[test]
fn installed_crds_are_velero_s_files_byte_for_byte() {
    let (velero, installed) = (velero_source_crds(), yaml_files(&installed_crds_dir()));
    assert!(
        velero.len() >= 10,
        "Velero {VELERO_CRDS_VERSION}'s source has {} CRD files: {velero:?}",
        velero.len()
    );
    let mut problems = Vec::new();
    for file in velero.keys().filter(|f| !installed.contains_key(*f)) {
        problems.push(format!("{file}: in Velero's source, not in config/crd/"));
    }
    for file in installed.keys().filter(|f| !velero.contains_key(*f)) {
        problems.push(format!("{file}: in config/crd/, not in Velero's source"));
    }
    for (file, theirs) in &velero {
        let Some(ours) = installed.get(file) else {
            continue;
        };
        let (our_bytes, their_bytes) =
            (std::fs::read(ours).unwrap(), std::fs::read(theirs).unwrap());
        if our_bytes != their_bytes {
            let mut parts = crd_differences(file, &read_crd(ours), &read_crd(theirs));
            parts.push(format!(
                "{file}: {}",
                first_difference(&our_bytes, &their_bytes)
            ));
            problems.extend(parts);
        }
    }
    assert!(
        problems.is_empty(),
        "config/crd/ is not Velero {VELERO_CRDS_VERSION}'s CRDs:\n{}",
        problems.join("\n")
    );
}

/// The comparison itself: a status subresource where Velero has `subresources: {}` (the defect
/// that made every status write a 404 on Velero's CRDs) and a printer column of another type are
/// both reported.
#[test]
fn crd_differences_names_subresources_and_printer_columns() {
    let theirs = read_crd(&installed_crds_dir().join("velero.io_deletebackuprequests.yaml"));
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
        ("velero.io_datauploads.yaml", ark_api::DataUpload::crd()),
        ("velero.io_datadownloads.yaml", ark_api::DataDownload::crd()),
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
