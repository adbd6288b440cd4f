use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where backups are kept: a bucket (and optional prefix) of an object-storage provider.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "BackupStorageLocation",
    namespaced,
    status = "BackupStorageLocationStatus",
    shortname = "bsl",
    printcolumn = r#"{"name":"Phase","type":"string","description":"Backup Storage Location status such as Available/Unavailable","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Last Validated","type":"date","description":"LastValidationTime is the last time the backup store location was validated","jsonPath":".status.lastValidationTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Default","type":"boolean","description":"Default backup storage location","jsonPath":".spec.default"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BackupStorageLocationSpec {
    /// `aws`, `gcp`, `azure` or `file` (Velero's plugins also accept `velero.io/aws` and so on).
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::string_map")]
    pub config: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<SecretKeySelector>,
    pub object_storage: ObjectStorageLocation,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub default: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_mode: Option<AccessMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_sync_period: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_frequency: Option<String>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStorageLocation {
    pub bucket: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// PEM bundle, base64-encoded as the API carries bytes (Velero: deprecated for `caCertRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::bytes")]
    pub ca_cert: Option<String>,
    /// The Secret key (in the location's namespace) holding the PEM bundle; before `caCert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert_ref: Option<SecretKeySelector>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeySelector {
    #[serde(default)]
    pub name: String,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum AccessMode {
    ReadOnly,
    ReadWrite,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStorageLocationStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupStorageLocationPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_synced_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_validation_time: Option<Time>,
    #[serde(flatten)]
    pub unmodelled: crate::Unmodelled,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum BackupStorageLocationPhase {
    Available,
    Unavailable,
}

impl BackupStorageLocation {
    pub fn is_read_only(&self) -> bool {
        self.spec.access_mode == Some(AccessMode::ReadOnly)
    }

    /// Why the server found the location unusable, when its last check did (None when it is
    /// Available or not checked yet).
    pub fn unavailable(&self) -> Option<String> {
        let status = self.status.as_ref()?;
        (status.phase == Some(BackupStorageLocationPhase::Unavailable))
            .then(|| status.message.clone().unwrap_or_default())
    }
}
