//! Restore tests on a schedule, on the real node, with the demo's database (`examples/shop.yaml`,
//! its dump restored by `examples/hooks/demo-database.yaml`): the server restores each new backup
//! into a throwaway namespace, runs the check, records the result and removes the namespace;
//! with the dump hook broken the test fails and says why; a server killed mid-test leaves no
//! namespace behind.

use crate::common;

use std::time::{Duration, Instant};

use ark_api::restore_test::{OF_LABEL, RESULT_ANNOTATION, TestResult};
use ark_api::verification::Outcome;
use ark_api::{Backup, Schedule};
use ark_tests::{Cluster, wait_for};
use common::ark_ok;
use common::node_agent::{WAIT, install, is_ready, kubectl};
use k8s_openapi::api::core::v1::{Event, Namespace, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};

/// How long a test may take to be picked up (a minute) and run (a restore with its volume data,
/// the dump loaded, the database started, the check).
const TESTED: Duration = Duration::from_secs(420);

/// The demo's shop in namespace `app`, with its database's rows.
fn shop(cluster: &Cluster, app: &str, dir: &std::path::Path) {
    let yaml = std::fs::read_to_string(ark_tests::checkout().join("examples/shop.yaml")).unwrap();
    let yaml = yaml
        .replace("  name: shop\n---", &format!("  name: {app}\n---"))
        .replace("namespace: shop", &format!("namespace: {app}"));
    let file = dir.join("shop.yaml");
    std::fs::write(&file, yaml).unwrap();
    kubectl(cluster, &["apply", "-f", file.to_str().unwrap()]);
}

/// `psql` in the shop's database pod.
fn psql(cluster: &Cluster, app: &str, args: &[&str]) -> String {
    let mut all = vec![
        "-n", app, "exec", "db", "--", "psql", "-q", "-h", "/tmp", "-U", "postgres",
    ];
    all.extend(args);
    kubectl(cluster, &all)
}

/// Backup `name` of the schedule `nightly`, Completed.
fn backed_up(cluster: &Cluster, ns: &str, name: &str) {
    let args = [
        "backup",
        "create",
        name,
        "--from-schedule",
        "nightly",
        "--wait",
        "--timeout",
        "3m",
    ];
    let made = ark_ok(cluster, ns, &args);
    assert!(made.contains("Completed"), "{made}");
}

/// The restore test's result on backup `name`, once there is one.
async fn tested(backups: &Api<Backup>, name: &str) -> TestResult {
    let deadline = Instant::now() + TESTED;
    loop {
        let backup = backups.get(name).await.unwrap();
        if let Some(result) = TestResult::of_backup(&backup) {
            return result.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "backup {name} was not restore-tested within {TESTED:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The namespaces labelled as the schedule's tests', once there are none (`present`: once there is
/// one, which is returned).
async fn throwaway(namespaces: &Api<Namespace>, of: &str, present: bool) -> Option<String> {
    let selector = ListParams::default().labels(&format!("{OF_LABEL}={of}"));
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let found = namespaces.list(&selector).await.unwrap().items;
        let live = found
            .iter()
            .find(|n| n.metadata.deletion_timestamp.is_none());
        match (present, live, found.is_empty()) {
            (true, Some(namespace), _) => return Some(namespace.name_any()),
            (false, _, true) => return None,
            _ => {}
        }
        let names: Vec<String> = found.iter().map(ResourceExt::name_any).collect();
        assert!(
            Instant::now() < deadline,
            "throwaway namespaces of {of}, present {present}: {names:?}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_s_restore_test_passes_then_fails_with_the_dump_hook_broken_and_leaves_no_namespace()
 {
    let cluster = Cluster::get();
    let client = cluster.client().await;
    let installed = install(&cluster).await;
    let ns = &installed.ns;
    let app = cluster.namespace("shop").await;
    let app = app.name.as_str();
    let dir = tempfile::tempdir().unwrap();
    shop(&cluster, app, dir.path());
    let pods: Api<Pod> = Api::namespaced(client.clone(), app);
    wait_for(pods.clone(), "db", is_ready(), WAIT)
        .await
        .unwrap();
    psql(&cluster, app, &["-c", "create database shop"]);
    psql(
        &cluster,
        app,
        &[
            "-d",
            "shop",
            "-c",
            "create table orders (id int primary key, item text); \
         insert into orders values (1, 'tea'), (2, 'scones'), (3, 'coffee');",
        ],
    );

    // The demo's restore hooks for the shop's namespace, but its exec hook (a restore whose hook
    // fails is PartiallyFailed, before any check); the check counts the orders.
    let hooks =
        std::fs::read_to_string(ark_tests::checkout().join("examples/hooks/demo-database.yaml"))
            .unwrap()
            .replace(
                "includedNamespaces: [shop]",
                &format!("includedNamespaces: [{app}]"),
            );
    let hooks = hooks.split("      - exec:").next().unwrap();
    let hooks_file = dir.path().join("hooks.yaml");
    std::fs::write(&hooks_file, hooks).unwrap();
    let test_file = dir.path().join("test.yaml");
    std::fs::write(&test_file, format!(
        "every: 1\nnamespaces: [{app}]\ntimeout: 6m\ncheck:\n  labelSelector: {{matchLabels: {{app: postgres}}}}\n  \
         container: postgres\n  command: [psql, -h, /tmp, -U, postgres, -d, shop, -Atc, 'select count(*) from orders']\n  \
         waitTimeout: 3m\n  expect: '3'\n")).unwrap();
    ark_ok(
        &cluster,
        ns,
        &[
            "schedule",
            "create",
            "nightly",
            "--schedule",
            "0 3 * * *",
            "--skip-immediately",
            "--include-namespaces",
            app,
            "--restore-test-file",
            test_file.to_str().unwrap(),
            "--restore-test-hooks-file",
            hooks_file.to_str().unwrap(),
        ],
    );
    let schedules: Api<Schedule> = Api::namespaced(client.clone(), ns);
    let of = schedules.get("nightly").await.unwrap().uid().unwrap();
    let backups: Api<Backup> = Api::namespaced(client.clone(), ns);
    let namespaces: Api<Namespace> = Api::all(client.clone());

    // The test passes: the restored database has the backed-up rows.
    backed_up(&cluster, ns, "nightly-1");
    let passed = tested(&backups, "nightly-1").await;
    assert_eq!(passed.outcome, Outcome::Passed, "{passed:#?}");
    assert_eq!(passed.output.as_deref().map(str::trim), Some("3"));
    assert_eq!(throwaway(&namespaces, &of, false).await, None);
    let restore = kubectl(
        &cluster,
        &[
            "-n",
            ns,
            "get",
            "restore",
            &passed.restore,
            "-o",
            "jsonpath={.spec.includeClusterResources} {.spec.existingResourcePolicy} {.status.phase}",
        ],
    );
    assert_eq!(restore, "false none Completed");

    // The dump hook broken (it writes an empty dump): the backup completes, the test fails and
    // says why.
    kubectl(
        &cluster,
        &[
            "-n",
            app,
            "annotate",
            "pod",
            "db",
            "--overwrite",
            r#"pre.hook.backup.velero.io/command=["sh", "-c", "echo > /dump/shop.sql"]"#,
        ],
    );
    backed_up(&cluster, ns, "nightly-2");
    let failed = tested(&backups, "nightly-2").await;
    assert_eq!(failed.outcome, Outcome::Failed, "{failed:#?}");
    assert_eq!(
        failed.reason.as_deref(),
        Some("the check in pod db failed: command exited with code 1"),
        "{failed:#?}"
    );
    let output = failed.output.clone().unwrap_or_default();
    assert!(
        output.contains(r#"relation "orders" does not exist"#),
        "{output}"
    );
    assert_eq!(throwaway(&namespaces, &of, false).await, None);
    let schedule = schedules.get("nightly").await.unwrap();
    let recorded: TestResult =
        serde_json::from_str(&schedule.annotations()[RESULT_ANNOTATION]).unwrap();
    assert_eq!(recorded, failed);
    let described = ark_ok(&cluster, ns, &["schedule", "describe", "nightly"]);
    for line in [
        "  Every:       every Completed backup\n".to_string(),
        format!(
            "  Last result:  Failed at {} (backup nightly-2, restore {}): the check in pod db failed: command exited with code 1\n",
            failed.ended, failed.restore
        ),
        format!(
            "    Passed at {} (backup nightly-1, restore {})\n",
            passed.ended, passed.restore
        ),
    ] {
        assert!(described.contains(&line), "{line:?} not in:\n{described}");
    }
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let warned = events
        .list(&ListParams::default().fields(&format!("involvedObject.uid={of}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .any(|e| {
            e.reason.as_deref() == Some("RestoreTestFailed")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("nightly-2"))
        });
    assert!(warned, "a Warning event RestoreTestFailed on the schedule");
    // Counted by the server, and the schedule's test failing.
    let scraped = ark_tests::scrape(&installed.server_metrics.to_string(), "/metrics");
    for line in [
        "ark_restore_test_success_total{schedule=\"nightly\"} 1\n",
        "ark_restore_test_failure_total{schedule=\"nightly\"} 1\n",
        "ark_restore_test_failing{schedule=\"nightly\"} 1\n",
    ] {
        assert!(scraped.contains(line), "{line} not in:\n{scraped}");
    }

    // A check that cannot run (no pod matches), and the server killed while it waits: the next
    // server removes the namespace, tests the backup again, and that test ends at its timeout.
    let hanging = format!(
        "every: 1\nnamespaces: [{app}]\ntimeout: 4m\ncheck: {{labelSelector: {{matchLabels: {{app: none}}}}, command: [true], waitTimeout: 20s}}\n"
    );
    let patch = serde_json::json!({ "metadata": { "annotations": { ark_api::restore_test::ANNOTATION: hanging } } });
    schedules
        .patch(
            "nightly",
            &Default::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    backed_up(&cluster, ns, "nightly-3");
    let first = throwaway(&namespaces, &of, true).await.unwrap();
    let pid = common::ark_pid("server", ns).expect("the server's process on this host");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(180);
    while namespaces.get_opt(&first).await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "namespace {first} left behind by the killed server"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let again = tested(&backups, "nightly-3").await;
    assert_eq!(again.outcome, Outcome::Failed, "{again:#?}");
    let reason = again.reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with("no pod of namespace ")
            && reason.ends_with(
                "was ready for the check within 20s: no pod matches the check's selector"
            ),
        "{reason}"
    );
    assert_eq!(throwaway(&namespaces, &of, false).await, None);
}
