//! Tenant self-service on the local cluster, under an installed server's own rights: a person
//! with the built-in `admin` role in one delegated namespace, and nothing in ark's, backs up,
//! restores, reads and deletes that namespace's backups through ark's CLI, and is refused, naming
//! what and why, each route out of it.

use std::time::Duration;

use ark_api::{Backup, BackupPhase, DownloadRequest, Restore, RestorePhase};
use ark_tests::{Cluster, kwok_pod, unique_name, wait_deleted, wait_for, warning_event};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::PostParams;

use super::install::{install_on_s3, installed_server, person};
use crate::common::{ark, ark_ok, delegate, text};

const WAIT: Duration = Duration::from_secs(60);

/// Until `who` may create backups in `ns` (the aggregated role reaches `admin` within moments).
async fn wait_for_tenant_rights(who: &Cluster, ns: &str) {
    let client = who.client().await;
    for _ in 0..100 {
        let review = serde_json::json!({
            "spec": { "resourceAttributes": {
                "namespace": ns, "verb": "create", "group": "velero.io", "resource": "backups",
            } },
        });
        let review: k8s_openapi::api::authorization::v1::SelfSubjectAccessReview =
            serde_json::from_value(review).unwrap();
        let answer = Api::all(client.clone())
            .create(&PostParams::default(), &review)
            .await
            .unwrap();
        if answer.status.is_some_and(|s| s.allowed) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the namespace's admin never could create backups in {ns}");
}

/// The validation errors of a backup the server refused, once it has answered.
async fn refused_backup(api: &Api<Backup>, name: &str) -> Vec<String> {
    let answered = |b: Option<&Backup>| b.is_some_and(|b| b.phase() != BackupPhase::New);
    let backup = wait_for(api.clone(), name, answered, WAIT).await.unwrap();
    assert_eq!(backup.phase(), BackupPhase::FailedValidation, "{backup:?}");
    backup.status.unwrap().validation_errors.unwrap()
}

/// The validation errors of a restore the server refused, once it has answered.
async fn refused_restore(api: &Api<Restore>, name: &str) -> Vec<String> {
    let answered = |r: Option<&Restore>| r.is_some_and(|r| r.phase() != RestorePhase::New);
    let restore = wait_for(api.clone(), name, answered, WAIT).await.unwrap();
    assert_eq!(
        restore.phase(),
        RestorePhase::FailedValidation,
        "{restore:?}"
    );
    restore.status.unwrap().validation_errors.unwrap()
}

#[tokio::test]
async fn a_namespace_admin_backs_up_restores_reads_and_deletes_their_namespace_and_nothing_more() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = unique_name("ark-tenants");
    let _cleanup = cluster.install_removed_on_drop(&ns);
    let dir = tempfile::tempdir().unwrap();
    install_on_s3(&cluster, &ns, dir.path());
    let (_server, _) = installed_server(&cluster, &ns, dir.path()).await;
    let team_a = cluster.namespace("team-a").await;
    let team_b = cluster.namespace("team-b").await;
    delegate(&cluster, &team_a.name, &ns).await;
    let (a, b) = (team_a.name.as_str(), team_b.name.as_str());
    let settings: ConfigMap = serde_json::from_value(
        serde_json::json!({ "metadata": { "name": "settings" }, "data": { "k": "v" } }),
    )
    .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), a);
    config_maps
        .create(&PostParams::default(), &settings)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), a);
    pods.create(&PostParams::default(), &kwok_pod("app", &["app"]))
        .await
        .unwrap();
    let alice = person(&cluster, a, "alice", Some("admin"), dir.path()).await;
    let bob = person(&cluster, b, "bob", Some("admin"), dir.path()).await;
    wait_for_tenant_rights(&alice, a).await;
    wait_for_tenant_rights(&bob, b).await;

    // Bob's namespace is not delegated yet: his backup is nobody's to act on, until it is.
    let backups_b: Api<Backup> = Api::namespaced(bob.client().await, b);
    let early: Backup = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "early" }, "spec": {},
    }))
    .unwrap();
    backups_b
        .create(&PostParams::default(), &early)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(backups_b.get("early").await.unwrap().status, None);
    delegate(&cluster, b, &ns).await;
    let done = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
    let early = wait_for(backups_b.clone(), "early", done, WAIT)
        .await
        .unwrap();
    assert_eq!(early.phase(), BackupPhase::Completed, "{early:?}");

    // Alice backs up her namespace: the server acts on its mirror in ark's namespace, pinned to
    // hers, and copies the outcome back.
    let said = ark_ok(&alice, a, &["backup", "create", "mine", "--wait"]);
    assert!(
        said.contains("Backup completed with status: Completed"),
        "{said}"
    );
    let mirror = Api::<Backup>::namespaced(client.clone(), &ns)
        .get(&format!("{a}.mine"))
        .await
        .unwrap();
    assert_eq!(mirror.spec.included_namespaces, Some(vec![a.to_string()]));
    assert_eq!(mirror.phase(), BackupPhase::Completed);
    let logs = ark_ok(&alice, a, &["backup", "logs", "mine"]);
    assert!(logs.contains("backup Completed"), "{logs}");
    let described = ark_ok(&alice, a, &["backup", "describe", "mine", "--details"]);
    assert!(described.contains("v1/ConfigMap:"), "{described}");
    assert!(!described.contains("unavailable"), "{described}");

    // Restores her namespace from it.
    config_maps
        .delete("settings", &Default::default())
        .await
        .unwrap();
    let said = ark_ok(
        &alice,
        a,
        &[
            "restore",
            "create",
            "back",
            "--from-backup",
            "mine",
            "--include-resources",
            "configmaps",
            "--wait",
        ],
    );
    assert!(
        said.contains("Restore completed with status: Completed"),
        "{said}"
    );
    assert_eq!(
        config_maps.get("settings").await.unwrap().data.unwrap()["k"],
        "v"
    );
    // Each route out of her namespace, refused on the request naming the field and why.
    let backups_a: Api<Backup> = Api::namespaced(alice.client().await, a);
    let restores_a: Api<Restore> = Api::namespaced(alice.client().await, a);
    let elsewhere = ark(
        Some(&alice),
        &[
            "backup",
            "create",
            "system",
            "--include-namespaces",
            "kube-system",
            "--wait",
            "-n",
            a,
        ],
    );
    assert_eq!(elsewhere.status.code(), Some(1));
    assert!(
        text(&elsewhere.stderr).contains(&format!(
            "Backup system was refused:\n  spec.includedNamespaces names namespace \
             \"kube-system\": a backup made in namespace {a} holds {a} only\n"
        )),
        "{}",
        text(&elsewhere.stderr)
    );
    let hooks_elsewhere: Backup = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "exec-elsewhere" },
        "spec": { "hooks": { "resources": [{
            "name": "h", "includedNamespaces": [b],
            "pre": [{ "exec": { "command": ["cat", "/etc/shadow"] } }],
        }] } },
    }))
    .unwrap();
    backups_a
        .create(&PostParams::default(), &hooks_elsewhere)
        .await
        .unwrap();
    assert_eq!(
        refused_backup(&backups_a, "exec-elsewhere").await,
        [format!(
            "spec.hooks.resources[0].includedNamespaces names namespace \"{b}\": hooks of a \
             backup made in namespace {a} run there only"
        )]
    );
    for (name, into) in [
        ("into-system", "kube-system"),
        ("into-ark", ns.as_str()),
        ("into-b", b),
    ] {
        let mapping = format!("{a}:{into}");
        let refused = ark(
            Some(&alice),
            &[
                "restore",
                "create",
                name,
                "--from-backup",
                "mine",
                "--namespace-mappings",
                &mapping,
                "--wait",
                "-n",
                a,
            ],
        );
        assert_eq!(refused.status.code(), Some(1), "{name}");
        assert_eq!(
            refused_restore(&restores_a, name).await,
            [format!(
                "spec.namespaceMapping maps \"{a}\" to \"{into}\": a restore made in namespace {a} \
                 restores into {a} only"
            )]
        );
    }
    // A name the tenant's namespace makes too long for ark's: refused with the API server's
    // reason, not retried for ever.
    let long = "l".repeat(240);
    let long_backup: Backup =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": long }, "spec": {} }))
            .unwrap();
    backups_a
        .create(&PostParams::default(), &long_backup)
        .await
        .unwrap();
    let refused = refused_backup(&backups_a, &long).await;
    assert!(
        refused.len() == 1
            && refused[0].starts_with("its mirror in ark's namespace cannot be made: ")
            && refused[0].contains("must be no more than 253 characters"),
        "{refused:?}"
    );
    // A ClusterRoleBinding rewritten (cluster-scoped, under `update`), or any resource modifier.
    let cluster_wide = ark(
        Some(&alice),
        &[
            "restore",
            "create",
            "cluster-wide",
            "--from-backup",
            "mine",
            "--include-cluster-resources=true",
            "--existing-resource-policy",
            "update",
            "--resource-modifier-configmap",
            "modifier",
            "--wait",
            "-n",
            a,
        ],
    );
    assert_eq!(cluster_wide.status.code(), Some(1));
    assert_eq!(
        refused_restore(&restores_a, "cluster-wide").await,
        [
            format!(
                "spec.includeClusterResources is true: a restore made in namespace {a} creates \
                 no cluster-scoped resource"
            ),
            "spec.resourceModifier names a ConfigMap of ark's namespace, which only its \
             administrators write: a namespace's own restores take none"
                .to_string(),
        ]
    );
    // A privileged init container, in a namespace whose Pod Security level forbids it: the pod is
    // refused by the API server, whoever asks, and the restore says so.
    let pod = pods.get("app").await.unwrap();
    pods.delete("app", &kube::api::DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    wait_deleted(pods.clone(), &pod, WAIT).await;
    let privileged: Restore = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "privileged" },
        "spec": {
            "backupName": "mine",
            "includedResources": ["pods"],
            "hooks": { "resources": [{ "name": "root", "postHooks": [{ "init": { "initContainers": [{
                "name": "root", "image": "busybox", "command": ["true"],
                "securityContext": { "privileged": true },
            }] } }] }] },
        },
    }))
    .unwrap();
    restores_a
        .create(&PostParams::default(), &privileged)
        .await
        .unwrap();
    let done = |r: Option<&Restore>| r.is_some_and(|r| r.phase().is_terminal());
    let restored = wait_for(restores_a.clone(), "privileged", done, WAIT)
        .await
        .unwrap();
    assert_eq!(
        restored.phase(),
        RestorePhase::PartiallyFailed,
        "{restored:?}"
    );
    let described = ark_ok(
        &alice,
        a,
        &["restore", "describe", "privileged", "--details"],
    );
    assert!(
        described.contains("violates PodSecurity \"baseline:latest\": privileged"),
        "{described}"
    );
    assert!(pods.get_opt("app").await.unwrap().is_none());

    // Nothing of ark's namespace: no location, no credentials, no backup of another's.
    let refused = ark(Some(&alice), &["backup", "get", "-n", &ns]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("forbidden"),
        "{}",
        text(&refused.stderr)
    );

    // Bob, admin of another delegated namespace, gets nothing of Alice's: her backup is not among
    // his (its mirror's name is hers), neither to restore nor to download.
    let downloads_b: Api<DownloadRequest> = Api::namespaced(bob.client().await, b);
    let contents: DownloadRequest = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "theirs-contents" },
        "spec": { "target": { "kind": "BackupContents", "name": "mine" } },
    }))
    .unwrap();
    let asked = downloads_b
        .create(&PostParams::default(), &contents)
        .await
        .unwrap();
    wait_deleted(downloads_b.clone(), &asked, WAIT).await;
    let refused = warning_event(&client, b, "Refused", WAIT).await.unwrap();
    assert_eq!(
        refused.note.unwrap(),
        format!(
            "tenant download request {b}/theirs-contents is refused: spec.target.name \"mine\": \
             no backup of that name was made in namespace {b}"
        )
    );
    let restores_b: Api<Restore> = Api::namespaced(bob.client().await, b);
    let theirs: Restore = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "theirs" },
        "spec": { "backupName": "mine" },
    }))
    .unwrap();
    restores_b
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    assert_eq!(
        refused_restore(&restores_b, "theirs").await,
        [format!(
            "spec.backupName \"mine\": no backup of that name was made in namespace {b}"
        )]
    );

    // Alice downloads her own backup's contents, byte for byte, through the server.
    let store = ark_storage::open(&cluster.s3_location(&ns)).unwrap();
    let tarball = store
        .get(&store.layout.backup_contents(&format!("{a}.mine")))
        .await
        .unwrap();
    let out = dir.path().join("mine.tar.gz");
    ark_ok(
        &alice,
        a,
        &["backup", "download", "mine", "-o", out.to_str().unwrap()],
    );
    assert_eq!(std::fs::read(&out).unwrap(), tarball);

    // Alice deletes her backup: its mirror, its files and her request go.
    ark_ok(&alice, a, &["backup", "delete", "mine", "--confirm"]);
    let view = Api::<Backup>::namespaced(client.clone(), a)
        .get("mine")
        .await
        .unwrap();
    wait_deleted(Api::<Backup>::namespaced(client.clone(), a), &view, WAIT).await;
    assert!(
        Api::<Backup>::namespaced(client.clone(), &ns)
            .get_opt(&format!("{a}.mine"))
            .await
            .unwrap()
            .is_none()
    );
    let left = store
        .keys_under(&store.layout.backup_dir(&format!("{a}.mine")))
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}
