//! From a location and a workload namespace to the kopia repository holding that namespace's pod
//! volume data, opened with the password Velero keeps for all repositories.

use ark_kopia::Repository;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};

use crate::shared::locations::{self, LocationError};
use crate::shared::objects;

/// Velero's Secret holding every repository's password (`pkg/repository/keys`).
pub const PASSWORD_SECRET: &str = "velero-repo-credentials";
pub const PASSWORD_KEY: &str = "repository-password";

#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    #[error(transparent)]
    Location(#[from] LocationError),
    #[error("cannot read secret {PASSWORD_SECRET:?}: {}", objects::reason(.0))]
    SecretApi(kube::Error),
    #[error("secret {PASSWORD_SECRET:?} has no key {PASSWORD_KEY:?}")]
    NoPassword,
    #[error("the repository of namespace {namespace:?} in location {location:?} ({root}): {error}")]
    Kopia {
        namespace: String,
        location: String,
        root: String,
        error: ark_kopia::Error,
    },
}

/// The repositories' password: the Secret's, or Velero's default where the Secret does not exist
/// (Velero's server creates it with that value on its first start).
pub async fn password(client: &Client, namespace: &str) -> Result<String, RepositoryError> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(PASSWORD_SECRET)
        .await
        .map_err(RepositoryError::SecretApi)?;
    let Some(secret) = secret else {
        return Ok(ark_kopia::repository::VELERO_DEFAULT_PASSWORD.into());
    };
    let bytes = secret
        .data
        .and_then(|d| d.get(PASSWORD_KEY).cloned())
        .ok_or(RepositoryError::NoPassword)?;
    Ok(String::from_utf8_lossy(&bytes.0).into_owned())
}

/// Opens the repository of `volume_namespace` in location `location`.
pub async fn open(
    client: &Client,
    namespace: &str,
    location: &str,
    volume_namespace: &str,
) -> Result<Repository, RepositoryError> {
    let opened = locations::open_named(client, namespace, location).await?;
    let password = password(client, namespace).await?;
    let root = opened.store.layout.kopia_repository(volume_namespace);
    Repository::open(opened.store.object_store(), root.clone(), &password)
        .await
        .map_err(|error| RepositoryError::Kopia {
            namespace: volume_namespace.into(),
            location: location.into(),
            root: root.to_string(),
            error,
        })
}
