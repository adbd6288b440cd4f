//! CSI snapshots beside Velero v1.18 (its server built here by scripts/velero-build.sh, run with
//! `--features=EnableCSI`, and its CLI) on the first cluster, whose real node runs the CSI test
//! ground: Velero restores ark's CSI backup, and ark restores Velero's, each claim provisioned
//! from the snapshot the other tool cut, with its bytes.

use crate::common;

use std::time::Duration;

use ark_api::{Backup, BackupPhase};
use ark_tests::velero::{self, VeleroServer, velero_ok};
use ark_tests::{ArkServer, Cluster, unique_name, wait_for};
use common::ARK;
use common::node_agent::{kubectl, lose};
use common::setup::Setup;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(180);

/// A claim of the test ground's CSI class and a pod on the real node with it at /data, holding a
/// line of text and a MiB of random bytes; their checksums.
async fn application(setup: &Setup) -> String {
    let (cluster, client, app) = (&setup.cluster, &setup.client, &setup.app.name);
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": { "name": "data" },
        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
            "resources": { "requests": { "storage": "64Mi" } } },
    }))
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), app)
        .create(&PostParams::default(), &claim)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), app);
    pods.create(&PostParams::default(), &writer(cluster))
        .await
        .unwrap();
    wait_for(pods, "writer", ready(), WAIT).await.unwrap();
    kubectl(
        cluster,
        &[
            "-n",
            app,
            "exec",
            "writer",
            "--",
            "sh",
            "-c",
            "echo 'written before the backup' > /data/greeting && head -c 1048576 /dev/urandom > /data/blob && sync",
        ],
    );
    checksums(cluster, app)
}

fn writer(cluster: &Cluster) -> Pod {
    cluster.on_real_node(json!({
        "metadata": { "name": "writer" },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{ "name": "writer", "image": "ark.local/busybox:1",
                "imagePullPolicy": "Never", "command": ["sleep", "3600"],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }] }],
            "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }],
        },
    }))
}

fn ready() -> impl kube::runtime::wait::Condition<Pod> {
    |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }
}

fn checksums(cluster: &Cluster, app: &str) -> String {
    kubectl(
        cluster,
        &[
            "-n",
            app,
            "exec",
            "writer",
            "--",
            "sh",
            "-c",
            "cat /data/greeting && md5sum /data/blob",
        ],
    )
}

/// Once the restore is done: the restored pod running, its claim provisioned from a snapshot.
async fn restored_checksums(setup: &Setup) -> String {
    let (client, app) = (&setup.client, &setup.app.name);
    wait_for(
        Api::<Pod>::namespaced(client.clone(), app),
        "writer",
        ready(),
        WAIT,
    )
    .await
    .unwrap();
    let claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), app)
        .get("data")
        .await
        .unwrap();
    let source = claim
        .spec
        .unwrap()
        .data_source
        .expect("a claim from a snapshot");
    assert_eq!(source.kind, "VolumeSnapshot");
    checksums(&setup.cluster, app)
}

async fn completed(setup: &Setup, name: &str) -> Backup {
    wait_for(
        setup.backups(),
        name,
        |b: Option<&Backup>| b.is_some_and(|b| b.phase() == BackupPhase::Completed),
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("backup {name} not Completed: {e:#}"));
    setup.backups().get(name).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn velero_restores_ark_s_csi_backup_with_the_claim_s_bytes() {
    let setup = Setup::new(Cluster::get(), None).await;
    // A name of its own: Velero counts the VolumeSnapshots labelled with the backup's name in
    // every namespace, other tests' restored ones too.
    let name = unique_name("csi");
    let before = application(&setup).await;
    {
        let _ark = ArkServer::start_with(
            ARK,
            &setup.cluster,
            setup.ns(),
            &["--item-operation-sync-frequency", "1s"],
        );
        let created = setup.ark(&[
            "backup",
            "create",
            &name,
            "--include-namespaces",
            &setup.app.name,
            "--wait",
            "--timeout",
            "2m",
        ]);
        assert!(created.contains("Completed"), "{created}");
    }
    lose(&setup.cluster, &setup.app.name).await;

    let velero =
        VeleroServer::start_with(&setup.cluster, setup.ns(), &["--features=EnableCSI"]).await;
    completed(&setup, &name).await;
    let restored = velero_ok(
        &setup.cluster,
        setup.ns(),
        &["restore", "create", "r1", "--from-backup", &name, "--wait"],
    );
    assert!(restored.contains("Completed"), "{restored}");
    assert_eq!(restored_checksums(&setup).await, before);
    // Stopped first: a running Velero puts its finalizer back on the restore.
    drop(velero);
    velero::release_restores(&setup.client, setup.ns()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ark_restores_velero_s_csi_backup_with_the_claim_s_bytes() {
    let setup = Setup::new(Cluster::get(), None).await;
    // A name of its own: Velero counts the VolumeSnapshots labelled with the backup's name in
    // every namespace, other tests' restored ones too.
    let name = unique_name("csi");
    let before = application(&setup).await;
    {
        let _velero =
            VeleroServer::start_with(&setup.cluster, setup.ns(), &["--features=EnableCSI"]).await;
        // Velero fails the validation of a backup whose location it has not found Available yet.
        ark_tests::bench::wait_available(&setup.client, setup.ns()).await;
        let created = velero_ok(
            &setup.cluster,
            setup.ns(),
            &[
                "backup",
                "create",
                &name,
                "--include-namespaces",
                &setup.app.name,
                "--wait",
            ],
        );
        assert!(created.contains("Completed"), "{created}");
        let backup = setup.backups().get(&name).await.unwrap();
        let status = backup.status.unwrap();
        assert_eq!(
            (
                status.csi_volume_snapshots_attempted,
                status.csi_volume_snapshots_completed
            ),
            (Some(1), Some(1)),
            "{status:#?}"
        );
        velero::release_restores(&setup.client, setup.ns()).await;
    }
    velero::stand_down(&setup.client, setup.ns()).await;
    // Neither tool leaves one after its backup.
    assert_eq!(
        ark_tests::csi::volume_snapshots_left(&setup.client, &setup.app.name, WAIT).await,
        Vec::<String>::new()
    );
    lose(&setup.cluster, &setup.app.name).await;

    let _ark = ArkServer::start(ARK, &setup.cluster, setup.ns());
    completed(&setup, &name).await;
    let restored = setup.ark(&[
        "restore",
        "create",
        "r1",
        "--from-backup",
        &name,
        "--wait",
        "--timeout",
        "2m",
    ]);
    assert!(restored.contains("Completed"), "{restored}");
    assert_eq!(restored_checksums(&setup).await, before);
}
