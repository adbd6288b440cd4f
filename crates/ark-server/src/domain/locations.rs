//! From a BackupStorageLocation's name to its backup store.

use std::time::Duration;

use ark_api::BackupStorageLocation;
use ark_storage::BackupStore;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};

use crate::runtime::objects;

#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    #[error("backup storage location {0:?} not found")]
    NotFound(String),
    #[error(
        "backup storage location {location:?}: credential secret {secret:?} key {key:?}: {reason}"
    )]
    Credential {
        location: String,
        secret: String,
        key: String,
        reason: String,
    },
    #[error("cannot get backup storage location {0:?}: {reason}", reason = objects::reason(.1))]
    Api(String, kube::Error),
    #[error(
        "backup storage location {location:?}: cannot read credential secret {secret:?}: {}",
        objects::reason(error)
    )]
    SecretApi {
        location: String,
        secret: String,
        error: kube::Error,
    },
    #[error("backup storage location {0:?} cannot be read: {1}")]
    Unfit(String, crate::runtime::objects::Unfit),
    #[error(transparent)]
    Storage(#[from] ark_storage::StorageError),
}

impl LocationError {
    /// Whether the caller may not read the location or its credentials (HTTP 403): a person
    /// with ark's admin-viewer role, who reads the bucket through the server instead.
    pub fn is_refused(&self) -> bool {
        let refused = |error: &kube::Error| matches!(error, kube::Error::Api(s) if s.code == 403);
        match self {
            LocationError::Api(_, error) | LocationError::SecretApi { error, .. } => refused(error),
            _ => false,
        }
    }
}

/// The location and its opened store.
pub struct OpenLocation {
    pub location: BackupStorageLocation,
    pub store: BackupStore,
}

impl OpenLocation {
    pub fn name(&self) -> String {
        self.location.metadata.name.clone().unwrap_or_default()
    }
}

/// How often a periodic controller looks at a location: its own setting (`backupSyncPeriod`,
/// `validationFrequency`, Go durations) or, without one, the server's `default`; `None` for a
/// setting of zero, which Velero reads as "not at all" (sync) or "once" (validation). A setting
/// that does not parse, or is negative, is the default, as Velero has it.
pub fn own_period(setting: Option<&str>, default: Duration) -> Option<Duration> {
    let Some(setting) = setting.filter(|s| !s.is_empty()) else {
        return Some(default);
    };
    match ark_api::duration::parse(setting) {
        Ok(period) if period.is_zero() => None,
        Ok(period) => Some(period),
        Err(_) => Some(default),
    }
}

pub async fn get(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<BackupStorageLocation, LocationError> {
    crate::runtime::objects::get::<BackupStorageLocation>(client, namespace, name)
        .await
        .map_err(|e| LocationError::Api(name.to_string(), e))?
        .ok_or_else(|| LocationError::NotFound(name.to_string()))?
        .map_err(|unfit| LocationError::Unfit(name.to_string(), unfit))
}

/// The location marked default, else the one named `default` (Velero's convention).
pub async fn default_name(client: &Client, namespace: &str) -> Result<String, LocationError> {
    let locations = crate::runtime::objects::list::<BackupStorageLocation>(
        client,
        namespace,
        &Default::default(),
    )
    .await
    .map_err(|e| LocationError::Api("<default>".into(), e))?;
    Ok(locations
        .iter()
        .find(|l| l.spec.default)
        .and_then(|l| l.metadata.name.clone())
        .unwrap_or_else(|| "default".to_string()))
}

pub async fn open(
    client: &Client,
    location: BackupStorageLocation,
) -> Result<OpenLocation, LocationError> {
    let name = location.metadata.name.clone().unwrap_or_default();
    let namespace = location.metadata.namespace.clone().unwrap_or_default();
    let credentials = match &location.spec.credential {
        Some(selector) => {
            Some(read_secret_key(client, &namespace, &name, &selector.name, &selector.key).await?)
        }
        None => None,
    };
    let ca_bundle = ca_bundle(client, &namespace, &name, &location.spec.object_storage).await?;
    let spec = &location.spec;
    let store = ark_storage::open(&ark_storage::Location {
        name: name.clone(),
        provider: spec.provider.clone(),
        bucket: spec.object_storage.bucket.clone(),
        prefix: spec.object_storage.prefix.clone(),
        config: spec.config.clone().unwrap_or_default(),
        credentials,
        ca_bundle,
    })?;
    Ok(OpenLocation { location, store })
}

/// Whether the location can be used now: it opens, and its bucket answers (the check behind a
/// location's Available/Unavailable phase).
pub async fn check(client: &Client, location: BackupStorageLocation) -> Result<(), String> {
    let open = open(client, location).await.map_err(|e| e.to_string())?;
    open.store
        .validate()
        .await
        .map_err(|e| format!("backup storage location {:?}: {e}", open.name()))
}

/// Gets and opens a location by name.
pub async fn open_named(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<OpenLocation, LocationError> {
    open(client, get(client, namespace, name).await?).await
}

/// The certificates a location trusts besides the system's: its `caCertRef`'s Secret key, else
/// its `caCert` (base64 in the API, as Velero's CRD has it), as Velero's object store plugins take
/// them.
async fn ca_bundle(
    client: &Client,
    namespace: &str,
    location: &str,
    storage: &ark_api::ObjectStorageLocation,
) -> Result<Option<Vec<u8>>, LocationError> {
    if let Some(selector) = &storage.ca_cert_ref {
        let bundle =
            read_secret_key(client, namespace, location, &selector.name, &selector.key).await?;
        return Ok(Some(bundle.into_bytes()));
    }
    let Some(encoded) = storage.ca_cert.as_deref().filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map(Some)
        .map_err(|error| {
            LocationError::Storage(ark_storage::StorageError::Config {
                location: location.to_string(),
                reason: format!("spec.objectStorage.caCert is not base64: {error}"),
            })
        })
}

async fn read_secret_key(
    client: &Client,
    namespace: &str,
    location: &str,
    secret: &str,
    key: &str,
) -> Result<String, LocationError> {
    let error = |reason: String| LocationError::Credential {
        location: location.to_string(),
        secret: secret.to_string(),
        key: key.to_string(),
        reason,
    };
    let found = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(secret)
        .await
        .map_err(|error| LocationError::SecretApi {
            location: location.to_string(),
            secret: secret.to_string(),
            error,
        })?
        .ok_or_else(|| error("secret not found".into()))?;
    let bytes = found
        .data
        .and_then(|mut data| data.remove(key))
        .ok_or_else(|| error("key not in secret".into()))?;
    String::from_utf8(bytes.0).map_err(|_| error("not UTF-8 text".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_s_own_period_as_velero_reads_it() {
        let default = Duration::from_secs(60);
        assert_eq!(own_period(None, default), Some(default));
        assert_eq!(own_period(Some(""), default), Some(default));
        assert_eq!(
            own_period(Some("10m"), default),
            Some(Duration::from_secs(600))
        );
        assert_eq!(own_period(Some("0s"), default), None);
        assert_eq!(own_period(Some("-5m"), default), Some(default));
        assert_eq!(own_period(Some("often"), default), Some(default));
    }
}
