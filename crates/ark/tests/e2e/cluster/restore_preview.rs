//! `ark restore create --dry-run`: a restore's plan item by item, as the API server's dry run
//! answers (an admission policy's refusal named), the hooks it would run; nothing changed.

use crate::common;

use ark_tests::{ArkServer, Cluster};
use common::setup::Setup;
use common::{ARK, ark, text};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

/// A ValidatingAdmissionPolicy, bound to namespace `ns` only, refusing ConfigMaps with a key
/// `forbidden`; removed when dropped.
struct Refusing {
    client: kube::Client,
    name: String,
}

impl Refusing {
    async fn install(client: &kube::Client, ns: &str) -> Refusing {
        let name = format!("refuse-forbidden-{ns}");
        let policy = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": { "name": name },
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": { "resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"],
                }]},
                "validations": [{
                    "expression": "!has(object.data) || !('forbidden' in object.data)",
                    "message": "ConfigMaps may not hold a key forbidden",
                }],
            },
        });
        let binding = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": { "name": name },
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": { "namespaceSelector": { "matchLabels": {
                    "kubernetes.io/metadata.name": ns,
                }}},
            },
        });
        let create = PostParams::default();
        let policy = serde_json::from_value(policy).unwrap();
        Api::<ValidatingAdmissionPolicy>::all(client.clone())
            .create(&create, &policy)
            .await
            .unwrap();
        let binding = serde_json::from_value(binding).unwrap();
        Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
            .create(&create, &binding)
            .await
            .unwrap();
        let refusing = Refusing {
            client: client.clone(),
            name,
        };
        // A new policy is in force once the API server has compiled it: until it refuses a dry
        // run of what it forbids.
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let forbidden = serde_json::from_value(json!({
            "metadata": { "name": "probe" }, "data": { "forbidden": "yes" },
        }))
        .unwrap();
        let dry_run = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let deadline = std::time::Instant::now() + common::setup::WAIT;
        while config_maps.create(&dry_run, &forbidden).await.is_ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "the policy never came into force"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        refusing
    }
}

impl Drop for Refusing {
    fn drop(&mut self) {
        let (client, name) = (self.client.clone(), self.name.clone());
        // Dropped inside the test's runtime: the deletions are sent from a thread of their own.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let delete = DeleteParams::default();
                let bindings = Api::<ValidatingAdmissionPolicyBinding>::all(client.clone());
                let _ = bindings.delete(&name, &delete).await;
                let policies = Api::<ValidatingAdmissionPolicy>::all(client);
                let _ = policies.delete(&name, &delete).await;
            });
        })
        .join()
        .unwrap();
    }
}

async fn put(api: &Api<ConfigMap>, name: &str, data: Value) {
    let config_map = serde_json::from_value(json!({ "metadata": { "name": name }, "data": data }));
    api.create(&PostParams::default(), &config_map.unwrap())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_plans_each_item_names_what_admission_refuses_and_changes_nothing() {
    let setup = Setup::new(Cluster::get(), None).await;
    let (ns, app) = (setup.ns().to_string(), setup.app.name.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(setup.client.clone(), &app);
    let pods: Api<Pod> = Api::namespaced(setup.client.clone(), &app);
    put(&config_maps, "changed", json!({ "a": "1" })).await;
    put(&config_maps, "gone", json!({ "a": "1" })).await;
    put(&config_maps, "refused", json!({ "forbidden": "yes" })).await;
    // Never scheduled: a pod whose exec hook the restore would run once it runs.
    let pod = json!({
        "metadata": { "name": "web", "annotations": {
            "post.hook.restore.velero.io/container": "app",
            "post.hook.restore.velero.io/command": "[\"sh\", \"-c\", \"echo ready\"]",
        }},
        "spec": { "nodeSelector": { "type": "no-such-node" },
                  "containers": [{ "name": "app", "image": "busybox" }] },
    });
    let pod: Pod = serde_json::from_value(pod).unwrap();
    let pod = pods.create(&PostParams::default(), &pod).await.unwrap();
    let server = ArkServer::start(ARK, &setup.cluster, &ns);
    setup.backup("b1", None);
    drop(server);

    // After the backup: one ConfigMap changed, two and the pod gone, and a policy that refuses one
    // of those two.
    let patch = json!({ "data": { "a": "2" } });
    config_maps
        .patch(
            "changed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    for name in ["gone", "refused"] {
        config_maps
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    pods.delete("web", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    ark_tests::wait_deleted(pods.clone(), &pod, common::setup::WAIT).await;
    let _policy = Refusing::install(&setup.client, &app).await;
    let dry_run = |extra: &[&str]| {
        let mut args = vec![
            "restore",
            "create",
            "--from-backup",
            "b1",
            "--include-resources",
            "configmaps,pods",
            "--dry-run",
            "-n",
            &ns,
        ];
        args.extend(extra);
        ark(Some(&setup.cluster), &args)
    };

    let planned = dry_run(&[]);
    let row = |name: &str, action: &str, detail: &str| {
        let width = app.len().max("NAMESPACE".len());
        format!("configmaps  {app:<width$}  {name:<16}  {action:<8}  {detail}")
            .trim_end()
            .to_string()
    };
    let width = app.len().max("NAMESPACE".len());
    let table = [
        format!(
            "{:<10}  {:<width$}  {:<16}  {:<8}  DETAIL",
            "RESOURCE", "NAMESPACE", "NAME", "ACTION"
        ),
        row(
            "changed",
            "conflict",
            &format!(
                "fields: data.a; could not restore, ConfigMap {app}/changed already exists. \
                 Warning: the in-cluster version is different than the backed-up version"
            ),
        ),
        row("gone", "create", ""),
        row("kube-root-ca.crt", "skip", ""),
        row(
            "refused",
            "refused",
            &format!(
                "error restoring configmaps {app}/refused: configmaps \"refused\" is forbidden: \
                 ValidatingAdmissionPolicy \
                 'refuse-forbidden-{app}' with binding 'refuse-forbidden-{app}' denied request: \
                 ConfigMaps may not hold a key forbidden"
            ),
        ),
        row("settings", "skip", ""),
        format!("{:<10}  {app:<width$}  {:<16}  create", "pods", "web"),
    ];
    assert_eq!(
        (
            planned.status.code(),
            text(&planned.stdout),
            text(&planned.stderr)
        ),
        (
            Some(1),
            format!(
                "Restore of backup b1 (a dry run: nothing was changed):\n\n{}\n\n\
                 Hooks (1):\n  {app}/web: exec container app: [\"sh\", \"-c\", \"echo ready\"] \
                 (annotations)\n\n\
                 6 items: 2 create, 0 update, 2 skip, 1 conflict, 1 refused.\n",
                table.join("\n")
            ),
            format!(
                "note: the server's restore settings are not known (Deployment {ns}/ark not \
                 found): its defaults are assumed\n"
            )
        )
    );

    // Under the update policy, as JSON: the changed ConfigMap would be patched, field named.
    let planned = dry_run(&["--existing-resource-policy", "update", "-o", "json"]);
    assert_eq!(planned.status.code(), Some(1), "{}", text(&planned.stderr));
    let plan: Value = serde_json::from_slice(&planned.stdout).unwrap();
    assert_eq!(
        plan["items"][0],
        json!({ "resource": "configmaps", "namespace": app, "name": "changed",
                "action": "update", "fields": ["data.a"] })
    );

    // Into a namespace that does not exist: every item would be created, none could be asked.
    let mapping = format!("{app}:{app}-copy");
    let planned = dry_run(&["--namespace-mappings", &mapping, "-o", "yaml"]);
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned.stderr));
    let plan: Value = serde_saphyr::from_str(&text(&planned.stdout)).unwrap();
    let actions: Vec<(&str, &str)> = (plan["items"].as_array().unwrap().iter())
        .map(|item| {
            (
                item["name"].as_str().unwrap(),
                item["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("changed", "create"),
            ("gone", "create"),
            ("kube-root-ca.crt", "create"),
            ("refused", "create"),
            ("settings", "create"),
            ("web", "create"),
        ]
    );
    assert_eq!(
        plan["items"][0]["messages"],
        json!([format!(
            "not checked: the API server considers items of namespace {app}-copy only once the \
             restore creates it"
        )])
    );

    // Nothing was changed: no Restore, no namespace, the deleted items still gone, the changed one
    // as it was.
    assert_eq!(
        setup
            .restores()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        0
    );
    let namespaces: Api<Namespace> = Api::all(setup.client.clone());
    assert!(
        namespaces
            .get_opt(&format!("{app}-copy"))
            .await
            .unwrap()
            .is_none()
    );
    for name in ["gone", "refused"] {
        assert!(config_maps.get_opt(name).await.unwrap().is_none(), "{name}");
    }
    assert!(pods.get_opt("web").await.unwrap().is_none());
    let changed = config_maps.get("changed").await.unwrap();
    assert_eq!(changed.data.unwrap()["a"], "2");

    // A backup whose tarball is cut short: the preview names it, and plans nothing.
    let tarball = setup.store.layout.backup_contents("b1");
    let bytes = setup.store.get(&tarball).await.unwrap();
    let half = bytes.slice(..bytes.len() / 2);
    setup.store.put(&tarball, half).await.unwrap();
    let cut = dry_run(&[]);
    let stderr = text(&cut.stderr);
    assert_eq!(
        (cut.status.code(), text(&cut.stdout)),
        (Some(1), String::new())
    );
    assert!(
        stderr.contains(
            "error: cannot preview a restore of backup \"b1\": backup b1: the backup tarball is \
             not a valid gzip tar"
        ),
        "{stderr}"
    );
}
