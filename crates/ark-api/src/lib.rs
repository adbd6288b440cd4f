//! The `velero.io/v1` kinds ark shares with Velero, field for field, so that either tool reads the
//! other's objects.

mod backup;
mod backup_storage_location;
pub mod cron;
mod data_mover;
mod delete_backup_request;
mod download_request;
pub mod duration;
pub mod fuzz;
pub mod hooks;
pub mod labels;
mod node_agent_config;
mod pod_volume;
pub mod read;
mod restore;
pub mod restore_test;
mod schedule;
mod schema;
pub mod selector;
mod server_status_request;
pub mod size;
pub mod uploader;
pub mod verification;
mod volume_info;

pub use backup::*;
pub use backup_storage_location::*;
pub use data_mover::*;
pub use delete_backup_request::*;
pub use download_request::*;
pub use node_agent_config::*;
pub use pod_volume::*;
pub use restore::*;
pub use schedule::*;
pub use server_status_request::*;
pub use volume_info::*;

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// The fields of a Velero object that ark does not model, kept as they came (`#[serde(flatten)]`)
/// so that an object ark reads and writes back, or uploads, loses nothing Velero or a newer
/// version put there.
pub type Unmodelled = std::collections::BTreeMap<String, serde_json::Value>;

/// The API group and version of every kind here.
pub const API_VERSION: &str = "velero.io/v1";
/// The namespace ark and Velero run in unless told otherwise.
pub const DEFAULT_NAMESPACE: &str = "velero";
