//! Velero's filters, run by Velero's server and by ark's side by side on the second cluster
//! (Velero's CRDs): each backup and restore is made by Velero's CLI in both servers' namespaces
//! with the same flags, and what each took is compared item by item (the test's own objects; the
//! cluster holds other tests' too). A difference is a defect of ark's, or the one deliberate
//! difference docs/velero-defaults.md names (cluster-scoped objects of a backup without resource
//! filters).

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use ark_api::Restore;
use ark_tests::velero::{self, Side, VeleroServer, velero_ok};
use ark_tests::{ArkServer, Cluster, TestNamespace, fixtures, unique_name};
use common::ARK;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};

const WAIT: Duration = Duration::from_secs(120);

/// Velero's server and ark's on the second cluster, each over a location of its own made with
/// Velero's CLI, and the objects the filters choose among: namespace `a` (ConfigMaps `db`
/// `app=db`, `cache` `tier=cache`, `web` `app=web`; Secret `db` `app=db`), namespace `b`
/// (ConfigMap `db` `app=db`) and two ClusterRoles (`<tag>-db` `app=db,tier=cache`, `<tag>-web`
/// `app=web`).
struct Ground {
    cluster: Cluster,
    client: Client,
    velero: Side,
    ark: Side,
    a: TestNamespace,
    b: TestNamespace,
    /// The ClusterRoles' names start with it.
    tag: String,
    _roles: Vec<ark_tests::DeletedOnDrop<ClusterRole>>,
    _velero_server: VeleroServer,
    _ark_server: ArkServer,
}

impl Ground {
    async fn start() -> Ground {
        let cluster = Cluster::second();
        let client = cluster.client().await;
        let velero = Side::new(&cluster, "filters", "velero").await;
        let ark = Side::new(&cluster, "filters", "ark").await;
        let velero_server = VeleroServer::start(&cluster, &velero.ns.name).await;
        let ark_server = ArkServer::start(ARK, &cluster, &ark.ns.name);
        for side in [&velero, &ark] {
            ark_tests::location_available(&client, &side.ns.name, "default", WAIT).await;
        }
        let a = cluster.namespace("a").await;
        let b = cluster.namespace("b").await;
        let labelled = |name: &str, labels: serde_json::Value| serde_json::json!({ "metadata": { "name": name, "labels": labels } });
        for (ns, name, labels) in [
            (&a, "db", serde_json::json!({ "app": "db" })),
            (&a, "cache", serde_json::json!({ "tier": "cache" })),
            (&a, "web", serde_json::json!({ "app": "web" })),
            (&b, "db", serde_json::json!({ "app": "db" })),
        ] {
            Api::<ConfigMap>::namespaced(client.clone(), &ns.name)
                .create(
                    &PostParams::default(),
                    &fixtures::object(labelled(name, labels)),
                )
                .await
                .unwrap();
        }
        Api::<Secret>::namespaced(client.clone(), &a.name)
            .create(
                &PostParams::default(),
                &fixtures::object(labelled("db", serde_json::json!({ "app": "db" }))),
            )
            .await
            .unwrap();
        let tag = unique_name("filters");
        let mut roles = Vec::new();
        for (app, labels) in [
            ("db", serde_json::json!({ "app": "db", "tier": "cache" })),
            ("web", serde_json::json!({ "app": "web" })),
        ] {
            let name = format!("{tag}-{app}");
            roles.push(cluster.delete_on_drop::<ClusterRole>(&name));
            Api::<ClusterRole>::all(client.clone())
                .create(
                    &PostParams::default(),
                    &fixtures::object(labelled(&name, labels)),
                )
                .await
                .unwrap();
        }
        Ground {
            cluster,
            client,
            velero,
            ark,
            a,
            b,
            tag,
            _roles: roles,
            _velero_server: velero_server,
            _ark_server: ark_server,
        }
    }

    /// `velero backup create NAME ARGS --wait` against each server; what each backup holds of the test's
    /// objects, Velero's first.
    async fn backed_up_by_both(&self, name: &str, args: &[&str]) -> [BTreeSet<String>; 2] {
        let mut taken = Vec::new();
        for side in [&self.velero, &self.ark] {
            let paths = side.backed_up(&self.cluster, name, args).await;
            taken.push(self.ours(&paths));
        }
        [taken.remove(0), taken.remove(0)]
    }

    /// The tarball's items that are the test's objects, as `gr/namespace/name` (or `gr/name`),
    /// the preferred-version copies left aside.
    fn ours(&self, paths: &[String]) -> BTreeSet<String> {
        let namespaces = [&self.a.name, &self.b.name];
        paths
            .iter()
            .filter_map(|path| {
                let item = path.strip_prefix("resources/")?.strip_suffix(".json")?;
                let parts: Vec<&str> = item.split('/').collect();
                match parts.as_slice() {
                    [gr, "namespaces", ns, name] if namespaces.contains(&&ns.to_string()) => {
                        Some(format!("{gr}/{ns}/{name}"))
                    }
                    ["namespaces", "cluster", name] if namespaces.contains(&&name.to_string()) => {
                        Some(format!("namespaces/{name}"))
                    }
                    [gr, "cluster", name] if name.starts_with(&self.tag) => {
                        Some(format!("{gr}/{name}"))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    fn shown(&self, items: &[&str]) -> BTreeSet<String> {
        items
            .iter()
            .map(|item| {
                item.replace("{a}", &self.a.name)
                    .replace("{b}", &self.b.name)
                    .replace("{tag}", &self.tag)
            })
            .collect()
    }
}

/// `orLabelSelectors` (Velero's `--or-selector`) and the scoped resource filters, on backups of
/// two namespaces and of every namespace: Velero's server and ark's take the same items, the
/// Namespace objects and the ClusterRoles included; and a restore with `--or-selector` brings
/// back the same items under each.
#[tokio::test]
async fn velero_s_and_ark_s_servers_take_the_same_items_under_or_selectors_and_scoped_filters() {
    let ground = Ground::start().await;
    let (a, b) = (ground.a.name.clone(), ground.b.name.clone());
    let both = format!("{a},{b}");

    let or_selected = ground
        .backed_up_by_both(
            "or-selected",
            &[
                "--include-namespaces",
                &both,
                "--or-selector",
                "app=db or tier=cache",
            ],
        )
        .await;
    assert_eq!(
        or_selected[1], or_selected[0],
        "ark's items (left) are Velero's (right)"
    );
    assert_eq!(
        or_selected[1],
        ground.shown(&[
            "configmaps/{a}/cache",
            "configmaps/{a}/db",
            "configmaps/{b}/db",
            "namespaces/{a}",
            "namespaces/{b}",
            "secrets/{a}/db",
        ]),
        "neither took app=web, nor a cluster-scoped object of a backup of some namespaces"
    );

    let scoped = ground
        .backed_up_by_both(
            "scoped",
            &[
                "--include-namespaces",
                &a,
                "--exclude-namespace-scoped-resources",
                "secrets",
                "--include-cluster-scoped-resources",
                "clusterroles",
            ],
        )
        .await;
    assert_eq!(
        scoped[1], scoped[0],
        "ark's items (left) are Velero's (right)"
    );
    assert_eq!(
        scoped[1],
        ground.shown(&[
            "clusterroles.rbac.authorization.k8s.io/{tag}-db",
            "clusterroles.rbac.authorization.k8s.io/{tag}-web",
            "configmaps/{a}/cache",
            "configmaps/{a}/db",
            "configmaps/{a}/kube-root-ca.crt",
            "configmaps/{a}/web",
            "namespaces/{a}",
            "serviceaccounts/{a}/default",
        ]),
        "no Secret, and both ClusterRoles"
    );

    // No resource filter, every namespace: Velero v1.17 and later list no cluster-scoped resource
    // (they read a backup without filters as one with scoped filters, whose cluster-scoped
    // excludes they always fill with VolumeSnapshotContents). ark takes them, as Velero did
    // before: the one deliberate difference, documented in docs/velero-defaults.md.
    let roles = ground.shown(&[
        "clusterroles.rbac.authorization.k8s.io/{tag}-db",
        "clusterroles.rbac.authorization.k8s.io/{tag}-web",
    ]);
    let [velero_plain, ark_plain] = ground.backed_up_by_both("plain", &[]).await;
    assert!(velero_plain.is_disjoint(&roles), "{velero_plain:#?}");
    assert_eq!(
        ark_plain,
        velero_plain.union(&roles).cloned().collect(),
        "ark's items (left) are Velero's and the ClusterRoles (right)"
    );

    // Every namespace, selected by labels: only the Namespace objects of namespaces that hold a
    // selected item (vmware-tanzu/velero#7105); and, as above, the cluster-scoped objects the
    // selector takes (the ClusterRole `<tag>-db` is `tier=cache`), which Velero leaves out.
    let [velero_everywhere, ark_everywhere] = ground
        .backed_up_by_both("everywhere", &["--or-selector", "tier=cache or app=none"])
        .await;
    assert_eq!(
        velero_everywhere,
        ground.shown(&["configmaps/{a}/cache", "namespaces/{a}"]),
        "b holds no selected item: its Namespace object is not taken"
    );
    let selected_role = format!("clusterroles.rbac.authorization.k8s.io/{}-db", ground.tag);
    assert_eq!(
        ark_everywhere,
        velero_everywhere
            .iter()
            .cloned()
            .chain([selected_role])
            .collect(),
        "ark's items (left) are Velero's and the selected ClusterRole (right)"
    );

    // Each server restores its own backup into a namespace of its own, with two selectors.
    let mut restored = Vec::new();
    for side in [&ground.velero, &ground.ark] {
        let target = unique_name("filters-restored");
        let _gone = ground.cluster.delete_on_drop::<Namespace>(&target);
        let mapping = format!("{a}:{target}");
        velero_ok(
            &ground.cluster,
            &side.ns.name,
            &[
                "restore",
                "create",
                "selected",
                "--from-backup",
                "or-selected",
                "--include-namespaces",
                &a,
                "--namespace-mappings",
                &mapping,
                "--or-selector",
                "tier=cache or app=web",
                "--wait",
            ],
        );
        let restore = ark_tests::ended::<Restore>(
            &ground.client,
            &side.ns.name,
            "selected",
            |r| {
                r.status
                    .as_ref()
                    .and_then(|s| s.phase)
                    .is_some_and(|p| p.is_terminal())
            },
            WAIT,
        )
        .await;
        assert_eq!(
            restore.status.as_ref().and_then(|s| s.phase),
            Some(ark_api::RestorePhase::Completed),
            "restore in {}: {:#?}",
            side.ns.name,
            restore.status
        );
        let mut names: BTreeSet<String> = BTreeSet::new();
        let listed = ListParams::default().labels("velero.io/restore-name=selected");
        for config_map in Api::<ConfigMap>::namespaced(ground.client.clone(), &target)
            .list(&listed)
            .await
            .unwrap()
        {
            names.insert(format!("configmaps/{}", config_map.metadata.name.unwrap()));
        }
        for secret in Api::<Secret>::namespaced(ground.client.clone(), &target)
            .list(&listed)
            .await
            .unwrap()
        {
            names.insert(format!("secrets/{}", secret.metadata.name.unwrap()));
        }
        restored.push(names);
        velero::release_restores(&ground.client, &side.ns.name).await;
    }
    assert_eq!(
        restored[1], restored[0],
        "ark's restore (left) is Velero's (right)"
    );
    assert_eq!(
        restored[1],
        BTreeSet::from(["configmaps/cache".to_string()]),
        "the backup holds no app=web item, and db matches neither selector"
    );
}
