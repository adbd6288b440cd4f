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
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
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

    /// The fields ark does not act on (Velero's others: load concurrency, pod resources...).
    pub fn not_acted_on(&self) -> Vec<String> {
        let backup_pvc = (self.backup_pvc.iter()).flat_map(|(class, pvc)| {
            pvc.unmodelled
                .keys()
                .map(move |k| format!("backupPVC.{class}.{k}"))
        });
        self.unmodelled.keys().cloned().chain(backup_pvc).collect()
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
        assert_eq!(
            configs.not_acted_on(),
            ["loadConcurrency", "backupPVC.ssd.spcNoRelabeling"]
        );
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
}
