//! Velero's `--features=EnableAPIGroupVersions`, run by Velero's server and by ark's side by side
//! on the second cluster: a custom resource served at two versions is backed up by each (Velero's
//! CLI makes the backups) with the same copies of each version in the tarball; each server then
//! restores its own backup at the version the users' priorities choose; and, once the definition
//! no longer serves the backup's preferred version, ark's restores it at the version the cluster
//! still serves (which a restore without the feature cannot do: it sends the preferred version's
//! copy, and Velero's waits without end).

use std::collections::BTreeSet;
use std::time::Duration;

use ark_api::{Restore, RestorePhase};
use ark_tests::velero::{Side, VeleroServer, velero_ok};
use ark_tests::{ArkServer, Cluster, TestNamespace, fixtures, unique_name};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};

use crate::common::ARK;

const WAIT: Duration = Duration::from_secs(120);
const FEATURE: &str = "--features=EnableAPIGroupVersions";

/// The definition `gauges.<group>` (v1 preferred and stored, v1beta1 served too) and one Gauge
/// `g1` in the application's namespace, made through v1.
struct Ground {
    cluster: Cluster,
    client: Client,
    group: String,
    app: TestNamespace,
    /// The namespaces restored into.
    targets: Vec<ark_tests::DeletedOnDrop<Namespace>>,
    _definition: ark_tests::DeletedOnDrop<CustomResourceDefinition>,
}

impl Ground {
    async fn start() -> Ground {
        let cluster = Cluster::second();
        let client = cluster.client().await;
        let group = format!("{}.ark.test", unique_name("versions"));
        let name = format!("gauges.{group}");
        let definition = cluster.delete_on_drop::<CustomResourceDefinition>(&name);
        let version = |name: &str, storage: bool| {
            serde_json::json!({ "name": name, "served": true, "storage": storage,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } })
        };
        Api::<CustomResourceDefinition>::all(client.clone())
            .create(
                &PostParams::default(),
                &fixtures::object(serde_json::json!({
                    "metadata": { "name": name },
                    "spec": { "group": group, "scope": "Namespaced",
                        "names": { "plural": "gauges", "singular": "gauge", "kind": "Gauge" },
                        "versions": [version("v1", true), version("v1beta1", false)] },
                })),
            )
            .await
            .unwrap();
        let ground = Ground {
            app: cluster.namespace("versions-app").await,
            cluster,
            client,
            group,
            targets: Vec::new(),
            _definition: definition,
        };
        served_only(&ground.client, &ground.group, &["v1", "v1beta1"]).await;
        ground
            .gauges(&ground.app.name, "v1")
            .create(
                &PostParams::default(),
                &fixtures::object(serde_json::json!({
                    "apiVersion": format!("{}/v1", ground.group), "kind": "Gauge",
                    "metadata": { "name": "g1" }, "spec": { "max": 10 },
                })),
            )
            .await
            .unwrap();
        ground
    }

    fn gauges(&self, namespace: &str, version: &str) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            namespace,
            &ApiResource {
                group: self.group.clone(),
                version: version.into(),
                api_version: format!("{}/{version}", self.group),
                kind: "Gauge".into(),
                plural: "gauges".into(),
            },
        )
    }

    /// `velero backup create versions` of the application's namespace; the tarball's Gauge
    /// entries, the namespace shown as `{app}`.
    async fn backed_up(&self, side: &Side) -> BTreeSet<String> {
        let args = ["--include-namespaces", self.app.name.as_str()];
        let paths = side.backed_up(&self.cluster, "versions", &args).await;
        let folder = format!("resources/gauges.{}/", self.group);
        paths
            .into_iter()
            .filter_map(|path| path.strip_prefix(&folder).map(str::to_string))
            .map(|path| path.replace(&self.app.name, "{app}"))
            .collect()
    }

    /// `velero restore create NAME` of the side's backup into a namespace of its own: the
    /// restore's phase and whether the Gauge is back (read through v1beta1), and the restore's log
    /// (`velero restore logs`).
    async fn restored(
        &mut self,
        side: &Side,
        name: &str,
    ) -> ((Option<RestorePhase>, bool), String) {
        let target = unique_name("versions-restored");
        self.targets.push(self.cluster.delete_on_drop(&target));
        let mapping = format!("{}:{target}", self.app.name);
        let args = ["restore", "create", name, "--from-backup", "versions"];
        let mut create = args.to_vec();
        create.extend(["--namespace-mappings", &mapping, "--wait"]);
        velero_ok(&self.cluster, &side.ns.name, &create);
        let restore = ark_tests::ended::<Restore>(
            &self.client,
            &side.ns.name,
            name,
            |r| {
                (r.status.as_ref())
                    .and_then(|s| s.phase)
                    .is_some_and(|p| p.is_terminal())
            },
            WAIT,
        )
        .await;
        let gauge = self.gauges(&target, "v1beta1").get_opt("g1").await.unwrap();
        let log = velero_ok(&self.cluster, &side.ns.name, &["restore", "logs", name]);
        ((restore.status.and_then(|s| s.phase), gauge.is_some()), log)
    }
}

/// Waits until discovery serves the group at exactly `versions`.
async fn served_only(client: &Client, group: &str, versions: &[&str]) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Ok(served) = kube::discovery::group(client, group).await
            && served.versions().collect::<Vec<_>>() == versions
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{group} is not served at exactly {versions:?} after {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn velero_s_and_ark_s_servers_back_up_every_version_and_restore_the_one_velero_chooses() {
    let mut ground = Ground::start().await;
    let velero_side = Side::new(&ground.cluster, "versions", "velero").await;
    let ark_side = Side::new(&ground.cluster, "versions", "ark").await;
    let _velero = VeleroServer::start_with(&ground.cluster, &velero_side.ns.name, &[FEATURE]).await;
    let _ark = ArkServer::start_with(ARK, &ground.cluster, &ark_side.ns.name, &[FEATURE]);
    let sides = [&velero_side, &ark_side];
    for side in sides {
        ark_tests::location_available(&ground.client, &side.ns.name, "default", WAIT).await;
    }

    // Every version's copy, as Velero writes them.
    let velero_copies = ground.backed_up(&velero_side).await;
    let ark_copies = ground.backed_up(&ark_side).await;
    assert_eq!(ark_copies, velero_copies, "ark's (left), Velero's (right)");
    assert_eq!(
        ark_copies,
        BTreeSet::from(
            [
                "namespaces/{app}/g1.json",
                "v1-preferredversion/namespaces/{app}/g1.json",
                "v1beta1/namespaces/{app}/g1.json",
            ]
            .map(String::from)
        )
    );

    // The users' priorities: v1beta1 first, which both clusters serve and the backup holds.
    let priorities = format!("gauges.{}=v1beta1,v1", ground.group);
    for side in sides {
        Api::<ConfigMap>::namespaced(ground.client.clone(), &side.ns.name)
            .create(
                &PostParams::default(),
                &fixtures::object(serde_json::json!({
                    "metadata": { "name": "enableapigroupversions" },
                    "data": { "restoreResourcesVersionPriority": priorities },
                })),
            )
            .await
            .unwrap();
    }
    // Both versions work here: which one each read is in its log (Velero restores the backed-up
    // managedFields, so they do not show it).
    let restored = (Some(RestorePhase::Completed), true);
    let (velero_prioritised, velero_log) = ground.restored(&velero_side, "prioritised").await;
    let (ark_prioritised, ark_log) = ground.restored(&ark_side, "prioritised").await;
    assert_eq!(
        ark_prioritised, velero_prioritised,
        "ark's (left), Velero's (right)"
    );
    assert_eq!(ark_prioritised, restored, "{ark_log}");
    let velero_read = format!("Getting client for {}/v1beta1, Kind=Gauge", ground.group);
    assert!(velero_log.contains(&velero_read), "{velero_log}");
    let ark_read = format!(
        "gauges.{} restored at version v1beta1: the users' priorities",
        ground.group
    );
    assert!(ark_log.contains(&ark_read), "{ark_log}");
    for side in sides {
        Api::<ConfigMap>::namespaced(ground.client.clone(), &side.ns.name)
            .delete("enableapigroupversions", &DeleteParams::default())
            .await
            .unwrap();
    }

    // The definition stops serving v1, the backup's preferred version: ark reads the v1beta1
    // copy, the version this cluster prefers now. Velero v1.18.3 chooses the same but never ends:
    // its restore waits for an informer of the backup's preferred version, which is no longer
    // served ("waiting informer cache sync", then "Failed to watch ... v1, Resource=gauges" every
    // few seconds), so only ark's server restores here (docs/velero-compatibility.md).
    let stopped_v1 = serde_json::json!({ "spec": { "versions": [
        { "name": "v1", "served": false, "storage": false,
          "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } },
        { "name": "v1beta1", "served": true, "storage": true,
          "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } },
    ] } });
    Api::<CustomResourceDefinition>::all(ground.client.clone())
        .patch(
            &format!("gauges.{}", ground.group),
            &PatchParams::default(),
            &Patch::Merge(stopped_v1),
        )
        .await
        .unwrap();
    served_only(&ground.client, &ground.group, &["v1beta1"]).await;
    let (ark_only_served, ark_log) = ground.restored(&ark_side, "only-served").await;
    assert_eq!(ark_only_served, restored, "{ark_log}");
    let ark_read = format!(
        "gauges.{} restored at version v1beta1: this cluster's preferred version, held by the backup",
        ground.group
    );
    assert!(ark_log.contains(&ark_read), "{ark_log}");
}
