//! Velero's volume policies on the real node: a backup's `resourcePolicy` decides, claim by claim,
//! whether the node agent backs its files up, its CSI driver snapshots it, or its data is left
//! out, over the pods' annotations; and a policy that cannot be read refuses the backup.

use crate::common;

use ark_api::BackupPhase;
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::node_agent::{WAIT, install, is_ready, lose};
use common::volume_policies::{POLICY_MAP, application, contents, methods, policy};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_policy_sends_one_claim_to_the_node_agent_snapshots_another_and_skips_a_third() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = application(&cluster).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    let before = contents(&cluster, &app.name);
    policy(&cluster, ns).await;

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
            POLICY_MAP,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(created.contains("Completed"), "{created}");
    // The node agent took `files` alone (not `skip` nor `snap`, which the annotation names), the
    // CSI driver snapshotted `snap`, `skip` is recorded as skipped by the policy.
    let taken = methods(&cluster, ns, &installed.prefix, "b1").await;
    assert_eq!(
        taken
            .iter()
            .map(|(c, m)| (c.as_str(), m.as_str()))
            .collect::<Vec<_>>(),
        [
            ("files", "node agent"),
            ("skip", "skipped"),
            ("snap", "CSI snapshot"),
        ]
    );
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
