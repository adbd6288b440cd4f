//! File-system backups of pod volumes on the real node: ark's server and node agent installed from
//! ark's image (`ark install --use-node-agent`), the agent reading a real pod's volume where the
//! real kubelet mounts it, into the kopia repository Velero keeps in the bucket, which the kopia
//! CLI then reads.

use crate::common;

use std::time::Duration;

use ark_api::{BackupRepository, PodVolumeBackup, PodVolumePhase};
use ark_tests::kopia::{Kopia, RestoredBy, assert_same_tree};
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::node_agent::{
    Options, WAIT, backup_ended, big_pod, install, install_behind_a_pausable_bucket, install_with,
    is_ready, keep, kubectl, lose, only_pvb, only_pvr, reading_pvb, request_ended, writer_pod,
};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_agent_backs_a_pod_volume_up_and_restores_it_before_the_pod_starts() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("volumes").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &writer_pod(&cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let pod = pods.get("writer").await.unwrap();
    let uid = pod.metadata.uid.clone().unwrap();
    let volume = cluster
        .real_node_pods
        .as_ref()
        .unwrap()
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/data");

    let created = ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    assert!(created.contains("Completed"), "{created}");

    // One PodVolumeBackup, as Velero makes it, ended by the agent on the real node.
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels("velero.io/backup-name=b1"))
        .await
        .unwrap()
        .items;
    let [pvb] = pvbs.as_slice() else {
        panic!("one pod volume backup (data), not {pvbs:#?}")
    };
    assert!(pvb.metadata.name.as_ref().unwrap().starts_with("b1-"));
    assert_eq!(pvb.spec.node, "127.0.0.1");
    assert_eq!(pvb.spec.volume, "data");
    assert_eq!(pvb.spec.pod.uid, uid);
    assert_eq!(pvb.spec.uploader_type.as_deref(), Some("kopia"));
    assert_eq!(pvb.spec.backup_storage_location, "default");
    assert_eq!(pvb.spec.tags["ns"], app.name);
    let owner = &pvb.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Backup", "b1"));
    let status = pvb.status.clone().unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    let snapshot_id = status.snapshot_id.clone().unwrap();
    // Progress counts files' bytes (a symlink's target is no file's).
    let bytes = (ark_tests::kopia::tree_bytes(&volume) - "hello.txt".len() as u64) as i64;
    let progress = status.progress.clone().unwrap();
    assert_eq!(
        (progress.total_bytes, progress.bytes_done),
        (Some(bytes), Some(bytes))
    );
    assert!(status.incremental_bytes.unwrap() > 3_000_000, "{status:#?}");

    // The agent's metrics, under Velero's node agent names and labels (its port of the host's network).
    let scraped = ark_tests::scrape(&installed.agent_metrics.to_string(), "/metrics");
    let pvb_name = pvb.metadata.name.as_deref().unwrap();
    let labels = format!(
        "node=\"127.0.0.1\",operation=\"{pvb_name}-default-{}-kopia-backup\",\
         backupName=\"{ns}/b1\",pod_volume_backup=\"{pvb_name}\"",
        app.name
    );
    for line in [
        "podVolume_pod_volume_backup_enqueue_count{node=\"127.0.0.1\"} 1\n".to_string(),
        "podVolume_pod_volume_backup_dequeue_count{node=\"127.0.0.1\"} 1\n".to_string(),
        format!("podVolume_pod_volume_operation_latency_seconds_count{{{labels}}} 1\n"),
    ] {
        assert!(scraped.contains(&line), "{line} not in:\n{scraped}");
    }

    // The repository Velero keeps for the namespace, Ready, and the backup's file of its PVBs.
    let repository = Api::<BackupRepository>::namespaced(client.clone(), ns)
        .get(&format!("{}-default-kopia", app.name))
        .await
        .unwrap();
    assert_eq!(
        repository.status.unwrap().phase,
        Some(ark_api::BackupRepositoryPhase::Ready)
    );
    let store = ark_storage::open(&cluster.s3_location(&installed.prefix)).unwrap();
    let listed: Vec<PodVolumeBackup> = serde_json::from_slice(&ark_tests::gunzip(
        &store
            .get(&store.layout.backup_pod_volume_backups("b1"))
            .await
            .unwrap(),
    ))
    .unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|p| p.status.as_ref().unwrap().snapshot_id.clone())
            .collect::<Vec<_>>(),
        [Some(snapshot_id.clone())]
    );

    // kopia lists the snapshot under Velero's source and restores the volume's bytes.
    let kopia = Kopia::new(&installed.password);
    kopia.connect(
        &cluster,
        &format!("{}/kopia/{}", installed.prefix, app.name),
    );
    let snapshots = kopia.snapshots();
    assert_eq!(snapshots.len(), 1, "{snapshots:#?}");
    assert_eq!(snapshots[0]["id"], snapshot_id.as_str());
    assert_eq!(
        snapshots[0]["source"]["path"],
        format!("snapshot-pod-volume/kopia/{}/writer/data", app.name)
    );
    let restored = tempfile::tempdir().unwrap();
    let target = restored.path().join("data");
    kopia.ok(&[
        "snapshot",
        "restore",
        &snapshot_id,
        target.to_str().unwrap(),
    ]);
    assert_same_tree(&target, &volume, RestoredBy::Kopia);

    // The volume's data without a cluster restore: the whole volume, one file, and a volume the
    // backup does not hold, named with what it does.
    let downloaded = restored.path().join("by-ark");
    let pod_arg = format!("{}/writer", app.name);
    let said = ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "download-volume",
            "b1",
            "--pod",
            &pod_arg,
            "--volume",
            "data",
            "--to",
            downloaded.to_str().unwrap(),
        ],
    );
    assert!(
        said.starts_with("Restored 4 files (2.9 MiB), 3 directories and 1 symlinks of snapshot "),
        "{said}"
    );
    assert_same_tree(&downloaded, &volume, RestoredBy::Ark);
    let one = restored.path().join("random.bin");
    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "download-volume",
            "b1",
            "--pod",
            &pod_arg,
            "--volume",
            "data",
            "--path",
            "dir/random.bin",
            "--to",
            one.to_str().unwrap(),
        ],
    );
    assert_eq!(
        std::fs::read(&one).unwrap(),
        std::fs::read(volume.join("dir/random.bin")).unwrap()
    );
    let unknown = common::ark(
        Some(&cluster),
        &[
            "backup",
            "download-volume",
            "b1",
            "--pod",
            &pod_arg,
            "--volume",
            "scratch",
            "--to",
            "/nonexistent",
            "-n",
            ns,
        ],
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        common::text(&unknown.stderr).trim(),
        format!(
            "error: backup \"b1\" holds no data of volume \"scratch\" of pod {pod_arg}; it holds: {pod_arg}: data"
        )
    );

    // A second backup of the unchanged volume starts from the first: nothing is read again.
    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b2",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    let second = Api::<PodVolumeBackup>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels("velero.io/backup-name=b2"))
        .await
        .unwrap()
        .items;
    let status = second[0].status.clone().unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    assert!(
        status.incremental_bytes.unwrap() < 10_000,
        "an unchanged volume adds its directory objects and manifest only: {status:#?}"
    );
    let snapshots = kopia.snapshots();
    let stats = &snapshots.last().unwrap()["stats"];
    assert_eq!(stats["nonCachedFiles"], 0, "{stats}");

    // With every volume backed up by default, the unnamed `scratch` is taken too.
    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b3",
            "--include-namespaces",
            &app.name,
            "--default-volumes-to-fs-backup",
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    let mut volumes: Vec<String> = Api::<PodVolumeBackup>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels("velero.io/backup-name=b3"))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| p.spec.volume)
        .collect();
    volumes.sort();
    assert_eq!(volumes, ["data", "scratch"]);

    // The namespace is lost; the restore brings the volume's data back before the pod's own
    // container starts (which would otherwise write a new tree: its random bytes would differ).
    let kept = tempfile::tempdir().unwrap();
    let original = keep(&volume, &kept);
    lose(&cluster, &app.name).await;
    let restored = ark_ok(
        &cluster,
        ns,
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b2",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(restored.contains("Completed"), "{restored}");
    let pod = pods.get("writer").await.unwrap();
    let init = pod.spec.as_ref().unwrap().init_containers.clone().unwrap();
    assert_eq!(init[0].name, "restore-wait");
    assert_eq!(init[0].args.as_ref().unwrap()[0], "restore-helper");
    let pvrs = Api::<ark_api::PodVolumeRestore>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels("velero.io/restore-name=r1"))
        .await
        .unwrap()
        .items;
    let [pvr] = pvrs.as_slice() else {
        panic!("one pod volume restore, not {pvrs:#?}")
    };
    let status = pvr.status.clone().unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    assert_eq!(
        pvr.spec.snapshot_id,
        second[0]
            .status
            .as_ref()
            .unwrap()
            .snapshot_id
            .clone()
            .unwrap()
    );
    assert_eq!(pvr.spec.source_namespace, app.name);
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let new_uid = pods.get("writer").await.unwrap().metadata.uid.unwrap();
    let restored_volume = cluster
        .real_node_pods
        .as_ref()
        .unwrap()
        .join(&new_uid)
        .join("volumes/kubernetes.io~empty-dir/data");
    // The helper removed its marks once every volume had its data; the rest is the backup's.
    assert!(!restored_volume.join(".velero").exists());
    assert_same_tree(&restored_volume, &original, RestoredBy::Ark);

    // The backup verifies whole, every byte of its volume data read; a pack overwritten in the
    // bucket is named with the pod's volume, and once the pack is back it verifies again.
    let verify = |data: bool| {
        let mut args = vec!["backup", "verify", "b2", "-n", ns];
        args.extend(data.then_some("--data"));
        common::ark(Some(&cluster), &args)
    };
    let sampled = verify(false);
    let stdout = common::text(&sampled.stdout);
    assert_eq!(sampled.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "  Volume data:    1 snapshots in 1 repositories: 7 distinct files and directories, "
        ),
        "{stdout}"
    );
    let whole = verify(true);
    let stdout = common::text(&whole.stdout);
    assert_eq!(whole.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "  Volume data:    1 snapshots in 1 repositories: 7 distinct files and directories, every file \
             read (2.9 MiB read)\n  CSI snapshots:  none recorded\nNo defects.\n"
        ),
        "{stdout}"
    );
    // The data pack: the largest of the repository's.
    let root = store.layout.kopia_repository(&app.name);
    let mut packs = Vec::new();
    for key in store.keys_under(&root).await.unwrap() {
        if key.filename().is_some_and(|f| f.starts_with('p')) {
            let bytes = store.get(&key).await.unwrap();
            packs.push((key, bytes));
        }
    }
    let largest = packs.into_iter().max_by_key(|(_, bytes)| bytes.len());
    let (pack, bytes) = largest.unwrap();
    store
        .put(&pack, vec![0x5a; bytes.len()].into())
        .await
        .unwrap();
    let damaged = verify(true);
    let stdout = common::text(&damaged.stdout);
    assert_eq!(damaged.status.code(), Some(1), "{stdout}");
    let named = format!(
        "  - volume data of pod {}/writer: {}:/",
        app.name, pvr.spec.snapshot_id
    );
    assert!(stdout.contains(&named), "{stdout}");
    assert!(stdout.contains("does not decrypt under its ID"), "{stdout}");
    store.put(&pack, bytes).await.unwrap();
    assert_eq!(verify(true).status.code(), Some(0));

    // Deleting both backups forgets their snapshots; maintenance then frees the packs nothing
    // references any more (`--safety none` at once, as nothing else writes here; the server's own
    // runs keep kopia's margins and free them a day later).
    let (store, _) = ark_tests::kopia::repository_store(&cluster, &installed.prefix);
    let root = ark_storage::Path::from(format!("{}/kopia/{}", installed.prefix, app.name));
    let before = ark_tests::kopia::blob_counts(&store, &root).await[&'p'];
    for backup in ["b1", "b2", "b3"] {
        ark_ok(
            &cluster,
            ns,
            &[
                "backup",
                "delete",
                backup,
                "--confirm",
                "--wait",
                "--timeout",
                "2m",
            ],
        );
    }
    let listed = ark_ok(
        &cluster,
        ns,
        &[
            "repository",
            "snapshots",
            "--volume-namespace",
            &app.name,
            "-o",
            "json",
        ],
    );
    assert_eq!(listed.trim(), "[]", "every snapshot is forgotten");
    ark_ok(
        &cluster,
        ns,
        &[
            "repository",
            "maintain",
            "--volume-namespace",
            &app.name,
            "--safety",
            "none",
        ],
    );
    let after = ark_tests::kopia::blob_counts(&store, &root)
        .await
        .get(&'p')
        .copied()
        .unwrap_or_default();
    assert!(
        after.1 + 3_000_000 < before.1,
        "the volume's data packs go: {before:?} bytes before, {after:?} after"
    );
}

/// The restore-hooks design's case, as the demo runs it (examples/shop.yaml and
/// examples/hooks/demo-database.yaml, in a namespace of the test's own): a schedule's backup runs
/// the database pod's pre hook, which writes `pg_dump` into its volume `dump`; the agent backs the
/// volume up, then the post hook runs. Rows written after the backup are lost with the
/// namespace; the restore brings the volume back before anything starts, an init container loads
/// the dump into a fresh data directory before PostgreSQL starts, and an exec hook counts the
/// rows: those of before the backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_dumped_by_a_backup_hook_is_back_before_it_starts() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("shop").await;
    let example = include_str!("../../../../../examples/shop.yaml");
    let db: Pod = example
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<serde_json::Value>(doc).unwrap())
        .find(|doc| doc["kind"] == "Pod")
        .map(|mut doc| {
            doc["metadata"]["namespace"] = serde_json::json!(app.name);
            serde_json::from_value(doc).unwrap()
        })
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &db).await.unwrap();
    wait_for(pods.clone(), "db", is_ready(), WAIT)
        .await
        .unwrap();
    let psql = |sql: &str| {
        kubectl(
            &cluster,
            &[
                "-n", &app.name, "exec", "db", "--", "psql", "-q", "-h", "/tmp", "-U", "postgres",
                "-d", "shop", "-Atc", sql,
            ],
        )
    };
    kubectl(
        &cluster,
        &[
            "-n",
            &app.name,
            "exec",
            "db",
            "--",
            "psql",
            "-q",
            "-h",
            "/tmp",
            "-U",
            "postgres",
            "-c",
            "create database shop",
        ],
    );
    psql(
        "create table customers (id int primary key, name text); \
         create table orders (id int primary key, customer int references customers, item text); \
         insert into customers values (1, 'ada'), (2, 'grace'); \
         insert into orders values (1, 1, 'tea'), (2, 1, 'scones'), (3, 2, 'coffee');",
    );

    ark_ok(
        &cluster,
        ns,
        &[
            "schedule",
            "create",
            "nightly",
            "--schedule",
            "0 3 * * *",
            "--include-namespaces",
            &app.name,
        ],
    );
    let backed_up = ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "nightly-1",
            "--from-schedule",
            "nightly",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(backed_up.contains("Completed"), "{backed_up}");
    psql("insert into orders values (4, 2, 'cake');");
    assert_eq!(psql("select count(*) from orders").trim(), "4");
    let described = ark_ok(
        &cluster,
        ns,
        &["backup", "describe", "nightly-1", "--details"],
    );
    assert!(
        described.contains("Pod Volume Backups - kopia:\n  Completed:\n"),
        "{described}"
    );
    assert!(
        described.contains(&format!("{}/db: dump (", app.name)),
        "{described}"
    );
    // The post hook ran after the volume was read, and saw the dump the pre hook wrote.
    assert!(described.contains("post exec in postgres"), "{described}");
    assert!(described.contains("dumped "), "{described}");

    lose(&cluster, &app.name).await;

    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("hooks.yaml");
    let example_hooks = include_str!("../../../../../examples/hooks/demo-database.yaml");
    std::fs::write(
        &hooks,
        example_hooks.replace(
            "includedNamespaces: [shop]",
            &format!("includedNamespaces: [{}]", app.name),
        ),
    )
    .unwrap();
    let restored = ark_ok(
        &cluster,
        ns,
        &[
            "restore",
            "create",
            "back",
            "--from-backup",
            "nightly-1",
            "--hooks-file",
            hooks.to_str().unwrap(),
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(restored.contains("Completed"), "{restored}");
    let described = ark_ok(&cluster, ns, &["restore", "describe", "back", "--details"]);
    assert!(
        described.contains("Pod Volume Restores - kopia:\n  Completed:\n"),
        "{described}"
    );
    assert!(
        described.contains(&format!("{}/db: dump (", app.name)),
        "{described}"
    );
    // The rows of before the backup: three orders, not four.
    assert!(described.contains("3 orders, 2 customers"), "{described}");
    assert_eq!(psql("select count(*) from orders").trim(), "3");
    // In order: the volume's data, then the dump loaded, then the database.
    let pod = pods.get("db").await.unwrap();
    let init: Vec<String> = pod
        .spec
        .unwrap()
        .init_containers
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(init, ["restore-wait", "restore-data"]);
    let loaded = kubectl(
        &cluster,
        &["-n", &app.name, "logs", "db", "-c", "restore-data"],
    );
    assert_eq!(loaded.trim(), "restored the shop database from its dump");
}

/// A pod whose volume is named for backup runs on a node with no node agent (a kwok node): the
/// backup says so, as an error naming the node, at once; it never waits for an agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_on_a_node_without_a_node_agent_is_an_error_not_a_wait() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("agentless").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ark_tests::ArkServer::start(common::ARK, &cluster, &ns.name);
    let mut pod = ark_tests::kwok_pod("app", &["app"]);
    pod.metadata.annotations = Some(
        [(
            "backup.velero.io/backup-volumes".to_string(),
            "data".to_string(),
        )]
        .into(),
    );
    let spec = pod.spec.as_mut().unwrap();
    spec.volumes = Some(vec![
        serde_json::from_value(serde_json::json!({ "name": "data", "emptyDir": {} })).unwrap(),
    ]);
    spec.containers[0].volume_mounts = Some(vec![
        serde_json::from_value(serde_json::json!({ "name": "data", "mountPath": "/data" }))
            .unwrap(),
    ]);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods.clone(), "app", ark_tests::is_pod_running(), WAIT)
        .await
        .unwrap();
    let node = pods
        .get("app")
        .await
        .unwrap()
        .spec
        .unwrap()
        .node_name
        .unwrap();
    let output = common::ark(
        Some(&cluster),
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "1m",
            "-n",
            &ns.name,
        ],
    );
    let printed = common::text(&output.stdout);
    assert!(printed.contains("PartiallyFailed"), "{printed}");
    let logs = ark_ok(&cluster, &ns.name, &["backup", "logs", "b1"]);
    assert!(
        logs.contains(&format!(
            "pod {}/app: volumes data are not backed up: no node agent runs on node {node}",
            app.name
        )),
        "{logs}"
    );
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(pvbs.items.is_empty(), "{pvbs:#?}");
}

/// The node agent killed while it uploads a volume: the agent the kubelet starts in its place
/// fails the request it finds InProgress (nobody carries it on), the backup ends PartiallyFailed
/// at once rather than at its timeout, and the next backup of the volume is whole: kopia restores
/// it byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_agent_killed_mid_upload_fails_its_backup_and_the_next_is_whole() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("killed").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &big_pod(&cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "big", is_ready(), WAIT)
        .await
        .unwrap();
    let uid = pods.get("big").await.unwrap().metadata.uid.unwrap();

    ark_ok(
        &cluster,
        ns,
        &["backup", "create", "b1", "--include-namespaces", &app.name],
    );
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns);
    let in_progress = |pvb: Option<&PodVolumeBackup>| {
        pvb.and_then(|p| p.status.as_ref()).and_then(|s| s.phase)
            == Some(PodVolumePhase::InProgress)
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    let name = loop {
        let listed = pvbs
            .list(&ListParams::default().labels("velero.io/backup-name=b1"))
            .await
            .unwrap()
            .items;
        if let Some(pvb) = listed.iter().find(|p| in_progress(Some(p))) {
            break pvb.metadata.name.clone().unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no InProgress pod volume backup: {listed:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let pid = common::ark_pid("node-agent", ns).expect("the node agent's process on this host");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());

    let pvb = wait_for(pvbs.clone(), &name, request_ended(), WAIT)
        .await
        .unwrap();
    let status = pvb.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
    assert_eq!(
        status.message.as_deref(),
        Some("the node agent on 127.0.0.1 stopped while the volume was backed up")
    );
    let backups: Api<ark_api::Backup> = Api::namespaced(client.clone(), ns);
    let b1 = wait_for(backups.clone(), "b1", backup_ended(), WAIT)
        .await
        .unwrap();
    assert_eq!(
        b1.status.unwrap().phase,
        Some(ark_api::BackupPhase::PartiallyFailed)
    );

    let second = ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b2",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert!(second.contains("Completed"), "{second}");
    let snapshot_id = pvbs
        .list(&ListParams::default().labels("velero.io/backup-name=b2"))
        .await
        .unwrap()
        .items[0]
        .status
        .clone()
        .unwrap()
        .snapshot_id
        .unwrap();
    let kopia = Kopia::new(&installed.password);
    kopia.connect(
        &cluster,
        &format!("{}/kopia/{}", installed.prefix, app.name),
    );
    kopia.ok(&["snapshot", "verify", "--verify-files-percent=100"]);
    kopia.ok(&["content", "verify", "--full"]);
    let restored = tempfile::tempdir().unwrap();
    let target = restored.path().join("data");
    kopia.ok(&[
        "snapshot",
        "restore",
        &snapshot_id,
        target.to_str().unwrap(),
    ]);
    let volume = cluster
        .real_node_pods
        .as_ref()
        .unwrap()
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/data");
    assert_same_tree(&target, &volume, RestoredBy::Kopia);
}

/// The API server gone from the agent while it uploads a volume: the snapshot is taken, but its
/// final status cannot be written then. The agent writes it once the API server is back, and the
/// backup waiting on it completes; before, the request stayed InProgress (the failed write was
/// never tried again) and the backup waited out its 4 h timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_volume_backup_s_end_is_written_once_the_api_server_is_back() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let api = ark_tests::proxy::PausableProxy::start(cluster.api_server_address()).await;
    let options = Options {
        api_server: Some(api.address),
        ..Options::default()
    };
    let installed = install_with(&cluster, options).await;
    let ns = &installed.ns;
    let app = cluster.namespace("api-gone").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    let mut small = writer_pod(&cluster);
    small.metadata.labels = Some([("app".to_string(), "small".to_string())].into());
    for pod in [small, big_pod(&cluster)] {
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    for pod in ["writer", "big"] {
        wait_for(pods.clone(), pod, is_ready(), WAIT).await.unwrap();
    }
    // A first backup (of the small pod) opens the namespace's repository in the agent, which keeps
    // it: the next one needs the API server only for its claim, its volume's path and its end.
    let first = ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b0",
            "--include-namespaces",
            &app.name,
            "-l",
            "app=small",
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    assert!(first.contains("Completed"), "{first}");

    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "-l",
            "app=big",
        ],
    );
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns);
    let name = reading_pvb(&client, ns, "b1").await;
    // The agent now uploads 200 MB, talking to S3 alone: the API server goes meanwhile, and
    // comes back only once the snapshot is in the repository and the agent has had time to try
    // to write its end.
    api.take_down();
    let (store, _) = ark_tests::kopia::repository_store(&cluster, &installed.prefix);
    let root = ark_storage::Path::from(format!("{}/kopia/{}", installed.prefix, app.name));
    let repository = ark_kopia::Repository::open(store, root, &installed.password)
        .await
        .unwrap();
    // 200 MB through the agent takes about 15 s alone, and beside the other groups of the test
    // command (Velero's node agent uploading, the fuzz build) over three minutes once: the wait
    // is for an upload that stops adding to the repository, not for a slow one.
    let started = tokio::time::Instant::now();
    let (mut stored, mut grown) = (0, started);
    loop {
        repository.contents().refresh().await.unwrap();
        let snapshots = repository.snapshots().await.unwrap();
        if snapshots
            .iter()
            .any(|s| s.manifest.source.path.ends_with("/big/data"))
        {
            break;
        }
        let now = tokio::time::Instant::now();
        let blobs = blobs_of(&cluster, &installed.prefix, &app.name).await;
        let bytes: u64 = blobs.values().map(|(size, _)| size).sum();
        if bytes > stored {
            (stored, grown) = (bytes, now);
        }
        assert!(
            now - grown < UPLOAD_STALLED,
            "the upload stopped adding to the repository while the API server was gone: \
             {stored} bytes in it for {:?}",
            now - grown
        );
        assert!(
            now - started < BIG_UPLOAD_WAIT,
            "the volume's snapshot never reached the repository ({stored} bytes in it after {:?})",
            now - started
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let meanwhile = pvbs.get(&name).await.unwrap();
    assert_eq!(
        meanwhile.status.unwrap().phase,
        Some(PodVolumePhase::InProgress),
        "its end cannot have been written while the API server was gone"
    );
    api.resume();
    let pvb = wait_for(
        pvbs.clone(),
        &name,
        request_ended(),
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let status = pvb.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Completed), "{status:#?}");
    assert!(status.snapshot_id.is_some());
    let backups: Api<ark_api::Backup> = Api::namespaced(client.clone(), ns);
    let b1 = wait_for(backups, "b1", backup_ended(), WAIT).await.unwrap();
    assert_eq!(
        b1.status.unwrap().phase,
        Some(ark_api::BackupPhase::Completed)
    );
}

/// How long the big pod's 200 MB may take to reach the repository, and how long its upload may
/// add nothing to it (a pack is at most 20 MB: a stalled upload is a failure, a slow one is not).
const BIG_UPLOAD_WAIT: Duration = Duration::from_secs(600);
const UPLOAD_STALLED: Duration = Duration::from_secs(90);

/// The keys of the repository of namespace `app` at `prefix`, with their sizes and entity tags.
async fn blobs_of(
    cluster: &Cluster,
    prefix: &str,
    app: &str,
) -> std::collections::BTreeMap<String, (u64, Option<String>)> {
    use futures::TryStreamExt as _;
    let (store, _) = ark_tests::kopia::repository_store(cluster, prefix);
    let root = ark_storage::Path::from(format!("{prefix}/kopia/{app}"));
    let listed: Vec<_> = store.list(Some(&root)).try_collect().await.unwrap();
    listed
        .into_iter()
        .map(|meta| (meta.location.to_string(), (meta.size, meta.e_tag)))
        .collect()
}

/// A volume's repository made by someone else with another password: the request fails naming
/// the repository and why, and nothing in it is changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_with_another_password_fails_the_request_and_is_left_untouched() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("password").await;
    let root = format!("{}/kopia/{}", installed.prefix, app.name);
    Kopia::new("not-velero-s-password").create(&cluster, &root);
    let before = blobs_of(&cluster, &installed.prefix, &app.name).await;
    assert!(!before.is_empty());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &writer_pod(&cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();

    ark_ok(
        &cluster,
        ns,
        &["backup", "create", "b1", "--include-namespaces", &app.name],
    );
    let backups: Api<ark_api::Backup> = Api::namespaced(client.clone(), ns);
    let b1 = wait_for(backups, "b1", backup_ended(), WAIT).await.unwrap();
    assert_eq!(
        b1.status.unwrap().phase,
        Some(ark_api::BackupPhase::PartiallyFailed)
    );
    let status = only_pvb(&client, ns, "b1").await.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
    assert_eq!(
        status.message.unwrap(),
        format!(
            "the repository of namespace {:?} in location \"default\" ({root}) does not open with \
             the password in secret \"velero-repo-credentials\": it was made with another (Velero \
             makes its repositories with static-passw0rd unless told otherwise); put that one in \
             the Secret",
            app.name
        )
    );
    assert_eq!(
        blobs_of(&cluster, &installed.prefix, &app.name).await,
        before
    );
}

/// A restore into a volume too small for the data (a 1 MiB tmpfs, by a resource modifier): the
/// request fails saying so, the restore ends PartiallyFailed rather than waiting, and the pod stays
/// in `restore-wait`, as Velero's does, rather than starting without its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_into_a_full_volume_fails_its_request_and_holds_the_pod() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("full").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &writer_pod(&cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    lose(&cluster, &app.name).await;

    let rules = "version: v1\nresourceModifierRules:\n- conditions:\n    groupResource: pods\n    \
        resourceNameRegex: \"^writer$\"\n  patches:\n  - operation: replace\n    path: \"/spec/volumes/0\"\n    \
        value: '{\"name\": \"data\", \"emptyDir\": {\"medium\": \"Memory\", \"sizeLimit\": \"1Mi\"}}'\n";
    kubectl(
        &cluster,
        &[
            "create",
            "configmap",
            "small-volume",
            "-n",
            ns,
            &format!("--from-literal=rules.yaml={rules}"),
        ],
    );
    let out = common::ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--resource-modifier-configmap",
            "small-volume",
            "--wait",
            "--timeout",
            "3m",
            "-n",
            ns,
        ],
    );
    let said = common::text(&out.stdout);
    assert!(said.contains("PartiallyFailed"), "{said}");
    let status = only_pvr(&client, ns, "r1").await.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
    let message = status.message.unwrap();
    assert!(message.contains("No space left on device"), "{message}");
    let pod = pods.get("writer").await.unwrap();
    let volume = &pod.spec.as_ref().unwrap().volumes.as_ref().unwrap()[0];
    assert_eq!(
        volume.empty_dir.as_ref().unwrap().medium.as_deref(),
        Some("Memory")
    );
    let init = pod.status.unwrap().init_container_statuses.unwrap();
    assert_eq!(init[0].name, "restore-wait");
    assert!(
        init[0].state.as_ref().unwrap().running.is_some(),
        "the pod waits for data that never came: {init:#?}"
    );
}

/// The pod deleted while the agent reads its volume (40 files of 5 MB): the kubelet removes the
/// volume under the agent, whose request fails naming the file it could not read; no snapshot of
/// a part of the volume is kept, and the repository stays whole. The read is held while the
/// volume goes: the bucket stops answering once the first pack of the volume's data is on its
/// way, and the agent reads no more than the packs it keeps in memory (3 of 20 MB) beyond it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_removed_while_it_is_read_fails_its_request_naming_the_file() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let (s3, installed) = install_behind_a_pausable_bucket(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("vanishing").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    let script = "for i in $(seq 1 40); do head -c 5000000 /dev/urandom > /data/f$i; done \
        && touch /data/.done && exec sleep 3600";
    let pod = cluster.on_real_node(serde_json::json!({
        "metadata": {
            "name": "many",
            "annotations": { "backup.velero.io/backup-volumes": "data" },
        },
        "spec": {
            "containers": [{
                "name": "many", "image": ark_tests::BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/data/.done"] }, "periodSeconds": 1 },
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods.clone(), "many", is_ready(), WAIT)
        .await
        .unwrap();

    ark_ok(
        &cluster,
        ns,
        &["backup", "create", "b1", "--include-namespaces", &app.name],
    );
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns);
    let name = reading_pvb(&client, ns, "b1").await;
    let uid = pods.get("many").await.unwrap().metadata.uid.unwrap();
    let volume = (cluster.real_node_pods.as_ref().unwrap())
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/data");
    s3.wait_for_request(&format!("/kopia/{}/p", app.name), WAIT)
        .await;
    s3.pause();
    pods.delete("many", &kube::api::DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while volume.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the kubelet did not remove {}",
            volume.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s3.resume();

    let pvb = wait_for(pvbs.clone(), &name, request_ended(), WAIT)
        .await
        .unwrap();
    let status = pvb.status.unwrap();
    assert_eq!(status.phase, Some(PodVolumePhase::Failed), "{status:#?}");
    let message = status.message.unwrap();
    let path = status.path.unwrap();
    // The file the agent could not read, named; before, the files gone after the listing were
    // left out and the request Completed with a snapshot of 30 MB of the 200.
    let source = format!("snapshot-pod-volume/kopia/{}/many/data", app.name);
    assert!(
        message.starts_with(&format!("snapshotting {path} as "))
            && message.contains(&format!("{source}: {path}/f"))
            && message.ends_with(": No such file or directory (os error 2)"),
        "{message}"
    );
    let backups: Api<ark_api::Backup> = Api::namespaced(client.clone(), ns);
    let b1 = wait_for(backups, "b1", backup_ended(), WAIT).await.unwrap();
    assert_eq!(
        b1.status.unwrap().phase,
        Some(ark_api::BackupPhase::PartiallyFailed)
    );
    let kopia = Kopia::new(&installed.password);
    kopia.connect(
        &cluster,
        &format!("{}/kopia/{}", installed.prefix, app.name),
    );
    assert_eq!(kopia.snapshots(), Vec::<serde_json::Value>::new());
    kopia.ok(&["content", "verify", "--full"]);
}

/// A pod whose volume is a claim, on a `local` PersistentVolume of the real node: the agent reads
/// it where the kubelet mounts it; at restore the volume is not created again (its data comes
/// from the backup) and the restored claim binds to a new, empty one, which the agent fills
/// before the pod's container starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_volume_comes_back_in_a_new_volume_of_the_restored_claim() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use k8s_openapi::api::storage::v1::StorageClass;
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let class = ark_tests::unique_name("local");
    let volumes = [format!("{class}-a"), format!("{class}-b")];
    let _class = cluster.delete_on_drop::<StorageClass>(&class);
    let _volumes = volumes
        .iter()
        .map(|v| cluster.delete_on_drop::<PersistentVolume>(v))
        .collect::<Vec<_>>();
    let storage = tempfile::tempdir_in("/var/tmp").unwrap();
    kubectl_apply(
        &cluster,
        serde_json::json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": { "name": class },
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }),
    );
    for volume in &volumes {
        let dir = storage.path().join(volume);
        std::fs::create_dir(&dir).unwrap();
        kubectl_apply(
            &cluster,
            serde_json::json!({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": { "name": volume },
                "spec": {
                    "capacity": { "storage": "100Mi" },
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": class,
                    "local": { "path": dir },
                    "nodeAffinity": { "required": { "nodeSelectorTerms": [{ "matchExpressions": [{
                        "key": "kubernetes.io/hostname", "operator": "In", "values": ["127.0.0.1"],
                    }] }] } },
                },
            }),
        );
    }
    let app = cluster.namespace("claimed").await;
    let claim: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "data" },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class,
            "resources": { "requests": { "storage": "100Mi" } },
        },
    }))
    .unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &app.name);
    claims.create(&PostParams::default(), &claim).await.unwrap();
    let mut pod = writer_pod(&cluster);
    pod.spec.as_mut().unwrap().volumes.as_mut().unwrap()[0] = serde_json::from_value(
        serde_json::json!({ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }),
    )
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let first = claims
        .get("data")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    let second = volumes.iter().find(|v| **v != first).unwrap().clone();

    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    let pvb = only_pvb(&client, ns, "b1").await;
    assert_eq!(
        pvb.status.as_ref().unwrap().phase,
        Some(PodVolumePhase::Completed),
        "{pvb:#?}"
    );
    let path = pvb.status.unwrap().path.unwrap();
    assert!(
        path.ends_with(&format!("/volumes/kubernetes.io~local-volume/{first}")),
        "{path}"
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
    wait_for(pods.clone(), "writer", is_ready(), WAIT)
        .await
        .unwrap();
    let bound = claims.get("data").await.unwrap().spec.unwrap().volume_name;
    assert_eq!(bound.as_deref(), Some(second.as_str()));
    assert_eq!(
        only_pvr(&client, ns, "r1").await.status.unwrap().phase,
        Some(PodVolumePhase::Completed)
    );
    // The helper (user 1000) removed its mark, but may not remove `.velero` from the volume's
    // root (root's, 0755, unlike an emptyDir's 0777): it says so, and the directory stays, empty.
    let marks = storage.path().join(&second).join(".velero");
    assert_eq!(std::fs::read_dir(&marks).unwrap().count(), 0);
    let said = kubectl(
        &cluster,
        &["logs", "-n", &app.name, "writer", "-c", "restore-wait"],
    );
    assert!(
        said.contains("removing /restores/data/.velero: Permission denied (os error 13)"),
        "{said}"
    );
    std::fs::remove_dir(&marks).unwrap();
    assert_same_tree(
        &storage.path().join(&second),
        &storage.path().join(&first),
        RestoredBy::Ark,
    );
}

/// `kubectl apply` of one object given as JSON.
fn kubectl_apply(cluster: &Cluster, object: serde_json::Value) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), object.to_string()).unwrap();
    kubectl(cluster, &["apply", "-f", file.path().to_str().unwrap()]);
}

/// A pod on the real node whose volume `data` (named for backup) holds a 32 MiB file of a few
/// bytes and holes.
fn sparse_pod(cluster: &Cluster) -> Pod {
    let script = "test -f /data/.done || { dd if=/dev/zero of=/data/holes bs=1048576 seek=32 count=0 2>/dev/null \
        && printf middle | dd of=/data/holes bs=1 seek=1048576 conv=notrunc 2>/dev/null && touch /data/.done; }; \
        exec sleep 3600";
    cluster.on_real_node(serde_json::json!({
        "metadata": {
            "name": "sparse",
            "annotations": { "backup.velero.io/backup-volumes": "data" },
        },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "sparse", "image": ark_tests::BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/data/.done"] }, "periodSeconds": 1 },
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }))
}

/// Velero's `uploaderConfig` carried to the node agent: `--parallel-files-upload` and
/// `--parallel-files-download` in the requests' `uploaderSettings`, and `--write-sparse-files`
/// restoring a sparse file sparse (a few KiB on disk), when without it the same file takes its
/// whole length; its bytes are the same either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_file_is_restored_sparse_with_write_sparse_files() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("sparse").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &sparse_pod(&cluster))
        .await
        .unwrap();
    wait_for(pods.clone(), "sparse", is_ready(), WAIT)
        .await
        .unwrap();
    let inspect = |namespace: &str| {
        kubectl(
            &cluster,
            &[
                "-n",
                namespace,
                "exec",
                "sparse",
                "--",
                "sh",
                "-c",
                "md5sum /data/holes; du -k /data/holes",
            ],
        )
    };
    let original = sum_kib(&inspect(&app.name));
    assert!(
        original.1 < 1024,
        "the pod wrote a sparse file: {original:?}"
    );
    ark_ok(
        &cluster,
        ns,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--parallel-files-upload",
            "2",
            "--wait",
            "--timeout",
            "2m",
        ],
    );
    let pvb = only_pvb(&client, ns, "b1").await;
    assert_eq!(pvb.spec.uploader_settings["ParallelFilesUpload"], "2");
    assert_eq!(pvb.status.unwrap().phase, Some(PodVolumePhase::Completed));
    for (restore, flags, sparse) in [
        (
            "sparse",
            &["--write-sparse-files", "--parallel-files-download", "3"][..],
            true,
        ),
        ("whole", &[][..], false),
    ] {
        let target = format!("{}-{restore}", app.name);
        let _target = cluster.delete_on_drop::<k8s_openapi::api::core::v1::Namespace>(&target);
        let mapping = format!("{}:{target}", app.name);
        let args = [
            &[
                "restore",
                "create",
                restore,
                "--from-backup",
                "b1",
                "--namespace-mappings",
                &mapping,
                "--wait",
                "--timeout",
                "2m",
            ][..],
            flags,
        ]
        .concat();
        let restored = ark_ok(&cluster, ns, &args);
        assert!(restored.contains("Completed"), "{restored}");
        let pvr = only_pvr(&client, ns, restore).await;
        let settings = &pvr.spec.uploader_settings;
        if sparse {
            assert_eq!(
                (
                    settings["WriteSparseFiles"].as_str(),
                    settings["ParallelFilesDownload"].as_str()
                ),
                ("true", "3")
            );
        } else {
            assert!(settings.is_empty(), "{settings:?}");
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), &target);
        wait_for(pods, "sparse", is_ready(), WAIT).await.unwrap();
        let (restored_sum, restored_kib) = sum_kib(&inspect(&target));
        assert_eq!(restored_sum, original.0, "restore {restore}");
        if sparse {
            assert!(restored_kib < 1024, "restored sparse: {restored_kib} KiB");
        } else {
            assert!(
                restored_kib >= 32 * 1024,
                "restored whole: {restored_kib} KiB"
            );
        }
        lose(&cluster, &target).await;
    }
}

/// `md5sum FILE; du -k FILE` as printed: the sum, and the KiB on disk.
fn sum_kib(shown: &str) -> (String, u64) {
    let mut lines = shown.lines();
    let first = |line: Option<&str>| {
        line.unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let sum = first(lines.next());
    let kib = first(lines.next())
        .parse()
        .unwrap_or_else(|_| panic!("{shown}"));
    (sum, kib)
}

/// A pod that swaps all the directories of its volume for symlinks to `/` and back, every 0.1 s,
/// while the agent (root, in its own container) reads the volume: every backup either completes
/// with only the volume's own files, or fails naming the path that changed; the repository holds
/// no name from outside the volume, and a restore of the last backup writes the volume's files
/// only. The first four directories hold 25 MB each, so that the agent reads the others a moment
/// after it listed them, while they turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_swapping_its_volume_s_directories_for_symlinks_gets_nothing_from_outside_backed_up()
{
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("swapper").await;
    let script = "if ! test -f /data/.done; then for i in 0 1 2 3 4 5 6 7 8 9; do \
        mkdir -p /data/d$i; for j in $(seq 30); do echo $i/$j > /data/d$i/f$j; done; done; \
        for i in 0 1 2 3; do head -c 25000000 /dev/urandom > /data/d$i/big; done; \
        touch /data/.done; fi; \
        while ! test -f /data/.stop; do \
        for i in 0 1 2 3 4 5 6 7 8 9; do mv /data/d$i /data/.d$i && ln -s / /data/d$i; done; \
        sleep 0.1; \
        for i in 0 1 2 3 4 5 6 7 8 9; do rm /data/d$i && mv /data/.d$i /data/d$i; done; \
        sleep 0.1; done; exec sleep 3600";
    let pod = cluster.on_real_node(serde_json::json!({
        "metadata": {
            "name": "swapper",
            "annotations": { "backup.velero.io/backup-volumes": "data" },
        },
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "swapper", "image": ark_tests::BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/data/.done"] }, "periodSeconds": 1 },
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }));
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(pods.clone(), "swapper", is_ready(), WAIT)
        .await
        .unwrap();
    let uid = pods.get("swapper").await.unwrap().metadata.uid.unwrap();
    let volume = (cluster.real_node_pods.as_ref().unwrap())
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/data");

    // The volume's own paths, relative to it.
    let own = |path: &str| {
        let mut parts = path.trim_end_matches('/').split('/');
        let top = parts.next().unwrap_or_default();
        let dir = top.trim_start_matches('.');
        let own_top = [".done", ".stop"].contains(&top)
            || (dir.len() == 2 && dir.starts_with('d') && dir[1..].parse::<u8>().is_ok());
        let own_file = |f: &str| f == "big" || (f.starts_with('f') && f[1..].parse::<u8>().is_ok());
        own_top && parts.next().is_none_or(own_file) && parts.next().is_none()
    };
    // Backups while the directories turn: each ends, complete or failed naming a path.
    for i in 1..=4 {
        let name = format!("swapping-{i}");
        let args = ["backup", "create", &name, "--include-namespaces", &app.name];
        let wait = ["--wait", "--timeout", "2m", "-n", ns];
        // Completed exits 0, PartiallyFailed 1: the request's end says which is right.
        let said = common::ark(Some(&cluster), &[&args[..], &wait[..]].concat());
        let said = common::text(&said.stdout);
        assert!(said.contains("Backup completed with status: "), "{said}");
        let status = only_pvb(&client, ns, &name).await.status.unwrap();
        match status.phase {
            Some(PodVolumePhase::Completed) => {}
            Some(PodVolumePhase::Failed) => {
                let message = status.message.unwrap_or_default();
                // A path of the volume's own, as the agent sees it (the kubelet's pods are
                // mounted in its pod): a path below one that turned into a symlink would have
                // been read through it.
                let named = format!("{uid}/volumes/kubernetes.io~empty-dir/data/");
                let at = message.find(&named).map(|at| at + named.len());
                let path = at.map(|at| message[at..].split([':', ' ']).next().unwrap_or_default());
                assert!(path.is_some_and(own), "{message}");
            }
            other => panic!("backup {name}: its volume ended {other:?}: {status:#?}"),
        }
    }
    // The pod stops turning them; the next backup is whole.
    std::fs::write(volume.join(".stop"), b"").unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let args = [
        "backup",
        "create",
        "still",
        "--include-namespaces",
        &app.name,
    ];
    let created = ark_ok(
        &cluster,
        ns,
        &[&args[..], &["--wait", "--timeout", "2m"]].concat(),
    );
    assert!(created.contains("Completed"), "{created}");

    // Every snapshot in the repository holds the volume's names, and no other.
    let kopia = Kopia::new(&installed.password);
    kopia.connect(
        &cluster,
        &format!("{}/kopia/{}", installed.prefix, app.name),
    );
    let snapshots = kopia.snapshots();
    assert!(!snapshots.is_empty());
    for snapshot in &snapshots {
        let id = snapshot["id"].as_str().unwrap();
        // `kopia ls -r` names each path under the snapshot's ID.
        let listed = kopia.ok(&["ls", "-r", id]);
        let paths = listed
            .lines()
            .map(|p| p.split_once('/').map_or(p, |(_, p)| p));
        let foreign: Vec<&str> = paths.filter(|p| !own(p)).take(20).collect();
        assert!(foreign.is_empty(), "snapshot {id} holds {foreign:?}");
    }

    // The last backup restored into a namespace of its own: the volume's files, byte for byte.
    let restored_ns = format!("{}-back", app.name);
    let mapping = format!("{}:{restored_ns}", app.name);
    let restore = ["restore", "create", "back", "--from-backup", "still"];
    let wait = [
        "--namespace-mappings",
        &mapping,
        "--wait",
        "--timeout",
        "3m",
    ];
    let said = ark_ok(&cluster, ns, &[&restore[..], &wait[..]].concat());
    assert!(said.contains("Completed"), "{said}");
    let restored_pods: Api<Pod> = Api::namespaced(client.clone(), &restored_ns);
    wait_for(restored_pods.clone(), "swapper", is_ready(), WAIT)
        .await
        .unwrap();
    let restored_uid = restored_pods
        .get("swapper")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let restored = (cluster.real_node_pods.as_ref().unwrap())
        .join(&restored_uid)
        .join("volumes/kubernetes.io~empty-dir/data");
    assert!(!restored.join(".velero").exists());
    assert_same_tree(&restored, &volume, RestoredBy::Ark);
    lose(&cluster, &restored_ns).await;
}

/// Requests Velero's node agent held when ark took over (its finalizer on each, let go only once
/// it has ended): ark's agent lets go of those that have ended, pod volume backups and restores,
/// data uploads and downloads alike, so that they and their namespace can be deleted; another
/// finalizer on them is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_requests_velero_s_agent_held_are_let_go() {
    use ark_api::{
        DATA_MOVER_FINALIZER, DataDownload, DataDownloadStatus, DataUpload, DataUploadStatus,
        POD_VOLUME_FINALIZER, PodVolumeBackupStatus, PodVolumeRestore, PodVolumeRestoreStatus,
    };
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let held = |velero_s: &str| Some(vec![velero_s.to_string(), KEPT.to_string()]);
    let pp = PostParams::default();

    let mut pvb = PodVolumeBackup::new("pvb-completed", Default::default());
    pvb.metadata.finalizers = held(POD_VOLUME_FINALIZER);
    pvb.status = Some(PodVolumeBackupStatus {
        phase: Some(PodVolumePhase::Completed),
        ..Default::default()
    });
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns);
    pvbs.create(&pp, &pvb).await.unwrap();
    let mut pvr = PodVolumeRestore::new("pvr-failed", Default::default());
    pvr.metadata.finalizers = held(POD_VOLUME_FINALIZER);
    pvr.status = Some(PodVolumeRestoreStatus {
        phase: Some(PodVolumePhase::Failed),
        ..Default::default()
    });
    let pvrs = Api::<PodVolumeRestore>::namespaced(client.clone(), ns);
    pvrs.create(&pp, &pvr).await.unwrap();
    let mut upload = DataUpload::new("du-canceled", Default::default());
    upload.metadata.finalizers = held(DATA_MOVER_FINALIZER);
    upload.status = Some(DataUploadStatus {
        phase: Some(PodVolumePhase::Canceled),
        ..Default::default()
    });
    let uploads = Api::<DataUpload>::namespaced(client.clone(), ns);
    uploads.create(&pp, &upload).await.unwrap();
    let mut download = DataDownload::new("dd-completed", Default::default());
    download.metadata.finalizers = held(DATA_MOVER_FINALIZER);
    download.status = Some(DataDownloadStatus {
        phase: Some(PodVolumePhase::Completed),
        ..Default::default()
    });
    let downloads = Api::<DataDownload>::namespaced(client.clone(), ns);
    downloads.create(&pp, &download).await.unwrap();

    let_go_of(pvbs, "pvb-completed").await;
    let_go_of(pvrs, "pvr-failed").await;
    let_go_of(uploads, "du-canceled").await;
    let_go_of(downloads, "dd-completed").await;
    installed.uninstall(&cluster).await;
}

/// The test's own finalizer, which the agent must keep: the objects stay to be looked at.
const KEPT: &str = "ark.test/kept";

/// Waits until request `name` holds only [`KEPT`] of its finalizers, then lets go of that too.
async fn let_go_of<K>(api: Api<K>, name: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let only_kept = |o: Option<&K>| {
        o.and_then(|o| o.meta().finalizers.as_deref()) == Some(&[KEPT.to_string()][..])
    };
    if let Err(error) = wait_for(api.clone(), name, only_kept, WAIT).await {
        panic!("{error:#}; it is now {:#?}", api.get_opt(name).await);
    }
    let none = serde_json::json!({ "metadata": { "finalizers": null } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&none))
        .await
        .unwrap();
}
