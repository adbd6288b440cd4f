//! Velero's resource policies (a backup's `resourcePolicy`: a ConfigMap holding one YAML document of
//! version `v1`), read and matched as Velero v1.18's `internal/resourcepolicies` does: volume
//! policies, each conditions and an action, the first whose every condition holds deciding a
//! volume's method; and the `includeExcludePolicy` of scoped resource filters.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Volume};
use serde::Deserialize;

use super::quantity;

/// The only version Velero reads.
const VERSION: &str = "v1";

/// What a matched volume policy does with the volume's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VolumeAction {
    /// Neither snapshotted nor backed up by the node agent (its objects are still backed up).
    Skip,
    /// Backed up by the node agent, file by file.
    FsBackup,
    /// Snapshotted (CSI), whatever the backup's `snapshotVolumes` says.
    Snapshot,
    /// Left to an external plugin: Velero does neither, and ark runs no plugins.
    Custom,
}

impl VolumeAction {
    fn read(name: &str) -> Option<VolumeAction> {
        Some(match name {
            "skip" => VolumeAction::Skip,
            "fs-backup" => VolumeAction::FsBackup,
            "snapshot" => VolumeAction::Snapshot,
            "custom" => VolumeAction::Custom,
            _ => return None,
        })
    }
}

/// A policy document's scoped resource filters, combined with the backup's own.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IncludeExcludePolicy {
    #[serde(default)]
    pub included_cluster_scoped_resources: Vec<String>,
    #[serde(default)]
    pub excluded_cluster_scoped_resources: Vec<String>,
    #[serde(default)]
    pub included_namespace_scoped_resources: Vec<String>,
    #[serde(default)]
    pub excluded_namespace_scoped_resources: Vec<String>,
}

impl IncludeExcludePolicy {
    /// Velero's rules: no `*`, and nothing both included and excluded.
    fn validate(&self, errors: &mut Vec<String>) {
        let lists = [
            (
                &self.included_cluster_scoped_resources,
                &self.excluded_cluster_scoped_resources,
            ),
            (
                &self.included_namespace_scoped_resources,
                &self.excluded_namespace_scoped_resources,
            ),
        ];
        for (includes, excludes) in lists {
            if includes.iter().chain(excludes).any(|item| item == "*") {
                errors.push(
                    "includeExcludePolicy: cannot use '*' in includes or excludes filters in the policy"
                        .into(),
                );
            }
            for item in excludes.iter().filter(|item| includes.contains(item)) {
                errors.push(format!(
                    "includeExcludePolicy: excludes list cannot contain an item in the includes list: {item}"
                ));
            }
        }
    }
}

/// The document, field by field as Velero decodes it (unknown fields refused, as its decoder's
/// `KnownFields(true)` does).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    #[serde(default)]
    version: String,
    #[serde(default)]
    volume_policies: Vec<PolicyDocument>,
    #[serde(default)]
    include_exclude_policy: Option<IncludeExcludePolicy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyDocument {
    #[serde(default)]
    conditions: Option<Conditions>,
    #[serde(default)]
    action: ActionDocument,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionDocument {
    #[serde(default, rename = "type")]
    kind: String,
    /// Read for a custom action's plugin; ark runs none.
    #[serde(default, rename = "parameters")]
    _parameters: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Conditions {
    #[serde(default)]
    capacity: Option<String>,
    #[serde(default)]
    storage_class: Vec<String>,
    #[serde(default)]
    nfs: Option<Nfs>,
    #[serde(default)]
    csi: Option<CsiCondition>,
    #[serde(default)]
    volume_types: Vec<String>,
    #[serde(default)]
    pvc_labels: BTreeMap<String, String>,
    #[serde(default)]
    pvc_phase: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct Nfs {
    #[serde(default)]
    server: String,
    #[serde(default)]
    path: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CsiCondition {
    #[serde(default)]
    driver: String,
    #[serde(default)]
    volume_attributes: Option<BTreeMap<String, String>>,
}

/// A capacity range in bytes; a bound of zero is open (Velero's `"10Gi,"` and `",100Gi"`).
#[derive(Clone, Copy, Debug, Default)]
struct Capacity {
    lower: i64,
    upper: i64,
}

impl Capacity {
    /// Velero's `parseCapacity`: `lower,upper`, either side empty for zero.
    fn read(text: &str) -> Result<Capacity, String> {
        let text = if text.is_empty() { "," } else { text };
        let Some((lower, upper)) = text.split_once(',').filter(|(_, u)| !u.contains(',')) else {
            return Err(format!(
                "wrong format of capacity {text:?}: it is `lower,upper`"
            ));
        };
        let bound = |side: &str| -> Result<i64, String> {
            let side = side.trim();
            if side.is_empty() {
                return Ok(0);
            }
            quantity::bytes(side)
                .ok_or_else(|| format!("wrong format of capacity {side:?}: not a quantity"))
        };
        let capacity = Capacity {
            lower: bound(lower)?,
            upper: bound(upper)?,
        };
        if capacity.upper >= capacity.lower || capacity.upper == 0 {
            Ok(capacity)
        } else {
            Err(format!(
                "illegal values for capacity {text:?}: the lower bound is above the upper"
            ))
        }
    }

    /// Velero's `isInRange`, zero bounds and all.
    fn holds(self, size: i64) -> bool {
        match (self.lower, self.upper) {
            (0, 0) => size >= 0,
            (0, upper) => size <= upper,
            (lower, 0) => lower <= size,
            (lower, upper) => lower <= size && size <= upper,
        }
    }
}

/// One volume policy, read and checked.
#[derive(Clone, Debug)]
struct Rule {
    capacity: Capacity,
    storage_classes: Vec<String>,
    nfs: Option<Nfs>,
    csi: Option<CsiCondition>,
    volume_types: Vec<String>,
    pvc_labels: BTreeMap<String, String>,
    pvc_phases: Vec<String>,
    action: VolumeAction,
}

impl Rule {
    fn matches(&self, volume: &VolumeFacts) -> bool {
        self.capacity.holds(volume.capacity)
            && (self.storage_classes.is_empty()
                || self.storage_classes.contains(&volume.storage_class))
            && self.nfs_matches(volume)
            && self.csi_matches(volume)
            && (self.volume_types.is_empty()
                || volume
                    .volume_type
                    .is_some_and(|t| self.volume_types.iter().any(|w| w == t)))
            && (self.pvc_labels.is_empty()
                || volume.pvc_labels.as_ref().is_some_and(|labels| {
                    self.pvc_labels
                        .iter()
                        .all(|(key, value)| labels.get(key) == Some(value))
                }))
            && (self.pvc_phases.is_empty()
                || (!volume.pvc_phase.is_empty() && self.pvc_phases.contains(&volume.pvc_phase)))
    }

    fn nfs_matches(&self, volume: &VolumeFacts) -> bool {
        let Some(wanted) = &self.nfs else {
            return true;
        };
        let Some(nfs) = &volume.nfs else {
            return false;
        };
        (wanted.path.is_empty() || wanted.path == nfs.path)
            && (wanted.server.is_empty() || wanted.server == nfs.server)
    }

    fn csi_matches(&self, volume: &VolumeFacts) -> bool {
        let Some(wanted) = &self.csi else {
            return true;
        };
        let Some((driver, attributes)) = &volume.csi else {
            return false;
        };
        if wanted.driver.is_empty() {
            return true;
        }
        wanted.driver == *driver
            && wanted
                .volume_attributes
                .iter()
                .flatten()
                .all(|(key, value)| attributes.get(key) == Some(value))
    }
}

/// A backup's resource policies, read from its ConfigMap and checked.
#[derive(Clone, Debug, Default)]
pub struct ResourcePolicies {
    rules: Vec<Rule>,
    pub include_exclude: Option<IncludeExcludePolicy>,
}

impl ResourcePolicies {
    /// The policies a ConfigMap holds (its one data key), or every reason they cannot be read,
    /// each naming the policy and field (and the line, for YAML Velero would not decode).
    pub fn from_config_map(config_map: &ConfigMap) -> Result<ResourcePolicies, Vec<String>> {
        let data = config_map.data.clone().unwrap_or_default();
        let mut values = data.values();
        match (values.next(), values.next()) {
            (Some(text), None) => ResourcePolicies::read(text),
            _ => Err(vec![format!(
                "the ConfigMap must hold exactly one key, the policy document; it holds {}",
                data.len()
            )]),
        }
    }

    /// Policies from their YAML document.
    pub fn read(text: &str) -> Result<ResourcePolicies, Vec<String>> {
        let document: Document = serde_saphyr::from_str(text).map_err(|error| {
            vec![format!(
                "not a resource policy document: {}",
                error.without_snippet()
            )]
        })?;
        let mut errors = Vec::new();
        if document.version != VERSION {
            errors.push(format!(
                "version: {:?} is not the supported version {VERSION:?}",
                document.version
            ));
        }
        let rules = (document.volume_policies.into_iter().enumerate())
            .filter_map(|(index, policy)| {
                let at = format!("volumePolicies[{index}]");
                Rule::read(policy)
                    .map_err(|error| errors.push(format!("{at}.{error}")))
                    .ok()
            })
            .collect();
        if let Some(policy) = &document.include_exclude_policy {
            policy.validate(&mut errors);
        }
        if errors.is_empty() {
            Ok(ResourcePolicies {
                rules,
                include_exclude: document.include_exclude_policy,
            })
        } else {
            Err(errors)
        }
    }

    /// The action of the first policy whose every condition `volume` meets.
    pub fn action(&self, volume: &VolumeFacts) -> Option<VolumeAction> {
        self.rules
            .iter()
            .find(|rule| rule.matches(volume))
            .map(|rule| rule.action)
    }

    /// Whether some policy sends volumes to the node agent.
    pub fn backs_up_files(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.action == VolumeAction::FsBackup)
    }
}

impl Rule {
    fn read(policy: PolicyDocument) -> Result<Rule, String> {
        let Some(action) = VolumeAction::read(&policy.action.kind) else {
            return Err(format!(
                "action.type: {:?} is not an action (skip, fs-backup, snapshot or custom)",
                policy.action.kind
            ));
        };
        let conditions = policy.conditions.unwrap_or_default();
        let capacity = Capacity::read(conditions.capacity.as_deref().unwrap_or_default())
            .map_err(|error| format!("conditions.capacity: {error}"))?;
        if let Some(csi) = &conditions.csi
            && csi.driver.is_empty()
            && csi.volume_attributes.is_some()
        {
            return Err(
                "conditions.csi: driver should not be empty when filtering by volume attributes"
                    .into(),
            );
        }
        Ok(Rule {
            capacity,
            storage_classes: conditions.storage_class,
            nfs: conditions.nfs,
            csi: conditions.csi,
            volume_types: conditions.volume_types,
            pvc_labels: conditions.pvc_labels,
            pvc_phases: conditions.pvc_phase,
            action,
        })
    }
}

/// What the conditions look at in a volume: its persistent volume (or the pod's own volume) and
/// its claim, as Velero's `structuredVolume` holds them.
#[derive(Clone, Debug, Default)]
pub struct VolumeFacts {
    /// Bytes; zero for a pod's own volume.
    capacity: i64,
    storage_class: String,
    nfs: Option<Nfs>,
    csi: Option<(String, BTreeMap<String, String>)>,
    volume_type: Option<&'static str>,
    /// The claim's labels, when it has any.
    pvc_labels: Option<BTreeMap<String, String>>,
    pvc_phase: String,
}

impl VolumeFacts {
    /// A claimed volume: the persistent volume when there is one (an unbound claim has none),
    /// and its claim.
    pub fn of_claim(volume: Option<&PersistentVolume>, claim: &PersistentVolumeClaim) -> Self {
        let mut facts = VolumeFacts::default();
        if let Some(spec) = volume.and_then(|v| v.spec.as_ref()) {
            facts.capacity = (spec.capacity.as_ref())
                .and_then(|c| c.get("storage"))
                .and_then(|q| quantity::bytes(&q.0))
                .unwrap_or(0);
            facts.storage_class = spec.storage_class_name.clone().unwrap_or_default();
            facts.nfs = spec.nfs.as_ref().map(|nfs| Nfs {
                server: nfs.server.clone(),
                path: nfs.path.clone(),
            });
            facts.csi = spec.csi.as_ref().map(|csi| {
                (
                    csi.driver.clone(),
                    csi.volume_attributes.clone().unwrap_or_default(),
                )
            });
            facts.volume_type = persistent_volume_type(volume);
        }
        facts.with_claim(claim)
    }

    /// A pod's own volume (not a claim's): its inline NFS or CSI source and type.
    pub fn of_pod_volume(volume: &Volume) -> Self {
        VolumeFacts {
            nfs: volume.nfs.as_ref().map(|nfs| Nfs {
                server: nfs.server.clone(),
                path: nfs.path.clone(),
            }),
            csi: volume.csi.as_ref().map(|csi| {
                (
                    csi.driver.clone(),
                    csi.volume_attributes.clone().unwrap_or_default(),
                )
            }),
            volume_type: pod_volume_type(volume),
            ..Default::default()
        }
    }

    fn with_claim(mut self, claim: &PersistentVolumeClaim) -> Self {
        let labels = claim.metadata.labels.clone().unwrap_or_default();
        self.pvc_labels = (!labels.is_empty()).then_some(labels);
        self.pvc_phase = (claim.status.as_ref())
            .and_then(|s| s.phase.clone())
            .unwrap_or_default();
        self
    }
}

/// A persistent volume's type by its source, in Velero's order (`getVolumeTypeFromPV`).
fn persistent_volume_type(volume: Option<&PersistentVolume>) -> Option<&'static str> {
    let spec = volume?.spec.as_ref()?;
    let sources = [
        (
            spec.aws_elastic_block_store.is_some(),
            "awsElasticBlockStore",
        ),
        (spec.azure_disk.is_some(), "azureDisk"),
        (spec.azure_file.is_some(), "azureFile"),
        (spec.cephfs.is_some(), "cephfs"),
        (spec.cinder.is_some(), "cinder"),
        (spec.csi.is_some(), "csi"),
        (spec.fc.is_some(), "fc"),
        (spec.flex_volume.is_some(), "flexVolume"),
        (spec.gce_persistent_disk.is_some(), "gcePersistentDisk"),
        (spec.glusterfs.is_some(), "glusterfs"),
        (spec.host_path.is_some(), "hostPath"),
        (spec.iscsi.is_some(), "iscsi"),
        (spec.local.is_some(), "local"),
        (spec.nfs.is_some(), "nfs"),
        (
            spec.photon_persistent_disk.is_some(),
            "photonPersistentDisk",
        ),
        (spec.portworx_volume.is_some(), "portworxVolume"),
        (spec.quobyte.is_some(), "quobyte"),
        (spec.rbd.is_some(), "rbd"),
        (spec.scale_io.is_some(), "scaleIO"),
        (spec.storageos.is_some(), "storageOS"),
        (spec.vsphere_volume.is_some(), "vsphereVolume"),
    ];
    sources
        .into_iter()
        .find(|(set, _)| *set)
        .map(|(_, name)| name)
}

/// A pod volume's type by its source, in Velero's order (`getVolumeTypeFromVolume`).
fn pod_volume_type(volume: &Volume) -> Option<&'static str> {
    let sources = [
        (
            volume.aws_elastic_block_store.is_some(),
            "awsElasticBlockStore",
        ),
        (volume.azure_disk.is_some(), "azureDisk"),
        (volume.azure_file.is_some(), "azureFile"),
        (volume.cephfs.is_some(), "cephfs"),
        (volume.cinder.is_some(), "cinder"),
        (volume.csi.is_some(), "csi"),
        (volume.fc.is_some(), "fc"),
        (volume.flex_volume.is_some(), "flexVolume"),
        (volume.gce_persistent_disk.is_some(), "gcePersistentDisk"),
        (volume.git_repo.is_some(), "gitRepo"),
        (volume.glusterfs.is_some(), "glusterfs"),
        (volume.iscsi.is_some(), "iscsi"),
        (volume.nfs.is_some(), "nfs"),
        (volume.secret.is_some(), "secret"),
        (volume.rbd.is_some(), "rbd"),
        (volume.downward_api.is_some(), "downwardAPI"),
        (volume.config_map.is_some(), "configMap"),
        (volume.projected.is_some(), "projected"),
        (volume.ephemeral.is_some(), "ephemeral"),
        (
            volume.photon_persistent_disk.is_some(),
            "photonPersistentDisk",
        ),
        (volume.portworx_volume.is_some(), "portworxVolume"),
        (volume.quobyte.is_some(), "quobyte"),
        (volume.scale_io.is_some(), "scaleIO"),
        (volume.storageos.is_some(), "storageOS"),
        (volume.vsphere_volume.is_some(), "vsphereVolume"),
        (volume.host_path.is_some(), "hostPath"),
        (volume.empty_dir.is_some(), "emptyDir"),
    ];
    sources
        .into_iter()
        .find(|(set, _)| *set)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        CSIPersistentVolumeSource, EmptyDirVolumeSource, NFSVolumeSource,
        PersistentVolumeClaimStatus, PersistentVolumeSpec,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn csi_volume(size: &str, class: &str, driver: &str) -> PersistentVolume {
        PersistentVolume {
            spec: Some(PersistentVolumeSpec {
                capacity: Some(BTreeMap::from([("storage".into(), Quantity(size.into()))])),
                storage_class_name: Some(class.into()),
                csi: Some(CSIPersistentVolumeSource {
                    driver: driver.into(),
                    volume_attributes: Some(BTreeMap::from([("tier".into(), "fast".into())])),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn claim(labels: &[(&str, &str)], phase: &str) -> PersistentVolumeClaim {
        let mut claim = PersistentVolumeClaim::default();
        claim.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        claim.status = Some(PersistentVolumeClaimStatus {
            phase: Some(phase.into()),
            ..Default::default()
        });
        claim
    }

    const POLICIES: &str = "
version: v1
volumePolicies:
- conditions:
    pvcLabels: {backup: files}
  action: {type: fs-backup}
- conditions:
    capacity: '0,10Gi'
    storageClass: [fast, standard]
    csi: {driver: hostpath.csi.k8s.io, volumeAttributes: {tier: fast}}
  action: {type: snapshot}
- conditions:
    nfs: {server: nfs.example}
  action: {type: skip}
- conditions:
    volumeTypes: [emptyDir]
    pvcPhase: [Bound]
  action: {type: custom, parameters: {driver: theirs, copies: 2}}
";

    #[test]
    fn the_first_policy_whose_every_condition_holds_decides() {
        let policies = ResourcePolicies::read(POLICIES).unwrap();
        let volume = csi_volume("1Gi", "fast", "hostpath.csi.k8s.io");
        let facts = |labels, size: &str, class| {
            VolumeFacts::of_claim(
                Some(&csi_volume(size, class, "hostpath.csi.k8s.io")),
                &claim(labels, "Bound"),
            )
        };
        assert_eq!(
            policies.action(&VolumeFacts::of_claim(
                Some(&volume),
                &claim(&[("backup", "files")], "Bound")
            )),
            Some(VolumeAction::FsBackup)
        );
        assert_eq!(
            policies.action(&facts(&[], "1Gi", "fast")),
            Some(VolumeAction::Snapshot)
        );
        assert_eq!(
            policies.action(&facts(&[], "10Gi", "standard")),
            Some(VolumeAction::Snapshot)
        );
        assert_eq!(
            policies.action(&facts(&[], "11Gi", "fast")),
            None,
            "over capacity"
        );
        assert_eq!(
            policies.action(&facts(&[], "1Gi", "slow")),
            None,
            "another class"
        );
        let mut other_tier = csi_volume("1Gi", "fast", "hostpath.csi.k8s.io");
        other_tier
            .spec
            .as_mut()
            .unwrap()
            .csi
            .as_mut()
            .unwrap()
            .volume_attributes = None;
        assert_eq!(
            policies.action(&VolumeFacts::of_claim(
                Some(&other_tier),
                &claim(&[], "Bound")
            )),
            None,
            "the attributes the policy names are missing"
        );
        let nfs = Volume {
            name: "shared".into(),
            nfs: Some(NFSVolumeSource {
                server: "nfs.example".into(),
                path: "/exports/a".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            policies.action(&VolumeFacts::of_pod_volume(&nfs)),
            Some(VolumeAction::Skip)
        );
        let scratch = Volume {
            name: "scratch".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        };
        assert_eq!(
            policies.action(&VolumeFacts::of_pod_volume(&scratch)),
            None,
            "a pod's own volume has no claim phase"
        );
        assert!(policies.backs_up_files());
    }

    #[test]
    fn capacity_bounds_of_zero_are_open_as_in_velero() {
        let range = |text| Capacity::read(text).unwrap();
        assert!(range("").holds(0) && range("").holds(1 << 40));
        assert!(range(",10Gi").holds(10 << 30) && !range(",10Gi").holds((10 << 30) + 1));
        assert!(range("10Gi,").holds(1 << 40) && !range("10Gi,").holds(1 << 30));
        assert!(range("1Gi,2Gi").holds(3 << 29) && !range("1Gi,2Gi").holds(1));
        assert!(
            !range("1Gi,2Gi").holds(0),
            "a pod's own volume has no capacity"
        );
    }

    #[test]
    fn bad_policies_are_refused_naming_the_policy_and_field() {
        let errors = |text| ResourcePolicies::read(text).unwrap_err();
        assert_eq!(
            errors("version: v2\nvolumePolicies: []"),
            [r#"version: "v2" is not the supported version "v1""#]
        );
        assert_eq!(
            errors(
                "version: v1\nvolumePolicies:\n- action: {type: copy}\n- conditions: {capacity: '2Gi,1Gi'}\n  action: {type: skip}\n"
            ),
            [
                r#"volumePolicies[0].action.type: "copy" is not an action (skip, fs-backup, snapshot or custom)"#,
                r#"volumePolicies[1].conditions.capacity: illegal values for capacity "2Gi,1Gi": the lower bound is above the upper"#,
            ]
        );
        assert_eq!(
            errors(
                "version: v1\nvolumePolicies:\n- conditions: {csi: {volumeAttributes: {a: b}}}\n  action: {type: skip}\n"
            ),
            [
                "volumePolicies[0].conditions.csi: driver should not be empty when filtering by volume attributes"
            ]
        );
        assert_eq!(
            errors(
                "version: v1\nvolumePolicies:\n- conditions: {capacity: 'ten,'}\n  action: {type: skip}\n"
            ),
            [
                r#"volumePolicies[0].conditions.capacity: wrong format of capacity "ten": not a quantity"#
            ]
        );
        assert_eq!(
            errors(
                "version: v1\nincludeExcludePolicy:\n  includedClusterScopedResources: ['*']\n  excludedNamespaceScopedResources: [pods]\n  includedNamespaceScopedResources: [pods]\n"
            ),
            [
                "includeExcludePolicy: cannot use '*' in includes or excludes filters in the policy",
                "includeExcludePolicy: excludes list cannot contain an item in the includes list: pods",
            ]
        );
        // Unknown fields and wrong types are refused with their line, as Velero's strict decoder does.
        let unknown = errors(
            "version: v1\nvolumePolicies:\n- conditions:\n    sizes: '1Gi'\n  action: {type: skip}\n",
        );
        assert!(
            unknown[0].contains("sizes") && unknown[0].contains("line 4"),
            "{unknown:?}"
        );
        let labels = errors(
            "version: v1\nvolumePolicies:\n- conditions:\n    pvcLabels: [a, b]\n  action: {type: skip}\n",
        );
        assert!(labels[0].contains("line 4"), "{labels:?}");
    }

    #[test]
    fn a_config_map_holds_one_document() {
        let mut map = ConfigMap::default();
        assert_eq!(
            ResourcePolicies::from_config_map(&map).unwrap_err(),
            ["the ConfigMap must hold exactly one key, the policy document; it holds 0"]
        );
        map.data = Some(BTreeMap::from([("policy.yaml".into(), POLICIES.into())]));
        assert!(ResourcePolicies::from_config_map(&map).is_ok());
    }
}
