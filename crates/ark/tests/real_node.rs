//! Restore hooks on the local cluster's real node (scripts/node.sh), where containers really run:
//! injected init containers run in order before the pod's own (their logs say so), exec hooks run
//! inside the named container (its hostname is the pod's, not this host's) with the kubelet's exit
//! codes and output, `waitForReady` waits for a real readiness probe, `onError: Fail` stops the
//! pod's remaining hooks, and a container that crashes or whose image is missing fails its hooks
//! with the kubelet's reason.

mod common;

use std::time::Duration;

use ark_api::{Restore, RestorePhase};
use ark_tests::{ArkServer, BUSYBOX, Cluster, wait_deleted, wait_for};
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{LogParams, PostParams};

const WAIT: Duration = Duration::from_secs(120);

/// `db`: a main container that turns ready two seconds after it starts (its readiness probe reads
/// a file it then writes) and a sidecar; `failing`: one container; `broken`: a container that
/// exits at once (so it crash-loops) and one whose image the node does not have.
fn application_pods(cluster: &Cluster) -> Vec<Pod> {
    let sleeper = |name: &str| serde_json::json!({ "name": name, "image": BUSYBOX, "command": ["sleep", "3600"] });
    vec![
        cluster.on_real_node(serde_json::json!({
            "metadata": { "name": "db", "labels": { "app": "db" } },
            "spec": {
                "containers": [
                    {
                        "name": "main", "image": BUSYBOX,
                        "command": ["sh", "-c", "sleep 2; touch /tmp/ready; exec sleep 3600"],
                        "readinessProbe": { "exec": { "command": ["cat", "/tmp/ready"] }, "periodSeconds": 1 },
                        "volumeMounts": [{ "name": "work", "mountPath": "/work" }],
                    },
                    sleeper("sidecar"),
                ],
                "volumes": [{ "name": "work", "emptyDir": {} }],
            },
        })),
        cluster.on_real_node(serde_json::json!({
            "metadata": { "name": "failing", "labels": { "app": "failing" } },
            "spec": { "containers": [sleeper("app")] },
        })),
        cluster.on_real_node(serde_json::json!({
            "metadata": { "name": "broken", "labels": { "app": "broken" } },
            "spec": { "containers": [
                { "name": "crash", "image": BUSYBOX, "command": ["false"] },
                { "name": "absent", "image": "ark.local/absent:1" },
            ] },
        })),
    ]
}

const HOOKS: &str = r#"resources:
- name: db
  labelSelector: {matchLabels: {app: db}}
  postHooks:
  - init:
      initContainers:
      - {name: first, image: ark.local/busybox:1, command: [sh, -c, "echo first >> /work/order; echo first ran"],
         volumeMounts: [{name: work, mountPath: /work}]}
      - {name: second, image: ark.local/busybox:1, command: [sh, -c, "echo second >> /work/order; echo second ran"],
         volumeMounts: [{name: work, mountPath: /work}]}
  - exec:
      container: main
      command: [sh, -c, "test -f /tmp/ready && hostname && cat /work/order && echo on-stderr >&2"]
      waitForReady: true
      waitTimeout: 1m
  - exec: {container: main, command: [sh, -c, "echo about to fail; exit 7"], onError: Continue}
- name: failing
  labelSelector: {matchLabels: {app: failing}}
  postHooks:
  - exec: {container: app, command: [sh, -c, "exit 3"], onError: Fail, waitTimeout: 1m}
  - exec: {container: app, command: [sh, -c, "echo never"]}
- name: broken
  labelSelector: {matchLabels: {app: broken}}
  postHooks:
  - exec: {container: crash, command: [sh, -c, "true"], waitTimeout: 20s}
  - exec: {container: absent, command: [sh, -c, "true"], waitTimeout: 20s}
"#;

async fn log_of(pods: &Api<Pod>, pod: &str, container: &str) -> String {
    let params = LogParams {
        container: Some(container.to_string()),
        ..Default::default()
    };
    pods.logs(pod, &params)
        .await
        .unwrap_or_else(|e| panic!("logs of {pod}/{container}: {e}"))
}

#[tokio::test]
async fn restore_hooks_really_run_in_the_restored_pods_on_the_real_node() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("real").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    for pod in application_pods(&cluster) {
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    wait_for(pods.clone(), "db", ark_tests::is_pod_running(), WAIT)
        .await
        .unwrap();
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
            "--timeout",
            "2m",
        ],
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = namespaces.get(&app.name).await.unwrap();
    namespaces
        .delete(&app.name, &Default::default())
        .await
        .unwrap();
    wait_deleted(namespaces, &namespace, WAIT).await;

    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("hooks.yaml");
    std::fs::write(&hooks, HOOKS).unwrap();
    let output = ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--hooks-file",
            hooks.to_str().unwrap(),
            "--wait",
            "--timeout",
            "3m",
            "-n",
            &ns.name,
        ],
    );
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("Restore completed with status: PartiallyFailed."),
        "{said}"
    );

    // The injected init containers ran, in order, before the pod's own containers.
    let db = pods.get("db").await.unwrap();
    let init: Vec<String> = db
        .spec
        .unwrap()
        .init_containers
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(init, ["first", "second"]);
    assert_eq!(log_of(&pods, "db", "first").await, "first ran\n");
    assert_eq!(log_of(&pods, "db", "second").await, "second ran\n");

    let restore = Api::<Restore>::namespaced(client.clone(), &ns.name)
        .get("r1")
        .await
        .unwrap();
    let status = restore.status.unwrap();
    assert_eq!(status.phase, Some(RestorePhase::PartiallyFailed));
    let hooks = status.hook_status.unwrap();
    assert_eq!(
        (hooks.hooks_attempted, hooks.hooks_failed),
        (Some(6), Some(5))
    );

    let described = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_ne!(host.trim(), "db");
    let app_ns = &app.name;
    for expected in [
        format!("  {app_ns}/db:\n    init containers injected: first, second\n"),
        // Waited for the readiness probe (the file exists), ran in the pod's own container: its
        // hostname is the pod's; both streams are kept.
        "exec in main: \"sh -c test -f /tmp/ready && hostname && cat /work/order && echo on-stderr >&2\": Succeeded (exit code 0, ".to_string(),
        "      | db\n      | first\n      | second\n".to_string(),
        "on-stderr".to_string(),
        "exec in main: \"sh -c echo about to fail; exit 7\": Failed (exit code 7, ".to_string(),
        "      | about to fail\n".to_string(),
        "exec in app: \"sh -c exit 3\": Failed (exit code 3, ".to_string(),
        "not executed: hook \"sh -c exit 3\" in container \"app\" failed with onError: Fail\n"
            .to_string(),
        format!(
            "container \"crash\" was not running within the wait timeout 20s of pod {app_ns}/broken: it "
        ),
        "exited with code 1 (Error)".to_string(),
        format!(
            "container \"absent\" was not running within the wait timeout 20s of pod {app_ns}/broken: \
             it is waiting: ErrImageNeverPull: Container image \"ark.local/absent:1\" is not present \
             with pull policy of Never"
        ),
    ] {
        assert!(
            described.contains(&expected),
            "{expected:?} not in:\n{described}"
        );
    }
}
