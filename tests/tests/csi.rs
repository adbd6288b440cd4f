//! The CSI test ground (scripts/csi.sh): the test driver passes csi-sanity, and on the real node a
//! claim of the `ark-csi` class is provisioned, snapshotted through a VolumeSnapshot and restored
//! from it with its bytes, owners, modes and links.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ark_tests::{BUSYBOX, Cluster, output_within, wait_deleted, wait_for};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, LogParams, PostParams,
};

const WAIT: Duration = Duration::from_secs(120);

/// A variable scripts/cluster.sh wrote into the first cluster's `cluster.env` (the file
/// `Cluster::get` reads), such as `ARK_CSI_SANITY`.
fn ground_var(name: &str) -> String {
    Cluster::get();
    let path = ark_tests::state_dir().join("cluster.env");
    let text = std::fs::read_to_string(&path).expect("cluster.env");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| {
            panic!(
                "{} lacks {name}: the cluster was started without scripts/csi.sh; run `cargo xtask cluster up` again",
                path.display()
            )
        })
        .to_string()
}

/// The test driver started by a test on a socket of its own, killed when dropped, its log printed
/// if the test fails; whatever it left mounted under its directory is unmounted.
struct Driver {
    child: Child,
    dir: tempfile::TempDir,
}

impl Driver {
    fn start() -> Driver {
        let dir = tempfile::tempdir().expect("temporary directory");
        let log = std::fs::File::create(dir.path().join("driver.log")).expect("driver log");
        let child = Command::new(ground_var("ARK_CSI_DRIVER_BIN"))
            .arg("--endpoint")
            .arg(dir.path().join("csi.sock"))
            .arg("--state")
            .arg(dir.path().join("state"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the test driver");
        let driver = Driver { child, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !driver.socket().exists() {
            assert!(
                Instant::now() < deadline,
                "the driver did not listen on {} within 10s:\n{}",
                driver.socket().display(),
                driver.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        driver
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("csi.sock")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("driver.log")).unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- test driver log ---\n{}", self.log());
        }
        // Removing the directory through a mount left behind would reach into what is mounted.
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let prefix = format!("{}/", self.dir.path().display());
        let mut mounts: Vec<&str> = mountinfo
            .lines()
            .filter_map(|line| line.split(' ').nth(4))
            .filter(|mount| mount.starts_with(&prefix))
            .collect();
        mounts.sort_unstable_by(|a, b| b.cmp(a));
        for mount in mounts {
            let path = std::ffi::CString::new(mount).unwrap();
            // SAFETY: a valid NUL-terminated path; umount2 reads it only.
            unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

#[test]
fn csi_sanity_passes_against_the_test_driver() {
    let driver = Driver::start();
    let scratch = driver.dir.path();
    let output = output_within(
        Command::new(ground_var("ARK_CSI_SANITY"))
            .arg("--csi.endpoint")
            .arg(driver.socket())
            .arg("--csi.mountdir")
            .arg(scratch.join("mount"))
            .arg("--csi.stagingdir")
            .arg(scratch.join("staging")),
        Duration::from_secs(600),
    );
    assert!(
        output.status.success(),
        "csi-sanity failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A kind of the snapshot CRDs (the tests crate has no types of them).
fn snapshot_resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "snapshot.storage.k8s.io",
        "v1",
        kind,
    ))
}

fn claim(name: &str, storage_class: &str, snapshot: Option<&str>) -> PersistentVolumeClaim {
    let mut spec = serde_json::json!({
        "storageClassName": storage_class,
        "accessModes": ["ReadWriteOnce"],
        "resources": { "requests": { "storage": "64Mi" } },
    });
    if let Some(snapshot) = snapshot {
        spec["dataSource"] = serde_json::json!({
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": snapshot,
        });
    }
    serde_json::from_value(serde_json::json!({ "metadata": { "name": name }, "spec": spec }))
        .unwrap()
}

/// A pod on the real node that runs `script` once with the claim at /data.
fn pod_with_claim(cluster: &Cluster, name: &str, claim: &str, script: &str) -> Pod {
    cluster.on_real_node(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "main", "image": BUSYBOX, "command": ["sh", "-c", script],
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": claim } }],
        },
    }))
}

/// Runs the pod to its end and returns its output; fails with its status if it did not succeed.
async fn run_to_end(pods: &Api<Pod>, pod: Pod) -> String {
    let name = pod.metadata.name.clone().unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let ended = wait_for(
        pods.clone(),
        &name,
        |pod: Option<&Pod>| {
            matches!(
                pod.and_then(|p| p.status.as_ref())
                    .and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            )
        },
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("pod {name}: {e:#}"));
    let log = pods
        .logs(&name, &LogParams::default())
        .await
        .unwrap_or_else(|e| panic!("logs of {name}: {e}"));
    let status = ended.status.unwrap_or_default();
    assert_eq!(
        status.phase.as_deref(),
        Some("Succeeded"),
        "pod {name}: {status:?}\n{log}"
    );
    log
}

async fn bound_claim(claims: &Api<PersistentVolumeClaim>, name: &str) -> PersistentVolumeClaim {
    wait_for(
        claims.clone(),
        name,
        |claim: Option<&PersistentVolumeClaim>| {
            claim
                .and_then(|c| c.status.as_ref())
                .and_then(|s| s.phase.as_deref())
                == Some("Bound")
        },
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("claim {name} did not bind: {e:#}"))
}

#[tokio::test]
async fn a_claim_of_the_csi_class_is_snapshotted_and_restored_with_its_data() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let storage_class = ground_var("ARK_CSI_STORAGE_CLASS");
    let snapshot_class = ground_var("ARK_CSI_SNAPSHOT_CLASS");
    let ns = cluster.namespace("csi").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let snapshots: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &snapshot_resource("VolumeSnapshot"),
    );
    let contents: Api<DynamicObject> =
        Api::all_with(client.clone(), &snapshot_resource("VolumeSnapshotContent"));

    claims
        .create(&PostParams::default(), &claim("data", &storage_class, None))
        .await
        .unwrap();
    let source = bound_claim(&claims, "data").await;
    // Bytes, and what a database's data directory needs back as it was: an owner, a mode, a link.
    let marker = ark_tests::unique_name("csi-bytes");
    let write = format!(
        "printf %s {marker} > /data/payload && mkdir /data/owned && chown 999:999 /data/owned \
         && chmod 700 /data/owned && ln -s payload /data/link && sync"
    );
    run_to_end(&pods, pod_with_claim(&cluster, "writer", "data", &write)).await;

    let snapshot: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
        "metadata": { "name": "data-snapshot" },
        "spec": {
            "volumeSnapshotClassName": snapshot_class,
            "source": { "persistentVolumeClaimName": "data" },
        },
    }))
    .unwrap();
    snapshots
        .create(&PostParams::default(), &snapshot)
        .await
        .unwrap();
    let ready = wait_for(
        snapshots.clone(),
        "data-snapshot",
        |snapshot: Option<&DynamicObject>| {
            snapshot.is_some_and(|s| s.data["status"]["readyToUse"] == true)
        },
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("the VolumeSnapshot never became ready: {e:#}"));
    let content_name = ready.data["status"]["boundVolumeSnapshotContentName"]
        .as_str()
        .expect("a ready snapshot names its content")
        .to_string();
    let content = contents.get(&content_name).await.unwrap();
    let handle = content.data["status"]["snapshotHandle"]
        .as_str()
        .unwrap_or_default();
    assert!(
        !handle.is_empty(),
        "the content has no snapshot handle: {:?}",
        content.data["status"]
    );

    claims
        .create(
            &PostParams::default(),
            &claim("restored", &storage_class, Some("data-snapshot")),
        )
        .await
        .unwrap();
    let restored = bound_claim(&claims, "restored").await;
    let read = "cat /data/payload; echo; stat -c '%u:%g %a' /data/owned; readlink /data/link";
    let seen = run_to_end(&pods, pod_with_claim(&cluster, "reader", "restored", read)).await;
    assert_eq!(seen, format!("{marker}\n999:999 700\npayload\n"));

    // Everything the test made goes, and with it (reclaim and deletion policies Delete) the
    // volumes and the snapshot's content: the driver's DeleteVolume and DeleteSnapshot ran.
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let mut made = Vec::new();
    for claim in [&source, &restored] {
        let volume = claim.spec.as_ref().and_then(|s| s.volume_name.clone());
        made.push(
            volumes
                .get(&volume.expect("a bound claim names its volume"))
                .await
                .unwrap(),
        );
    }
    for pod in ["writer", "reader"] {
        pods.delete(pod, &DeleteParams::default()).await.unwrap();
    }
    snapshots
        .delete("data-snapshot", &DeleteParams::default())
        .await
        .unwrap();
    for claim in ["data", "restored"] {
        claims
            .delete(claim, &DeleteParams::default())
            .await
            .unwrap();
    }
    for volume in &made {
        wait_deleted(volumes.clone(), volume, WAIT).await;
    }
    wait_deleted(contents, &content, WAIT).await;
}

/// A VolumeSnapshotClass of the test's own (cluster-scoped), deleted when dropped.
struct SnapshotClass {
    name: String,
    kubeconfig: PathBuf,
}

impl SnapshotClass {
    async fn create(cluster: &Cluster, api: &Api<DynamicObject>, ready_after: &str) -> Self {
        let name = ark_tests::unique_name("ark-csi-ready-after");
        let class: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": { "name": name },
            "driver": ground_var("ARK_CSI_DRIVER"),
            "deletionPolicy": "Delete",
            "parameters": { "readyAfter": ready_after },
        }))
        .unwrap();
        api.create(&PostParams::default(), &class).await.unwrap();
        SnapshotClass {
            name,
            kubeconfig: cluster.kubeconfig.clone(),
        }
    }
}

impl Drop for SnapshotClass {
    fn drop(&mut self) {
        // kubectl under `timeout`: a drop cannot use the test's runtime, and must not hang.
        let _ = Command::new("timeout")
            .args(["30", "kubectl", "--kubeconfig"])
            .arg(&self.kubeconfig)
            .args(["delete", "volumesnapshotclass", "--ignore-not-found"])
            .arg(&self.name)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status();
    }
}

fn volume_snapshot(name: &str, class: &str, claim: &str) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
        "metadata": { "name": name },
        "spec": {
            "volumeSnapshotClassName": class,
            "source": { "persistentVolumeClaimName": claim },
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn the_ready_after_parameter_holds_a_snapshot_back_for_that_long_or_for_ever() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("csi-ready").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);
    let snapshots: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &snapshot_resource("VolumeSnapshot"),
    );
    let classes = Api::all_with(client.clone(), &snapshot_resource("VolumeSnapshotClass"));
    let late = SnapshotClass::create(&cluster, &classes, "8s").await;
    let never = SnapshotClass::create(&cluster, &classes, "never").await;

    claims
        .create(
            &PostParams::default(),
            &claim("data", &ground_var("ARK_CSI_STORAGE_CLASS"), None),
        )
        .await
        .unwrap();
    bound_claim(&claims, "data").await;
    let cut = Instant::now();
    for (name, class) in [("late", &late), ("never", &never)] {
        snapshots
            .create(
                &PostParams::default(),
                &volume_snapshot(name, &class.name, "data"),
            )
            .await
            .unwrap();
    }
    // Both are cut (a creation time, which only the driver gives) and say they are not ready yet.
    for name in ["late", "never"] {
        let taken = wait_for(
            snapshots.clone(),
            name,
            |snapshot: Option<&DynamicObject>| {
                snapshot.is_some_and(|s| s.data["status"]["creationTime"].is_string())
            },
            WAIT,
        )
        .await
        .unwrap_or_else(|e| panic!("snapshot {name} was never cut: {e:#}"));
        assert_eq!(
            taken.data["status"]["readyToUse"], false,
            "{name}: {:?}",
            taken.data["status"]
        );
    }
    wait_for(
        snapshots.clone(),
        "late",
        |snapshot: Option<&DynamicObject>| {
            snapshot.is_some_and(|s| s.data["status"]["readyToUse"] == true)
        },
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("the snapshot of readyAfter 8s never became ready: {e:#}"));
    assert!(
        cut.elapsed() >= Duration::from_secs(8),
        "ready after {:?}, before its 8s",
        cut.elapsed()
    );
    let never_status = snapshots.get("never").await.unwrap().data["status"].clone();
    assert_eq!(never_status["readyToUse"], false, "{never_status:?}");

    for name in ["late", "never"] {
        snapshots
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    claims
        .delete("data", &DeleteParams::default())
        .await
        .unwrap();
    for name in ["late", "never"] {
        if let Ok(snapshot) = snapshots.get(name).await {
            wait_deleted(snapshots.clone(), &snapshot, WAIT).await;
        }
    }
}
