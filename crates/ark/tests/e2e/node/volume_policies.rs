//! Velero's volume policies on the real node: a backup's `resourcePolicy` decides, claim by claim,
//! whether the node agent backs its files up, its CSI driver snapshots it, or its data is left
//! out, over the pods' annotations; and a policy that cannot be read refuses the backup.

use crate::common;

use ark_api::{BackupPhase, BackupVolumeInfo, PodVolumeBackup};
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::node_agent::{WAIT, install, is_ready, kubectl, lose};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

/// Claims of the test ground's CSI class, each labelled with the method its policy gives it.
const CLAIMS: [(&str, &str); 3] = [("files", "fs"), ("snap", "csi"), ("skip", "none")];

/// Velero's policy document: by the claim's label, to the node agent, snapshotted, or skipped.
const POLICY: &str = "version: v1
volumePolicies:
- conditions:
    pvcLabels: {method: fs}
  action: {type: fs-backup}
- conditions:
    pvcLabels: {method: csi}
    csi: {driver: hostpath.csi.ark.test}
  action: {type: snapshot}
- conditions:
    pvcLabels: {method: none}
  action: {type: skip}
";

/// A pod on the real node mounting each claim at `/<claim>`, each holding its own line and a
/// MiB of random bytes once it is ready. Its annotation names `skip` and `snap` for the node
/// agent: the policy's word is the one that counts.
fn pod(cluster: &Cluster) -> Pod {
    let script = "for d in files snap skip; do test -f /$d/.done || { echo \"$d before the backup\" > /$d/line \
        && head -c 1048576 /dev/urandom > /$d/blob && touch /$d/.done; }; done; sync; exec sleep 3600";
    let mounts: Vec<_> = CLAIMS
        .iter()
        .map(|(name, _)| json!({ "name": name, "mountPath": format!("/{name}") }))
        .collect();
    let volumes: Vec<_> = CLAIMS
        .iter()
        .map(|(name, _)| json!({ "name": name, "persistentVolumeClaim": { "claimName": name } }))
        .collect();
    cluster.on_real_node(json!({
        "metadata": {
            "name": "app",
            "annotations": { "backup.velero.io/backup-volumes": "skip,snap" },
        },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "app", "image": ark_tests::BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/skip/.done"] }, "periodSeconds": 1 },
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    }))
}

/// Each claim's line and the checksum of its random bytes (or what `sh` said without them).
fn contents(cluster: &Cluster, namespace: &str) -> String {
    kubectl(
        cluster,
        &[
            "-n",
            namespace,
            "exec",
            "app",
            "--",
            "sh",
            "-c",
            "for d in files snap skip; do cat /$d/line 2>&1; md5sum /$d/blob 2>&1; done",
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_policy_sends_one_claim_to_the_node_agent_snapshots_another_and_skips_a_third() {
    let _turn = ark_tests::Turn::real_node_host_network().await;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("policies").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    for (name, method) in CLAIMS {
        let claim = serde_json::from_value(json!({
            "metadata": { "name": name, "labels": { "method": method } },
            "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "ark-csi",
                "resources": { "requests": { "storage": "64Mi" } } },
        }))
        .unwrap();
        claims.create(&PostParams::default(), &claim).await.unwrap();
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &pod(&cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "app", is_ready(), WAIT)
        .await
        .unwrap();
    let before = contents(&cluster, &app.name);
    let policy: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "volume-policy" },
        "data": { "policy.yaml": POLICY },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();

    let created = ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--resource-policies-configmap",
            "volume-policy",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(created.contains("Completed"), "{created}");
    // The node agent took `files` alone (not `skip` nor `snap`, which the annotation names).
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels("velero.io/backup-name=b1"))
        .await
        .unwrap();
    let volumes: Vec<_> = pvbs.items.iter().map(|p| p.spec.volume.as_str()).collect();
    assert_eq!(volumes, ["files"], "{pvbs:#?}");
    // One CSI snapshot, of `snap`; `skip` recorded as skipped by the policy.
    let backups = Api::<ark_api::Backup>::namespaced(client.clone(), ns);
    let status = backups.get("b1").await.unwrap().status.unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Completed));
    assert_eq!(
        (
            status.csi_volume_snapshots_attempted,
            status.csi_volume_snapshots_completed
        ),
        (Some(1), Some(1))
    );
    let store = ark_storage::open(&cluster.s3_location(&installed.prefix)).unwrap();
    let info: Vec<BackupVolumeInfo> = serde_json::from_slice(&ark_tests::gunzip(
        &store
            .get_volume_info("b1")
            .await
            .unwrap()
            .expect("the backup's volume information"),
    ))
    .unwrap();
    let of = |claim: &str| {
        info.iter()
            .find(|v| v.pvc_name == claim)
            .unwrap_or_else(|| panic!("no volume information of {claim}: {info:#?}"))
    };
    assert!(of("snap").csi_snapshot_info.is_some() && !of("snap").skipped);
    assert!(of("skip").skipped, "{info:#?}");
    assert_eq!(
        of("skip").skipped_reason,
        "matched action is 'skip' in chosen resource policies"
    );
    let described = ark_ok(&cluster, ns, &["backup", "describe", "b1"]);
    assert!(
        described.contains("Resource policies:\n  Type:  configmap\n  Name:  volume-policy\n"),
        "{described}"
    );
    assert!(
        described.contains(&format!(
            "Volumes Without Data In This Backup:\n  {}/skip:  matched action is 'skip' in chosen resource policies",
            app.name
        )),
        "{described}"
    );

    lose(&cluster, &app.name).await;
    let restored = ark_ok(
        &cluster,
        ns,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(restored.contains("Completed"), "{restored}");
    wait_for(pods.clone(), "app", is_ready(), WAIT)
        .await
        .unwrap();
    // `files` and `snap` hold their bytes again; `skip` came back empty, and the pod wrote anew.
    let after = contents(&cluster, &app.name);
    let lines = |text: &str| text.lines().map(str::to_string).collect::<Vec<_>>();
    let (before, after) = (lines(&before), lines(&after));
    assert_eq!(after[..4], before[..4], "files and snap, restored");
    assert_eq!(after[4], "skip before the backup");
    assert_ne!(after[5], before[5], "skip's bytes are new: {after:?}");
}

/// A policy Velero would not read (here, of an unknown action and with an unknown condition) fails
/// the backup's validation, naming the ConfigMap, the policy and the field, and nothing is backed
/// up; so does a ConfigMap that is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_whose_volume_policy_cannot_be_read_fails_validation_naming_the_field() {
    let setup = common::setup::Setup::new(Cluster::get(), None).await;
    let _server = ark_tests::ArkServer::start(common::ARK, &setup.cluster, setup.ns());
    let policy: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "bad-policy" },
        "data": { "policy.yaml": "version: v1\nvolumePolicies:\n- conditions:\n    capacity: '0,1Gi'\n  action: {type: copy}\n- conditions:\n    sizes: [1Gi]\n  action: {type: skip}\n" },
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(setup.client.clone(), setup.ns())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    for (backup, map, expected) in [
        (
            "bad",
            "bad-policy",
            format!(
                "spec.resourcePolicy: ConfigMap {}/bad-policy: not a resource policy document: unknown field `sizes`",
                setup.ns()
            ),
        ),
        (
            "missing",
            "no-such-policy",
            format!(
                "spec.resourcePolicy: ConfigMap {}/no-such-policy: configmaps \"no-such-policy\" not found",
                setup.ns()
            ),
        ),
    ] {
        setup.ark(&[
            "backup",
            "create",
            backup,
            "--include-namespaces",
            &setup.app.name,
            "--resource-policies-configmap",
            map,
        ]);
        let ended = wait_for(
            setup.backups(),
            backup,
            common::node_agent::backup_ended(),
            WAIT,
        )
        .await
        .unwrap();
        let status = ended.status.unwrap();
        assert_eq!(status.phase, Some(BackupPhase::FailedValidation));
        let errors = status.validation_errors.unwrap_or_default();
        assert!(
            errors.iter().any(|e| e.starts_with(&expected)),
            "{expected:?} in {errors:#?}"
        );
        assert!(
            !setup.store.backup_exists(backup).await.unwrap(),
            "nothing of {backup} in the bucket"
        );
    }
}
