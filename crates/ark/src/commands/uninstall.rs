//! `ark uninstall`: removes what `ark install` applied, the Deployment first (so that no server
//! works on while the rest goes) and never a byte of the bucket. A namespace or CRD that someone
//! else manages too (created beforehand, installed by Velero) is left where it is, and so are the
//! CRDs while another namespace still holds objects of theirs.

use std::process::ExitCode;

use anyhow::Context as _;
use ark_server::repositories::PASSWORD_SECRET;
use clap::Args;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, ListParams};

use super::install::manifests::{self, FIELD_MANAGER, Manifest};
use crate::cli::args::GlobalArgs;

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Do not ask for confirmation (required when standard input is not a terminal)
    #[arg(long)]
    pub confirm: bool,
}

pub async fn run(global: &GlobalArgs, args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let namespace = &global.namespace;
    let installed = manifests::installed(namespace);
    if !args.confirm
        && !super::confirm::confirmed(
            &format!("uninstalling ark from namespace {namespace}"),
            &format!(
                "You are about to remove ark's server, roles and default location from namespace \
                 {namespace}, and the namespace itself with every Backup and Restore object in it \
                 if ark created it (not while it holds the repositories' password). The bucket is \
                 not touched: installing again brings the backups back."
            ),
            &Vec::from_iter(installed.iter().map(Manifest::reference)),
        )?
    {
        eprintln!("nothing removed");
        return Ok(ExitCode::FAILURE);
    }
    let client = crate::context::client(global).await?;
    // The reverse of the order of installation: the Deployment first, the namespace last.
    for manifest in installed.iter().rev() {
        let api = super::install::api(&client, namespace, manifest);
        let name = manifest.name();
        let Some(object) = api
            .get_opt(name)
            .await
            .with_context(|| format!("cannot read {}", manifest.reference()))?
        else {
            continue;
        };
        // No server is left to take its finalizer off a Restore once deleted, whether the
        // namespace goes or stays.
        if manifest.resource.kind == "Namespace" {
            server_gone(&client, namespace).await?;
            release_restores(&client, namespace).await?;
        }
        // Only the namespace and the CRDs can be someone else's too (they may exist before ark
        // is installed, and Velero shares the CRDs); the rest bears ark's names and is ark's,
        // whoever has written to it since (the server writes a location's status).
        let shared = matches!(
            manifest.resource.kind.as_str(),
            "Namespace" | "CustomResourceDefinition"
        );
        if shared && let Some(others) = other_managers(&object) {
            println!("{} kept: also managed by {others}", manifest.reference());
            continue;
        }
        if manifest.resource.kind == "Namespace"
            && Api::<Secret>::namespaced(client.clone(), namespace)
                .get_opt(PASSWORD_SECRET)
                .await
                .with_context(|| format!("cannot read secret {PASSWORD_SECRET}"))?
                .is_some()
        {
            println!(
                "{} kept: it holds the repositories' password (secret {PASSWORD_SECRET}), \
                 without which the volume data in the bucket cannot be read; delete the \
                 namespace once a copy of it is kept elsewhere",
                manifest.reference()
            );
            continue;
        }
        if manifest.resource.kind == "CustomResourceDefinition"
            && let Some(elsewhere) = used_elsewhere(&client, &object, namespace).await?
        {
            println!(
                "{} kept: namespace {elsewhere} has objects of it",
                manifest.reference()
            );
            continue;
        }
        api.delete(name, &DeleteParams::default())
            .await
            .with_context(|| format!("cannot delete {}", manifest.reference()))?;
        println!("{} deleted", manifest.reference());
    }
    println!("the bucket was not touched");
    Ok(ExitCode::SUCCESS)
}

/// Waits (at most a minute) until the server's pods have stopped, so that none puts the Restores'
/// finalizer back once it is taken off.
async fn server_gone(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), namespace);
    let servers = ListParams::default()
        .labels("app.kubernetes.io/name=ark,app.kubernetes.io/component=server");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !pods
        .list_metadata(&servers)
        .await
        .context("cannot list the server's pods")?
        .items
        .is_empty()
    {
        if tokio::time::Instant::now() > deadline {
            println!("the server's pods have not stopped within a minute; going on");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    Ok(())
}

/// Takes the server's finalizer off the namespace's Restores, as `velero uninstall` does: with the
/// server gone, nothing else would, and the namespace would stay Terminating. Their files stay in
/// the bucket, as every other byte of it.
async fn release_restores(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    use kube::api::{Patch, PatchParams};
    let restores: kube::Api<ark_api::Restore> = kube::Api::namespaced(client.clone(), namespace);
    let held = restores
        .list_metadata(&ListParams::default())
        .await
        .context("cannot list the restores")?;
    for restore in held.items {
        let name = restore.metadata.name.unwrap_or_default();
        let finalizers = restore.metadata.finalizers.unwrap_or_default();
        if !finalizers.iter().any(|f| f == ark_api::RESTORE_FINALIZER) {
            continue;
        }
        let kept: Vec<&String> = finalizers
            .iter()
            .filter(|f| *f != ark_api::RESTORE_FINALIZER)
            .collect();
        let patch = serde_json::json!({ "metadata": { "finalizers": kept } });
        match restores
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            // Gone meanwhile: nothing holds it.
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot release restore {name}"));
            }
        }
    }
    Ok(())
}

/// The managers of `object`'s fields other than ark's install (status writers aside), if any.
fn other_managers(object: &DynamicObject) -> Option<String> {
    let mut others: Vec<&str> = object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref().unwrap_or_default().is_empty())
        .filter_map(|entry| entry.manager.as_deref())
        .filter(|manager| *manager != FIELD_MANAGER)
        .collect();
    others.sort_unstable();
    others.dedup();
    (!others.is_empty()).then(|| others.join(", "))
}

/// A namespace other than `namespace` that holds an object of the CRD, if any: removing the CRD
/// would delete it.
async fn used_elsewhere(
    client: &kube::Client,
    crd: &DynamicObject,
    namespace: &str,
) -> anyhow::Result<Option<String>> {
    let spec = &crd.data["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let kind = spec["names"]["kind"].as_str().unwrap_or_default();
    let Some(version) = spec["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|v| v["storage"] == true))
        .and_then(|v| v["name"].as_str())
    else {
        return Ok(None);
    };
    let resource = kube::api::ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    };
    let api: kube::Api<DynamicObject> = kube::Api::all_with(client.clone(), &resource);
    let others = api
        .list_metadata(
            &ListParams::default()
                .fields(&format!("metadata.namespace!={namespace}"))
                .limit(1),
        )
        .await
        .with_context(|| format!("cannot list {plural}.{group} in other namespaces"))?;
    Ok(others
        .items
        .first()
        .and_then(|o| o.metadata.namespace.clone()))
}
