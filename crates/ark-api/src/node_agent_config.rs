//! The node agent's settings, as Velero reads them from the ConfigMap its node agent is started
//! with (`--node-agent-configmap`, `pkg/types/node_agent.go`): one JSON document, the ConfigMap's
//! only value. Field for field Velero's; those ark does not act on are kept, to be named.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeAgentConfigs {
    /// Where the pods that expose volumes for data movement may run: the first entry whose
    /// `storageClass` is the volume's, else the first without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_affinity: Vec<LoadAffinity>,
    /// The claim made from a snapshot for its data to be moved, by the class of the claim the
    /// snapshot was cut from.
    #[serde(
        default,
        rename = "backupPVC",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub backup_pvc: BTreeMap<String, BackupPvc>,
    #[serde(
        default,
        rename = "restorePVC",
        skip_serializing_if = "Option::is_none"
    )]
    pub restore_pvc: Option<RestorePvc>,
    /// How many volumes a node's agent moves at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_concurrency: Option<LoadConcurrency>,
    /// The resources of the pods that expose volumes for data movement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_resources: Option<PodResources>,
    /// Their priority class (used only when it exists, as under Velero).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// Labels and annotations put on them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// Quantities, as Velero reads them (`kube.ParseResourceRequirements`): the four of CPU and
/// memory must each be one, `0` leaves one unset, and a request may not exceed its limit.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodResources {
    #[serde(default)]
    pub cpu_request: String,
    #[serde(default)]
    pub cpu_limit: String,
    #[serde(default)]
    pub memory_request: String,
    #[serde(default)]
    pub memory_limit: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ephemeral_storage_request: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ephemeral_storage_limit: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoadConcurrency {
    /// The number for nodes no rule of `perNodeConfig` matches; below 1: the agent's default.
    #[serde(default)]
    pub global_config: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_node_config: Vec<RuledConfig>,
    /// How many requests of the whole cluster may have a volume exposed, or be exposing one, at
    /// once (all agents together); below 1: no bound.
    #[serde(default)]
    pub prepare_queue_length: i64,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

/// A number for the nodes a selector matches.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuledConfig {
    pub node_selector: LabelSelector,
    #[serde(default)]
    pub number: i64,
}

/// How many volumes a node's agent moves at once, and the rules passed over to find it.
#[derive(Debug, PartialEq)]
pub struct DataPaths {
    pub number: usize,
    /// Why each rule of `perNodeConfig` that could not be used was passed over.
    pub passed_over: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoadAffinity {
    pub node_selector: LabelSelector,
    /// The class of the volumes it is for; none: any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub storage_class: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupPvc {
    /// The class of the claim made from the snapshot, instead of the source claim's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub storage_class: String,
    /// The claim is `ReadOnlyMany` and mounted read-only (a class that can provision it from a
    /// snapshot faster, or at all).
    #[serde(default)]
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RestorePvc {
    /// The volume of a restored claim whose class binds on first use is written at once, on a
    /// node the agents run on, rather than on the node its pod is scheduled to.
    #[serde(default)]
    pub ignore_delay_binding: bool,
}

impl NodeAgentConfigs {
    /// Parses the ConfigMap's value; the error names where it does not fit.
    pub fn parse(json: &str) -> Result<Self, String> {
        let deserializer = &mut serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(deserializer).map_err(|error| {
            let path = error.path().to_string();
            match path.as_str() {
                "." => error.inner().to_string(),
                _ => format!("{path}: {}", error.inner()),
            }
        })
    }

    /// The fields ark does not act on (Velero's others: the prepare queue, the cache claim...).
    pub fn not_acted_on(&self) -> Vec<String> {
        let backup_pvc = (self.backup_pvc.iter()).flat_map(|(class, pvc)| {
            pvc.unmodelled
                .keys()
                .map(move |k| format!("backupPVC.{class}.{k}"))
        });
        let load_concurrency = (self.load_concurrency.iter())
            .flat_map(|l| l.unmodelled.keys().map(|k| format!("loadConcurrency.{k}")));
        (self.unmodelled.keys().cloned())
            .chain(backup_pvc)
            .chain(load_concurrency)
            .collect()
    }

    /// How many volume backups, restores and data movements the agent of a node with `labels`
    /// carries out at once, as Velero's node agent reads `loadConcurrency`
    /// (`getDataPathConcurrentNum`): the smallest number of the `perNodeConfig` rules that match
    /// the node, else `globalConfig`, else `default`. Rules that cannot be used are passed over.
    pub fn data_paths(&self, labels: &BTreeMap<String, String>, default: usize) -> DataPaths {
        let mut passed_over = Vec::new();
        let Some(load) = &self.load_concurrency else {
            return DataPaths {
                number: default,
                passed_over,
            };
        };
        let global = usize::try_from(load.global_config)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(default);
        let mut smallest: Option<usize> = None;
        for (i, rule) in load.per_node_config.iter().enumerate() {
            let selector = match kube::core::Selector::try_from(rule.node_selector.clone()) {
                Ok(selector) => selector,
                Err(error) => {
                    passed_over.push(format!("perNodeConfig[{i}]: {error}"));
                    continue;
                }
            };
            let Some(number) = usize::try_from(rule.number).ok().filter(|n| *n > 0) else {
                passed_over.push(format!(
                    "perNodeConfig[{i}]: number {} is not a positive number",
                    rule.number
                ));
                continue;
            };
            if kube::core::SelectorExt::matches(&selector, labels) {
                smallest = Some(smallest.map_or(number, |s| s.min(number)));
            }
        }
        DataPaths {
            number: smallest.unwrap_or(global),
            passed_over,
        }
    }

    /// `loadConcurrency.prepareQueueLength`, when it bounds anything.
    pub fn prepare_queue_length(&self) -> Option<usize> {
        let length = self.load_concurrency.as_ref()?.prepare_queue_length;
        usize::try_from(length).ok().filter(|n| *n > 0)
    }

    /// The node selection of the pods that expose volumes of class `storage_class`.
    pub fn affinity_for(&self, storage_class: &str) -> Option<&LabelSelector> {
        let of_class = self
            .load_affinity
            .iter()
            .find(|a| a.storage_class == storage_class);
        let any = || {
            self.load_affinity
                .iter()
                .find(|a| a.storage_class.is_empty())
        };
        of_class.or_else(any).map(|a| &a.node_selector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn velero_s_settings_are_read_and_those_ark_does_not_act_on_named() {
        let configs = NodeAgentConfigs::parse(
            r#"{
                "loadConcurrency": { "globalConfig": 2 },
                "loadAffinity": [
                    { "nodeSelector": { "matchLabels": { "pool": "movers" } } },
                    { "nodeSelector": { "matchLabels": { "pool": "fast" } }, "storageClass": "ssd" }
                ],
                "backupPVC": { "ssd": { "storageClass": "ssd-snap", "readOnly": true, "spcNoRelabeling": true } },
                "restorePVC": { "ignoreDelayBinding": true }
            }"#,
        )
        .unwrap();
        let pool = |selector: Option<&LabelSelector>| {
            selector.and_then(|s| s.match_labels.as_ref()?.get("pool").cloned())
        };
        assert_eq!(pool(configs.affinity_for("ssd")).as_deref(), Some("fast"));
        assert_eq!(pool(configs.affinity_for("hdd")).as_deref(), Some("movers"));
        assert!(configs.backup_pvc["ssd"].read_only);
        assert_eq!(
            configs.restore_pvc,
            Some(RestorePvc {
                ignore_delay_binding: true
            })
        );
        assert_eq!(configs.not_acted_on(), ["backupPVC.ssd.spcNoRelabeling"]);
        let error = NodeAgentConfigs::parse(r#"{ "backupPVC": { "ssd": { "readOnly": "yes" } } }"#)
            .unwrap_err();
        assert!(
            error.starts_with("backupPVC.ssd.readOnly: invalid type"),
            "{error}"
        );
        assert_eq!(
            NodeAgentConfigs::parse("{}").unwrap(),
            NodeAgentConfigs::default()
        );
    }

    fn rules(json: &str) -> NodeAgentConfigs {
        NodeAgentConfigs::parse(&format!(r#"{{ "loadConcurrency": {json} }}"#)).unwrap()
    }

    #[test]
    fn a_node_moves_as_many_volumes_at_once_as_the_smallest_rule_matching_it_says() {
        let node = BTreeMap::from([
            ("pool".to_string(), "movers".to_string()),
            ("zone".to_string(), "a".to_string()),
        ]);
        let numbers = |json: &str| rules(json).data_paths(&node, 1);
        let two_rules = r#"{ "globalConfig": 4, "perNodeConfig": [
            { "nodeSelector": { "matchLabels": { "pool": "movers" } }, "number": 3 },
            { "nodeSelector": { "matchLabels": { "zone": "a" } }, "number": 2 },
            { "nodeSelector": { "matchLabels": { "zone": "b" } }, "number": 1 } ] }"#;
        assert_eq!(numbers(two_rules).number, 2);
        let none_match = r#"{ "globalConfig": 4, "perNodeConfig": [
            { "nodeSelector": { "matchLabels": { "zone": "b" } }, "number": 1 } ] }"#;
        assert_eq!(numbers(none_match).number, 4);
        // Below 1, the global number is the agent's default.
        assert_eq!(numbers(r#"{ "globalConfig": 0 }"#).number, 1);
        assert_eq!(numbers(r#"{ "globalConfig": -2 }"#).number, 1);
        let unusable = r#"{ "globalConfig": 5, "perNodeConfig": [
            { "nodeSelector": { "matchLabels": { "pool": "movers" } }, "number": 0 },
            { "nodeSelector": { "matchExpressions": [{ "key": "zone", "operator": "Sideways" }] }, "number": 1 } ] }"#;
        let paths = numbers(unusable);
        assert_eq!(paths.number, 5);
        assert_eq!(paths.passed_over.len(), 2, "{:?}", paths.passed_over);
        assert!(paths.passed_over[0].starts_with("perNodeConfig[0]: number 0"));
        assert!(paths.passed_over[1].starts_with("perNodeConfig[1]: "));
        assert_eq!(NodeAgentConfigs::default().data_paths(&node, 3).number, 3);
        let queued = rules(r#"{ "globalConfig": 2, "prepareQueueLength": 5 }"#);
        assert_eq!(queued.prepare_queue_length(), Some(5));
        assert!(queued.not_acted_on().is_empty());
        assert_eq!(
            rules(r#"{ "prepareQueueLength": 0 }"#).prepare_queue_length(),
            None
        );
        assert_eq!(NodeAgentConfigs::default().prepare_queue_length(), None);
    }
}
