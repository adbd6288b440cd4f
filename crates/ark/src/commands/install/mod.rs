//! `ark install`: ark's CRDs (Velero's), the server's ServiceAccount and roles, the people's roles,
//! the credentials Secret, the default location, the node agent (with `--use-node-agent`) and the
//! server Deployment, applied server-side in that order. A second run changes nothing; a changed flag updates what it concerns in place.

pub mod manifests;
pub mod roles;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use ark_server::repositories::PASSWORD_SECRET;
use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};

use crate::cli::args::{BucketArgs, Feature, GlobalArgs, OutputFormat, WaitArgs, parse_key_value};
use manifests::{FIELD_MANAGER, Manifest, Plan};

/// The Secret the default location reads its credentials from (Velero's name): installed by
/// manifests.rs, readable by the server's role in roles.rs.
pub const CREDENTIALS_SECRET: &str = "cloud-credentials";

/// The image `ark install` deploys unless `--image` names another (build it with the Dockerfile).
pub const DEFAULT_IMAGE: &str = concat!("ghcr.io/ark-backup/ark:", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub bucket: BucketArgs,
    /// Credentials file for the provider, stored in the `cloud-credentials` Secret that the
    /// location reads (AWS: a credentials file; Azure: KEY=VALUE lines, as Velero's plugins take)
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Settings of the default location: region=us-east-1,s3Url=https://...,s3ForcePathStyle=true
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub backup_location_config: Vec<(String, String)>,
    /// The server's image
    #[arg(long, value_name = "IMAGE", default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// Server replicas (one leads, the others wait to take over)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub replicas: u16,
    /// Install the node agent too (a DaemonSet): pods' volumes are backed up and restored
    #[arg(long)]
    pub use_node_agent: bool,
    /// Where the kubelet keeps its pods' directories on each node (its root dir's `pods`)
    #[arg(long, value_name = "DIR", default_value = manifests::KUBELET_PODS_DIR, requires = "use_node_agent")]
    pub kubelet_pods_dir: String,
    /// The ConfigMap in the namespace holding Velero's node agent settings (loadAffinity,
    /// backupPVC, restorePVC), as `velero install --node-agent-configmap`; checked before
    /// anything is applied
    #[arg(long, value_name = "NAME", requires = "use_node_agent")]
    pub node_agent_configmap: Option<String>,
    /// Velero's feature flags for the server, comma-separated, as `velero install --features`
    /// (see `ark server --help`)
    #[arg(long, value_delimiter = ',', value_name = "FEATURES")]
    pub features: Vec<Feature>,
    /// Have the server read back and verify each new backup (`sampled`, or `data` to read every
    /// byte of its volume data), as `ark server --verify-new-backups`
    #[arg(long, value_enum, value_name = "DEPTH", default_value = "off")]
    pub verify_new_backups: crate::cli::args::VerifyNewBackups,
    /// The password of the kopia repositories that hold volume data, for the Secret
    /// `velero-repo-credentials` (which Velero's node agent reads too); without it, a random one.
    /// An existing Secret is never replaced: the repositories already written need its password
    #[arg(long, value_name = "FILE")]
    pub repository_password_file: Option<PathBuf>,
    /// The most the server's scratch volume (an emptyDir) may hold, a Kubernetes quantity; past
    /// it the kubelet evicts the server rather than let it fill the node's disk
    #[arg(long, value_name = "QUANTITY", default_value = manifests::SCRATCH_SIZE)]
    pub scratch_size: String,
    /// Apply over objects another tool made or changed (Velero's `cloud-credentials`, its
    /// `default` location, its `node-agent`...), taking their fields over; without it, an install
    /// that would change another manager's fields applies nothing and names them
    #[arg(long)]
    pub take_over: bool,
    /// Apply nothing: print what would be applied (with -o json|yaml, the objects themselves)
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: print the objects as a List in this format (`kubectl apply -f -` takes it)
    #[arg(short = 'o', long, value_enum, requires = "dry_run")]
    pub output: Option<OutputFormat>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

pub async fn run(global: &GlobalArgs, args: InstallArgs) -> anyhow::Result<ExitCode> {
    let repository_password = match &args.repository_password_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| {
                    format!("cannot read --repository-password-file {}", path.display())
                })?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
        ),
        None => None,
    };
    let credentials = match &args.secret_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --secret-file {}", path.display()))?,
        ),
        None => None,
    };
    let plan = Plan {
        namespace: global.namespace.clone(),
        provider: args.bucket.provider.name(),
        bucket: args.bucket.bucket,
        prefix: args.bucket.prefix,
        config: args.backup_location_config,
        credentials,
        image: args.image,
        replicas: args.replicas,
        node_agent: args.use_node_agent.then_some(args.kubelet_pods_dir),
        node_agent_configmap: args.node_agent_configmap,
        features: args.features,
        verify_new_backups: args.verify_new_backups,
        scratch_size: args.scratch_size,
    };
    let all = manifests::manifests(&plan);
    if args.dry_run {
        match args.output {
            Some(OutputFormat::Table) | None => {
                for manifest in &all {
                    println!("{} (dry run)", manifest.reference());
                }
                println!(
                    "secret/{} (dry run: created with {} unless it exists)",
                    PASSWORD_SECRET,
                    match repository_password {
                        Some(_) => "the --repository-password-file's password",
                        None => "a random password",
                    }
                );
            }
            Some(format) => {
                let objects: Vec<_> = all.iter().map(|m| &m.object).collect();
                crate::output::print_objects(format, &objects, false)?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let client = crate::context::client(global).await?;
    if let Some(name) = &plan.node_agent_configmap {
        crate::commands::node_agent::configs(&client, &plan.namespace, name).await?;
    }
    if !args.take_over {
        refuse_others_fields(&client, &plan.namespace, &all).await?;
    }
    let passwords = Api::<Secret>::namespaced(client.clone(), &plan.namespace);
    let existing_password = passwords
        .get_opt(PASSWORD_SECRET)
        .await
        .with_context(|| format!("cannot read secret {PASSWORD_SECRET}"))?;
    if let (Some(existing), Some(wanted)) = (&existing_password, &repository_password)
        && ark_server::repositories::password_of(existing).as_deref() != Some(wanted.as_str())
    {
        anyhow::bail!(
            "nothing was applied: secret {}/{PASSWORD_SECRET} holds another repository password \
             than --repository-password-file, and the repositories already written need it: \
             ark install never replaces it",
            plan.namespace
        );
    }
    for manifest in &all {
        let change = apply(&client, &plan.namespace, manifest).await?;
        println!("{} {change}", manifest.reference());
        // Right after the namespace: in place before any server could make a repository.
        if manifest.resource.kind == "Namespace" && existing_password.is_none() {
            let password = repository_password
                .clone()
                .unwrap_or_else(ark_kopia::repository::random_password);
            // Not created: made meanwhile (a server that made a repository), and kept.
            let created = ark_server::repositories::create_password_secret(
                &client,
                &plan.namespace,
                &password,
            )
            .await?;
            if created {
                println!(
                    "secret/{PASSWORD_SECRET} created{}",
                    match repository_password {
                        Some(_) => String::new(),
                        None => format!(
                            " with a random repository password: keep a copy outside this \
                             cluster (kubectl -n {} get secret {PASSWORD_SECRET} -o \
                             jsonpath='{{.data.repository-password}}' | base64 -d); the volume \
                             data in the bucket cannot be read without it",
                            plan.namespace
                        ),
                    }
                );
            }
        }
        if manifest.resource.kind == "CustomResourceDefinition" {
            established(&client, manifest.name()).await?;
        }
    }
    if args.wait.wait {
        let waited = super::wait::within(args.wait.timeout, ready(&client, &plan)).await;
        match waited {
            Some(result) => result?,
            None => anyhow::bail!(
                "gave up waiting after {}: the Deployment {}/{} is not available or the location \
                 \"default\" is not Available (see `kubectl -n {1} get deploy,pods` and `ark -n {1} \
                 backup-location get`)",
                ark_api::duration::format(args.wait.timeout.unwrap_or_default()),
                plan.namespace,
                manifests::SERVER,
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What applying an object did, as kubectl says it.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    Created,
    Updated,
    Unchanged,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Change::Created => "created",
            Change::Updated => "updated",
            Change::Unchanged => "unchanged",
        })
    }
}

pub fn api(client: &kube::Client, namespace: &str, manifest: &Manifest) -> Api<DynamicObject> {
    if manifest.namespaced {
        Api::namespaced_with(client.clone(), namespace, &manifest.resource)
    } else {
        Api::all_with(client.clone(), &manifest.resource)
    }
}

/// Server-side apply, owning every field ark sets (forced: ark's install is the authority on its
/// own objects); told apart as created, updated or unchanged by the resource version.
async fn apply(
    client: &kube::Client,
    namespace: &str,
    manifest: &Manifest,
) -> anyhow::Result<Change> {
    let api = api(client, namespace, manifest);
    let name = manifest.name();
    let failed = || format!("cannot apply {}", manifest.reference());
    let before = api.get_opt(name).await.with_context(failed)?;
    let after = api
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&manifest.object),
        )
        .await
        .with_context(failed)?;
    Ok(match before.map(content) {
        None => Change::Created,
        Some(before) if before == content(after) => Change::Unchanged,
        Some(_) => Change::Updated,
    })
}

/// What install writes of an object: not its resource version, its status (controllers write it
/// meanwhile) or the bookkeeping of who manages which field (the API server may write only that:
/// it reorders the entries when another manager, such as an admission policy's status writer,
/// applied since).
fn content(mut object: DynamicObject) -> DynamicObject {
    object.metadata.resource_version = None;
    object.metadata.managed_fields = None;
    if let Some(fields) = object.data.as_object_mut() {
        fields.remove("status");
    }
    object
}

/// Refuses, before anything is applied, an install that would change fields another manager set
/// on an object that exists: the API server's own answer to a server-side apply that is not
/// forced (a dry run), listed for every such object.
async fn refuse_others_fields(
    client: &kube::Client,
    namespace: &str,
    all: &[Manifest],
) -> anyhow::Result<()> {
    let mut conflicts = Vec::new();
    for manifest in all {
        let api = api(client, namespace, manifest);
        let name = manifest.name();
        // Absent, or of a kind not served yet (its CRD comes with this install): nobody's fields.
        if api.get_opt(name).await.ok().flatten().is_none() {
            continue;
        }
        let params = PatchParams {
            dry_run: true,
            ..PatchParams::apply(FIELD_MANAGER)
        };
        match api
            .patch(name, &params, &Patch::Apply(&manifest.object))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let message = status.message.replace('\n', "\n    ");
                conflicts.push(format!("  {}: {message}", manifest.reference()));
            }
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("cannot apply {}", manifest.reference()));
            }
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "nothing was applied: the install would change what another tool set on {} object(s) in \
         the cluster:\n{}\nif ark is to take them over (a cluster moving from Velero to ark), run \
         it again with --take-over",
        conflicts.len(),
        conflicts.join("\n")
    )
}

/// Waits (30 s at most) until the API server serves the CRD, so that the location can be created.
async fn established(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let wait = await_condition(api, name, conditions::is_crd_established());
    match tokio::time::timeout(Duration::from_secs(30), wait).await {
        Ok(result) => result
            .map(drop)
            .with_context(|| format!("watching CRD {name}")),
        Err(_) => anyhow::bail!("CRD {name} was not established within 30 s"),
    }
}

/// Until the Deployment is available with every replica updated and the location Available.
async fn ready(client: &kube::Client, plan: &Plan) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &plan.namespace);
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(Duration::from_millis(200));
    spinner.set_message(format!(
        "waiting for deployment {} to be available",
        manifests::SERVER
    ));
    await_condition(
        deployments,
        manifests::SERVER,
        conditions::is_deployment_completed(),
    )
    .await
    .context("watching the Deployment")?;
    if plan.node_agent.is_some() {
        spinner.set_message(format!(
            "waiting for daemon set {} to run on every node",
            manifests::NODE_AGENT
        ));
        let daemon_sets: Api<k8s_openapi::api::apps::v1::DaemonSet> =
            Api::namespaced(client.clone(), &plan.namespace);
        await_condition(
            daemon_sets,
            manifests::NODE_AGENT,
            |set: Option<&k8s_openapi::api::apps::v1::DaemonSet>| {
                let generation = set.and_then(|s| s.metadata.generation);
                set.and_then(|s| s.status.as_ref()).is_some_and(|status| {
                    status.observed_generation == generation
                        && status.updated_number_scheduled.unwrap_or(0)
                            == status.desired_number_scheduled
                        && status.number_available.unwrap_or(0) == status.desired_number_scheduled
                })
            },
        )
        .await
        .context("watching the node agent's DaemonSet")?;
    }
    spinner.set_message("waiting for location default to be Available");
    let locations: Api<ark_api::BackupStorageLocation> =
        Api::namespaced(client.clone(), &plan.namespace);
    await_condition(
        locations,
        "default",
        |location: Option<&ark_api::BackupStorageLocation>| {
            location
                .and_then(|l| l.status.as_ref())
                .and_then(|s| s.phase)
                == Some(ark_api::BackupStorageLocationPhase::Available)
        },
    )
    .await
    .context("watching the location")?;
    spinner.finish_and_clear();
    println!("ark is running in namespace {}", plan.namespace);
    Ok(())
}
