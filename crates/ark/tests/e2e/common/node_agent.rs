//! ark installed with its node agent on the real node from this build, and the pods and waits of
//! the tests of pod volumes (`node/pod_volumes.rs`, `velero/pod_volumes.rs`).

use std::time::Duration;

use ark_api::{PodVolumeBackup, PodVolumePhase, PodVolumeRestore};
pub use ark_tests::node_agent::{Installed, Options};
use ark_tests::proxy::PausableProxy;
use ark_tests::{BUSYBOX, Cluster};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::ListParams;

pub const WAIT: Duration = Duration::from_secs(120);

/// `kubectl ARGS` against the cluster, insisting that it succeeds: its output.
pub fn kubectl(cluster: &Cluster, args: &[&str]) -> String {
    let mut command = std::process::Command::new("kubectl");
    command.args(args).env("KUBECONFIG", &cluster.kubeconfig);
    let output = ark_tests::output_within(&mut command, WAIT);
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        super::text(&output.stderr)
    );
    super::text(&output.stdout)
}

/// ark installed with its node agent from this build's image, over an S3 location at a fresh
/// prefix.
pub async fn install(cluster: &Cluster) -> Installed {
    install_at(cluster, &ark_tests::unique_name("agent")).await
}

/// [`install`], with `options` (a fault test's proxies, the agent's settings).
pub async fn install_with(cluster: &Cluster, options: Options<'_>) -> Installed {
    let prefix = ark_tests::unique_name("agent");
    let ark = std::path::Path::new(super::ARK);
    Installed::install_with(cluster, ark, super::ark_image(cluster), &prefix, options).await
}

/// [`install`], its server and agent reaching the bucket through a proxy the test can pause.
pub async fn install_behind_a_pausable_bucket(cluster: &Cluster) -> (PausableProxy, Installed) {
    let s3 = PausableProxy::start(cluster.s3_address()).await;
    let s3_url = s3.url();
    let options = Options {
        s3_url: Some(&s3_url),
        ..Options::default()
    };
    let installed = install_with(cluster, options).await;
    (s3, installed)
}

/// [`install`], over the location at `prefix` (one Velero wrote, or reads after ark), with
/// Velero's repository password: the one Velero's server and agent use unless told another.
pub async fn install_at(cluster: &Cluster, prefix: &str) -> Installed {
    let ark = std::path::Path::new(super::ARK);
    let options = Options {
        repository_password: Some(ark_kopia::repository::VELERO_DEFAULT_PASSWORD),
        ..Default::default()
    };
    Installed::install_with(cluster, ark, super::ark_image(cluster), prefix, options).await
}

/// A pod on the real node writing a small tree into its volume `data` (named in Velero's
/// annotation) unless the tree is there already (restored), ready once it is; `scratch` is not
/// named, so not backed up.
pub fn writer_pod(cluster: &Cluster) -> Pod {
    let script = "test -f /data/.done || { mkdir -p /data/dir/nested && echo hello > /data/hello.txt \
        && head -c 3000000 /dev/urandom > /data/dir/random.bin && : > /data/empty \
        && ln -s hello.txt /data/link && chmod 640 /data/hello.txt \
        && echo scratch > /scratch/s && touch /data/.done; } && exec sleep 3600";
    cluster.on_real_node(serde_json::json!({
        "metadata": {
            "name": "writer",
            "annotations": { "backup.velero.io/backup-volumes": "data" },
        },
        "spec": {
            // `sleep` as PID 1 ignores SIGTERM: the default 30 s grace would only be waited out.
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "writer", "image": BUSYBOX, "command": ["sh", "-c", script],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/data/.done"] }, "periodSeconds": 1 },
                "volumeMounts": [
                    { "name": "data", "mountPath": "/data" },
                    { "name": "scratch", "mountPath": "/scratch" },
                ],
            }],
            "volumes": [
                { "name": "data", "emptyDir": {} },
                { "name": "scratch", "emptyDir": {} },
            ],
        },
    }))
}

/// A pod on the real node whose volume `data` (named for backup) holds 200 MB of random bytes:
/// seconds to upload on this machine, long enough for a fault to fall in the middle.
pub fn big_pod(cluster: &Cluster) -> Pod {
    cluster.on_real_node(serde_json::json!({
        "metadata": {
            "name": "big",
            "labels": { "app": "big" },
            "annotations": { "backup.velero.io/backup-volumes": "data" },
        },
        "spec": {
            "containers": [{
                "name": "big", "image": BUSYBOX,
                "command": ["sh", "-c", "head -c 200000000 /dev/urandom > /data/big.bin && touch /data/.done && exec sleep 3600"],
                "readinessProbe": { "exec": { "command": ["test", "-f", "/data/.done"] }, "periodSeconds": 1 },
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            }],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        },
    }))
}

/// A PodVolumeBackup has ended (Completed, Failed or Canceled).
pub fn request_ended() -> impl kube::runtime::wait::Condition<PodVolumeBackup> {
    |pvb: Option<&PodVolumeBackup>| {
        pvb.and_then(|p| p.status.as_ref())
            .and_then(|s| s.phase)
            .is_some_and(PodVolumePhase::is_final)
    }
}

/// A backup has ended, whatever its phase.
pub fn backup_ended() -> impl kube::runtime::wait::Condition<ark_api::Backup> {
    |b: Option<&ark_api::Backup>| {
        b.and_then(|b| b.status.as_ref())
            .and_then(|s| s.phase)
            .is_some_and(|p| {
                !matches!(
                    p,
                    ark_api::BackupPhase::New | ark_api::BackupPhase::InProgress
                )
            })
    }
}

pub fn is_ready() -> impl kube::runtime::wait::Condition<Pod> {
    |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|c| c.iter().all(|c| c.ready))
    }
}

/// Deletes namespace `name` and waits until it is gone, its pods with it; if it is not, the
/// failure shows its pods as they are on the real node.
pub async fn lose(cluster: &Cluster, name: &str) {
    let client = cluster.client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let gone = namespaces.get(name).await.unwrap();
    namespaces.delete(name, &Default::default()).await.unwrap();
    let deleted = tokio::time::timeout(
        WAIT,
        kube::runtime::wait::await_condition(
            namespaces.clone(),
            name,
            kube::runtime::wait::conditions::is_deleted(&gone.metadata.uid.unwrap_or_default()),
        ),
    )
    .await;
    if deleted.is_err() {
        let pods = Api::<Pod>::namespaced(client, name)
            .list(&ListParams::default())
            .await
            .map(|list| {
                list.items
                    .into_iter()
                    .map(|p| (p.metadata.name, p.metadata.deletion_timestamp, p.status))
                    .collect::<Vec<_>>()
            });
        panic!(
            "namespace {name} was not deleted within {WAIT:?}; it is now:\n{:#?}\nits pods:\n{pods:#?}",
            namespaces.get_opt(name).await
        );
    }
}

/// The only PodVolumeBackup of backup `backup` in `ns`.
pub async fn only_pvb(client: &kube::Client, ns: &str, backup: &str) -> PodVolumeBackup {
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&format!("velero.io/backup-name={backup}")))
        .await
        .unwrap()
        .items;
    let [pvb] = pvbs.as_slice() else {
        panic!("one pod volume backup of {backup}, not {pvbs:#?}")
    };
    pvb.clone()
}

/// The only PodVolumeRestore of restore `restore` in `ns`.
pub async fn only_pvr(client: &kube::Client, ns: &str, restore: &str) -> PodVolumeRestore {
    let pvrs = Api::<PodVolumeRestore>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&format!("velero.io/restore-name={restore}")))
        .await
        .unwrap()
        .items;
    let [pvr] = pvrs.as_slice() else {
        panic!("one pod volume restore of {restore}, not {pvrs:#?}")
    };
    pvr.clone()
}

/// The name of backup `backup`'s PodVolumeBackup in `ns` once the agent has found its volume (its
/// path is in the status): the agent reads the volume from then on.
pub async fn reading_pvb(client: &kube::Client, ns: &str, backup: &str) -> String {
    let pvbs = Api::<PodVolumeBackup>::namespaced(client.clone(), ns);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = pvbs
            .list(&ListParams::default().labels(&format!("velero.io/backup-name={backup}")))
            .await
            .unwrap()
            .items;
        if let Some(pvb) = listed
            .iter()
            .find(|p| p.status.as_ref().is_some_and(|s| s.path.is_some()))
        {
            return pvb.metadata.name.clone().unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no pod volume backup of {backup} found its volume: {listed:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A copy of `volume` (times, modes and links kept) in `into`, to compare a restore against once
/// the pod is gone.
pub fn keep(volume: &std::path::Path, into: &tempfile::TempDir) -> std::path::PathBuf {
    let kept = into.path().join("data");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(volume)
        .arg(&kept)
        .status()
        .unwrap();
    assert!(copied.success());
    kept
}
