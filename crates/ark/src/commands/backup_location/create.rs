use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{
    AccessMode, BackupStorageLocation, BackupStorageLocationSpec, ObjectStorageLocation,
    SecretKeySelector,
};
use clap::{Args, ValueEnum};
use kube::Api;
use kube::api::PostParams;

use crate::cli::args::{BucketArgs, GlobalArgs, parse_key_value, parse_name};

#[derive(Debug, Args)]
pub struct LocationCreateArgs {
    /// The location's name
    #[arg(value_parser = parse_name)]
    pub name: String,
    #[command(flatten)]
    pub bucket: BucketArgs,
    /// Provider settings: region=us-east-1,s3Url=http://...,s3ForcePathStyle=true
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub config: Vec<(String, String)>,
    /// Credentials from a Secret in the namespace: SECRET=KEY (default: the server's environment)
    #[arg(long, value_name = "SECRET=KEY", value_parser = parse_key_value)]
    pub credential: Option<(String, String)>,
    /// Make this the default location
    #[arg(long)]
    pub default: bool,
    /// ReadOnly locations are never written: restores only
    #[arg(long, value_enum, default_value_t = AccessModeArg::ReadWrite)]
    pub access_mode: AccessModeArg,
    /// A file of PEM certificates to trust for the object store's TLS (a private CA), besides the
    /// system's
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AccessModeArg {
    #[value(name = "ReadWrite")]
    ReadWrite,
    #[value(name = "ReadOnly")]
    ReadOnly,
}

/// The file's certificates, base64-encoded as the API carries bytes; refused when it holds none.
fn ca_cert(path: &std::path::Path) -> anyhow::Result<String> {
    use base64::Engine as _;
    let bundle =
        std::fs::read(path).with_context(|| format!("cannot read --cacert {}", path.display()))?;
    if !String::from_utf8_lossy(&bundle).contains("-----BEGIN CERTIFICATE-----") {
        anyhow::bail!(
            "--cacert {}: not a PEM certificate bundle (no -----BEGIN CERTIFICATE----- block)",
            path.display()
        );
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(bundle))
}

pub async fn run(global: &GlobalArgs, args: LocationCreateArgs) -> anyhow::Result<ExitCode> {
    let ca_cert = args.cacert.as_deref().map(ca_cert).transpose()?;
    let spec = BackupStorageLocationSpec {
        provider: args.bucket.provider.name().to_string(),
        config: (!args.config.is_empty()).then(|| args.config.into_iter().collect()),
        credential: args.credential.map(|(name, key)| SecretKeySelector {
            name,
            key,
            optional: None,
        }),
        object_storage: ObjectStorageLocation {
            bucket: args.bucket.bucket,
            prefix: args.bucket.prefix,
            ca_cert,
            ca_cert_ref: None,
        },
        default: args.default,
        access_mode: Some(match args.access_mode {
            AccessModeArg::ReadWrite => AccessMode::ReadWrite,
            AccessModeArg::ReadOnly => AccessMode::ReadOnly,
        }),
        ..Default::default()
    };
    let client = crate::context::client(global).await?;
    let api: Api<BackupStorageLocation> = Api::namespaced(client, &global.namespace);
    api.create(
        &PostParams::default(),
        &BackupStorageLocation::new(&args.name, spec),
    )
    .await
    .with_context(|| {
        format!(
            "cannot create backup storage location {:?} in namespace {:?}",
            args.name, global.namespace
        )
    })?;
    println!(
        "Backup storage location {:?} configured successfully.",
        args.name
    );
    Ok(ExitCode::SUCCESS)
}
