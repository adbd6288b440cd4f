//! ark's end-to-end tests, one binary (as jj's): each file a module of an area, the harness
//! (`common`) compiled and linked once. The areas are also the test command's groups
//! (scripts/test.sh), run side by side:
//! - `cluster`: the local cluster, its kwok nodes and S3;
//! - `node`: pods and volumes on the real node (kubelet, containerd, CSI);
//! - `velero`: Velero's own server, node agent and CLI beside ark's;
//! - `alone`: tests that disturb the whole cluster while they run (a part of it stopped, namespaces
//!   that cannot be deleted), one at a time with nothing beside them.

mod common;

mod cluster {
    mod backup_diff;
    mod backup_restore;
    mod cli;
    mod debug;
    mod deletion;
    mod fault_suite;
    mod faults;
    mod fidelity;
    mod hooks;
    mod hostile;
    mod install;
    mod leader;
    mod migration;
    mod providers;
    mod reliability;
    mod repository;
    mod restore_preview;
    mod schedules;
    mod snapshots;
    mod snapshotter;
    mod tenants;
    mod terminal;
    mod verification;
}

mod node {
    mod csi_snapshots;
    mod data_movement;
    mod demo;
    mod pod_volumes;
    mod real_node;
    mod restore_tests;
    mod volume_policies;
}

mod velero {
    mod api_group_versions;
    mod cli_forms;
    mod csi;
    mod data_movement;
    mod filters;
    mod interop;
    mod pod_volumes;
    mod volume_policies;
}

mod alone {
    mod discovery;
    mod stopped_components;
}

/// Every `.rs` file under `tests/e2e/` is a module above: a file left out would never run.
#[test]
fn every_test_file_is_a_module_of_the_binary() {
    let root = ark_tests::checkout().join("crates/ark/tests/e2e");
    let main = std::fs::read_to_string(root.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for area in ["cluster", "node", "velero", "alone"] {
        for entry in std::fs::read_dir(root.join(area)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                let module = path.file_stem().unwrap().to_string_lossy().into_owned();
                let declared = main
                    .split(&format!("mod {area} {{"))
                    .nth(1)
                    .and_then(|rest| rest.split('}').next())
                    .is_some_and(|block| block.contains(&format!("mod {module};")));
                if !declared {
                    missing.push(format!("{area}/{module}.rs"));
                }
            }
        }
    }
    for entry in std::fs::read_dir(root.parent().unwrap()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            missing.push(path.display().to_string());
        }
    }
    let areas: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|d| !["common", "cluster", "node", "velero", "alone"].contains(&d.as_str()))
        .collect();
    assert!(areas.is_empty(), "areas main.rs does not know: {areas:?}");
    assert!(
        missing.is_empty(),
        "test files that are no module of main.rs: {missing:?}"
    );
}
