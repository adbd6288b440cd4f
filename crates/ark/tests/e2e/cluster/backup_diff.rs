//! `ark backup diff`: what changed between two backups, and between a backup and the cluster now.

use crate::common;

use ark_tests::{ArkServer, Cluster};
use common::setup::Setup;
use common::{ARK, ark, text};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

async fn put(api: &Api<ConfigMap>, name: &str) {
    let config_map =
        serde_json::from_value(json!({ "metadata": { "name": name }, "data": { "a": "1" } }));
    api.create(&PostParams::default(), &config_map.unwrap())
        .await
        .unwrap();
}

async fn set(api: &Api<ConfigMap>, value: &str) {
    let patch = json!({ "data": { "k": value } });
    api.patch("settings", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_backups_and_a_backup_and_the_cluster_differ_object_by_object_field_by_field() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (ns, app) = (setup.ns().to_string(), setup.app.name.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(setup.client.clone(), &app);
    put(&config_maps, "old").await;
    let _server = ArkServer::start(ARK, &setup.cluster, &ns);
    setup.backup("b1", None);
    config_maps
        .delete("old", &DeleteParams::default())
        .await
        .unwrap();
    put(&config_maps, "new").await;
    set(&config_maps, "v2").await;
    setup.backup("b2", None);
    let diff = |args: &[&str]| {
        let mut all = vec!["backup", "diff"];
        all.extend(args);
        all.extend(["-n", &ns]);
        ark(Some(&setup.cluster), &all)
    };

    // The namespace, its default ServiceAccount and kube-root-ca.crt are the same in both.
    let between = diff(&["b1", "b2"]);
    assert_eq!(
        (
            between.status.code(),
            text(&between.stdout),
            text(&between.stderr)
        ),
        (
            Some(0),
            format!(
                "From backup b1 to backup b2:\n  + configmaps {app}/new\n  - configmaps {app}/old\n  \
                 ~ configmaps {app}/settings: data.k\n1 added, 1 removed, 1 changed; 3 unchanged.\n"
            ),
            String::new()
        )
    );

    // The cluster since b2: settings changed again, one ConfigMap more.
    set(&config_maps, "v3").await;
    put(&config_maps, "later").await;
    let live = diff(&["b2", "--live", "-o", "json"]);
    assert_eq!(live.status.code(), Some(0), "{}", text(&live.stderr));
    let live: Value = serde_json::from_slice(&live.stdout).unwrap();
    assert_eq!(
        live,
        json!({
            "from": "backup b2",
            "to": "the cluster",
            "differences": [
                { "resource": "configmaps", "namespace": app, "name": "later", "change": "added" },
                { "resource": "configmaps", "namespace": app, "name": "settings", "change": "changed",
                  "fields": ["data.k"] },
            ],
            "unchanged": 4,
        })
    );

    // A typo is named, with the closest backup.
    let typo = diff(&["b1", "bb2"]);
    assert_eq!(
        (typo.status.code(), text(&typo.stderr)),
        (
            Some(1),
            format!(
                "error: backup \"bb2\" not found in namespace \"{ns}\"; did you mean \"b2\"?\n"
            )
        )
    );
}
