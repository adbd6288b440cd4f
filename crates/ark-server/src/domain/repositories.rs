//! From a location and a workload namespace to the kopia repository holding that namespace's pod
//! volume data, opened with the password Velero keeps for all repositories; and the
//! BackupRepository object that records it, as Velero's server keeps one.

use std::collections::BTreeMap;

use ark_api::{
    BackupRepository, BackupRepositoryPhase, BackupRepositorySpec, BackupRepositoryStatus,
    UPLOADER_KOPIA, labels,
};
use ark_kopia::Repository;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};

use crate::domain::locations::{self, LocationError};
use crate::runtime::{objects, patch};

/// How often Velero maintains a kopia repository (`lib_repo.go`), as its objects say it.
pub const MAINTENANCE_FREQUENCY: &str = "1h0m0s";
/// Who maintains the repositories Velero creates (and ark, as Velero).
pub const MAINTENANCE_OWNER: &str = "default@default";

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
    #[error("backup repository {name:?}: {}", objects::reason(.error))]
    ObjectApi { name: String, error: kube::Error },
    #[error(
        "the repository of namespace {namespace:?} in location {location:?} ({root}) does not \
         open with the password in secret {PASSWORD_SECRET:?}: it was made with another (Velero \
         makes its repositories with static-passw0rd unless told otherwise); put that one in \
         the Secret"
    )]
    WrongPassword {
        namespace: String,
        location: String,
        root: String,
    },
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
    password_of(&secret).ok_or(RepositoryError::NoPassword)
}

/// The password the repositories' Secret holds, if it holds one.
pub fn password_of(secret: &Secret) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(PASSWORD_KEY)?;
    Some(String::from_utf8_lossy(&bytes.0).into_owned())
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
        .map_err(|error| {
            let (namespace, location, root) =
                (volume_namespace.into(), location.into(), root.to_string());
            match error {
                ark_kopia::Error::WrongPassword => RepositoryError::WrongPassword {
                    namespace,
                    location,
                    root,
                },
                error => RepositoryError::Kopia {
                    namespace,
                    location,
                    root,
                    error,
                },
            }
        })
}

/// Makes sure the repository of `volume_namespace` in `location` exists, as Velero's `EnsureRepo`
/// and its repository controller do: the BackupRepository object (found by its labels, created
/// as `<namespace>-<location>-kopia` when there is none) and the repository in the bucket
/// (created with Velero's settings and the repositories' password when its format blob is not
/// there); the object ends Ready, or NotReady with the reason.
pub async fn ensure(
    client: &Client,
    namespace: &str,
    location: &str,
    volume_namespace: &str,
) -> Result<(), RepositoryError> {
    let name = BackupRepository::name_for(volume_namespace, location);
    let api = objects::api::<BackupRepository>(client, namespace);
    let object_error = |error| RepositoryError::ObjectApi {
        name: name.clone(),
        error,
    };
    let wanted = BTreeMap::from([
        (
            labels::VOLUME_NAMESPACE.to_string(),
            labels::valid_label_value(volume_namespace),
        ),
        (
            labels::STORAGE_LOCATION.to_string(),
            labels::valid_label_value(location),
        ),
        (
            labels::REPOSITORY_TYPE.to_string(),
            UPLOADER_KOPIA.to_string(),
        ),
    ]);
    let selector = wanted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let found = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(object_error)?;
    let existing = found.items.into_iter().next();
    let object_name = match &existing {
        Some(object) => object.metadata.name.clone().unwrap_or_default(),
        None => {
            let mut object = BackupRepository::new(
                &name,
                BackupRepositorySpec {
                    volume_namespace: volume_namespace.into(),
                    backup_storage_location: location.into(),
                    repository_type: Some(UPLOADER_KOPIA.into()),
                    maintenance_frequency: MAINTENANCE_FREQUENCY.into(),
                    ..Default::default()
                },
            );
            object.metadata.namespace = Some(namespace.into());
            object.metadata.labels = Some(wanted);
            let typed = Api::<BackupRepository>::namespaced(client.clone(), namespace);
            match typed.create(&PostParams::default(), &object).await {
                Ok(_) => {}
                // Another backup made it meanwhile.
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => return Err(object_error(error)),
            }
            name.clone()
        }
    };
    let ready = existing
        .as_ref()
        .and_then(|o| o.data.pointer("/status/phase"))
        == Some(&serde_json::json!("Ready"));
    let outcome = in_bucket(client, namespace, location, volume_namespace).await;
    let status = match &outcome {
        Ok(()) if ready => return Ok(()),
        Ok(()) => BackupRepositoryStatus {
            phase: Some(BackupRepositoryPhase::Ready),
            message: Some(String::new()),
            ..Default::default()
        },
        Err(error) => BackupRepositoryStatus {
            phase: Some(BackupRepositoryPhase::NotReady),
            message: Some(error.to_string()),
            ..Default::default()
        },
    };
    patch::object_status(&api, &object_name, &status)
        .await
        .map_err(object_error)?;
    outcome
}

/// Creates the repository in the bucket unless its format blob is there.
async fn in_bucket(
    client: &Client,
    namespace: &str,
    location: &str,
    volume_namespace: &str,
) -> Result<(), RepositoryError> {
    let opened = locations::open_named(client, namespace, location).await?;
    let root = opened.store.layout.kopia_repository(volume_namespace);
    let kopia_error = |error| RepositoryError::Kopia {
        namespace: volume_namespace.into(),
        location: location.into(),
        root: root.to_string(),
        error,
    };
    let store = opened.store.object_store();
    if Repository::exists(store.clone(), root.clone())
        .await
        .map_err(kopia_error)?
    {
        return Ok(());
    }
    // As Velero's server does at its start, so that Velero's node agent opens what ark creates
    // (`ark install` made it first, with a random password, unless ark was installed otherwise).
    create_password_secret(
        client,
        namespace,
        ark_kopia::repository::VELERO_DEFAULT_PASSWORD,
    )
    .await?;
    let password = password(client, namespace).await?;
    Repository::create(store, root.clone(), &password)
        .await
        .map_err(kopia_error)?;
    tracing::info!(
        "created the repository of namespace {volume_namespace} in location {location} ({root})"
    );
    Ok(())
}

/// The repositories' password Secret as Velero's server and node agent read it, labelled to stay
/// out of backups: a backup in the bucket must not carry the key to the volume data beside it.
fn password_secret(namespace: &str, password: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(PASSWORD_SECRET.into()),
            namespace: Some(namespace.into()),
            labels: Some(BTreeMap::from([(
                labels::EXCLUDE_FROM_BACKUP.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            PASSWORD_KEY.to_string(),
            k8s_openapi::ByteString(password.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}

/// Creates the repositories' password Secret with `password` unless it exists (never replaced:
/// the repositories already written need its password); whether it was created.
pub async fn create_password_secret(
    client: &Client,
    namespace: &str,
    password: &str,
) -> Result<bool, RepositoryError> {
    let api = Api::<Secret>::namespaced(client.clone(), namespace);
    let secret = password_secret(namespace, password);
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(RepositoryError::SecretApi(error)),
    }
}
