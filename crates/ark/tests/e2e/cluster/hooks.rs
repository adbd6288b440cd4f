//! Restore hooks end to end: init containers injected in order, exec hooks that really run (kwok's
//! Exec runs them on this host), onError, timeouts, missing containers, annotations, counting;
//! and invalid hooks files refused with line and column before anything is created.

use crate::common;

use std::time::Duration;

use ark_api::{Restore, RestorePhase};
use ark_tests::proxy::PausableProxy;
use ark_tests::{
    ArkServer, Cluster, TestNamespace, allow_local_exec, fixtures, unique_name, wait_for,
};
use common::{ARK, ark, ark_ok, text};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};

/// A file of `examples/hooks/`.
fn example(file: &str) -> String {
    let path = ark_tests::checkout().join("examples/hooks").join(file);
    path.to_string_lossy().into_owned()
}

fn pod(
    name: &str,
    role: &str,
    schedulable: bool,
    init: &[&str],
    annotations: serde_json::Value,
) -> Pod {
    let init: Vec<_> = init
        .iter()
        .map(|n| serde_json::json!({ "name": n, "image": "busybox", "command": ["true"] }))
        .collect();
    let node_selector = if schedulable {
        serde_json::json!({ "type": "kwok" })
    } else {
        serde_json::json!({ "type": "no-such-node" })
    };
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { "role": role }, "annotations": annotations },
        "spec": {
            "nodeSelector": node_selector,
            "initContainers": init,
            "containers": [{ "name": "app", "image": "busybox" }, { "name": "sidecar", "image": "busybox" }],
        },
    }))
    .unwrap()
}

fn hooks_file(dir: &std::path::Path, marker: &str) -> std::path::PathBuf {
    let write = |file: &str| format!("echo ran > /tmp/{marker}-{file}");
    let yaml = format!(
        r#"resources:
- name: ordered
  labelSelector: {{matchLabels: {{role: ordered}}}}
  postHooks:
  - init:
      initContainers:
      - {{name: restore-db, image: busybox, command: [sh, -c, "restore"]}}
  - exec: {{container: app, command: [sh, -c, "{a}"]}}
  - exec: {{container: app, command: [sh, -c, "{b}"]}}
- name: continue
  labelSelector: {{matchLabels: {{role: continue}}}}
  postHooks:
  - exec: {{command: [sh, -c, "exit 1"], onError: Continue}}
  - exec: {{command: [sh, -c, "{c}"]}}
- name: fail
  labelSelector: {{matchLabels: {{role: fail}}}}
  postHooks:
  - exec: {{command: [sh, -c, "exit 1"], onError: Fail}}
  - exec: {{command: [sh, -c, "{d}"]}}
- name: pending
  labelSelector: {{matchLabels: {{role: pending}}}}
  postHooks:
  - exec: {{command: [sh, -c, "true"], waitTimeout: 3s}}
- name: slow
  labelSelector: {{matchLabels: {{role: slow}}}}
  postHooks:
  - exec: {{command: [sh, -c, "sleep 30"], execTimeout: 2s}}
- name: missing
  labelSelector: {{matchLabels: {{role: missing}}}}
  postHooks:
  - exec: {{container: nope, command: [sh, -c, "true"]}}
- name: replaced-by-annotations
  labelSelector: {{matchLabels: {{role: annotated}}}}
  postHooks:
  - exec: {{command: [sh, -c, "{f}"]}}
"#,
        a = write("a"),
        b = write("b"),
        c = write("c"),
        d = write("d"),
        f = write("f"),
    );
    let path = dir.join("hooks.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// On the second cluster, which runs Velero's own CRDs.
#[tokio::test]
async fn hooks_run_in_restored_pods_as_specified_on_velero_crds() {
    let cluster = Cluster::second();
    let client = cluster.client().await;
    allow_local_exec(&client).await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("hooked").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);

    let marker = unique_name("ark-hook");
    let pods: Api<Pod> = Api::namespaced(client.clone(), &app.name);
    let annotations = serde_json::json!({
        "post.hook.restore.velero.io/command": format!("[\"sh\", \"-c\", \"echo ran > /tmp/{marker}-e\"]"),
        "post.hook.restore.velero.io/container": "sidecar",
    });
    for pod in [
        pod(
            "ordered",
            "ordered",
            true,
            &["migrate", "restore-wait"],
            serde_json::json!({}),
        ),
        pod("continue", "continue", true, &[], serde_json::json!({})),
        pod("fail", "fail", true, &[], serde_json::json!({})),
        pod("pending", "pending", false, &[], serde_json::json!({})),
        pod("missing", "missing", true, &[], serde_json::json!({})),
        pod("slow", "slow", true, &[], serde_json::json!({})),
        pod("annotated", "annotated", true, &[], annotations),
    ] {
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
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

    let dir = tempfile::tempdir().unwrap();
    let hooks = hooks_file(dir.path(), &marker);
    let target = format!("{}-restored", app.name);
    let mapping = format!("{}:{target}", app.name);
    let started = std::time::Instant::now();
    let output = ark(
        Some(&cluster),
        &[
            "restore",
            "create",
            "r1",
            "--from-backup",
            "b1",
            "--namespace-mappings",
            &mapping,
            "--hooks-file",
            hooks.to_str().unwrap(),
            "--wait",
            "-n",
            &ns.name,
        ],
    );
    let took = started.elapsed();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(text(&output.stdout).contains("Restore completed with status: PartiallyFailed."));
    assert!(
        took < Duration::from_secs(45),
        "the restore waited {took:?}: a hook hung"
    );

    // Init containers: the restore-wait an earlier volume restore left is removed (ark restores no
    // pod volumes, so it would wait forever), then the hook's, then the pod's own.
    let restored: Api<Pod> = Api::namespaced(client.clone(), &target);
    let ordered = restored.get("ordered").await.unwrap();
    let init: Vec<String> = ordered
        .spec
        .unwrap()
        .init_containers
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(init, ["restore-db", "migrate"]);

    // Exec hooks ran for real on this host; Continue went on, Fail stopped, annotations replaced the spec.
    let ran = |file: &str| std::path::Path::new(&format!("/tmp/{marker}-{file}")).exists();
    assert!(ran("a") && ran("b"), "both hooks of one container ran");
    assert!(ran("c"), "onError Continue runs the next hook");
    assert!(!ran("d"), "onError Fail stops the pod's remaining hooks");
    assert!(ran("e"), "the annotation hook ran");
    assert!(!ran("f"), "annotations replace the spec hooks for that pod");

    let restore = Api::<Restore>::namespaced(client.clone(), &ns.name)
        .get("r1")
        .await
        .unwrap();
    let status = restore.status.unwrap();
    assert_eq!(status.phase, Some(RestorePhase::PartiallyFailed));
    let hook_status = status.hook_status.unwrap();
    assert_eq!(
        (hook_status.hooks_attempted, hook_status.hooks_failed),
        (Some(10), Some(6))
    );

    let describe = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    for expected in [
        "HooksAttempted:  10\nHooksFailed:     6\n",
        "    exec in app: \"sh -c sleep 30\": Failed (exit code -, 2.",
        ": timed out after 2s\n",
        &format!("  {target}/ordered:\n    init containers injected: restore-db\n"),
        "    exec in app: \"sh -c exit 1\": Failed (exit code 1, ",
        &format!("  {target}/missing:\n    exec in nope: \"sh -c true\": Failed (exit code -, "),
        &format!("container \"nope\" not found in pod {target}/missing\n"),
        &format!(
            "container \"app\" was not running within the wait timeout 3s of pod {target}/pending\n"
        ),
        // The hook after the one that failed with onError: Fail is counted, and says why it did not run.
        "not executed: hook \"sh -c exit 1\" in container \"app\" failed with onError: Fail\n",
    ] {
        assert!(
            describe.contains(expected),
            "{expected:?} not in:\n{describe}"
        );
    }
    for file in ["a", "b", "c", "e"] {
        let _ = std::fs::remove_file(format!("/tmp/{marker}-{file}"));
    }
    let _ = Api::<Namespace>::all(client)
        .delete(&target, &DeleteParams::default())
        .await;
}

/// The cache warm-up example on the shop's web pods: two pods, one hook each, both succeed.
#[tokio::test]
async fn the_cache_warmup_example_runs_in_every_web_pod() {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    allow_local_exec(&client).await;
    let ns = cluster.namespace("ark").await;
    let app = cluster.namespace("shop").await;
    let _bucket = common::file_location(&cluster, &ns.name);
    let _server = ArkServer::start(ARK, &cluster, &ns.name);
    fixtures::deploy_shop(&client, &app.name).await;
    ark_ok(
        &cluster,
        &ns.name,
        &[
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            &app.name,
            "--include-resources",
            "pods,serviceaccounts",
            "--wait",
        ],
    );
    let target = format!("{}-warm", app.name);
    let mapping = format!("{}:{target}", app.name);
    let hooks = example("cache-warmup.yaml");
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
            "--hooks-file",
            &hooks,
            "--wait",
        ],
    );
    let restore = Api::<Restore>::namespaced(client.clone(), &ns.name)
        .get("r1")
        .await
        .unwrap();
    let hook_status = restore.status.unwrap().hook_status.unwrap();
    assert_eq!(
        (hook_status.hooks_attempted, hook_status.hooks_failed),
        (Some(2), None)
    );
    let describe = ark_ok(
        &cluster,
        &ns.name,
        &["restore", "describe", "r1", "--details"],
    );
    assert_eq!(
        describe.matches(": Succeeded (exit code 0, ").count(),
        2,
        "{describe}"
    );
    assert_eq!(
        describe.matches("      | warmed\n").count(),
        2,
        "{describe}"
    );
    let _ = Api::<Namespace>::all(client)
        .delete(&target, &DeleteParams::default())
        .await;
}

/// One pod of an application namespace, backed up as `b1` and restored (`r1`, with a hooks file)
/// into a namespace of its own; the hooks' marker files go when it drops.
struct HookedPod {
    cluster: Cluster,
    client: kube::Client,
    ns: TestNamespace,
    app: TestNamespace,
    target: TestNamespace,
    marker: String,
    _bucket: tempfile::TempDir,
    hooks: tempfile::TempDir,
}

impl HookedPod {
    /// The namespaces and a `file` location; the server is the caller's to start.
    async fn new(cluster: Cluster) -> HookedPod {
        let client = cluster.client().await;
        allow_local_exec(&client).await;
        let ns = cluster.namespace("ark").await;
        HookedPod {
            client,
            _bucket: common::file_location(&cluster, &ns.name),
            ns,
            app: cluster.namespace("hooked").await,
            target: cluster.namespace("hooked-restored").await,
            marker: unique_name("ark-hook"),
            hooks: tempfile::tempdir().unwrap(),
            cluster,
        }
    }

    /// A command that leaves the marker file `name` behind when it runs.
    fn leave(&self, name: &str) -> String {
        format!("echo ran > /tmp/{}-{name}", self.marker)
    }

    /// Hooks for the pods of role `late`: their `app` container leaves the marker `app`.
    fn late_pods_leave_app(&self) -> String {
        format!(
            r#"resources:
- name: late
  labelSelector: {{matchLabels: {{role: late}}}}
  postHooks:
  - exec: {{container: app, command: [sh, -c, "{app}"]}}
"#,
            app = self.leave("app"),
        )
    }

    fn ran(&self, name: &str) -> bool {
        std::path::Path::new(&format!("/tmp/{}-{name}", self.marker)).exists()
    }

    async fn back_up(&self, pod: Pod) {
        Api::<Pod>::namespaced(self.client.clone(), &self.app.name)
            .create(&PostParams::default(), &pod)
            .await
            .unwrap();
        let ns = &self.app.name;
        let args = [
            "backup",
            "create",
            "b1",
            "--include-namespaces",
            ns,
            "--wait",
        ];
        ark_ok(&self.cluster, &self.ns.name, &args);
    }

    /// Creates the restore and, with `wait`, returns once it has ended.
    fn restore(&self, hooks_yaml: &str, wait: bool) {
        let hooks = self.hooks.path().join("hooks.yaml");
        std::fs::write(&hooks, hooks_yaml).unwrap();
        let mapping = format!("{}:{}", self.app.name, self.target.name);
        let mut args = vec!["restore", "create", "r1", "--from-backup", "b1"];
        args.extend(["--namespace-mappings", &mapping]);
        args.extend(["--hooks-file", hooks.to_str().unwrap()]);
        if wait {
            args.push("--wait");
        }
        let output = ark(
            Some(&self.cluster),
            &[&args[..], &["-n", &self.ns.name]].concat(),
        );
        assert!(
            wait || output.status.success(),
            "{}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
    }

    async fn restore_object(&self) -> Restore {
        Api::<Restore>::namespaced(self.client.clone(), &self.ns.name)
            .get("r1")
            .await
            .unwrap()
    }

    async fn ended(&self) -> Restore {
        let restores = Api::<Restore>::namespaced(self.client.clone(), &self.ns.name);
        let ended = |r: Option<&Restore>| {
            r.and_then(|r| r.status.as_ref()?.phase)
                .is_some_and(RestorePhase::is_terminal)
        };
        wait_for(restores, "r1", ended, Duration::from_secs(90))
            .await
            .unwrap()
    }

    fn describe(&self) -> String {
        let args = ["restore", "describe", "r1", "--details"];
        ark_ok(&self.cluster, &self.ns.name, &args)
    }

    fn hook_counts(restore: &Restore) -> (Option<i64>, Option<i64>) {
        let hooks = restore
            .status
            .as_ref()
            .unwrap()
            .hook_status
            .as_ref()
            .unwrap();
        (hooks.hooks_attempted, hooks.hooks_failed)
    }
}

impl Drop for HookedPod {
    fn drop(&mut self) {
        for name in ["app", "sidecar"] {
            let _ = std::fs::remove_file(format!("/tmp/{}-{name}", self.marker));
        }
    }
}

/// A pod whose `sidecar` never runs (kwok keeps it Waiting: scripts/kwok/stages.yaml): the hook
/// for `app` runs as soon as `app` runs, while the sidecar's hook still waits out its waitTimeout.
#[tokio::test]
async fn a_container_that_never_runs_does_not_hold_back_another_containers_hooks() {
    let hooked = HookedPod::new(Cluster::second()).await;
    let _server = ArkServer::start(ARK, &hooked.cluster, &hooked.ns.name);
    let waiting = serde_json::json!({
        "ark.test/running-after": "0s",
        "ark.test/waiting-container": "sidecar",
    });
    hooked
        .back_up(pod("split", "split", true, &[], waiting))
        .await;
    let hooks = format!(
        r#"resources:
- name: split
  labelSelector: {{matchLabels: {{role: split}}}}
  postHooks:
  - exec: {{container: sidecar, command: [sh, -c, "{sidecar}"], waitTimeout: 20s, onError: Continue}}
  - exec: {{container: app, command: [sh, -c, "{app}"]}}
"#,
        sidecar = hooked.leave("sidecar"),
        app = hooked.leave("app"),
    );
    hooked.restore(&hooks, false);

    // The sidecar's hook comes first, and its wait lasts 20 s from the pod's creation: the app's
    // hook has run well before, while the restore still waits.
    let appeared = async {
        while !hooked.ran("app") {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(15), appeared)
        .await
        .expect(
            "the app container's hook did not run within 15 s: held back by the sidecar's wait",
        );
    let phase = hooked.restore_object().await.status.unwrap().phase;
    assert_eq!(phase, Some(RestorePhase::InProgress));

    let ended = hooked.ended().await;
    assert_eq!(
        ended.status.as_ref().unwrap().phase,
        Some(RestorePhase::PartiallyFailed)
    );
    assert_eq!(HookedPod::hook_counts(&ended), (Some(2), Some(1)));
    assert!(!hooked.ran("sidecar"));
    let describe = hooked.describe();
    let target = &hooked.target.name;
    for expected in [
        format!(
            "container \"sidecar\" was not running within the wait timeout 20s of pod {target}/split: \
             it is waiting: ContainerCreating\n"
        ),
        format!(
            "    exec in app: \"sh -c {}\": Succeeded (exit code 0, ",
            hooked.leave("app")
        ),
    ] {
        assert!(
            describe.contains(&expected),
            "{expected:?} not in:\n{describe}"
        );
    }
}

/// The API server connection breaks while a hook waits for its pod to run (the pod runs 6 s after
/// it is scheduled: scripts/kwok/stages.yaml): the restore's watch of its pods is started again and
/// the hook runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_error_while_waiting_for_a_pod_is_retried_and_the_hook_runs() {
    let cluster = Cluster::second();
    let hooked = HookedPod::new(cluster.clone()).await;
    let api = PausableProxy::start(cluster.api_server_address()).await;
    let dir = tempfile::tempdir().unwrap();
    let server = ArkServer::start(
        ARK,
        &cluster.through(api.address, dir.path()),
        &hooked.ns.name,
    );
    let late = serde_json::json!({ "ark.test/running-after": "6s" });
    hooked.back_up(pod("late", "late", true, &[], late)).await;
    hooked.restore(&hooked.late_pods_leave_app(), false);
    server
        .wait_for_log(
            "pod late: waiting for container app to run its hooks",
            Duration::from_secs(60),
        )
        .await;
    api.take_down();
    tokio::time::sleep(Duration::from_secs(2)).await;
    api.resume();

    let ended = hooked.ended().await;
    assert_eq!(
        ended.status.as_ref().unwrap().phase,
        Some(RestorePhase::Completed),
        "{}",
        hooked.describe()
    );
    assert_eq!(HookedPod::hook_counts(&ended), (Some(1), None));
    assert!(hooked.ran("app"));
    assert!(
        server
            .log()
            .contains("watching the restored pods for their hooks: "),
        "the watch never failed: {}",
        server.log()
    );
}

/// The restore waits for its pods on one watch of the pods labelled with its name. A pod deleted
/// while its hook waits is reported deleted; a pod whose label was taken off meanwhile leaves
/// that watch, and its hook still runs once it does (the pods run 6 s after they are scheduled:
/// scripts/kwok/stages.yaml).
#[tokio::test]
async fn a_pod_deleted_or_unlabelled_while_its_hook_waits_is_told_apart() {
    let cluster = Cluster::get();
    let hooked = HookedPod::new(cluster.clone()).await;
    let server = ArkServer::start(ARK, &cluster, &hooked.ns.name);
    let late = serde_json::json!({ "ark.test/running-after": "6s" });
    let app = Api::<Pod>::namespaced(hooked.client.clone(), &hooked.app.name);
    app.create(
        &PostParams::default(),
        &pod("gone", "late", true, &[], late.clone()),
    )
    .await
    .unwrap();
    hooked.back_up(pod("moved", "late", true, &[], late)).await;
    hooked.restore(&hooked.late_pods_leave_app(), false);
    for name in ["gone", "moved"] {
        server
            .wait_for_log(
                &format!("pod {name}: waiting for container app to run its hooks"),
                Duration::from_secs(60),
            )
            .await;
    }
    let restored = Api::<Pod>::namespaced(hooked.client.clone(), &hooked.target.name);
    let unlabel =
        serde_json::json!({ "metadata": { "labels": { "velero.io/restore-name": null } } });
    restored
        .patch("moved", &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .unwrap();
    restored
        .delete(
            "gone",
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let ended = hooked.ended().await;
    assert_eq!(
        ended.status.as_ref().unwrap().phase,
        Some(RestorePhase::PartiallyFailed),
        "{}",
        hooked.describe()
    );
    assert_eq!(HookedPod::hook_counts(&ended), (Some(2), Some(1)));
    assert!(hooked.ran("app"));
    let describe = hooked.describe();
    let expected = format!(
        "pod {}/gone was deleted before its hooks ran",
        hooked.target.name
    );
    assert!(
        describe.contains(&expected),
        "{expected:?} not in:\n{describe}"
    );
}

/// One exec at a time: the second container's hook waits 3 s for the first's to finish, then runs
/// its own 3 s within its 5 s execTimeout, because the wait for a slot is not counted.
#[tokio::test]
async fn waiting_for_an_exec_slot_does_not_count_against_a_hooks_exec_timeout() {
    let hooked = HookedPod::new(Cluster::get()).await;
    let flags = ["--restore-hook-execs-at-once", "1"];
    let _server = ArkServer::start_with(ARK, &hooked.cluster, &hooked.ns.name, &flags);
    hooked
        .back_up(pod("queued", "queued", true, &[], serde_json::json!({})))
        .await;
    let hooks = format!(
        r#"resources:
- name: queued
  labelSelector: {{matchLabels: {{role: queued}}}}
  postHooks:
  - exec: {{container: app, command: [sh, -c, "sleep 3; {app}"], execTimeout: 5s}}
  - exec: {{container: sidecar, command: [sh, -c, "sleep 3; {sidecar}"], execTimeout: 5s}}
"#,
        app = hooked.leave("app"),
        sidecar = hooked.leave("sidecar"),
    );
    hooked.restore(&hooks, true);
    let ended = hooked.restore_object().await;
    assert_eq!(
        ended.status.as_ref().unwrap().phase,
        Some(RestorePhase::Completed),
        "{}",
        hooked.describe()
    );
    assert_eq!(HookedPod::hook_counts(&ended), (Some(2), None));
    assert!(hooked.ran("app") && hooked.ran("sidecar"));
}

/// Every invalid hooks file is refused with its line and column, before ark contacts the cluster
/// (there is none here) and without creating anything.
#[test]
fn invalid_hooks_files_are_refused_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "resources:\n- name: a\n  bogus: 1\n",
            "3:3: resources[0].bogus: unknown field `bogus`",
        ),
        (
            "resources:\n- name: a\n  postHooks:\n  - init:\n      initContainers: [{name: x, image: busybox, command: [a]}]\n    exec: {command: [b]}\n",
            "4:5: resources[0].postHooks[0]: a hook is either init or exec, not both",
        ),
        (
            "resources:\n- name: a\n  postHooks:\n  - {}\n",
            "4:5: resources[0].postHooks[0]: a hook needs init or exec",
        ),
        (
            "resources:\n- name: a\n  postHooks:\n  - init:\n      initContainers:\n      - {name: x, command: [a]}\n",
            "6:9: resources[0].postHooks[0].init.initContainers[0].image: an init container needs an image",
        ),
        (
            "resources:\n- name: a\n  postHooks:\n  - exec:\n      command: []\n",
            "5:7: resources[0].postHooks[0].exec.command: the command must not be empty",
        ),
        (
            "resources:\n- name: a\n  postHooks:\n  - exec: {command: [a], waitTimeout: soon}\n",
            "4:26: resources[0].postHooks[0].exec.waitTimeout: invalid duration \"soon\"",
        ),
        (
            "resources:\n- name: a\n  labelSelector:\n    matchExpressions:\n    - {key: app, operator: Like}\n",
            "5:18: resources[0].labelSelector.matchExpressions[0].operator: unknown operator \"Like\"",
        ),
        (
            "resources:\n- name: a\n  postHooks:\n  - exec: {command: [a], onError: Retry}\n",
            "4:35: resources[0].postHooks[0].exec.onError: unknown variant `Retry`, expected one of Continue, Fail",
        ),
        (
            "{\"resources\": [{\"name\": \"a\", \"postHooks\": [{\"exec\": {\"command\": []}}]}]}",
            "1:54: resources[0].postHooks[0].exec.command: the command must not be empty",
        ),
    ];
    let refused = |index: usize, content: &str, expected: &str| {
        let path = dir.path().join(format!("hooks-{index}.yaml"));
        std::fs::write(&path, content).unwrap();
        let output = ark(
            None,
            &[
                "restore",
                "create",
                "--from-backup",
                "b",
                "--hooks-file",
                path.to_str().unwrap(),
            ],
        );
        assert_eq!(output.status.code(), Some(1), "{content}");
        let stderr = text(&output.stderr);
        let shown = path.display().to_string();
        assert!(
            stderr.starts_with(&format!(
                "error: invalid hooks file {shown}; nothing was created:\n  {shown}:{expected}"
            )),
            "{stderr}"
        );
    };
    for (index, (content, expected)) in cases.iter().enumerate() {
        refused(index, content, expected);
    }
    // Hostile files fail fast and in bounded memory: deep nesting where it gets too deep (its
    // paths would cost memory quadratic in the depth), a huge file by its size.
    let deep = |levels| format!("resources: {}{}\n", "[".repeat(levels), "]".repeat(levels));
    refused(100, &deep(100), "1:43: nested deeper than 32 levels");
    // Deeper still, the YAML parser's own bound answers first.
    refused(102, &deep(100_000), "1:267: recursion limit exceeded");
    let huge = format!("resources: []\n# {}\n", "x".repeat(4 << 20));
    refused(
        101,
        &huge,
        "larger than the 1048576 bytes the file may have",
    );
    // The examples are valid: with them, ark goes on to look for the cluster (and finds none).
    for file in ["database-restore.yaml", "cache-warmup.yaml"] {
        let path = example(file);
        let output = ark(
            None,
            &[
                "restore",
                "create",
                "--from-backup",
                "b",
                "--hooks-file",
                &path,
            ],
        );
        assert!(
            text(&output.stderr).contains("/nonexistent/kubeconfig"),
            "{file}: {}",
            text(&output.stderr)
        );
    }
    // From standard input.
    let mut child = std::process::Command::new(ARK)
        .args([
            "restore",
            "create",
            "--from-backup",
            "b",
            "--hooks-file",
            "-",
        ])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"resources:\n- postHooks: []\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        text(&output.stderr).contains("<stdin>:2:3: resources[0]: missing field `name`"),
        "{}",
        text(&output.stderr)
    );
}
