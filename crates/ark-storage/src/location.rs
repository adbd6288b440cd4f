//! Opening the object store behind a BackupStorageLocation. Every provider goes through
//! object_store, so the rest of ark has one code path for a directory, S3, GCS and Azure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::signer::Signer;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use crate::BackupStore;
use crate::credentials::{CredentialsError, aws_profile};
use crate::layout::Layout;

/// What ark needs to reach a location, read from its BackupStorageLocation (and its credential
/// Secret, when it names one).
#[derive(Clone, Debug, Default)]
pub struct Location {
    /// The BackupStorageLocation's name, for error messages.
    pub name: String,
    pub provider: String,
    pub bucket: String,
    pub prefix: Option<String>,
    pub config: BTreeMap<String, String>,
    /// The contents of the credentials file the location's Secret holds; `None` means the server's
    /// environment (AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*...).
    pub credentials: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(
        "backup storage location {location:?}: unknown provider {provider:?} (expected aws, gcp, azure or file)"
    )]
    UnknownProvider { location: String, provider: String },
    #[error("backup storage location {location:?}: {reason}")]
    Config { location: String, reason: String },
    #[error(
        "backup storage location {location:?}: no credentials: name a Secret in the location's spec.credential \
         (ark backup-location create --credential SECRET=KEY) or set {env} in the server's environment"
    )]
    NoCredentials { location: String, env: &'static str },
    #[error("backup storage location {location:?}: credentials: {source}")]
    Credentials {
        location: String,
        source: CredentialsError,
    },
    #[error("backup storage location {location:?} (bucket {bucket:?}): {source}")]
    Store {
        location: String,
        bucket: String,
        source: object_store::Error,
    },
}

/// The backup store behind a location.
pub fn open(location: &Location) -> Result<BackupStore, StorageError> {
    let store_error = |source| StorageError::Store {
        location: location.name.clone(),
        bucket: location.bucket.clone(),
        source,
    };
    let provider = location
        .provider
        .strip_prefix("velero.io/")
        .unwrap_or(&location.provider);
    // The cloud stores also sign URLs (for Velero's DownloadRequests); a local directory cannot.
    let (store, signer): (Arc<dyn ObjectStore>, Option<Arc<dyn Signer>>) = match provider {
        "file" => {
            std::fs::create_dir_all(&location.bucket).map_err(|e| StorageError::Config {
                location: location.name.clone(),
                reason: format!("cannot create directory {:?}: {e}", location.bucket),
            })?;
            let store = LocalFileSystem::new_with_prefix(&location.bucket).map_err(store_error)?;
            (Arc::new(store), None)
        }
        "aws" => {
            require_credentials(
                location,
                &[
                    "AWS_ACCESS_KEY_ID",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                ],
            )?;
            signing(s3_builder(location)?.build().map_err(store_error)?)
        }
        "gcp" => {
            require_credentials(
                location,
                &[
                    "GOOGLE_APPLICATION_CREDENTIALS",
                    "GOOGLE_SERVICE_ACCOUNT",
                    "GOOGLE_SERVICE_ACCOUNT_PATH",
                    "GOOGLE_SERVICE_ACCOUNT_KEY",
                ],
            )?;
            let mut builder = GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(&location.bucket)
                .with_retry(retry());
            if let Some(key) = &location.credentials {
                builder = builder.with_service_account_key(key);
            }
            signing(builder.build().map_err(store_error)?)
        }
        "azure" => {
            require_credentials(
                location,
                &[
                    "AZURE_STORAGE_ACCOUNT_KEY",
                    "AZURE_STORAGE_ACCESS_KEY",
                    "AZURE_STORAGE_SAS_KEY",
                    "AZURE_CLIENT_SECRET",
                    "AZURE_FEDERATED_TOKEN_FILE",
                ],
            )?;
            signing(azure_builder(location)?.build().map_err(store_error)?)
        }
        _ => {
            return Err(StorageError::UnknownProvider {
                location: location.name.clone(),
                provider: location.provider.clone(),
            });
        }
    };
    Ok(BackupStore::new(store, Layout::new(location.prefix.as_deref())).with_signer(signer))
}

fn signing<S: ObjectStore + Signer>(store: S) -> (Arc<dyn ObjectStore>, Option<Arc<dyn Signer>>) {
    let store = Arc::new(store);
    (store.clone(), Some(store))
}

/// Without credentials, the cloud SDKs fall back to an instance-metadata endpoint on a link-local
/// address; ark never does that implicitly: a location without credentials is an error that says
/// how to give them.
fn require_credentials(location: &Location, env: &[&'static str]) -> Result<(), StorageError> {
    if location.credentials.is_some() || env.iter().any(|var| std::env::var_os(var).is_some()) {
        return Ok(());
    }
    Err(StorageError::NoCredentials {
        location: location.name.clone(),
        env: env[0],
    })
}

fn flag(location: &Location, key: &str) -> Result<bool, StorageError> {
    match location
        .config
        .get(key)
        .map(|v| v.trim().to_ascii_lowercase())
    {
        None => Ok(false),
        Some(v) if v == "true" => Ok(true),
        Some(v) if v == "false" => Ok(false),
        Some(v) => Err(StorageError::Config {
            location: location.name.clone(),
            reason: format!("config {key}={v:?} is not true or false"),
        }),
    }
}

/// A bucket that does not answer fails an operation within seconds, not after object_store's
/// default three minutes: a backup against a dead endpoint should say so while the user waits.
fn retry() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(20),
        ..Default::default()
    }
}

fn client_options(location: &Location) -> Result<ClientOptions, StorageError> {
    Ok(ClientOptions::new()
        .with_allow_invalid_certificates(flag(location, "insecureSkipTLSVerify")?))
}

/// Velero's AWS plugin config keys: `region`, `s3Url`, `s3ForcePathStyle`, `profile`,
/// `insecureSkipTLSVerify`.
fn s3_builder(location: &Location) -> Result<AmazonS3Builder, StorageError> {
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(&location.bucket)
        .with_region(
            location
                .config
                .get("region")
                .map_or("us-east-1", String::as_str),
        )
        .with_virtual_hosted_style_request(!flag(location, "s3ForcePathStyle")?)
        .with_client_options(client_options(location)?)
        .with_retry(retry());
    if let Some(url) = location.config.get("s3Url") {
        builder = builder
            .with_endpoint(url)
            .with_allow_http(url.starts_with("http://"));
    }
    if let Some(text) = &location.credentials {
        let profile = location
            .config
            .get("profile")
            .map_or("default", String::as_str);
        let keys = aws_profile(text, profile).map_err(|source| StorageError::Credentials {
            location: location.name.clone(),
            source,
        })?;
        let key = |name: &str| keys.get(name).cloned().unwrap_or_default();
        builder = builder
            .with_access_key_id(key("aws_access_key_id"))
            .with_secret_access_key(key("aws_secret_access_key"));
        if let Some(token) = keys.get("aws_session_token") {
            builder = builder.with_token(token);
        }
    }
    Ok(builder)
}

/// Velero's Azure plugin reads `storageAccount` from config and `KEY=VALUE` lines
/// (`AZURE_STORAGE_ACCOUNT_ACCESS_KEY`, ...) from the credentials file.
fn azure_builder(location: &Location) -> Result<MicrosoftAzureBuilder, StorageError> {
    let mut builder = MicrosoftAzureBuilder::from_env()
        .with_container_name(&location.bucket)
        .with_client_options(client_options(location)?)
        .with_retry(retry());
    if let Some(account) = location.config.get("storageAccount") {
        builder = builder.with_account(account);
    }
    if let Some(text) = &location.credentials {
        for line in text.lines() {
            if let Some((key, value)) = line.split_once('=')
                && key.trim() == "AZURE_STORAGE_ACCOUNT_ACCESS_KEY"
            {
                builder = builder.with_access_key(value.trim());
            }
        }
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(credentials: Option<&str>) -> Location {
        // What the binaries do at start-up: one provider for the process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Location {
            name: "default".into(),
            provider: "aws".into(),
            bucket: "b".into(),
            config: BTreeMap::from([("s3Url".into(), "http://127.0.0.1:9".into())]),
            credentials: credentials.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn a_cloud_location_without_credentials_is_refused_not_sent_to_instance_metadata() {
        let error = open(&s3(None)).err().expect("refused");
        assert_eq!(
            error.to_string(),
            "backup storage location \"default\": no credentials: name a Secret in the location's spec.credential \
             (ark backup-location create --credential SECRET=KEY) or set AWS_ACCESS_KEY_ID in the server's environment"
        );
        assert!(
            open(&s3(Some(
                "[default]\naws_access_key_id=a\naws_secret_access_key=b\n"
            )))
            .is_ok()
        );
    }

    #[test]
    fn unknown_providers_and_bad_flags_are_named() {
        let mut location = s3(Some("[default]\n"));
        location.provider = "ftp".into();
        assert_eq!(
            open(&location).err().unwrap().to_string(),
            "backup storage location \"default\": unknown provider \"ftp\" (expected aws, gcp, azure or file)"
        );
        let mut location = s3(Some("[default]\n"));
        location
            .config
            .insert("s3ForcePathStyle".into(), "yes".into());
        assert_eq!(
            open(&location).err().unwrap().to_string(),
            "backup storage location \"default\": config s3ForcePathStyle=\"yes\" is not true or false"
        );
    }
}
