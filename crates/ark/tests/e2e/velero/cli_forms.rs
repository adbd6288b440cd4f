//! Velero's CLI habits under ark's: every true-or-false flag Velero's `create` commands take
//! (`optionalBool[=true]` in Velero's own help text) that ark's take too, in each of Velero's forms
//! (bare, `=true`, `=false`), makes the same object under both CLIs. Neither server runs: the
//! objects are compared as each CLI wrote them.

use crate::common;

use std::collections::BTreeMap;

use ark_tests::Cluster;
use ark_tests::velero::{velero, velero_ok};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

/// Each leaf of a JSON value, by its path.
fn leaves(value: &Value, path: String, into: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                leaves(field, format!("{path}/{key}"), into);
            }
        }
        leaf => {
            into.insert(path, leaf.clone());
        }
    }
}

/// The flags a command's help text gives as Velero's optional bools.
fn optional_bools(help: &str) -> Vec<String> {
    help.lines()
        .filter(|line| line.contains(" optionalBool[=true] "))
        .filter_map(|line| line.trim().strip_prefix("--"))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_optional_bool_flag_of_velero_s_create_commands_means_the_same_under_ark() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("forms").await;
    let spec_of = async |kind: &str, name: &str| -> BTreeMap<String, Value> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("velero.io", "v1", kind));
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &resource);
        let object = api.get(name).await.unwrap();
        let mut found = BTreeMap::new();
        leaves(&object.data["spec"], String::new(), &mut found);
        found
    };
    // A backup for the restores to name.
    common::ark_ok(&cluster, &ns.name, &["backup", "create", "source"]);
    let commands: [(&str, &str, &[&str]); 3] = [
        ("backup", "Backup", &[]),
        ("schedule", "Schedule", &["--schedule", "@daily"]),
        ("restore", "Restore", &["--from-backup", "source"]),
    ];
    let mut checked = Vec::new();
    for (noun, kind, required) in commands {
        let help = velero(&cluster, &ns.name, &[noun, "create", "--help"]);
        let velero_help = String::from_utf8_lossy(&help.stdout).into_owned();
        let ark_help = common::ark_ok(&cluster, &ns.name, &[noun, "create", "--help"]);
        for flag in optional_bools(&velero_help) {
            if !ark_help.contains(&format!("--{flag}")) {
                continue;
            }
            let mut specs = Vec::new();
            for (index, form) in [
                format!("--{flag}"),
                format!("--{flag}=true"),
                format!("--{flag}=false"),
            ]
            .iter()
            .enumerate()
            {
                let by_velero = format!("v-{noun}-{flag}-{index}");
                let by_ark = format!("a-{noun}-{flag}-{index}");
                let args = |name: &str| -> Vec<String> {
                    [noun, "create", name, form.as_str()]
                        .iter()
                        .chain(required)
                        .map(|a| a.to_string())
                        .collect()
                };
                let velero_args = args(&by_velero);
                velero_ok(
                    &cluster,
                    &ns.name,
                    &velero_args.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                let ark_args = args(&by_ark);
                common::ark_ok(
                    &cluster,
                    &ns.name,
                    &ark_args.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                specs.push((
                    form.clone(),
                    spec_of(kind, &by_velero).await,
                    spec_of(kind, &by_ark).await,
                ));
            }
            // The fields the flag sets: those Velero's forms write differently.
            let (_, velero_true, _) = &specs[0];
            let (_, velero_false, _) = &specs[2];
            let fields: Vec<&String> = velero_true
                .keys()
                .chain(velero_false.keys())
                .filter(|path| velero_true.get(*path) != velero_false.get(*path))
                .collect();
            // A flag that sets no field (`--allow-partially-failed` chooses a backup): ark's
            // forms must not differ either.
            if fields.is_empty() {
                let (_, _, ark_true) = &specs[0];
                let (_, _, ark_false) = &specs[2];
                let differ: Vec<&String> = ark_true
                    .keys()
                    .chain(ark_false.keys())
                    .filter(|path| ark_true.get(*path) != ark_false.get(*path))
                    .collect();
                assert!(
                    differ.is_empty(),
                    "{noun} create --{flag}: ark writes {differ:?}"
                );
            }
            for (form, by_velero, by_ark) in &specs {
                for field in &fields {
                    assert_eq!(
                        by_ark.get(*field),
                        by_velero.get(*field),
                        "{noun} create {form}: spec{field}"
                    );
                }
            }
            checked.push(format!("{noun} create --{flag}"));
        }
    }
    // What Velero v1.18 has and ark too, so that none is passed over unnoticed.
    assert_eq!(
        checked,
        [
            "backup create --default-volumes-to-fs-backup",
            "backup create --include-cluster-resources",
            "backup create --snapshot-move-data",
            "backup create --snapshot-volumes",
            "schedule create --default-volumes-to-fs-backup",
            "schedule create --include-cluster-resources",
            "schedule create --snapshot-move-data",
            "schedule create --snapshot-volumes",
            "restore create --allow-partially-failed",
            "restore create --include-cluster-resources",
            "restore create --preserve-nodeports",
            "restore create --restore-volumes",
            "restore create --write-sparse-files",
        ]
    );
}
