//! ark beside Velero, with Velero's own binaries (scripts/velero-build.sh) on the local clusters and
//! one SeaweedFS bucket: each tool's CLI driven against the other's server, each tool restoring
//! the other's backups (restore hooks in the Restore spec), Velero's CLI on a cluster where only
//! ark runs, and ark's server refusing to start beside Velero's.
//!
//! Velero's server runs on the second cluster, whose CRDs are Velero's reference files.

use crate::common;

use std::time::Duration;

use ark_api::{
    Backup, BackupStorageLocation, BackupStorageLocationPhase, DeleteBackupRequest,
    DeleteBackupRequestPhase, Restore, RestorePhase,
};
use ark_tests::velero::{self, VeleroServer, velero_ok};
use ark_tests::{
    ArkServer, Cluster, TestNamespace, allow_local_exec, fixtures, unique_name, wait_deleted,
    wait_for,
};
use common::{ARK, ark_ok, text};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};

const WAIT: Duration = Duration::from_secs(90);

/// An application namespace with two ConfigMaps (`settings`, and `fixtures::large_config_map`)
/// and a standalone pod
/// (`app: db`, containers `db` and `sidecar`) Running on a kwok node.
async fn application(cluster: &Cluster, client: &Client) -> TestNamespace {
    let app = cluster.namespace("app").await;
    let settings = fixtures::object(serde_json::json!({
        "metadata": { "name": "settings" }, "data": { "color": "blue" },
    }));
    for config_map in [settings, fixtures::large_config_map()] {
        Api::<ConfigMap>::namespaced(client.clone(), &app.name)
            .create(&PostParams::default(), &config_map)
            .await
            .unwrap();
    }
    let mut pod = ark_tests::kwok_pod("db", &["db", "sidecar"]);
    pod.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods, "db", ark_tests::is_pod_running(), WAIT)
        .await
        .unwrap();
    app
}

/// The `backup-location create` flags of an S3 location under `prefix` (credentials in the
/// namespace's `cloud-credentials` Secret, created here), with more flags after them.
async fn s3_flags(
    cluster: &Cluster,
    client: &Client,
    ns: &str,
    prefix: &str,
    more: &[&str],
) -> Vec<String> {
    let (mut flags, _) = fixtures::s3_location(cluster, client, ns, Some(prefix), None).await;
    flags.extend(more.iter().map(|f| f.to_string()));
    flags
}

async fn set_access_mode(client: &Client, ns: &str, location: &str, mode: &str) {
    Api::<BackupStorageLocation>::namespaced(client.clone(), ns)
        .patch(
            location,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "accessMode": mode } })),
        )
        .await
        .unwrap();
}

/// Waits until a backup of that name exists (synced from the bucket) and is Completed.
async fn wait_completed(client: &Client, ns: &str, backup: &str) -> Backup {
    wait_for(
        Api::<Backup>::namespaced(client.clone(), ns),
        backup,
        |b: Option<&Backup>| b.is_some_and(|b| b.phase() == ark_api::BackupPhase::Completed),
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("backup {ns}/{backup} not Completed: {e:#}"))
}

/// The only DeleteBackupRequest of the namespace, once Processed.
async fn processed_request(client: &Client, ns: &str) -> DeleteBackupRequest {
    let requests: Api<DeleteBackupRequest> = Api::namespaced(client.clone(), ns);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = requests.list(&ListParams::default()).await.unwrap().items;
        if let [request] = list.as_slice()
            && request.phase() == Some(DeleteBackupRequestPhase::Processed)
        {
            return request.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no single Processed request in {ns}: {list:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The keys of backup `name`'s folder under `prefix` in the bucket.
async fn backup_keys(cluster: &Cluster, prefix: &str, name: &str) -> Vec<String> {
    let store = ark_storage::open(&cluster.s3_location(prefix)).unwrap();
    store
        .keys_under(&store.layout.backup_dir(name))
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.to_string())
        .collect()
}

/// `velero backup delete` (Velero's CLI) is processed by ark's server, on Velero's CRDs: a refused
/// attempt first (read-only location), which `velero backup describe` shows, then a deletion that
/// removes the backup and its data.
#[tokio::test]
async fn velero_s_cli_deletes_through_ark_s_server_and_shows_ark_s_attempts() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = application(&cluster, &client).await;
    let prefix = unique_name("interop");
    let mut create = vec!["backup-location", "create", "default", "--default"];
    let flags = s3_flags(&cluster, &client, &ns.name, &prefix, &[]).await;
    create.extend(flags.iter().map(String::as_str));
    ark_ok(&cluster, &ns.name, &create);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    // A 100-character name: valid for Kubernetes and Velero, hashed in the request's labels.
    let name = "v".repeat(100);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            &name,
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let backup = wait_completed(&client, &ns.name, &name).await;

    set_access_mode(&client, &ns.name, "default", "ReadOnly").await;
    velero_ok(
        &cluster,
        &ns.name,
        &["backup", "delete", &name, "--confirm"],
    );
    let refused = processed_request(&client, &ns.name).await;
    let reason = "cannot delete backup because backup storage location default is currently in read-only mode";
    assert_eq!(refused.errors(), [reason]);
    let described = velero_ok(&cluster, &ns.name, &["backup", "describe", &name]);
    for line in [
        "Deletion Attempts (1 failed):",
        &format!("{}: Processed", velero_time(&refused)),
        reason,
    ] {
        assert!(described.contains(line), "{line:?} not in:\n{described}");
    }

    set_access_mode(&client, &ns.name, "default", "ReadWrite").await;
    velero_ok(
        &cluster,
        &ns.name,
        &["backup", "delete", &name, "--confirm"],
    );
    wait_deleted(
        Api::<Backup>::namespaced(client.clone(), &ns.name),
        &backup,
        WAIT,
    )
    .await;
    assert_eq!(
        backup_keys(&cluster, &prefix, &name).await,
        Vec::<String>::new()
    );
}

/// How Velero's describe prints a request's creation time (Go's `time.Time.String()`, UTC).
fn velero_time(request: &DeleteBackupRequest) -> String {
    let time = request.metadata.creation_timestamp.as_ref().unwrap().0;
    format!("{} +0000 UTC", time.strftime("%Y-%m-%d %H:%M:%S"))
}

/// `ark backup delete` is processed by Velero's server: a refused attempt, which `ark backup
/// describe` shows, then `--wait` until Velero has deleted the backup and its data.
#[tokio::test]
async fn ark_s_cli_deletes_through_velero_s_server_and_shows_velero_s_attempts() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let ns = cluster.namespace("velero").await;
    let app = application(&cluster, &client).await;
    let prefix = unique_name("interop");
    let _velero = VeleroServer::start(&cluster, &ns.name).await;
    let mut create = vec!["backup-location", "create", "default", "--default"];
    let flags = s3_flags(&cluster, &client, &ns.name, &prefix, &[]).await;
    create.extend(flags.iter().map(String::as_str));
    velero_ok(&cluster, &ns.name, &create);
    ark_tests::location_available(&client, &ns.name, "default", WAIT).await;
    velero_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "from-velero",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let backup = wait_completed(&client, &ns.name, "from-velero").await;
    // `ark version` names the server that answers, Velero's here (built without its version
    // stamped, it gives none).
    let versions = ark_ok(&cluster, &ns.name, &["version"]);
    assert!(
        versions.ends_with("Server: Velero (its version not given)\n"),
        "{versions}"
    );

    set_access_mode(&client, &ns.name, "default", "ReadOnly").await;
    ark_ok(
        &cluster,
        &ns.name,
        &["backup", "delete", "from-velero", "--confirm"],
    );
    let refused = processed_request(&client, &ns.name).await;
    // Velero's server words it so; ark's says the same without the first four words.
    let reason = "backup deletion failed: cannot delete backup because backup storage location default is currently in read-only mode";
    assert_eq!(refused.errors(), [reason]);
    let described = ark_ok(&cluster, &ns.name, &["backup", "describe", "from-velero"]);
    assert!(
        described.contains("Deletion Attempts (1 failed):\n") && described.contains(reason),
        "{described}"
    );

    set_access_mode(&client, &ns.name, "default", "ReadWrite").await;
    ark_ok(
        &cluster,
        &ns.name,
        &["backup", "delete", "from-velero", "--confirm", "--wait"],
    );
    wait_deleted(
        Api::<Backup>::namespaced(client.clone(), &ns.name),
        &backup,
        WAIT,
    )
    .await;
    assert_eq!(
        backup_keys(&cluster, &prefix, "from-velero").await,
        Vec::<String>::new()
    );
}

/// A Restore of `backup` with an exec hook (in the spec) on the `db` pods that writes `marker` on
/// this host, mapping `from` to `to`.
fn restore_with_hooks(name: &str, backup: &str, from: &str, to: &str, marker: &str) -> Restore {
    // The hook selects by label only: whether a hook's namespaces name the namespace before or
    // after mapping is for the hooks tests.
    serde_json::from_value(serde_json::json!({
        "apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": { "name": name },
        "spec": {
            "backupName": backup,
            "includedNamespaces": [from],
            "namespaceMapping": { from: to },
            "hooks": { "resources": [{
                "name": "mark",
                "labelSelector": { "matchLabels": { "app": "db" } },
                "postHooks": [{ "exec": {
                    "container": "db",
                    "command": ["sh", "-c", format!("echo restored > /tmp/{marker}")],
                    "waitTimeout": "1m",
                } }],
            }] },
        },
    }))
    .unwrap()
}

async fn restored(client: &Client, ns: &str, name: &str) -> Restore {
    wait_for(
        Api::<Restore>::namespaced(client.clone(), ns),
        name,
        |r: Option<&Restore>| r.is_some_and(|r| r.phase().is_terminal()),
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("restore {ns}/{name} did not finish: {e:#}"))
}

/// `ark schedule create` is run by Velero's server: Velero enables it and makes a backup of its
/// template, named and labelled as Velero names them; `velero schedule describe` reads it, and
/// `ark schedule describe` shows Velero's last backup.
#[tokio::test]
async fn ark_s_cli_schedule_is_run_by_velero_s_server() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let ns = cluster.namespace("velero").await;
    let app = application(&cluster, &client).await;
    let prefix = unique_name("interop");
    let _velero = VeleroServer::start(&cluster, &ns.name).await;
    let mut create = vec!["backup-location", "create", "default", "--default"];
    let flags = s3_flags(&cluster, &client, &ns.name, &prefix, &[]).await;
    create.extend(flags.iter().map(String::as_str));
    ark_ok(&cluster, &ns.name, &create);
    ark_tests::location_available(&client, &ns.name, "default", WAIT).await;
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "schedule",
            "create",
            "nightly",
            "--schedule",
            "@every 5s",
            "--include-namespaces",
            &app.name,
            "--ttl",
            "2h",
        ],
    );
    // Velero looks at its schedules once a minute.
    let schedule = wait_for(
        Api::<ark_api::Schedule>::namespaced(client.clone(), &ns.name),
        "nightly",
        |s: Option<&ark_api::Schedule>| {
            s.is_some_and(|s| s.status.as_ref().is_some_and(|st| st.last_backup.is_some()))
        },
        Duration::from_secs(150),
    )
    .await
    .unwrap();
    assert_eq!(
        schedule.status.as_ref().and_then(|s| s.phase),
        Some(ark_api::SchedulePhase::Enabled)
    );
    ark_ok(&cluster, &ns.name, &["schedule", "pause", "nightly"]);
    let made = Api::<Backup>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default().labels("velero.io/schedule-name=nightly"))
        .await
        .unwrap()
        .items;
    let name = made[0].metadata.name.clone().unwrap();
    assert!(
        name.starts_with("nightly-") && name.len() == "nightly-".len() + 14,
        "{name}"
    );
    let backup = wait_completed(&client, &ns.name, &name).await;
    assert_eq!(backup.spec.ttl.as_deref(), Some("2h0m0s"));
    assert_eq!(
        backup.spec.included_namespaces.as_deref(),
        Some(&[app.name.clone()][..])
    );
    let described = velero_ok(&cluster, &ns.name, &["schedule", "describe", "nightly"]);
    for expected in ["Phase:  Enabled", "Paused:  true", "@every 5s", &app.name] {
        assert!(
            described.contains(expected),
            "{expected:?} not in:\n{described}"
        );
    }
    let ours = ark_ok(&cluster, &ns.name, &["schedule", "describe", "nightly"]);
    assert!(ours.contains(&name), "{name} not in:\n{ours}");
}

/// A Backup with hooks, the same for both: `db`'s first pre hook fails and continues, its second
/// and its post hook succeed; `guarded`'s pre hook fails with `onError: Fail`, which stops its
/// second one and leaves it without post hook. Velero's server and ark's count them the same; a
/// Velero backup synced into ark keeps its hooks.
#[tokio::test]
async fn velero_s_server_and_ark_s_give_the_same_hook_status_and_ark_keeps_the_hooks_of_synced_backups()
 {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    allow_local_exec(&client).await;
    let (ark_ns, velero_ns) = (
        cluster.namespace("ark").await,
        cluster.namespace("velero").await,
    );
    let app = application(&cluster, &client).await;
    let mut guarded = ark_tests::kwok_pod("guarded", &["app"]);
    guarded.metadata.labels = Some([("app".to_string(), "guarded".to_string())].into());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &guarded).await.unwrap();
    wait_for(pods, "guarded", ark_tests::is_pod_running(), WAIT)
        .await
        .unwrap();
    let (ark_prefix, velero_prefix) = (unique_name("interop"), unique_name("interop"));
    let _velero = VeleroServer::start(&cluster, &velero_ns.name).await;
    let _ark = ArkServer::start(ARK, &cluster, &ark_ns.name);
    for (ns, own, other, cli) in [
        (&ark_ns.name, &ark_prefix, &velero_prefix, "ark"),
        (&velero_ns.name, &velero_prefix, &ark_prefix, "velero"),
    ] {
        let own_flags = s3_flags(&cluster, &client, ns, own, &["--default"]).await;
        let (mut other_flags, _) = fixtures::s3_location_flags(&cluster, other, None);
        other_flags.extend(["--access-mode".into(), "ReadOnly".into()]);
        for (location, flags) in [("default", own_flags), ("other", other_flags)] {
            let mut args = vec!["backup-location", "create", location];
            args.extend(flags.iter().map(String::as_str));
            if cli == "ark" {
                ark_ok(&cluster, ns, &args);
            } else {
                velero_ok(&cluster, ns, &args);
            }
        }
        ark_tests::location_available(&client, ns, "default", WAIT).await;
    }
    // Every timeout given, and in Go's spelling: Velero writes `timeout` always (`0s` if unset).
    let hooks = serde_json::json!({ "resources": [
        { "name": "quiesce", "labelSelector": { "matchLabels": { "app": "db" } },
          "pre": [{ "exec": { "container": "db", "command": ["sh", "-c", "exit 3"], "timeout": "30s" } },
                  { "exec": { "container": "db", "command": ["sh", "-c", "true"], "timeout": "30s" } }],
          "post": [{ "exec": { "container": "db", "command": ["sh", "-c", "true"], "timeout": "20s" } }] },
        { "name": "guard", "labelSelector": { "matchLabels": { "app": "guarded" } },
          "pre": [{ "exec": { "command": ["sh", "-c", "exit 4"], "onError": "Fail", "timeout": "30s" } },
                  { "exec": { "command": ["sh", "-c", "true"], "timeout": "30s" } }],
          "post": [{ "exec": { "command": ["sh", "-c", "true"], "timeout": "30s" } }] },
    ] });
    let mut statuses = Vec::new();
    for (ns, name) in [
        (&ark_ns.name, "hooks-ark"),
        (&velero_ns.name, "hooks-velero"),
    ] {
        let backup: Backup = serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": { "name": name },
            "spec": { "includedNamespaces": [app.name], "hooks": hooks, "ttl": "1h0m0s" },
        }))
        .unwrap();
        let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
        backups
            .create(&PostParams::default(), &backup)
            .await
            .unwrap();
        let ended = |b: Option<&Backup>| b.is_some_and(|b| b.phase().is_terminal());
        let backup = wait_for(backups, name, ended, WAIT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let status = backup.status.unwrap_or_default();
        assert_eq!(
            status.phase,
            Some(ark_api::BackupPhase::PartiallyFailed),
            "{name}: {status:#?}"
        );
        statuses.push(status.hook_status.unwrap_or_default());
    }
    // db: 2 pre (1 failed) and 1 post; guarded: 2 pre (1 failed, 1 not run), no post.
    assert_eq!(statuses[0], statuses[1], "ark's, then Velero's");
    assert_eq!(
        (statuses[0].hooks_attempted, statuses[0].hooks_failed),
        (Some(5), Some(2))
    );
    // Each tool's backup keeps the hooks it was made with in its bucket.
    for (prefix, name) in [(&ark_prefix, "hooks-ark"), (&velero_prefix, "hooks-velero")] {
        let store = ark_storage::open(&cluster.s3_location(prefix)).unwrap();
        let uploaded: serde_json::Value =
            serde_json::from_slice(&store.get_backup_metadata(name).await.unwrap()).unwrap();
        assert_eq!(
            uploaded["spec"]["hooks"], hooks,
            "{name}'s velero-backup.json"
        );
    }
    // Synced by the other tool: ark keeps Velero's hooks (a synced backup is never run: only
    // finished ones are synced); Velero v1.18.3 drops them from every backup it syncs, its own
    // too (backup_sync_controller.go: "dropped rather than stored as an executable payload").
    for (ns, name, kept) in [
        (&ark_ns.name, "hooks-velero", hooks.clone()),
        (&velero_ns.name, "hooks-ark", serde_json::json!({})),
    ] {
        let synced = wait_for(
            Api::<Backup>::namespaced(client.clone(), ns),
            name,
            |b: Option<&Backup>| b.is_some(),
            WAIT,
        )
        .await
        .unwrap_or_else(|e| panic!("{name} not synced into {ns}: {e:#}"));
        let synced = serde_json::to_value(&synced).unwrap();
        assert_eq!(synced["spec"]["hooks"], kept, "{name} in {ns}: {synced:#}");
    }
}

/// Each tool restores the other's backup, synced from the other's bucket prefix through a
/// read-only location, with an exec hook given in the Restore spec that really runs.
#[tokio::test]
async fn each_tool_restores_the_other_s_backup_with_hooks_in_the_restore_spec() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    allow_local_exec(&client).await;
    let (ark_ns, velero_ns) = (
        cluster.namespace("ark").await,
        cluster.namespace("velero").await,
    );
    let app = application(&cluster, &client).await;
    let (ark_prefix, velero_prefix) = (unique_name("interop"), unique_name("interop"));
    let _velero = VeleroServer::start(&cluster, &velero_ns.name).await;
    let _ark = ArkServer::start(ARK, &cluster, &ark_ns.name);
    for (ns, own, other, cli) in [
        (&ark_ns.name, &ark_prefix, &velero_prefix, "ark"),
        (&velero_ns.name, &velero_prefix, &ark_prefix, "velero"),
    ] {
        let own_flags = s3_flags(&cluster, &client, ns, own, &["--default"]).await;
        // The Secret exists now: the second location uses it too.
        let (mut other_flags, _) = fixtures::s3_location_flags(&cluster, other, None);
        other_flags.extend(["--access-mode".into(), "ReadOnly".into()]);
        for (location, flags) in [("default", own_flags), ("other", other_flags)] {
            let mut args = vec!["backup-location", "create", location];
            args.extend(flags.iter().map(String::as_str));
            if cli == "ark" {
                ark_ok(&cluster, ns, &args);
            } else {
                velero_ok(&cluster, ns, &args);
            }
        }
    }
    // Each server refuses a backup to a location it has not found Available yet.
    for ns in [&ark_ns.name, &velero_ns.name] {
        ark_tests::location_available(&client, ns, "default", WAIT).await;
    }
    ark_ok(
        &cluster,
        &ark_ns.name,
        &[
            "backup",
            "create",
            "from-ark",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    velero_ok(
        &cluster,
        &velero_ns.name,
        &[
            "backup",
            "create",
            "from-velero",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );

    for (ns, backup) in [(&velero_ns.name, "from-ark"), (&ark_ns.name, "from-velero")] {
        wait_completed(&client, ns, backup).await;
        let target = format!("{}-{}", app.name, &backup[5..]);
        let marker = unique_name("interop-hook");
        Api::<Restore>::namespaced(client.clone(), ns)
            .create(
                &PostParams::default(),
                &restore_with_hooks("r", backup, &app.name, &target, &marker),
            )
            .await
            .unwrap();
        let restore = restored(&client, ns, "r").await;
        let status = restore.status.clone().unwrap_or_default();
        assert_eq!(
            restore.phase(),
            RestorePhase::Completed,
            "{backup}: {status:#?}"
        );
        let hooks = status.hook_status.unwrap_or_default();
        assert_eq!(
            (hooks.hooks_attempted, hooks.hooks_failed),
            (Some(1), None),
            "{backup}"
        );
        let mark = std::path::Path::new("/tmp").join(&marker);
        assert_eq!(
            std::fs::read_to_string(&mark).unwrap(),
            "restored\n",
            "{backup}"
        );
        let _ = std::fs::remove_file(mark);
        let settings = Api::<ConfigMap>::namespaced(client.clone(), &target)
            .get("settings")
            .await
            .unwrap();
        assert_eq!(settings.data.unwrap()["color"], "blue");
        let large = Api::<ConfigMap>::namespaced(client.clone(), &target)
            .get("large")
            .await
            .unwrap();
        assert!(
            large.data.unwrap()["text"] == fixtures::large_text(),
            "{backup}"
        );
        let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .delete(&target, &Default::default())
            .await;
    }
    velero::release_restores(&client, &velero_ns.name).await;
}

/// On the first cluster, where only ark runs (ark's CRDs, which are Velero's full set), Velero's
/// CLI reads ark's backups and restores without an error, the files in the bucket included: ark's
/// server answers the DownloadRequests Velero's CLI makes with signed URLs.
#[tokio::test]
async fn velero_s_cli_describes_ark_s_backups_and_restores_without_errors() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = application(&cluster, &client).await;
    let mut create = vec!["backup-location", "create", "default", "--default"];
    let flags = s3_flags(&cluster, &client, &ns.name, &unique_name("interop"), &[]).await;
    create.extend(flags.iter().map(String::as_str));
    ark_ok(&cluster, &ns.name, &create);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    let mapping = format!("{}:{}-copy", app.name, app.name);
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &mapping,
            "--wait",
        ],
    );
    let described = velero_ok(
        &cluster,
        &ns.name,
        &["backup", "describe", "b1", "--details"],
    );
    for expected in [
        "Phase:  Completed",
        "v1/ConfigMap:",
        &format!("{}/settings", app.name),
    ] {
        assert!(
            described.contains(expected),
            "{expected:?} not in:\n{described}"
        );
    }
    let logs = velero_ok(&cluster, &ns.name, &["backup", "logs", "b1"]);
    assert!(logs.contains("backup Completed with"), "{logs}");
    velero_ok(&cluster, &ns.name, &["backup", "get"]);
    let described = velero_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    assert!(described.contains("Completed"), "{described}");
    let logs = velero_ok(&cluster, &ns.name, &["restore", "logs", "r1"]);
    assert!(logs.contains("restore Completed"), "{logs}");
    velero_ok(&cluster, &ns.name, &["restore", "get"]);
    // `velero version` asks the server in the namespace: ark's answers with its own version.
    let versions = velero_ok(&cluster, &ns.name, &["version"]);
    let ark_version = format!("ark {}", env!("CARGO_PKG_VERSION"));
    assert!(
        versions.contains(&format!("Server:\n\tVersion: {ark_version}\n")),
        "{versions}"
    );
    let versions = ark_ok(&cluster, &ns.name, &["version"]);
    assert!(
        versions.ends_with(&format!("Server: {ark_version}\n")),
        "{versions}"
    );
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
        .delete(&format!("{}-copy", app.name), &Default::default())
        .await;
}

/// Runs `ark server` in `ns` and expects it to refuse to start, with `expected` in its message,
/// within a minute (a server that starts instead is stopped, and the test fails).
fn ark_server_refuses(cluster: &Cluster, ns: &str, expected: &str) {
    let scratch = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(ARK)
        .args(["server", "-n", ns, "--scratch-dir"])
        .arg(scratch.path())
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "ark server started beside Velero's:\n{}",
                text(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(expected), "{expected:?} not in:\n{stderr}");
}

/// ark's server will not act on a namespace Velero's server acts on: it names Velero's Deployment,
/// or, when that is scaled down but a Velero server still runs, the ServerStatusRequest it answered.
#[tokio::test]
async fn ark_s_server_refuses_to_start_beside_velero_s_server() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let ns = cluster.namespace("velero").await;
    let _velero = VeleroServer::start(&cluster, &ns.name).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    wait_for(
        deployments.clone(),
        "velero",
        |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref())
                .and_then(|s| s.available_replicas)
                .is_some_and(|n| n > 0)
        },
        WAIT,
    )
    .await
    .unwrap();
    ark_server_refuses(
        &cluster,
        &ns.name,
        &format!(
            "Velero's server is running in namespace {0}: Deployment {0}/velero has 1 available replica(s)",
            ns.name
        ),
    );

    velero::stand_down(&client, &ns.name).await;
    ark_server_refuses(
        &cluster,
        &ns.name,
        &format!(
            "is running in namespace {}: it answered ServerStatusRequest",
            ns.name
        ),
    );
}

/// `velero backup-location create default --default` for an S3 location under `prefix` (its
/// Secret created here), through Velero's CLI.
async fn velero_location(cluster: &Cluster, client: &Client, ns: &str, prefix: &str) {
    let mut create = vec!["backup-location", "create", "default", "--default"];
    let flags = s3_flags(cluster, client, ns, prefix, &[]).await;
    create.extend(flags.iter().map(String::as_str));
    velero_ok(cluster, ns, &create);
}

/// What the tests of Velero's CLI against ark's server start from, on the second cluster (Velero's
/// CRDs): an application namespace, a namespace with an S3 location `default` made with Velero's
/// CLI under a prefix of its own, and ark's server there, once it found the location Available.
struct VeleroCli {
    cluster: Cluster,
    client: Client,
    ns: TestNamespace,
    app: TestNamespace,
    prefix: String,
    server: ArkServer,
}

impl VeleroCli {
    async fn start(server_args: &[&str]) -> VeleroCli {
        let cluster = Cluster::second();
        let client = cluster.client().await;
        let ns = cluster.namespace("ark").await;
        let app = application(&cluster, &client).await;
        let prefix = unique_name("interop");
        velero_location(&cluster, &client, &ns.name, &prefix).await;
        let server = ArkServer::start_with(ARK, &cluster, &ns.name, server_args);
        ark_tests::location_available(&client, &ns.name, "default", WAIT).await;
        VeleroCli {
            cluster,
            client,
            ns,
            app,
            prefix,
            server,
        }
    }
}

/// What `velero backup create NAME` or `velero restore create` said it made.
fn submitted(out: &str) -> String {
    let quoted = out
        .split_once("request \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .unwrap_or_else(|| panic!("no request named in:\n{out}"));
    quoted.0.to_string()
}

fn seconds_between(
    from: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
    to: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> i64 {
    to.0.duration_since(from.0).as_secs()
}

/// Velero's CLI, each command with no optional flag, against ark's server on Velero's CRDs. What
/// Velero's CLI sends for "the default" (`ttl: 0s`, zero timeouts) is read as Velero's server reads
/// it, and written back into the spec as it writes it; each command ends as it ends against
/// Velero's server. (The backup that is restored and deleted names its namespace, so that the
/// restore brings back one application, not the whole cluster.)
#[tokio::test]
async fn velero_s_cli_with_no_optional_flag_gets_velero_s_defaults_from_ark_s_server() {
    let VeleroCli {
        cluster,
        client,
        ns,
        app,
        prefix,
        server: _server,
    } = VeleroCli::start(&[]).await;

    let out = velero_ok(&cluster, &ns.name, &["backup", "create", "everything"]);
    assert_eq!(submitted(&out), "everything");
    let everything = wait_completed(&client, &ns.name, "everything").await;
    let spec = &everything.spec;
    assert_eq!(
        (
            spec.ttl.as_deref(),
            spec.csi_snapshot_timeout.as_deref(),
            spec.item_operation_timeout.as_deref(),
            spec.storage_location.as_deref(),
        ),
        (
            Some("720h0m0s"),
            Some("10m0s"),
            Some("4h0m0s"),
            Some("default")
        )
    );
    assert_eq!(spec.default_volumes_to_fs_backup, Some(false));
    assert_eq!(spec.snapshot_move_data, Some(false));
    assert_eq!(
        spec.unmodelled.get("volumeGroupSnapshotLabelKey"),
        Some(&serde_json::json!("velero.io/volume-group"))
    );
    let status = everything.status.clone().unwrap();
    assert_eq!(
        seconds_between(
            status.start_timestamp.as_ref().unwrap(),
            status.expiration.as_ref().unwrap()
        ),
        720 * 3600
    );
    let listed = velero_ok(&cluster, &ns.name, &["backup", "get"]);
    assert!(
        listed.contains("everything") && listed.contains("Completed"),
        "{listed}"
    );

    velero_ok(
        &cluster,
        &ns.name,
        &["backup", "create", "app", "--include-namespaces", &app.name],
    );
    wait_completed(&client, &ns.name, "app").await;
    let described = velero_ok(
        &cluster,
        &ns.name,
        &["backup", "describe", "app", "--details"],
    );
    for expected in [
        "Phase:  Completed".to_string(),
        "TTL:  720h0m0s".to_string(),
        "v1/ConfigMap:".to_string(),
        format!("- {}/settings", app.name),
    ] {
        assert!(
            described.contains(&expected),
            "{expected:?} not in:\n{described}"
        );
    }
    let logs = velero_ok(&cluster, &ns.name, &["backup", "logs", "app"]);
    assert!(
        logs.contains("starting backup to location default"),
        "{logs}"
    );

    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    let namespace = namespaces.get(&app.name).await.unwrap();
    namespaces
        .delete(&app.name, &Default::default())
        .await
        .unwrap();
    wait_deleted(namespaces, &namespace, WAIT).await;
    let out = velero_ok(
        &cluster,
        &ns.name,
        &["restore", "create", "--from-backup", "app"],
    );
    let restore_name = submitted(&out);
    let restore = restored(&client, &ns.name, &restore_name).await;
    assert_eq!(restore.phase(), RestorePhase::Completed, "{restore:#?}");
    assert_eq!(
        restore.spec.item_operation_timeout.as_deref(),
        Some("4h0m0s")
    );
    let settings = Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(settings.data.unwrap()["color"], "blue");

    let app_backup = Api::<Backup>::namespaced(client.clone(), &ns.name)
        .get("app")
        .await
        .unwrap();
    velero_ok(
        &cluster,
        &ns.name,
        &["backup", "delete", "app", "--confirm"],
    );
    wait_deleted(
        Api::<Backup>::namespaced(client.clone(), &ns.name),
        &app_backup,
        WAIT,
    )
    .await;
    assert_eq!(
        backup_keys(&cluster, &prefix, "app").await,
        Vec::<String>::new()
    );
    assert!(
        Api::<Restore>::namespaced(client.clone(), &ns.name)
            .get_opt(&restore_name)
            .await
            .unwrap()
            .is_none(),
        "the restore of a deleted backup is deleted with it"
    );

    // A schedule made by Velero's CLI (its defaults: `ttl: 0s`, no skipImmediately) is run by
    // ark's server: Enabled, and a backup of its template made at its slot, labelled with it.
    velero_ok(
        &cluster,
        &ns.name,
        &[
            "schedule",
            "create",
            "often",
            "--schedule",
            "@every 5s",
            "--include-namespaces",
            &app.name,
        ],
    );
    wait_for(
        Api::<ark_api::Schedule>::namespaced(client.clone(), &ns.name),
        "often",
        |s: Option<&ark_api::Schedule>| {
            s.is_some_and(|s| s.status.as_ref().is_some_and(|st| st.last_backup.is_some()))
        },
        WAIT,
    )
    .await
    .unwrap();
    let listed = velero_ok(&cluster, &ns.name, &["schedule", "get"]);
    assert!(listed.contains("Enabled"), "{listed}");
    velero_ok(&cluster, &ns.name, &["schedule", "pause", "often"]);
    let made = Api::<Backup>::namespaced(client.clone(), &ns.name)
        .list(&kube::api::ListParams::default().labels("velero.io/schedule-name=often"))
        .await
        .unwrap()
        .items;
    assert!(!made.is_empty());
    let backup = wait_completed(&client, &ns.name, made[0].metadata.name.as_deref().unwrap()).await;
    assert!(
        backup
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("often-"),
        "{:?}",
        backup.metadata.name
    );
    assert_eq!(
        backup.spec.included_namespaces.as_deref(),
        Some(&[app.name.clone()][..])
    );
    // The template's `ttl: 0s` from Velero's CLI: the server's default, as for any backup.
    assert_eq!(backup.spec.ttl.as_deref(), Some("720h0m0s"));
}

/// The regression behind backups lost through Velero's CLI: `velero backup create` without
/// `--ttl` writes `ttl: 0s`, which ark kept as zero, and garbage collection deleted the backup and
/// its data within one period. Now zero is Velero's default (720h): the backup outlives three
/// collection periods, a restart of the server and a sync into another cluster, its keys intact,
/// while its twin with `--ttl 5s` is collected (so collection does run).
#[tokio::test]
async fn a_velero_cli_backup_without_ttl_outlives_collection_a_restart_and_a_sync() {
    const GC: &[&str] = &["--garbage-collection-frequency", "2s"];
    const THREE_PERIODS: Duration = Duration::from_secs(6);
    let VeleroCli {
        cluster,
        client,
        ns,
        app,
        prefix,
        server,
    } = VeleroCli::start(GC).await;
    let create = |name: &'static str, more: &'static [&'static str]| {
        let mut args = vec![
            "backup",
            "create",
            name,
            "--include-namespaces",
            &app.name,
            "--wait",
        ];
        args.extend(more);
        velero_ok(&cluster, &ns.name, &args);
    };
    create("kept", &[]);
    create("collected", &["--ttl", "5s"]);
    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    let kept = wait_completed(&client, &ns.name, "kept").await;
    let keys = backup_keys(&cluster, &prefix, "kept").await;
    assert!(keys.len() >= 5, "{keys:?}");
    if let Some(collected) = backups.get_opt("collected").await.unwrap() {
        wait_deleted(backups.clone(), &collected, WAIT).await;
    }
    assert_eq!(
        backup_keys(&cluster, &prefix, "collected").await,
        Vec::<String>::new()
    );
    let still_kept = || async {
        let now = backups.get("kept").await.unwrap();
        assert_eq!(now.metadata.uid, kept.metadata.uid);
        assert_eq!(backup_keys(&cluster, &prefix, "kept").await, keys);
    };
    tokio::time::sleep(THREE_PERIODS).await;
    still_kept().await;

    drop(server);
    let server = ArkServer::start_with(ARK, &cluster, &ns.name, GC);
    // It leads (its collection runs) once the killed one's lease has expired.
    server.wait_for_log(" leads (lease ", WAIT).await;
    tokio::time::sleep(THREE_PERIODS).await;
    still_kept().await;

    let other = Cluster::get();
    let other_client = other.client().await;
    let other_ns = other.namespace("ark").await;
    let mut create = vec!["backup-location", "create", "default", "--default"];
    let flags = s3_flags(&other, &other_client, &other_ns.name, &prefix, &[]).await;
    create.extend(flags.iter().map(String::as_str));
    ark_ok(&other, &other_ns.name, &create);
    let _other_server = ArkServer::start_with(ARK, &other, &other_ns.name, GC);
    let synced = wait_completed(&other_client, &other_ns.name, "kept").await;
    tokio::time::sleep(THREE_PERIODS).await;
    let synced_now = Api::<Backup>::namespaced(other_client.clone(), &other_ns.name)
        .get("kept")
        .await
        .unwrap();
    assert_eq!(synced_now.metadata.uid, synced.metadata.uid);
    still_kept().await;
}

/// The regression behind credentials that reached the bucket: an item labelled
/// `velero.io/exclude-from-backup=true` is not backed up (a Secret here, while its twin labelled
/// `false` is), nor is anything in a namespace so labelled, as Velero's server leaves them out.
#[tokio::test]
async fn items_and_namespaces_labelled_exclude_from_backup_never_reach_the_bucket() {
    let VeleroCli {
        cluster,
        client,
        ns,
        app,
        prefix,
        server: _server,
    } = VeleroCli::start(&[]).await;
    let excluded = cluster.namespace("excluded").await;
    let label = |value: &str| serde_json::json!({ "velero.io/exclude-from-backup": value });
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &app.name);
    for (name, value) in [("credentials", "true"), ("kept", "false")] {
        let secret = fixtures::object(serde_json::json!({
            "metadata": { "name": name, "labels": label(value) },
            "stringData": { "password": "s3cret" },
        }));
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .patch(
            &excluded.name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "metadata": { "labels": label("true") } })),
        )
        .await
        .unwrap();
    let inside = fixtures::object(serde_json::json!({ "metadata": { "name": "inside" } }));
    Api::<ConfigMap>::namespaced(client.clone(), &excluded.name)
        .create(&PostParams::default(), &inside)
        .await
        .unwrap();
    let both = format!("{},{}", app.name, excluded.name);
    velero_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &both,
            "--wait",
        ],
    );
    wait_completed(&client, &ns.name, "b1").await;

    let store = ark_storage::open(&cluster.s3_location(&prefix)).unwrap();
    let entries = ark_tests::tarball_paths(&store, "b1").await;
    let kept = format!("resources/secrets/namespaces/{}/kept.json", app.name);
    assert!(entries.contains(&kept), "{kept} not in {entries:#?}");
    let leaked: Vec<&String> = entries
        .iter()
        .filter(|e| e.ends_with("/credentials.json") || e.contains(&excluded.name))
        .collect();
    assert_eq!(leaked, Vec::<&String>::new());
    let logs = velero_ok(&cluster, &ns.name, &["backup", "logs", "b1"]);
    let said = format!(
        "namespace {} is labelled velero.io/exclude-from-backup=true: left out with all it holds",
        excluded.name
    );
    assert!(logs.contains(&said), "{logs}");
}

/// The regression behind Velero's fields lost on the way to the bucket: a Backup made with kubectl
/// carrying fields ark did not model keeps each in its `velero-backup.json` and in the Backup that
/// sync brings back once the object is deleted. Data movement's fields, once warnings ("not
/// honoured by ark yet"), are acted on now: no warning, and `describe` shows them as Velero does.
#[tokio::test]
async fn velero_s_spec_fields_survive_the_bucket_and_sync_and_data_movement_s_are_shown() {
    let VeleroCli {
        cluster,
        client,
        ns,
        app,
        prefix,
        server: _server,
    } = VeleroCli::start(&[]).await;
    // The pre hook below runs through kwok's exec, which this test must not expect another to
    // have allowed.
    allow_local_exec(&client).await;
    let mut spec = serde_json::json!({
        "snapshotMoveData": true,
        "datamover": "velero",
        "volumeGroupSnapshotLabelKey": "velero.io/volume-group",
    });
    // A field ark models and acts on, kept as it came too.
    spec["hooks"] = serde_json::json!({ "resources": [{
        "name": "dump",
        "includedNamespaces": [app.name],
        "pre": [{ "exec": {
            "container": "db", "command": ["sh", "-c", "true"], "onError": "Fail", "timeout": "30s",
        } }],
    }] });
    spec["includedNamespaces"] = serde_json::json!([app.name]);
    spec["csiSnapshotTimeout"] = serde_json::json!("5m0s");
    spec["uploaderConfig"] = serde_json::json!({ "parallelFilesUpload": 2 });
    spec["orderedResources"] = serde_json::json!({ "pods": format!("{}/db", app.name) });
    spec["itemOperationTimeout"] = serde_json::json!("1h0m0s");
    let raw = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        &ns.name,
        &kube::api::ApiResource::erase::<Backup>(&()),
    );
    let backup = |name: &str, spec: &serde_json::Value| {
        serde_json::from_value::<kube::api::DynamicObject>(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": { "name": name }, "spec": spec,
        }))
        .unwrap()
    };
    raw.create(&PostParams::default(), &backup("b1", &spec))
        .await
        .unwrap();
    let completed = wait_completed(&client, &ns.name, "b1").await;
    let store = ark_storage::open(&cluster.s3_location(&prefix)).unwrap();
    let uploaded: serde_json::Value = serde_json::from_slice(
        &store
            .get(&store.layout.backup_metadata("b1"))
            .await
            .unwrap(),
    )
    .unwrap();
    for (field, value) in spec.as_object().unwrap() {
        assert_eq!(
            &uploaded["spec"][field], value,
            "velero-backup.json: spec.{field}"
        );
    }
    // The namespace has no CSI claim: nothing to move, nothing to warn of.
    assert_eq!(completed.status.as_ref().unwrap().warnings, Some(0));
    let described = ark_ok(
        &cluster,
        &ns.name,
        &["backup", "describe", "b1", "--details"],
    );
    let words = described.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Snapshot Move Data: true Data Mover: velero"),
        "{described}"
    );
    assert!(!described.contains("not honoured"), "{described}");

    let backups = Api::<Backup>::namespaced(client.clone(), &ns.name);
    backups.delete("b1", &Default::default()).await.unwrap();
    wait_deleted(backups.clone(), &completed, WAIT).await;
    let synced = wait_completed(&client, &ns.name, "b1").await;
    assert_ne!(synced.metadata.uid, completed.metadata.uid);
    let synced = raw.get("b1").await.unwrap();
    for (field, value) in spec.as_object().unwrap() {
        assert_eq!(
            &synced.data["spec"][field], value,
            "synced Backup: spec.{field}"
        );
    }

    // A scoped filter, which ark once refused, is honoured as Velero honours it
    // (velero::filters compares the two servers' choices).
    let filtered = serde_json::json!({
        "includedNamespaces": [app.name], "excludedNamespaceScopedResources": ["configmaps"],
    });
    raw.create(&PostParams::default(), &backup("b2", &filtered))
        .await
        .unwrap();
    wait_completed(&client, &ns.name, "b2").await;
    let entries = ark_tests::tarball_paths(&store, "b2").await;
    let of = |gr: &str| {
        let folder = format!("resources/{gr}/namespaces/{}/", app.name);
        entries.iter().filter(|e| e.starts_with(&folder)).count()
    };
    assert_eq!(of("configmaps"), 0, "{entries:#?}");
    assert!(of("pods") > 0, "{entries:#?}");
}

/// The regression behind locations made by `velero install` being Unavailable under ark: such a
/// location names no Secret, and the server's pod has its credentials as a file that
/// `AWS_SHARED_CREDENTIALS_FILE` names (`/credentials/cloud`). ark reads that file as Velero's AWS
/// plugin does; a file that gives the keys only in part is refused by name.
#[tokio::test]
async fn a_location_without_a_secret_uses_the_credentials_file_the_environment_names() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let app = application(&cluster, &client).await;
    let files = tempfile::tempdir().unwrap();
    let location = cluster.s3_location(&unique_name("interop"));
    let whole = files.path().join("cloud");
    std::fs::write(&whole, location.credentials.as_deref().unwrap()).unwrap();
    let partial = files.path().join("partial");
    std::fs::write(&partial, "[default]\naws_access_key_id = only-the-id\n").unwrap();
    // The flags of `velero install`'s location: provider, bucket, prefix and config, no Secret.
    let flags = fixtures::location_flags_without_credential(&location);

    let mut namespaces = Vec::new();
    let mut servers = Vec::new();
    for file in [&whole, &partial] {
        let ns = cluster.namespace("ark").await;
        let mut create = vec!["backup-location", "create", "default", "--default"];
        create.extend(flags.iter().map(String::as_str));
        velero_ok(&cluster, &ns.name, &create);
        servers.push(ArkServer::start_with_env(
            ARK,
            &cluster,
            &ns.name,
            &[],
            &[("AWS_SHARED_CREDENTIALS_FILE", file.to_str().unwrap())],
        ));
        namespaces.push(ns);
    }
    let (with_file, with_part) = (&namespaces[0].name, &namespaces[1].name);
    ark_tests::location_available(&client, with_file, "default", WAIT).await;
    velero_ok(
        &cluster,
        with_file,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    wait_completed(&client, with_file, "b1").await;

    let unavailable = wait_for(
        Api::<BackupStorageLocation>::namespaced(client.clone(), with_part),
        "default",
        |l: Option<&BackupStorageLocation>| {
            l.and_then(|l| l.status.as_ref()).and_then(|s| s.phase)
                == Some(BackupStorageLocationPhase::Unavailable)
        },
        WAIT,
    )
    .await
    .unwrap();
    let message = unavailable.status.unwrap().message.unwrap_or_default();
    assert!(
        message.contains("profile [default] needs aws_access_key_id and aws_secret_access_key"),
        "{message}"
    );
}

/// Velero's CLI names a restore's resource modifiers its own way (`resourceModifier: {kind:
/// configmap, name}`); ark's server reads that ConfigMap and applies its rules.
#[tokio::test]
async fn velero_s_cli_restore_with_a_resource_modifier_configmap_is_modified_by_ark_s_server() {
    let VeleroCli {
        cluster,
        client,
        ns,
        app,
        prefix: _,
        server: _server,
    } = VeleroCli::start(&[]).await;
    velero_ok(
        &cluster,
        &ns.name,
        &["backup", "create", "app", "--include-namespaces", &app.name],
    );
    wait_completed(&client, &ns.name, "app").await;
    let rules = "version: v1\nresourceModifierRules:\n- conditions: { groupResource: configmaps, resourceNameRegex: \"^settings$\" }\n  mergePatches:\n  - patchData: '{\"data\": {\"color\": \"green\"}}'\n";
    Api::<ConfigMap>::namespaced(client.clone(), &ns.name)
        .create(
            &PostParams::default(),
            &fixtures::object(serde_json::json!({ "metadata": { "name": "rules" }, "data": { "rules.yaml": rules } })),
        )
        .await
        .unwrap();
    let copy = format!("{}-modified", app.name);
    let _copy = cluster.delete_on_drop::<k8s_openapi::api::core::v1::Namespace>(&copy);
    let mapping = format!("{}:{copy}", app.name);
    let out = velero_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "--from-backup",
            "app",
            "--namespace-mappings",
            &mapping,
            "--resource-modifier-configmap",
            "rules",
        ],
    );
    let restore = restored(&client, &ns.name, &submitted(&out)).await;
    assert_eq!(restore.phase(), RestorePhase::Completed, "{restore:#?}");
    let reference = restore.spec.resource_modifier.clone().unwrap();
    assert_eq!(
        (reference.kind.as_str(), reference.name.as_str()),
        ("configmap", "rules")
    );
    let settings = Api::<ConfigMap>::namespaced(client.clone(), &copy)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(settings.data.unwrap()["color"], "green");
    let original = Api::<ConfigMap>::namespaced(client.clone(), &app.name)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(
        original.data.unwrap()["color"],
        "blue",
        "the backed-up namespace is untouched"
    );
}

/// A Restore Velero's server ran carries Velero's finalizer, which only a server removes. Once ark
/// has taken over the namespace, deleting it (Velero's CLI) removes its files from the bucket and
/// then the finalizer, as Velero's server does: it does not stay Terminating.
#[tokio::test]
async fn a_restore_velero_ran_is_deleted_under_ark_s_server_with_its_files() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    let ns = cluster.namespace("velero").await;
    let app = application(&cluster, &client).await;
    let prefix = unique_name("interop");
    velero_location(&cluster, &client, &ns.name, &prefix).await;
    let copy = format!("{}-copy", app.name);
    let _copy = cluster.delete_on_drop::<k8s_openapi::api::core::v1::Namespace>(&copy);
    let velero = VeleroServer::start(&cluster, &ns.name).await;
    // Velero refuses a backup to a location it has not found Available yet.
    ark_tests::location_available(&client, &ns.name, "default", WAIT).await;
    velero_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
        ],
    );
    // `--wait` ends at Finalizing: the tarball is uploaded when the backup is Completed.
    wait_completed(&client, &ns.name, "b1").await;
    let mapping = format!("{}:{copy}", app.name);
    velero_ok(
        &cluster,
        &ns.name,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &mapping,
            "--wait",
        ],
    );
    drop(velero);
    velero::stand_down(&client, &ns.name).await;
    let restores: Api<Restore> = Api::namespaced(client.clone(), &ns.name);
    let restore = restores.get("r1").await.unwrap();
    assert!(
        restore
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "restores.velero.io/external-resources-finalizer"),
        "{:?}",
        restore.metadata.finalizers
    );
    let store = ark_storage::open(&cluster.s3_location(&prefix)).unwrap();
    let files = || async {
        store
            .restore_keys("r1")
            .await
            .unwrap()
            .into_iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
    };
    assert!(!files().await.is_empty(), "{:#?}", restore.status);

    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    ark_tests::location_available(&client, &ns.name, "default", WAIT).await;
    velero_ok(
        &cluster,
        &ns.name,
        &["restore", "delete", "r1", "--confirm"],
    );
    wait_deleted(restores, &restore, WAIT).await;
    assert_eq!(files().await, Vec::<String>::new());
}
