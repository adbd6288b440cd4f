use std::process::ExitCode;

use ark_api::BackupStorageLocation;
use kube::Api;

use anyhow::Context as _;
use ark_api::{AccessMode, BackupStorageLocationSpec, ObjectStorageLocation, SecretKeySelector};
use kube::api::PostParams;

use crate::cli::{
    AccessModeArg, BackupLocationCommand, GetArgs, GlobalArgs, LocationCreateArgs, OutputFormat,
};
use crate::output;

pub async fn run(global: &GlobalArgs, command: BackupLocationCommand) -> anyhow::Result<ExitCode> {
    match command {
        BackupLocationCommand::Get(args) => get(global, args).await,
        BackupLocationCommand::Create(args) => create(global, args).await,
    }
}

async fn create(global: &GlobalArgs, args: LocationCreateArgs) -> anyhow::Result<ExitCode> {
    let provider = args.provider.name();
    let spec = BackupStorageLocationSpec {
        provider: provider.to_string(),
        config: (!args.config.is_empty()).then(|| args.config.into_iter().collect()),
        credential: args.credential.map(|(name, key)| SecretKeySelector {
            name,
            key,
            optional: None,
        }),
        object_storage: ObjectStorageLocation {
            bucket: args.bucket,
            prefix: args.prefix,
            ca_cert: None,
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

async fn get(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: super::Found<BackupStorageLocation> =
        super::get_named_or_listed(&client, &global.namespace, &args, "backup storage location")
            .await?;
    match args.output.output {
        OutputFormat::Table => println!("{}", table(&found.items)),
        format => output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    Ok(found.exit_code())
}

fn table(locations: &[BackupStorageLocation]) -> String {
    output::table(
        &[
            "NAME",
            "PROVIDER",
            "BUCKET/PREFIX",
            "PHASE",
            "LAST VALIDATED",
            "ACCESS MODE",
            "DEFAULT",
        ],
        locations.iter().map(|location| {
            let spec = &location.spec;
            let status = location.status.clone().unwrap_or_default();
            let bucket = match &spec.object_storage.prefix {
                Some(prefix) => format!("{}/{prefix}", spec.object_storage.bucket),
                None => spec.object_storage.bucket.clone(),
            };
            vec![
                location.metadata.name.clone().unwrap_or_default(),
                spec.provider.clone(),
                bucket,
                status.phase.map_or("Unknown".into(), |p| format!("{p:?}")),
                output::time(status.last_validation_time.as_ref()),
                if location.is_read_only() {
                    "ReadOnly"
                } else {
                    "ReadWrite"
                }
                .into(),
                if spec.default { "true" } else { "" }.into(),
            ]
        }),
    )
}
