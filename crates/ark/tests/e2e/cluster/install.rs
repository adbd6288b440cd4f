//! `ark install` and `ark uninstall` on the real API server, and the rights they grant proven by
//! using them: the server runs with nothing but the installed ServiceAccount's token (kwok runs no
//! containers, so it runs here, with the Deployment's own command line), and people bound to
//! ark's roles, or to none, are told what they may not do.

use crate::common;

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

use ark_api::{Backup, BackupPhase};
use ark_tests::{ArkServer, Cluster, allow_local_exec, kwok_pod, unique_name};
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

/// `ark install -n NS --provider file --bucket DIR ARGS`, which must succeed; its output.
fn install(cluster: &Cluster, ns: &str, bucket: &Path, args: &[&str]) -> String {
    let mut all = vec!["install", "--provider", "file", "--bucket"];
    all.push(bucket.to_str().unwrap());
    all.extend(args);
    ark_ok(cluster, ns, &all)
}

/// The cluster-scoped objects an install in `ns` creates, removed when the test ends however it
/// ends.
fn cluster_objects_removed_on_drop(cluster: &Cluster, ns: &str) -> impl Sized {
    cluster.install_removed_on_drop(ns)
}

/// Every file under `dir`, relative to it, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn install_is_accepted_by_the_api_server_applies_once_and_updates_only_what_a_flag_changes() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("install").await;
    let ns = ns.name.as_str();
    let _cleanup = cluster_objects_removed_on_drop(&cluster, ns);
    let bucket = tempfile::tempdir().unwrap();
    std::fs::write(bucket.path().join("someone-elses-file"), "kept").unwrap();

    // The manifests as printed, the node agent's too, checked by the API server itself (its
    // admission and schemas).
    let printed = ark_ok(
        &cluster,
        ns,
        &[
            "install",
            "--provider",
            "file",
            "--bucket",
            bucket.path().to_str().unwrap(),
            "--use-node-agent",
            "--dry-run",
            "-o",
            "yaml",
        ],
    );
    let mut kubectl = std::process::Command::new("kubectl")
        .args(["apply", "--dry-run=server", "-f", "-", "--kubeconfig"])
        .arg(&cluster.kubeconfig)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl");
    kubectl
        .stdin
        .take()
        .unwrap()
        .write_all(printed.as_bytes())
        .unwrap();
    let applied = kubectl.wait_with_output().unwrap();
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let accepted = text(&applied.stdout);
    assert_eq!(
        accepted.matches("(server dry run)").count(),
        34,
        "{accepted}"
    );
    assert!(
        Api::<Deployment>::namespaced(client.clone(), ns)
            .get_opt("ark")
            .await
            .unwrap()
            .is_none(),
        "a dry run creates nothing"
    );

    let first = install(&cluster, ns, bucket.path(), &[]);
    assert!(first.contains("deployment.apps/ark created\n"), "{first}");
    assert!(
        first.contains("clusterrole.rbac.authorization.k8s.io/ark:"),
        "{first}"
    );
    // The repositories' password: random, labelled out of backups, and told to be kept.
    assert!(
        first.contains(
            "secret/velero-repo-credentials created with a random repository password: keep a \
             copy outside this cluster"
        ),
        "{first}"
    );
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), ns);
    let password = || async {
        let secret = secrets.get("velero-repo-credentials").await.unwrap();
        assert_eq!(
            secret.metadata.labels.unwrap()["velero.io/exclude-from-backup"],
            "true"
        );
        String::from_utf8(secret.data.unwrap()["repository-password"].0.clone()).unwrap()
    };
    let random = password().await;
    assert_eq!(random.len(), 43, "32 bytes, base64: {random}");
    assert_ne!(random, "static-passw0rd");
    let second = install(&cluster, ns, bucket.path(), &[]);
    assert_eq!(second.lines().count(), 26, "{second}");
    assert_eq!(password().await, random, "never replaced");
    // Another password than the Secret's: refused before anything is applied.
    let other = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(other.path(), "static-passw0rd\n").unwrap();
    let refused = ark(
        Some(&cluster),
        &[
            "install",
            "--provider",
            "file",
            "--bucket",
            bucket.path().to_str().unwrap(),
            "--image",
            "example.com/ark:refused",
            "--repository-password-file",
            other.path().to_str().unwrap(),
            "-n",
            ns,
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        format!(
            "error: nothing was applied: secret {ns}/velero-repo-credentials holds another \
             repository password than --repository-password-file, and the repositories already \
             written need it: ark install never replaces it\n"
        )
    );
    assert_eq!(password().await, random);
    assert!(
        second.lines().all(|l| l.ends_with(" unchanged")),
        "a second run changes nothing:\n{second}"
    );
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "[default]\n").unwrap();
    let changed = install(
        &cluster,
        ns,
        bucket.path(),
        &[
            "--image",
            "example.com/ark:other",
            "--secret-file",
            secret.path().to_str().unwrap(),
        ],
    );
    let changes: Vec<&str> = changed
        .lines()
        .filter(|l| !l.ends_with(" unchanged"))
        .collect();
    assert_eq!(
        changes,
        [
            "secret/cloud-credentials created",
            "backupstoragelocation.velero.io/default updated",
            "deployment.apps/ark updated",
        ]
    );
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns)
        .get("ark")
        .await
        .unwrap();
    let container = &deployment.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("example.com/ark:other"));

    let removed = ark_ok(&cluster, ns, &["uninstall", "--confirm"]);
    for gone in [
        "deployment.apps/ark deleted",
        "backupstoragelocation.velero.io/default deleted",
        "secret/cloud-credentials deleted",
        "serviceaccount/ark deleted",
        &format!("clusterrole.rbac.authorization.k8s.io/ark:{ns}:server deleted"),
        &format!("clusterrolebinding.rbac.authorization.k8s.io/ark:{ns}:server deleted"),
    ] {
        assert!(removed.contains(&format!("{gone}\n")), "{gone}:\n{removed}");
    }
    // The test created the namespace, and the cluster script the CRDs: both are someone else's.
    assert!(
        removed.contains(&format!("namespace/{ns} kept: also managed by")),
        "{removed}"
    );
    assert!(
        removed.contains("customresourcedefinition.apiextensions.k8s.io/backups.velero.io kept"),
        "{removed}"
    );
    assert!(
        removed.ends_with("the bucket was not touched\n"),
        "{removed}"
    );
    assert_eq!(files(bucket.path()), ["someone-elses-file"]);
    assert!(
        Api::<ClusterRole>::all(client.clone())
            .get_opt(&format!("ark:{ns}:admin-viewer"))
            .await
            .unwrap()
            .is_none()
    );
}

/// The installed server's command line, run here as the installed ServiceAccount: the image's
/// binary is this build, the scratch volume a directory of the test's, the metrics port one free
/// on 127.0.0.1. Returns the server and that port.
pub(super) async fn installed_server(cluster: &Cluster, ns: &str, dir: &Path) -> (ArkServer, u16) {
    let deployment = Api::<Deployment>::namespaced(cluster.client().await, ns)
        .get("ark")
        .await
        .unwrap();
    let container = deployment.spec.unwrap().template.spec.unwrap().containers[0].clone();
    assert_eq!(container.command.unwrap(), ["/ark"], "the image's binary");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let scratch = dir.join("scratch");
    let args: Vec<String> = container
        .args
        .unwrap()
        .iter()
        .map(|arg| {
            arg.replace("=/scratch", &format!("={}", scratch.display()))
                .replace("0.0.0.0:8085", &format!("127.0.0.1:{port}"))
        })
        .collect();
    assert!(
        args.iter()
            .any(|a| a.contains(&format!("127.0.0.1:{port}"))),
        "{args:?}"
    );
    let as_server = cluster.as_service_account(ns, "ark", dir).await;
    (ArkServer::start_exactly(ARK, &as_server, &args), port)
}

/// `ark install` into `ns` with the test ground's S3 as its location (under prefix `ns`).
pub(super) fn install_on_s3(cluster: &Cluster, ns: &str, dir: &Path) {
    let credentials = dir.join("credentials");
    std::fs::write(
        &credentials,
        ark_tests::aws_credentials_file(&cluster.s3_access_key, &cluster.s3_secret_key),
    )
    .unwrap();
    let config = format!(
        "region=us-east-1,s3Url={},s3ForcePathStyle=true",
        cluster.s3_endpoint
    );
    ark_ok(
        cluster,
        ns,
        &[
            "install",
            "--provider",
            "aws",
            "--bucket",
            &cluster.s3_bucket,
            "--prefix",
            ns,
            "--secret-file",
            credentials.to_str().unwrap(),
            "--backup-location-config",
            &config,
        ],
    );
}

/// The status line of `GET path` on 127.0.0.1:port.
fn http_status(port: u16, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: ark\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn the_server_with_only_the_installed_rights_backs_up_restores_with_hooks_and_deletes() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    allow_local_exec(&client).await;
    let ns = unique_name("ark-rbac");
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns);
    let app = cluster.namespace("rbac-app").await;
    let restored = unique_name("rbac-restored");
    let _restored = cluster.delete_on_drop::<Namespace>(&restored);
    let dir = tempfile::tempdir().unwrap();
    let bucket = dir.path().join("bucket");
    std::fs::create_dir(&bucket).unwrap();

    let config: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "settings" }, "data": { "mode": "production" }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    Api::<Pod>::namespaced(client.clone(), &app.name)
        .create(&PostParams::default(), &kwok_pod("db", &["db"]))
        .await
        .unwrap();

    install(&cluster, &ns, &bucket, &[]);
    let (server, port) = installed_server(&cluster, &ns, dir.path()).await;
    // `--wait` returns once the Deployment is available and the server found the location.
    let waited = install(&cluster, &ns, &bucket, &["--wait", "--timeout", "60s"]);
    assert!(
        waited.ends_with(&format!("ark is running in namespace {ns}\n")),
        "{waited}"
    );
    assert_eq!(http_status(port, "/healthz"), "HTTP/1.1 200 OK");
    assert_eq!(http_status(port, "/readyz"), "HTTP/1.1 200 OK");

    ark_ok(
        &cluster,
        &ns,
        &[
            "backup",
            "create",
            "nightly",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let marker = dir.path().join("hook-ran");
    let hooks = dir.path().join("hooks.yaml");
    std::fs::write(
        &hooks,
        format!(
            "resources:\n- name: db\n  includedResources: [pods]\n  postHooks:\n  - exec: \
             {{container: db, command: [sh, -c, \"echo checked > {}\"]}}\n",
            marker.display()
        ),
    )
    .unwrap();
    let mapping = format!("{}:{restored}", app.name);
    ark_ok(
        &cluster,
        &ns,
        &[
            "restore",
            "create",
            "back",
            "--from-backup",
            "nightly",
            "--namespace-mappings",
            &mapping,
            "--hooks-file",
            hooks.to_str().unwrap(),
            "--wait",
        ],
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "checked\n");
    let settings = Api::<ConfigMap>::namespaced(client.clone(), &restored)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(settings.data.unwrap()["mode"], "production");

    ark_ok(
        &cluster,
        &ns,
        &["backup", "delete", "nightly", "--confirm", "--wait"],
    );
    assert!(
        Api::<Backup>::namespaced(client.clone(), &ns)
            .get_opt("nightly")
            .await
            .unwrap()
            .is_none()
    );
    let left = files(&bucket);
    assert!(!left.iter().any(|f| f.contains("nightly")), "{left:?}");
    assert!(!server.log().contains("forbidden"), "{}", server.log());

    // Uninstalled, the backups' files stay.
    ark_ok(
        &cluster,
        &ns,
        &[
            "backup",
            "create",
            "kept",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let before = files(&bucket);
    assert!(
        before.iter().any(|f| f.starts_with("backups/kept/")),
        "{before:?}"
    );
    drop(server);
    // The repositories' password kept elsewhere and removed: nothing keeps the namespace.
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &ns)
        .delete("velero-repo-credentials", &Default::default())
        .await
        .unwrap();
    let removed = ark_ok(&cluster, &ns, &["uninstall", "--confirm"]);
    assert!(
        removed.contains(&format!("namespace/{ns} deleted\n")),
        "{removed}"
    );
    // The server wrote the location's status: still ark's, and removed.
    assert!(
        removed.contains("backupstoragelocation.velero.io/default deleted\n"),
        "{removed}"
    );
    assert_eq!(files(&bucket), before);
}

/// ark installed in `ns` (its bucket in `dir`), rule `index` of its Role taken out (after the
/// JSON-patch `test` that says which rule it is), the server started with what is left, and a
/// backup `b` of the cluster's ConfigMaps made.
async fn server_lacking_rule(
    cluster: &Cluster,
    ns: &str,
    dir: &Path,
    index: usize,
    test: serde_json::Value,
) -> ArkServer {
    server_lacking_rules(cluster, ns, dir, (index, test), None).await
}

/// [`server_lacking_rule`], and rule `cluster.0` of its ClusterRole taken out too (after the
/// `test` `cluster.1`).
async fn server_lacking_rules(
    cluster: &Cluster,
    ns: &str,
    dir: &Path,
    (index, test): (usize, serde_json::Value),
    cluster_rule: Option<(usize, serde_json::Value)>,
) -> ArkServer {
    install(cluster, ns, &dir.join("bucket"), &[]);
    let remove =
        |index: usize| serde_json::json!({ "op": "remove", "path": format!("/rules/{index}") });
    let patch = |test: serde_json::Value, index: usize| {
        Patch::<()>::Json(serde_json::from_value(serde_json::json!([test, remove(index)])).unwrap())
    };
    Api::<Role>::namespaced(cluster.client().await, ns)
        .patch("ark", &PatchParams::default(), &patch(test, index))
        .await
        .unwrap();
    if let Some((index, test)) = cluster_rule {
        Api::<ClusterRole>::all(cluster.client().await)
            .patch(
                &format!("ark:{ns}:server"),
                &PatchParams::default(),
                &patch(test, index),
            )
            .await
            .unwrap();
    }
    let (server, _) = installed_server(cluster, ns, dir).await;
    ark_ok(
        cluster,
        ns,
        &[
            "backup",
            "create",
            "b",
            "--include-resources",
            "configmaps",
            "--wait",
        ],
    );
    server
}

#[tokio::test]
async fn a_rule_taken_from_the_servers_role_makes_the_deletion_name_the_verb_and_resource_it_lacked()
 {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = unique_name("ark-rbac-rule");
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns);
    let dir = tempfile::tempdir().unwrap();
    // The Role's first rule: create, update, patch and delete on ark's operations.
    let test =
        serde_json::json!({ "op": "test", "path": "/rules/0/resources/0", "value": "backups" });
    // And the cluster-wide rule that deletes tenants' requests (backups among them).
    let cluster_test =
        serde_json::json!({ "op": "test", "path": "/rules/4/resources/0", "value": "backups" });
    let server = server_lacking_rules(
        &cluster,
        &ns,
        dir.path(),
        (0, test),
        Some((4, cluster_test)),
    )
    .await;

    let deleted = ark(
        Some(&cluster),
        &["backup", "delete", "b", "--confirm", "--wait", "-n", &ns],
    );
    assert!(!deleted.status.success());
    let backup = Api::<Backup>::namespaced(client.clone(), &ns)
        .get("b")
        .await
        .unwrap();
    // Velero's rule: a backup whose deletion failed stays Deleting; the next request retries.
    assert_eq!(backup.status.unwrap().phase, Some(BackupPhase::Deleting));
    let described = ark_ok(&cluster, &ns, &["backup", "describe", "b"]);
    let lacked = format!(
        "deleting Backup b: backups.velero.io \"b\" is forbidden: User \
         \"system:serviceaccount:{ns}:ark\" cannot delete resource \"backups\" in API group \
         \"velero.io\" in the namespace \"{ns}\"\n"
    );
    assert!(
        described.contains(&lacked),
        "{described}\n--- server ---\n{}",
        server.log()
    );
}

/// A server upgraded alone, under the Role of an install from before ark removed a backup's
/// requests with one `deletecollection`: the deletion still ends with every request for the
/// backup removed (before, the removal was refused and retried every 5 s for as long as the
/// server ran, the request left InProgress).
#[tokio::test]
async fn a_role_without_deletecollection_still_has_a_finished_deletions_requests_removed() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = unique_name("ark-rbac-old");
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns);
    let dir = tempfile::tempdir().unwrap();
    let test = serde_json::json!({ "op": "test", "path": "/rules/1/verbs", "value": ["deletecollection"] });
    let server = server_lacking_rule(&cluster, &ns, dir.path(), 1, test).await;
    let uid = Api::<Backup>::namespaced(client.clone(), &ns)
        .get("b")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();

    ark_ok(
        &cluster,
        &ns,
        &["backup", "delete", "b", "--confirm", "--wait"],
    );
    let requests = Api::<ark_api::DeleteBackupRequest>::namespaced(client.clone(), &ns);
    let selector = ark_api::labels::selector_for_backup("b", &uid);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = requests
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items;
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "requests left: {:?}\n--- server ---\n{}",
            left.iter().map(|r| r.status.clone()).collect::<Vec<_>>(),
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_viewer_gets_and_describes_but_may_not_create_and_a_stranger_is_told_which_role_to_ask_for()
 {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = unique_name("ark-people");
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns);
    let dir = tempfile::tempdir().unwrap();
    install(&cluster, &ns, &dir.path().join("bucket"), &[]);
    // A backup for the viewer to see (no server runs: it stays New).
    ark_ok(&cluster, &ns, &["backup", "create", "seen"]);
    let viewer = person(
        &cluster,
        &ns,
        "viewer",
        Some(&format!("ark:{ns}:admin-viewer")),
        dir.path(),
    )
    .await;
    let stranger = person(&cluster, &ns, "stranger", None, dir.path()).await;
    wait_for_rights(&viewer, &ns).await;

    let listed = ark_ok(&viewer, &ns, &["backup", "get"]);
    assert!(listed.contains("seen"), "{listed}");
    let described = ark_ok(&viewer, &ns, &["backup", "describe", "seen"]);
    assert!(described.contains("seen"), "{described}");

    let created = ark(Some(&viewer), &["backup", "create", "mine", "-n", &ns]);
    assert_eq!(created.status.code(), Some(1));
    let stderr = text(&created.stderr);
    assert!(
        stderr.ends_with(&format!(
            "forbidden: system:serviceaccount:{ns}:viewer may not create backups.velero.io in \
             namespace {ns}. ark's admin-operator role (ark:{ns}:admin-operator) allows it; an administrator \
             grants it with:\n  kubectl create rolebinding ark-admin-operator-viewer -n {ns} \
             --clusterrole=ark:{ns}:admin-operator --serviceaccount={ns}:viewer\n"
        )),
        "{stderr}"
    );

    let refused = ark(Some(&stranger), &["backup", "get", "-n", &ns]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.ends_with(&format!(
            "forbidden: system:serviceaccount:{ns}:stranger may not list backups.velero.io in \
             namespace {ns}. ark's admin-viewer role (ark:{ns}:admin-viewer) allows it; an administrator \
             grants it with:\n  kubectl create rolebinding ark-admin-viewer-stranger -n {ns} \
             --clusterrole=ark:{ns}:admin-viewer --serviceaccount={ns}:stranger\n"
        )),
        "{stderr}"
    );
    assert!(
        Api::<Backup>::namespaced(client, &ns)
            .get_opt("mine")
            .await
            .unwrap()
            .is_none()
    );
}

/// A person: the ServiceAccount `name` in `ns`, bound there to the ClusterRole `role` (if any),
/// as a cluster seen with its token.
pub(super) async fn person(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    role: Option<&str>,
    dir: &Path,
) -> Cluster {
    let client = cluster.client().await;
    let account: ServiceAccount =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": name } })).unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    if let Some(role) = role {
        let binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
            "subjects": [{ "kind": "ServiceAccount", "name": name, "namespace": ns }],
        }))
        .unwrap();
        Api::<RoleBinding>::namespaced(client, ns)
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
    }
    cluster.as_service_account(ns, name, dir).await
}

#[tokio::test]
async fn a_viewer_reads_logs_and_details_and_an_operator_downloads_the_backup_through_the_server_without_the_locations_credentials()
 {
    let cluster = Cluster::get();
    let ns = unique_name("ark-viewer-logs");
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns);
    let dir = tempfile::tempdir().unwrap();
    install_on_s3(&cluster, &ns, dir.path());
    let (_server, _) = installed_server(&cluster, &ns, dir.path()).await;
    ark_ok(
        &cluster,
        &ns,
        &[
            "backup",
            "create",
            "b",
            // The namespace's Secrets too: the installed credentials are labelled to stay out.
            "--include-resources",
            "configmaps,secrets",
            "--include-namespaces",
            &ns,
            "--wait",
        ],
    );
    let viewer = person(
        &cluster,
        &ns,
        "viewer",
        Some(&format!("ark:{ns}:admin-viewer")),
        dir.path(),
    )
    .await;
    wait_for_rights(&viewer, &ns).await;

    let logs = ark_ok(&viewer, &ns, &["backup", "logs", "b"]);
    assert!(
        logs.contains("msg=\"backup Completed with 1 items, 0 errors, 0 warnings\""),
        "{logs}"
    );
    let described = ark_ok(&viewer, &ns, &["backup", "describe", "b", "--details"]);
    assert!(
        described.contains("Resource List:\n  v1/ConfigMap:\n"),
        "{described}"
    );
    // Its volume information too comes through the server (it was "<unavailable: ...>").
    assert!(!described.contains("unavailable"), "{described}");
    // What the viewer may not do itself: read the location's credentials.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(viewer.client().await, &ns);
    assert!(secrets.get("cloud-credentials").await.is_err());

    // `backup download`: an operator (no credentials either) gets the tarball through the server,
    // byte for byte; an existing file is kept unless --force; whoever reads the credentials gets it
    // from the bucket.
    let operator = person(
        &cluster,
        &ns,
        "operator",
        Some(&format!("ark:{ns}:admin-operator")),
        dir.path(),
    )
    .await;
    wait_for_rights(&operator, &ns).await;
    let store = ark_storage::open(&cluster.s3_location(&ns)).unwrap();
    let tarball = store.get(&store.layout.backup_contents("b")).await.unwrap();
    let out = dir.path().join("b.tar.gz");
    let out_arg = out.to_str().unwrap();
    let said = ark_ok(&operator, &ns, &["backup", "download", "b", "-o", out_arg]);
    assert_eq!(
        said.trim(),
        format!(
            "Backup b has been successfully downloaded to {out_arg} ({} bytes)",
            tarball.len()
        )
    );
    assert_eq!(std::fs::read(&out).unwrap(), tarball);
    let mut names = Vec::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&tarball[..]));
    for entry in archive.entries().unwrap() {
        names.push(entry.unwrap().path().unwrap().display().to_string());
    }
    assert!(
        !names.iter().any(|name| name.contains("secrets")),
        "the location's credentials are not in the backup: {names:?}"
    );
    std::fs::write(&out, b"kept").unwrap();
    let refused = ark(
        Some(&operator),
        &["backup", "download", "b", "-o", out_arg, "-n", &ns],
    );
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("{out_arg} already exists")),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"kept");
    ark_ok(
        &cluster,
        &ns,
        &["backup", "download", "b", "-o", out_arg, "--force"],
    );
    assert_eq!(std::fs::read(&out).unwrap(), tarball);
}

/// Until `who` may list backups in `ns` (a new RoleBinding reaches the authorizer's cache within
/// moments).
pub(super) async fn wait_for_rights(who: &Cluster, ns: &str) {
    let backups: Api<Backup> = Api::namespaced(who.client().await, ns);
    for _ in 0..50 {
        if backups.list(&Default::default()).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the viewer never could list backups");
}

/// `ark install --node-agent-configmap` checks Velero's node agent settings before it applies
/// anything: a ConfigMap that is not there, or whose JSON does not fit, is an error naming it
/// and where, and nothing is installed; one that fits is passed to the agent.
#[tokio::test]
async fn install_refuses_node_agent_settings_that_are_missing_or_do_not_fit_and_applies_nothing() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("settings").await;
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns.name);
    let bucket = tempfile::tempdir().unwrap();
    let attempt = |settings: &str| {
        let bucket = bucket.path().to_str().unwrap();
        let args = [
            "install",
            "--provider",
            "file",
            "--bucket",
            bucket,
            "--use-node-agent",
        ];
        let settings = ["--node-agent-configmap", settings, "-n", &ns.name];
        ark(Some(&cluster), &[&args[..], &settings[..]].concat())
    };
    let absent = attempt("absent");
    assert!(!absent.status.success());
    assert_eq!(
        text(&absent.stderr),
        format!(
            "error: the node agent's ConfigMap {}/absent is not there\n",
            ns.name
        )
    );
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let settings = |json: &str| -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "agent-settings" },
            "data": { "node-agent-config.json": json },
        }))
        .unwrap()
    };
    let unfit = r#"{ "backupPVC": { "ark-csi": { "readOnly": "yes" } } }"#;
    maps.create(&PostParams::default(), &settings(unfit))
        .await
        .unwrap();
    let refused = attempt("agent-settings");
    assert!(!refused.status.success());
    let error = text(&refused.stderr);
    let expected = format!(
        "error: the node agent's ConfigMap {}/agent-settings, key node-agent-config.json: \
         backupPVC.ark-csi.readOnly: invalid type: string \"yes\", expected a boolean",
        ns.name
    );
    assert!(error.starts_with(&expected), "{error}");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    assert!(
        deployments.get_opt("ark").await.unwrap().is_none(),
        "nothing is applied"
    );

    let fits = r#"{ "restorePVC": { "ignoreDelayBinding": true }, "loadConcurrency": { "globalConfig": 2 } }"#;
    maps.replace("agent-settings", &PostParams::default(), &settings(fits))
        .await
        .unwrap();
    let installed = attempt("agent-settings");
    assert!(installed.status.success(), "{}", text(&installed.stderr));
    let agents: Api<k8s_openapi::api::apps::v1::DaemonSet> =
        Api::namespaced(client.clone(), &ns.name);
    let agent = agents.get("node-agent").await.unwrap();
    let args = agent.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(
        args.contains(&"--node-agent-configmap=agent-settings".to_string()),
        "{args:?}"
    );
}

/// Installing into the namespace of a Velero install: the credentials and the location Velero
/// made are its own. `ark install` changes neither and applies nothing, naming each object and
/// whose fields it would change; with `--take-over` it applies over them.
#[tokio::test]
async fn install_over_another_tools_credentials_and_location_applies_nothing_unless_told_to_take_them_over()
 {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("take-over").await;
    let ns = ns.name.as_str();
    let _cleanup = cluster_objects_removed_on_drop(&cluster, ns);
    // As `velero install` leaves them (the manager is its binary's name).
    let by_velero = PostParams {
        field_manager: Some("velero".into()),
        ..Default::default()
    };
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), ns);
    let velero_secret = serde_json::json!({
        "metadata": { "name": "cloud-credentials", "labels": { "component": "velero" } },
        "stringData": { "cloud": "[default]\naws_access_key_id=velero\n" },
    });
    secrets
        .create(&by_velero, &serde_json::from_value(velero_secret).unwrap())
        .await
        .unwrap();
    let locations: Api<ark_api::BackupStorageLocation> = Api::namespaced(client.clone(), ns);
    let velero_location = serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
        "metadata": { "name": "default" },
        "spec": { "provider": "aws", "objectStorage": { "bucket": "velero-backups" },
                  "credential": { "name": "cloud-credentials", "key": "cloud" } },
    });
    locations
        .create(
            &by_velero,
            &serde_json::from_value(velero_location).unwrap(),
        )
        .await
        .unwrap();

    let bucket = tempfile::tempdir().unwrap();
    let credentials = bucket.path().join("credentials");
    std::fs::write(&credentials, "[default]\naws_access_key_id=ark\n").unwrap();
    let args = [
        "install",
        "--provider",
        "file",
        "--bucket",
        bucket.path().to_str().unwrap(),
        "--secret-file",
        credentials.to_str().unwrap(),
        "-n",
        ns,
    ];
    let refused = ark(Some(&cluster), &args);
    assert_eq!(refused.status.code(), Some(1));
    let error = text(&refused.stderr);
    // (The API server lists a manager's conflicting fields in an order of its own.)
    let (head, fields) = error
        .split_once(" using velero.io/v1:\n")
        .unwrap_or_else(|| panic!("{error}"));
    assert_eq!(
        head,
        "error: nothing was applied: the install would change what another tool set on 2 \
         object(s) in the cluster:\n  secret/cloud-credentials: Apply failed with 1 conflict: \
         conflict with \"velero\" using v1: .data.cloud\n  \
         backupstoragelocation.velero.io/default: Apply failed with 2 conflicts: conflicts with \
         \"velero\""
    );
    let (fields, tail) = fields.split_once("\nif ").unwrap();
    let mut fields: Vec<&str> = fields.lines().collect();
    fields.sort();
    assert_eq!(
        fields,
        ["    - .spec.objectStorage.bucket", "    - .spec.provider"]
    );
    assert_eq!(
        tail,
        "ark is to take them over (a cluster moving from Velero to ark), run it again with \
         --take-over\n"
    );
    let secret = secrets.get("cloud-credentials").await.unwrap();
    assert_eq!(
        secret.data.unwrap()["cloud"].0,
        b"[default]\naws_access_key_id=velero\n"
    );
    let location = locations.get("default").await.unwrap();
    assert_eq!(location.spec.provider, "aws");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    assert!(
        accounts.get_opt("ark").await.unwrap().is_none(),
        "nothing is applied"
    );

    let taken = ark(Some(&cluster), &[&args[..], &["--take-over"]].concat());
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    let secret = secrets.get("cloud-credentials").await.unwrap();
    assert_eq!(
        secret.data.unwrap()["cloud"].0,
        b"[default]\naws_access_key_id=ark\n"
    );
    assert_eq!(
        secret.metadata.labels.unwrap()["velero.io/exclude-from-backup"],
        "true"
    );
    assert_eq!(
        locations.get("default").await.unwrap().spec.provider,
        "file"
    );
    assert!(accounts.get_opt("ark").await.unwrap().is_some());
}

/// What the installed server's roles allow, asked of the API server's own authorizer (a
/// SubjectAccessReview for the server's ServiceAccount): its work, a backed-up status put back
/// (which the roles lacked: a replace of the subresource), and none of the verbs that would let it
/// grant or take on more rights than it holds.
#[tokio::test]
async fn the_installed_server_may_do_its_work_and_not_escalate_bind_or_impersonate() {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("rights").await;
    let ns = ns.name.as_str();
    let _cleanup = cluster_objects_removed_on_drop(&cluster, ns);
    let bucket = tempfile::tempdir().unwrap();
    install(&cluster, ns, bucket.path(), &[]);

    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let allowed = async |verb: &str, group: &str, resource: &str, namespace: &str| {
        let (resource, subresource) = match resource.split_once('/') {
            Some((resource, sub)) => (resource, Some(sub.to_string())),
            None => (resource, None),
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(format!("system:serviceaccount:{ns}:ark")),
                groups: Some(vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                    "system:authenticated".into(),
                ]),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.into()),
                    group: Some(group.into()),
                    resource: Some(resource.into()),
                    subresource,
                    namespace: Some(namespace.into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = reviews
            .create(&PostParams::default(), &review)
            .await
            .unwrap();
        answer.status.unwrap().allowed
    };
    // A new binding reaches the authorizer's cache within moments.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !allowed("list", "", "secrets", "default").await {
        assert!(
            std::time::Instant::now() < deadline,
            "never allowed to list secrets"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let work = [
        ("list", "", "secrets", "kube-system"),
        ("watch", "", "pods", "default"),
        ("create", "", "configmaps", "default"),
        ("patch", "apps", "deployments", "default"),
        ("update", "apps", "deployments/status", "default"),
        ("create", "", "namespaces", ""),
        ("create", "", "pods/exec", "default"),
        (
            "create",
            "rbac.authorization.k8s.io",
            "rolebindings",
            "default",
        ),
        (
            "create",
            "snapshot.storage.k8s.io",
            "volumesnapshots",
            "default",
        ),
        (
            "delete",
            "snapshot.storage.k8s.io",
            "volumesnapshotcontents",
            "",
        ),
        ("list", "velero.io", "backups", "default"),
        (
            "list",
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "",
        ),
    ];
    for (verb, group, resource, namespace) in work {
        assert!(
            allowed(verb, group, resource, namespace).await,
            "{verb} {group}/{resource} in {namespace:?} is the server's work"
        );
    }
    let never = [
        (
            "update",
            "certificates.k8s.io",
            "certificatesigningrequests/approval",
            "",
        ),
        ("escalate", "rbac.authorization.k8s.io", "clusterroles", ""),
        ("bind", "rbac.authorization.k8s.io", "clusterroles", ""),
        ("impersonate", "", "users", ""),
        ("delete", "", "secrets", "default"),
        ("update", "", "secrets", "default"),
    ];
    for (verb, group, resource, namespace) in never {
        assert!(
            !allowed(verb, group, resource, namespace).await,
            "{verb} {group}/{resource} in {namespace:?} is not the server's to do"
        );
    }
}

/// `ark uninstall` of an install that made its namespace keeps the namespace while it holds the
/// repositories' password: without it, the volume data in the bucket cannot be read, and
/// installing again would make another.
#[tokio::test]
async fn uninstall_keeps_the_namespace_that_holds_the_repositories_password() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = unique_name("ark-password");
    let _cleanup = cluster_objects_removed_on_drop(&cluster, &ns);
    let bucket = tempfile::tempdir().unwrap();
    install(&cluster, &ns, bucket.path(), &[]);
    let removed = ark_ok(&cluster, &ns, &["uninstall", "--confirm"]);
    assert!(
        removed.contains("deployment.apps/ark deleted\n"),
        "{removed}"
    );
    assert!(
        removed.contains(&format!(
            "namespace/{ns} kept: it holds the repositories' password (secret \
             velero-repo-credentials), without which the volume data in the bucket cannot be \
             read; delete the namespace once a copy of it is kept elsewhere\n"
        )),
        "{removed}"
    );
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), &ns);
    assert!(
        secrets
            .get_opt("velero-repo-credentials")
            .await
            .unwrap()
            .is_some()
    );
}

/// The pods the node agent may create in ark's namespace are those it exposes snapshots with: the
/// API server (the installed ValidatingAdmissionPolicy) refuses, for the agent's ServiceAccount,
/// a pod naming the server's ServiceAccount (whose token it would carry), mounting a host path,
/// or running privileged; the agent's own kind of pod passes, and so does the same pod made by
/// someone else.
#[tokio::test]
async fn the_node_agent_may_create_its_exposing_pods_and_no_pod_that_carries_the_servers_token() {
    let cluster = Cluster::get();
    let ns = cluster.namespace("agent-pods").await;
    let ns = ns.name.as_str();
    let _cleanup = cluster_objects_removed_on_drop(&cluster, ns);
    let dir = tempfile::tempdir().unwrap();
    install(
        &cluster,
        ns,
        &dir.path().join("bucket"),
        &["--use-node-agent"],
    );
    let agent = cluster
        .as_service_account(ns, "node-agent", dir.path())
        .await;
    let pods: Api<Pod> = Api::namespaced(agent.client().await, ns);

    // As the agent makes them (`exposing_pod`): no token, a claim mounted (or given as a
    // device, with a directory to hand it over in).
    let exposing = |name: &str| {
        serde_json::json!({
            "metadata": { "name": name },
            "spec": {
                "automountServiceAccountToken": false,
                "securityContext": { "runAsNonRoot": true, "runAsUser": 65532 },
                "containers": [{ "name": "hold", "image": "busybox",
                    "volumeMounts": [{ "name": "v", "mountPath": "/v" },
                        { "name": "hand-over", "mountPath": "/hand-over" }] }],
                "volumes": [{ "name": "v", "persistentVolumeClaim": { "claimName": "c" } },
                    { "name": "hand-over", "emptyDir": {} }],
            },
        })
    };
    let create = async |pod: serde_json::Value| {
        let pod: Pod = serde_json::from_value(pod).unwrap();
        pods.create(&PostParams::default(), &pod).await
    };
    // A new binding reaches the authorizer's cache within moments.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match create(exposing("exposing")).await {
            Ok(_) => break,
            Err(kube::Error::Api(status))
                if status.code == 403
                    && status.reason == "Forbidden"
                    && !status.message.contains("ValidatingAdmissionPolicy") =>
            {
                assert!(std::time::Instant::now() < deadline, "{status:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the agent's own kind of pod: {error}"),
        }
    }
    let refused = |changed: &dyn Fn(&mut serde_json::Value), name: &str| {
        let mut pod = exposing(name);
        changed(&mut pod);
        pod
    };
    // A new policy reaches the API server's admission within moments: until then, what it would
    // refuse is admitted (and removed here).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let as_server = |p: &mut serde_json::Value| p["spec"]["serviceAccountName"] = "ark".into();
    while create(refused(&as_server, "probe")).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the policy never took effect"
        );
        pods.delete("probe", &Default::default()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cases: [(serde_json::Value, &str); 4] = [
        (
            refused(&as_server, "as-server"),
            "the node agent's pods run as the namespace's default ServiceAccount",
        ),
        (
            refused(
                &|p| p["spec"]["automountServiceAccountToken"] = true.into(),
                "token",
            ),
            "the node agent's pods carry no ServiceAccount token",
        ),
        (
            refused(
                &|p| {
                    p["spec"]["volumes"][0] =
                        serde_json::json!({ "name": "v", "hostPath": { "path": "/" } })
                },
                "host",
            ),
            "the node agent's pods mount claims and empty directories only",
        ),
        (
            refused(
                &|p| {
                    p["spec"]["containers"][0]["securityContext"] =
                        serde_json::json!({ "privileged": true })
                },
                "privileged",
            ),
            "the node agent's pods are not privileged",
        ),
    ];
    for (pod, why) in cases {
        let name = pod["metadata"]["name"].as_str().unwrap().to_string();
        match create(pod).await {
            Err(kube::Error::Api(status)) => assert!(
                status.code == 403 && status.message.contains(why),
                "{name}: {status:?}"
            ),
            other => panic!("{name} was not refused: {other:?}"),
        }
    }
    // Whoever else creates such a pod is not the policy's business.
    let admin: Api<Pod> = Api::namespaced(cluster.client().await, ns);
    let by_an_admin: Pod = serde_json::from_value(refused(&as_server, "by-an-admin")).unwrap();
    admin
        .create(&PostParams::default(), &by_an_admin)
        .await
        .unwrap();
}

/// What the server's ClusterRole grants with `*` and the server never asks for is refused to it by
/// the API server (the installed ValidatingAdmissionPolicy): a token for another ServiceAccount,
/// a proxy to a node's kubelet. RBAC alone allows both (asked of the authorizer too).
#[tokio::test]
async fn the_installed_server_is_refused_tokens_and_node_proxies_that_its_role_allows() {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    let cluster = Cluster::get();
    let ns = cluster.namespace("server-requests").await;
    let ns = ns.name.as_str();
    let _cleanup = cluster_objects_removed_on_drop(&cluster, ns);
    let dir = tempfile::tempdir().unwrap();
    install(&cluster, ns, &dir.path().join("bucket"), &[]);
    let server = cluster.as_service_account(ns, "ark", dir.path()).await;
    let client = server.client().await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let request: TokenRequest =
        serde_json::from_value(serde_json::json!({ "spec": { "audiences": [] } })).unwrap();
    let refusal = "ark's server never asks for a token, a proxy, an attach, a port-forward or an \
                   ephemeral container";
    // A new policy and binding reach the API server's admission within moments.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match accounts
            .create_subresource::<TokenRequest, TokenRequest>(
                "token",
                "default",
                &PostParams::default(),
                &request,
            )
            .await
        {
            Err(kube::Error::Api(status)) if status.message.contains(refusal) => {
                assert_eq!(status.code, 403);
                break;
            }
            other => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "a token for another ServiceAccount: {other:?}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(cluster.client().await);
    let node = nodes.list(&Default::default()).await.unwrap().items[0]
        .metadata
        .name
        .clone()
        .unwrap();
    let proxy = http::Request::get(format!("/api/v1/nodes/{node}/proxy/healthz"))
        .body(Vec::new())
        .unwrap();
    match client.request_text(proxy).await {
        Err(kube::Error::Api(status)) => assert!(
            status.code == 403 && status.message.contains(refusal),
            "{status:?}"
        ),
        other => panic!("a proxy to node {node}: {other:?}"),
    }
    // Velero's requests, which its role may delete anywhere (a tenant's, once answered): refused
    // in a namespace not delegated to it, whether Velero's own or an application's.
    let elsewhere = cluster.namespace("not-delegated").await;
    let admin_backups: Api<Backup> = Api::namespaced(cluster.client().await, &elsewhere.name);
    let backup: Backup =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "theirs" }, "spec": {} }))
            .unwrap();
    admin_backups
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    let as_server: Api<Backup> = Api::namespaced(client.clone(), &elsewhere.name);
    match as_server.delete("theirs", &Default::default()).await {
        Err(kube::Error::Api(status)) => assert!(
            status.code == 403
                && status.message.contains(&format!(
                    "ark's server deletes Velero's requests only in namespace {ns} and the \
                     namespaces delegated to it"
                )),
            "{status:?}"
        ),
        other => panic!("a backup deleted in another namespace: {other:?}"),
    }
    assert!(admin_backups.get_opt("theirs").await.unwrap().is_some());
    // In its own namespace, as before.
    let own = Api::<Backup>::namespaced(cluster.client().await, ns);
    own.create(&PostParams::default(), &backup).await.unwrap();
    Api::<Backup>::namespaced(client.clone(), ns)
        .delete("theirs", &Default::default())
        .await
        .unwrap();
    // Namespaces, which its role may delete (a restore test's throwaway ones): refused any other.
    let namespaces: Api<Namespace> = Api::all(client);
    match namespaces
        .delete(&elsewhere.name, &Default::default())
        .await
    {
        Err(kube::Error::Api(status)) => assert!(
            status.code == 403
                && status.message.contains(
                    "ark's server deletes no namespace but its restore tests' throwaway ones"
                ),
            "{status:?}"
        ),
        other => panic!("an application's namespace deleted: {other:?}"),
    }
    // Another install's throwaway namespace is no more its own than an application's.
    let throwaway = cluster.namespace("throwaway").await;
    let admin_namespaces = Api::<Namespace>::all(cluster.client().await);
    let labelled = |by: &str| serde_json::json!({ "metadata": { "labels": { ark_api::restore_test::BY_LABEL: by } } });
    let by_another = labelled("another-ark");
    admin_namespaces
        .patch(
            &throwaway.name,
            &Default::default(),
            &kube::api::Patch::Merge(&by_another),
        )
        .await
        .unwrap();
    match namespaces
        .delete(&throwaway.name, &Default::default())
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("another install's namespace deleted: {other:?}"),
    }
    admin_namespaces
        .patch(
            &throwaway.name,
            &Default::default(),
            &kube::api::Patch::Merge(&labelled(ns)),
        )
        .await
        .unwrap();
    namespaces
        .delete(&throwaway.name, &Default::default())
        .await
        .unwrap();
}
