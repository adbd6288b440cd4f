use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A question to whichever server runs in the namespace: "which version are you?" (`velero
/// version`, `ark version`). The server answers in the status.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "ServerStatusRequest",
    namespaced,
    status = "ServerStatusRequestStatus"
)]
pub struct ServerStatusRequestSpec {}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatusRequestStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ServerStatusRequestPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processed_timestamp: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ServerStatusRequestPhase {
    New,
    Processed,
}

/// How ark's server gives its version in an answer: `ark <version>`. Velero's server gives its
/// own (`v1.18.3`), which tells the two apart.
pub const ARK_SERVER_VERSION_PREFIX: &str = "ark ";
