use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A request for a signed URL to one file of a backup or restore in the bucket (its log, results,
/// resource list, ...): how Velero's CLI reads the bucket without holding its credentials
/// (`velero backup logs`, `velero backup describe --details`). The server answers with the URL.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "DownloadRequest",
    namespaced,
    status = "DownloadRequestStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct DownloadRequestSpec {
    pub target: DownloadTarget,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadTarget {
    /// One of Velero's DownloadTargetKinds: `BackupLog`, `BackupContents`, `RestoreResults`, ...
    pub kind: String,
    /// The backup's or the restore's name.
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadRequestStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<DownloadRequestPhase>,
    #[serde(
        default,
        rename = "downloadURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub download_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Time>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum DownloadRequestPhase {
    New,
    Processed,
}
