//! Cluster migration, the reason many run Velero: a second cluster pointed at the same bucket syncs
//! the backups and restores them there. And sync brings back Backup objects deleted by hand.

use crate::common;

use std::time::Duration;

use ark_api::{Backup, BackupPhase, labels};
use ark_tests::{ArkServer, Cluster, fixtures, wait_for};
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::DeleteParams;

const WAIT: Duration = Duration::from_secs(60);

fn synced_and_completed(backup: Option<&Backup>) -> bool {
    backup.is_some_and(|b| b.phase() == BackupPhase::Completed)
}

#[tokio::test]
async fn a_second_cluster_syncs_the_bucket_and_restores_the_backup() {
    let first = Cluster::get();
    let first_client = first.client().await;
    let ark_a = first.namespace("ark").await;
    let app = first.namespace("shop").await;
    let (flags, location) =
        fixtures::s3_location(&first, &first_client, &ark_a.name, None, None).await;
    let prefix = location.prefix.clone().unwrap();
    let _server_a = ArkServer::start(ARK, &first, &ark_a.name);
    let mut create = vec!["backup-location", "create", "default", "--default"];
    create.extend(flags.iter().map(String::as_str));
    ark_ok(&first, &ark_a.name, &create);
    fixtures::deploy_shop(&first_client, &app.name).await;
    ark_ok(
        &first,
        &ark_a.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );

    // Deleting the Backup object deletes no data: sync puts it back from the bucket.
    let backups_a: Api<Backup> = Api::namespaced(first_client.clone(), &ark_a.name);
    let uid = backups_a.get("b1").await.unwrap().metadata.uid.unwrap();
    backups_a
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    let back = wait_for(
        backups_a,
        "b1",
        |b: Option<&Backup>| b.is_some_and(|b| b.metadata.uid.as_ref() != Some(&uid)),
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(back.phase(), BackupPhase::Completed);

    // The second cluster: the same bucket and prefix, read-only, as a migration target.
    let second = Cluster::second();
    let second_client = second.client().await;
    let ark_b = second.namespace("ark").await;
    let (flags, _) =
        fixtures::s3_location(&second, &second_client, &ark_b.name, Some(&prefix), None).await;
    let mut create = vec![
        "backup-location",
        "create",
        "default",
        "--default",
        "--access-mode",
        "ReadOnly",
    ];
    create.extend(flags.iter().map(String::as_str));
    ark_ok(&second, &ark_b.name, &create);
    let _server_b = ArkServer::start(ARK, &second, &ark_b.name);
    let synced = wait_for(
        Api::<Backup>::namespaced(second_client.clone(), &ark_b.name),
        "b1",
        synced_and_completed,
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(
        synced.metadata.labels.unwrap()[labels::STORAGE_LOCATION],
        "default"
    );
    assert_eq!(synced.spec.storage_location.as_deref(), Some("default"));

    let output = ark(
        Some(&second),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--wait",
            "-n",
            &ark_b.name,
        ],
    );
    assert!(
        output.status.success(),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let settings = Api::<ConfigMap>::namespaced(second_client.clone(), &app.name)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(settings.data.unwrap()["color"], "blue");
    fixtures::wait_for_running_pods(&second_client, &app.name, 2).await;
    // The read-only location got nothing from the restore.
    let store = ark_storage::open(&location).unwrap();
    assert!(
        store
            .keys_under(&store.layout.restore_dir("r1"))
            .await
            .unwrap()
            .is_empty()
    );
    Api::<k8s_openapi::api::core::v1::Namespace>::all(second_client)
        .delete(&app.name, &DeleteParams::default())
        .await
        .unwrap();
}
