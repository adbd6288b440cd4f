//! Opening the object store behind a BackupStorageLocation. Every provider goes through
//! object_store, so the rest of ark has one code path for a directory, S3, GCS and Azure.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::signer::Signer;
use object_store::{ClientOptions, ObjectStore, RetryConfig};

use crate::BackupStore;
use crate::credentials::{
    AwsSource, AzureSource, CredentialsError, aws_source, azure_source, file_named_by,
};
use crate::layout::Layout;

/// What ark needs to reach a location, read from its BackupStorageLocation (and its credential
/// Secret, when it names one). Its Debug form never shows the credentials.
#[derive(Clone, Default, PartialEq, Eq)]
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
    /// Certificates (PEM) trusted besides the system's, for a store behind a private CA: the
    /// location's `caCertRef` or `caCert`.
    pub ca_bundle: Option<Vec<u8>>,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Location")
            .field("name", &self.name)
            .field("provider", &self.provider)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("config", &self.config)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|_| "<redacted>"),
            )
            .field("ca_bundle", &self.ca_bundle.as_ref().map(Vec::len))
            .finish()
    }
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

/// How long a store opened for a location is reused for the same location. Opening a cloud store
/// builds an HTTP client (reading the system's TLS roots) whose connections start cold: deleting
/// a thousand backups would pay that a thousand times. A Secret's credentials are part of the
/// location, so a changed Secret opens a new store at once; credentials from the environment or
/// a file are read again once this has passed.
const REUSED_FOR: Duration = Duration::from_secs(60);
/// Stores kept for reuse (the most recently opened locations).
const STORES_KEPT: usize = 16;

struct Opened {
    location: Location,
    at: std::time::Instant,
    store: BackupStore,
}

static OPENED: std::sync::Mutex<Vec<Opened>> = std::sync::Mutex::new(Vec::new());

/// The backup store behind a location: a cloud store opened for the same location within
/// [`REUSED_FOR`] is reused; a local directory is opened (and created) every time.
pub fn open(location: &Location) -> Result<BackupStore, StorageError> {
    if provider(location) == "file" {
        return open_new(location);
    }
    reuse(&OPENED, location, std::time::Instant::now(), || {
        open_new(location)
    })
}

fn reuse(
    opened: &std::sync::Mutex<Vec<Opened>>,
    location: &Location,
    now: std::time::Instant,
    open: impl FnOnce() -> Result<BackupStore, StorageError>,
) -> Result<BackupStore, StorageError> {
    let mut opened = opened
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    opened.retain(|o| now.duration_since(o.at) < REUSED_FOR);
    if let Some(found) = opened.iter().find(|o| o.location == *location) {
        return Ok(found.store.clone());
    }
    let store = open()?;
    if opened.len() >= STORES_KEPT {
        opened.remove(0);
    }
    opened.push(Opened {
        location: location.clone(),
        at: now,
        store: store.clone(),
    });
    Ok(store)
}

fn provider(location: &Location) -> &str {
    location
        .provider
        .strip_prefix("velero.io/")
        .unwrap_or(&location.provider)
}

fn open_new(location: &Location) -> Result<BackupStore, StorageError> {
    let store_error = |source| StorageError::Store {
        location: location.name.clone(),
        bucket: location.bucket.clone(),
        source,
    };
    let env = |name: &str| std::env::var(name).ok();
    // The cloud stores also sign URLs (for Velero's DownloadRequests); a local directory cannot.
    let (store, signer): (Arc<dyn ObjectStore>, Option<Arc<dyn Signer>>) = match provider(location)
    {
        "file" => {
            std::fs::create_dir_all(&location.bucket).map_err(|e| StorageError::Config {
                location: location.name.clone(),
                reason: format!("cannot create directory {:?}: {e}", location.bucket),
            })?;
            let store = LocalFileSystem::new_with_prefix(&location.bucket).map_err(store_error)?;
            (Arc::new(store), None)
        }
        "aws" => signing(s3_builder(location, &env)?.build().map_err(store_error)?),
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
        "azure" => signing(
            azure_builder(location, &env)?
                .build()
                .map_err(store_error)?,
        ),
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

/// Without credentials, GCS falls back to an instance-metadata endpoint on a link-local address;
/// ark never does that implicitly: a location without credentials is an error that says how to
/// give them. (S3 and Azure credentials are chosen by ark itself: [`aws_source`], [`azure_source`].)
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

/// How long one operation on a bucket keeps trying while the bucket does not answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patience {
    /// Someone waits for the answer (the CLI, the server's controllers): about 20 s, so that a
    /// command against a dead endpoint says so while its user waits.
    Interactive,
    /// Nobody waits, and giving up throws work away (the node agent's uploads, which a failure
    /// cannot resume): about 2.5 minutes, so that a bucket gone for a minute or two costs a pause.
    Background,
}

static PATIENCE: OnceLock<Patience> = OnceLock::new();

/// Sets how patient every bucket this process opens from now on is; a process sets it once, at
/// its start. Without it, [`Patience::Interactive`].
pub fn set_patience(patience: Patience) {
    if PATIENCE.set(patience).is_err() && PATIENCE.get() != Some(&patience) {
        tracing::warn!("bucket patience already set to {:?}", PATIENCE.get());
    }
}

fn retry() -> RetryConfig {
    match PATIENCE.get().copied().unwrap_or(Patience::Interactive) {
        Patience::Interactive => RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
            ..Default::default()
        },
        Patience::Background => RetryConfig {
            max_retries: 10,
            retry_timeout: Duration::from_secs(150),
            ..Default::default()
        },
    }
}

fn client_options(location: &Location) -> Result<ClientOptions, StorageError> {
    let mut options = ClientOptions::new()
        .with_allow_invalid_certificates(flag(location, "insecureSkipTLSVerify")?);
    if let Some(bundle) = &location.ca_bundle {
        for certificate in ca_certificates(bundle).map_err(|reason| StorageError::Config {
            location: location.name.clone(),
            reason,
        })? {
            options = options.with_root_certificate(certificate);
        }
    }
    Ok(options)
}

/// The certificates of a PEM bundle: at least one, each one that parses.
fn ca_certificates(bundle: &[u8]) -> Result<Vec<object_store::Certificate>, String> {
    let text = String::from_utf8_lossy(bundle);
    if !text.contains("-----BEGIN CERTIFICATE-----") {
        return Err(
            "caCert: not a PEM certificate bundle (no -----BEGIN CERTIFICATE----- block)".into(),
        );
    }
    object_store::Certificate::from_pem_bundle(bundle)
        .map_err(|error| format!("caCert: a certificate of the bundle does not parse: {error}"))
}

/// How an S3 bucket is addressed.
#[derive(Debug, PartialEq, Eq)]
struct S3Address {
    /// None: AWS's regional endpoint.
    endpoint: Option<String>,
    /// The bucket is in the endpoint's host name (`bucket.host`); otherwise object_store appends
    /// it to the endpoint's path.
    virtual_hosted: bool,
}

/// The bucket addressed as the AWS SDK behind Velero's AWS plugin addresses it: in the host name
/// (`http://bucket.minio:9000`) unless `s3ForcePathStyle` is set, the endpoint's host is an IP
/// address, or the name cannot be a host label; then in the path. Either way the bucket is named:
/// an endpoint used as it is would send every key to a bucket named after the prefix.
fn s3_address(bucket: &str, s3_url: Option<&str>, path_style: bool) -> Result<S3Address, String> {
    if bucket.is_empty() || bucket.contains('/') {
        return Err(format!("bucket {bucket:?} is not a bucket name"));
    }
    let label = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    let hostable = (3..=63).contains(&bucket.len())
        && bucket.bytes().all(label)
        && !bucket.starts_with('-')
        && !bucket.ends_with('-');
    let Some(raw) = s3_url else {
        let virtual_hosted = hostable && !path_style;
        return Ok(S3Address {
            endpoint: None,
            virtual_hosted,
        });
    };
    let invalid = |why: &str| format!("s3Url {raw:?} {why}");
    let url = url::Url::parse(raw).map_err(|e| invalid(&format!("is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("must be http:// or https://"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(invalid("must not carry a query, a fragment or a user"));
    }
    let Some(host) = url.host() else {
        return Err(invalid("has no host"));
    };
    let on_ip = !matches!(host, url::Host::Domain(_));
    let path = url.path().trim_end_matches('/');
    if path_style || on_ip || !hostable {
        let endpoint = raw.trim_end_matches('/').to_string();
        return Ok(S3Address {
            endpoint: Some(endpoint),
            virtual_hosted: false,
        });
    }
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let endpoint = format!("{}://{bucket}.{host}{port}{path}", url.scheme());
    Ok(S3Address {
        endpoint: Some(endpoint),
        virtual_hosted: true,
    })
}

fn config_error(location: &Location) -> impl Fn(String) -> StorageError + '_ {
    |reason| StorageError::Config {
        location: location.name.clone(),
        reason,
    }
}

fn credentials_error(location: &Location) -> impl Fn(CredentialsError) -> StorageError + '_ {
    |source| StorageError::Credentials {
        location: location.name.clone(),
        source,
    }
}

/// The location's credentials file: its Secret's, else the one `variable` names in the server's
/// environment, as Velero's pod has it; `None` leaves the other variables.
fn credentials_file(
    location: &Location,
    variable: &'static str,
    env: crate::credentials::Env,
) -> Result<Option<String>, StorageError> {
    match &location.credentials {
        Some(text) => Ok(Some(text.clone())),
        None => file_named_by(variable, env).map_err(credentials_error(location)),
    }
}

/// Velero's AWS plugin config keys: `region`, `s3Url`, `s3ForcePathStyle`, `profile`,
/// `insecureSkipTLSVerify`. Nothing else comes from the environment but the credentials.
fn s3_builder(
    location: &Location,
    env: crate::credentials::Env,
) -> Result<AmazonS3Builder, StorageError> {
    let s3_url = location.config.get("s3Url").map(String::as_str);
    let address = s3_address(
        &location.bucket,
        s3_url,
        flag(location, "s3ForcePathStyle")?,
    )
    .map_err(config_error(location))?;
    let region = location
        .config
        .get("region")
        .map_or("us-east-1", String::as_str);
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(&location.bucket)
        .with_region(region)
        .with_virtual_hosted_style_request(address.virtual_hosted)
        .with_client_options(client_options(location)?)
        .with_retry(retry());
    if let Some(endpoint) = &address.endpoint {
        builder = builder
            .with_endpoint(endpoint)
            .with_allow_http(endpoint.starts_with("http://"));
    }
    let profile = location
        .config
        .get("profile")
        .map_or("default", String::as_str);
    let file = credentials_file(location, "AWS_SHARED_CREDENTIALS_FILE", env)?;
    let source = aws_source(file.as_deref(), profile, env)
        .map_err(credentials_error(location))?
        .ok_or_else(|| StorageError::NoCredentials {
            location: location.name.clone(),
            env: "AWS_SHARED_CREDENTIALS_FILE (a credentials file) or AWS_ACCESS_KEY_ID",
        })?;
    Ok(match source {
        AwsSource::Keys { id, secret, token } => {
            builder = builder
                .with_access_key_id(id)
                .with_secret_access_key(secret);
            match token {
                Some(token) => builder.with_token(token),
                None => builder,
            }
        }
        AwsSource::WebIdentity {
            token_file,
            role_arn,
        } => builder
            .with_config(AmazonS3ConfigKey::WebIdentityTokenFile, token_file)
            .with_config(AmazonS3ConfigKey::RoleArn, role_arn),
        AwsSource::ContainerRelative { uri } => {
            builder.with_config(AmazonS3ConfigKey::ContainerCredentialsRelativeUri, uri)
        }
        AwsSource::ContainerFull { uri, token_file } => builder
            .with_config(AmazonS3ConfigKey::ContainerCredentialsFullUri, uri)
            .with_config(
                AmazonS3ConfigKey::ContainerAuthorizationTokenFile,
                token_file,
            ),
    })
}

/// Velero's Azure plugin config keys: `storageAccount` (required), `storageAccountKeyEnvVar`,
/// `storageAccountURI` (the blob endpoint, for clouds other than Azure's public one, or Azurite).
/// The credential type is always explicit, so object_store never tries the machine's identity.
fn azure_builder(
    location: &Location,
    env: crate::credentials::Env,
) -> Result<MicrosoftAzureBuilder, StorageError> {
    let account = location.config.get("storageAccount").ok_or_else(|| {
        config_error(location)("config storageAccount is required for provider azure".into())
    })?;
    let key_variable = location
        .config
        .get("storageAccountKeyEnvVar")
        .map(String::as_str);
    let file = credentials_file(location, "AZURE_CREDENTIALS_FILE", env)?;
    let source = azure_source(file.as_deref(), key_variable, env)
        .map_err(credentials_error(location))?
        .ok_or_else(|| StorageError::NoCredentials {
            location: location.name.clone(),
            env: "AZURE_CREDENTIALS_FILE (a credentials file) or AZURE_STORAGE_ACCOUNT_KEY",
        })?;
    let mut builder = MicrosoftAzureBuilder::new()
        .with_account(account)
        .with_container_name(&location.bucket)
        .with_client_options(client_options(location)?)
        .with_retry(retry());
    if let Some(uri) = location.config.get("storageAccountURI") {
        let url = url::Url::parse(uri)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.query().is_none());
        if url.is_none() {
            return Err(config_error(location)(format!(
                "storageAccountURI {uri:?} must be an http(s) URL without a query"
            )));
        }
        builder = builder
            .with_endpoint(uri.trim_end_matches('/').to_string())
            .with_allow_http(uri.starts_with("http://"));
    }
    let (builder, credential_type) = match source {
        AzureSource::AccessKey(key) => (builder.with_access_key(key), "access_key"),
        AzureSource::ServicePrincipal {
            client_id,
            secret,
            tenant_id,
        } => (
            builder.with_client_secret_authorization(client_id, secret, tenant_id),
            "client_secret",
        ),
        AzureSource::WorkloadIdentity {
            client_id,
            tenant_id,
            token_file,
        } => (
            builder
                .with_client_id(client_id)
                .with_tenant_id(tenant_id)
                .with_federated_token_file(token_file),
            "workload_identity",
        ),
        AzureSource::Sas(sas) => (
            builder.with_config(AzureConfigKey::SasKey, sas),
            "sas_token",
        ),
    };
    Ok(builder.with_config(AzureConfigKey::CredentialType, credential_type))
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
    fn a_store_is_reused_for_the_same_location_until_it_changes_or_a_minute_passes() {
        let cache = std::sync::Mutex::new(Vec::new());
        let opens = std::cell::Cell::new(0);
        let open = |location: &Location, now| {
            reuse(&cache, location, now, || {
                opens.set(opens.get() + 1);
                Ok(BackupStore::new(
                    Arc::new(object_store::memory::InMemory::new()),
                    Layout::new(None),
                ))
            })
            .unwrap()
        };
        let start = std::time::Instant::now();
        let with_key = s3(Some("[default]\naws_access_key_id=a\n"));
        open(&with_key, start);
        open(&with_key, start + Duration::from_secs(59));
        assert_eq!(opens.get(), 1);
        // A rotated key is a different location: opened anew at once.
        open(&s3(Some("[default]\naws_access_key_id=b\n")), start);
        assert_eq!(opens.get(), 2);
        // Credentials read from the environment or a file are read again after a minute.
        open(&with_key, start + REUSED_FOR);
        assert_eq!(opens.get(), 3);
        // A failed open keeps nothing.
        let failed = reuse(&cache, &s3(None), start, || {
            Err(StorageError::Config {
                location: "default".into(),
                reason: "refused".into(),
            })
        });
        assert!(failed.is_err());
        // Only the store opened last is left: the others were a minute old then.
        assert_eq!(cache.lock().unwrap().len(), 1);
        for bucket in 0..2 * STORES_KEPT {
            let location = Location {
                bucket: format!("b{bucket}"),
                ..with_key.clone()
            };
            open(&location, start + REUSED_FOR);
        }
        assert_eq!(cache.lock().unwrap().len(), STORES_KEPT);
    }

    #[test]
    fn a_cloud_location_without_credentials_is_refused_not_sent_to_instance_metadata() {
        let error = open(&s3(None)).err().expect("refused");
        assert_eq!(
            error.to_string(),
            "backup storage location \"default\": no credentials: name a Secret in the location's spec.credential \
             (ark backup-location create --credential SECRET=KEY) or set AWS_SHARED_CREDENTIALS_FILE (a credentials file) or AWS_ACCESS_KEY_ID in the server's environment"
        );
        assert!(
            open(&s3(Some(
                "[default]\naws_access_key_id=a\naws_secret_access_key=b\n"
            )))
            .is_ok()
        );
    }

    #[test]
    fn the_bucket_is_addressed_as_velero_s_aws_plugin_addresses_it() {
        let address = |bucket, url, path_style| s3_address(bucket, url, path_style);
        let at = |endpoint: &str, virtual_hosted| {
            Ok(S3Address {
                endpoint: Some(endpoint.to_string()),
                virtual_hosted,
            })
        };
        // The bug: an endpoint used as it is, in virtual-hosted mode, named no bucket at all.
        assert_eq!(
            address("velero", Some("http://minio:9000"), false),
            at("http://velero.minio:9000", true)
        );
        assert_eq!(
            address("velero", Some("https://s3.example.com/base/"), false),
            at("https://velero.s3.example.com/base", true)
        );
        assert_eq!(
            address("velero", Some("http://minio:9000/"), true),
            at("http://minio:9000", false)
        );
        assert_eq!(
            address("velero", Some("http://127.0.0.1:8333"), false),
            at("http://127.0.0.1:8333", false)
        );
        assert_eq!(
            address("velero", Some("http://[::1]:8333"), false),
            at("http://[::1]:8333", false)
        );
        assert_eq!(
            address("my.bucket", Some("http://minio:9000"), false),
            at("http://minio:9000", false)
        );
        assert_eq!(
            address("Up", Some("http://minio:9000"), false),
            at("http://minio:9000", false)
        );
        assert_eq!(
            address("velero", None, false),
            Ok(S3Address {
                endpoint: None,
                virtual_hosted: true
            })
        );
        assert_eq!(
            address("my.bucket", None, false),
            Ok(S3Address {
                endpoint: None,
                virtual_hosted: false
            })
        );
        for (bucket, url, error) in [
            ("", None, "bucket \"\" is not a bucket name"),
            ("a/b", None, "bucket \"a/b\" is not a bucket name"),
            (
                "b",
                Some("minio:9000"),
                "s3Url \"minio:9000\" must be http:// or https://",
            ),
            (
                "b",
                Some("ftp://minio"),
                "s3Url \"ftp://minio\" must be http:// or https://",
            ),
            (
                "b",
                Some("http://minio?x=1"),
                "s3Url \"http://minio?x=1\" must not carry a query, a fragment or a user",
            ),
            (
                "b",
                Some("http://u:p@minio"),
                "s3Url \"http://u:p@minio\" must not carry a query, a fragment or a user",
            ),
        ] {
            assert_eq!(address(bucket, url, false).unwrap_err(), error);
        }
    }

    #[test]
    fn a_location_never_prints_its_credentials() {
        let location = s3(Some(
            "[default]\naws_access_key_id=a\naws_secret_access_key=hunter2\n",
        ));
        let shown = format!("{location:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            shown.contains("credentials: Some(\"<redacted>\")"),
            "{shown}"
        );
    }

    #[test]
    fn azure_never_falls_back_to_the_machine_identity() {
        let mut location = s3(Some("AZURE_SUBSCRIPTION_ID=x\nAZURE_RESOURCE_GROUP=y\n"));
        location.provider = "azure".into();
        location.config = BTreeMap::from([("storageAccount".into(), "acct".into())]);
        assert!(
            open(&location)
                .err()
                .expect("refused")
                .to_string()
                .ends_with("ark never falls back to the machine's managed identity")
        );
        location.credentials =
            Some("AZURE_CLIENT_ID=c\nAZURE_CLIENT_SECRET=s\nAZURE_TENANT_ID=t\n".into());
        assert!(
            open(&location).is_ok(),
            "a service principal is read as one"
        );
        location.config.clear();
        assert_eq!(
            open(&location).err().unwrap().to_string(),
            "backup storage location \"default\": config storageAccount is required for provider azure"
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
