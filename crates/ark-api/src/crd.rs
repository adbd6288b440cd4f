//! The CustomResourceDefinitions of the four kinds, as `cargo xtask generate` writes them to
//! `config/crd/` and the test cluster installs them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{Backup, BackupStorageLocation, DeleteBackupRequest, Restore};

/// Every CRD ark needs, each with the file name it is written under.
pub fn all() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        (
            "velero.io_backups.yaml",
            without_status_subresource(Backup::crd()),
        ),
        (
            "velero.io_backupstoragelocations.yaml",
            BackupStorageLocation::crd(),
        ),
        (
            "velero.io_deletebackuprequests.yaml",
            DeleteBackupRequest::crd(),
        ),
        (
            "velero.io_restores.yaml",
            without_status_subresource(Restore::crd()),
        ),
    ]
}

/// Velero serves Backup and Restore status as part of the object, not as a subresource; ark does the
/// same so that one status write works against either tool's CRDs.
fn without_status_subresource(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        version.subresources = None;
    }
    crd
}
