//! `ark restore create --dry-run`: the restore's plan, printed as a table or as JSON or YAML for
//! scripts; nothing is created (see `ark_server::restore_preview`).

use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::Restore;
use ark_server::restore_preview::{self, Action, Preview};

use k8s_openapi::api::apps::v1::Deployment;

use crate::cli::args::{GlobalArgs, OutputFormat};
use crate::commands::server::{ServerArgs, restore_config};

pub async fn run(
    client: &kube::Client,
    global: &GlobalArgs,
    restore: &Restore,
    output: OutputFormat,
) -> anyhow::Result<ExitCode> {
    let namespace = &global.namespace;
    let (config, not_read) = deployed_restore_config(client, namespace).await;
    if let Some(reason) = not_read {
        eprintln!(
            "note: the server's restore settings are not known ({reason}): its defaults are assumed"
        );
    }
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let preview = restore_preview::preview(
        client,
        namespace,
        restore,
        &config,
        scratch.path().to_path_buf(),
    )
    .await
    .with_context(|| {
        format!(
            "cannot preview a restore of backup {:?}",
            restore.spec.backup_name
        )
    })?;
    match output {
        OutputFormat::Table => print!("{}", text(&preview)),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&preview)?),
        OutputFormat::Yaml => print!("{}", serde_saphyr::to_string(&preview)?),
    }
    Ok(match preview.would_fail() {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    })
}

/// The server's command line after `server`, with the global flags it carries.
#[derive(clap::Parser)]
#[command(name = "ark server")]
struct ServerLine {
    #[command(flatten)]
    _global: GlobalArgs,
    #[command(flatten)]
    server: ServerArgs,
}

/// The restore settings of the server `ark install` deployed in `namespace`, read from its
/// Deployment's command line; a default server's, with the reason, when that cannot be read (no
/// right to read Deployments, a server ark did not install).
async fn deployed_restore_config(
    client: &kube::Client,
    namespace: &str,
) -> (ark_server::RestoreConfig, Option<String>) {
    use clap::Parser as _;
    let deployment = crate::commands::install::manifests::SERVER;
    let shown = format!("Deployment {namespace}/{deployment}");
    let api: kube::Api<Deployment> = kube::Api::namespaced(client.clone(), namespace);
    let args = match api.get_opt(deployment).await {
        Ok(Some(found)) => (found.spec.and_then(|s| s.template.spec))
            .and_then(|pod| pod.containers.into_iter().find(|c| c.name == deployment))
            .and_then(|container| container.args)
            .filter(|args| args.first().map(String::as_str) == Some("server"))
            .ok_or_else(|| format!("{shown} runs no ark server")),
        Ok(None) => Err(format!("{shown} not found")),
        Err(error) => {
            let error = anyhow::Error::from(error);
            let explained = crate::errors::explain(&error, namespace);
            Err(format!(
                "{shown}: {}",
                explained.unwrap_or(error.to_string())
            ))
        }
    };
    let parsed = args.and_then(|args| {
        let line = std::iter::once("ark".to_string()).chain(args.into_iter().skip(1));
        ServerLine::try_parse_from(line)
            .map_err(|error| format!("{shown}: the server's command line: {}", error.kind()))
    });
    match parsed {
        Ok(line) => (restore_config(&line.server), None),
        Err(reason) => {
            let defaults = ServerLine::parse_from(["ark"]);
            (restore_config(&defaults.server), Some(reason))
        }
    }
}

/// The plan as people read it: the items, the volumes, the hooks, what would go wrong, a summary.
fn text(preview: &Preview) -> String {
    let mut text = format!(
        "Restore of backup {} (a dry run: nothing was changed):\n\n",
        preview.backup
    );
    let rows = preview.items.iter().map(|item| {
        let mut detail = Vec::new();
        if !item.fields.is_empty() {
            detail.push(format!("fields: {}", item.fields.join(", ")));
        }
        detail.extend(item.messages.iter().cloned());
        [
            item.resource.clone(),
            item.namespace.clone().unwrap_or_default(),
            item.name.clone(),
            item.action.as_str().to_string(),
            detail.join("; "),
        ]
    });
    let headers = ["RESOURCE", "NAMESPACE", "NAME", "ACTION", "DETAIL"];
    text.push_str(&crate::output::table(&headers, rows));
    text.push('\n');
    if !preview.volumes.is_empty() {
        text.push_str(&format!("\nVolumes ({}):\n", preview.volumes.len()));
        for volume in &preview.volumes {
            let target = match (&volume.pod, &volume.volume, &volume.claim) {
                (Some(pod), Some(volume), _) => format!("pod {pod}, volume {volume}"),
                (_, _, Some(claim)) => format!("claim {claim}"),
                _ => String::new(),
            };
            text.push_str(&format!(
                "  {}: {target}: from {}\n",
                volume.namespace, volume.from
            ));
        }
    }
    if !preview.hooks.is_empty() {
        text.push_str(&format!("\nHooks ({}):\n", preview.hooks.len()));
        for hook in &preview.hooks {
            let source = hook
                .source
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            text.push_str(&format!(
                "  {}/{}: {} container {}: {:?}{source}\n",
                hook.namespace, hook.pod, hook.kind, hook.container, hook.command
            ));
        }
    }
    for (heading, messages) in [("Errors", &preview.errors), ("Warnings", &preview.warnings)] {
        if !messages.is_empty() {
            text.push_str(&format!("\n{heading} ({}):\n", messages.len()));
            for message in messages.iter() {
                text.push_str(&format!("  - {message}\n"));
            }
        }
    }
    let counts: Vec<String> = [
        Action::Create,
        Action::Update,
        Action::Skip,
        Action::Conflict,
        Action::Refused,
    ]
    .iter()
    .map(|action| format!("{} {}", preview.count(*action), action.as_str()))
    .collect();
    text.push_str(&format!(
        "\n{} items: {}.\n",
        preview.items.len(),
        counts.join(", ")
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_server::restore_preview::{PlannedHook, PlannedItem, PlannedVolume};

    #[test]
    fn the_plan_reads_item_by_item_with_its_volumes_hooks_and_counts() {
        let item = |name: &str, action, fields: &[&str], messages: &[&str]| PlannedItem {
            resource: "configmaps".into(),
            namespace: Some("shop".into()),
            name: name.into(),
            action,
            fields: fields.iter().map(|f| f.to_string()).collect(),
            messages: messages.iter().map(|m| m.to_string()).collect(),
        };
        let preview = Preview {
            backup: "b1".into(),
            items: vec![
                item("a", Action::Create, &[], &[]),
                item("b", Action::Update, &["data.k"], &[]),
                item("c", Action::Refused, &[], &["denied by policy"]),
            ],
            volumes: vec![PlannedVolume {
                namespace: "shop".into(),
                pod: Some("db".into()),
                claim: None,
                volume: Some("data".into()),
                from: "pod volume backup b1-x (kopia snapshot k1)".into(),
            }],
            hooks: vec![PlannedHook {
                namespace: "shop".into(),
                pod: "db".into(),
                kind: "exec",
                container: "db".into(),
                command: vec!["true".into()],
                source: Some("spec hook \"h\"".into()),
            }],
            errors: vec![],
            warnings: vec!["w".into()],
        };
        assert!(preview.would_fail());
        assert_eq!(
            text(&preview),
            "Restore of backup b1 (a dry run: nothing was changed):

RESOURCE    NAMESPACE  NAME  ACTION   DETAIL
configmaps  shop       a     create
configmaps  shop       b     update   fields: data.k
configmaps  shop       c     refused  denied by policy

Volumes (1):
  shop: pod db, volume data: from pod volume backup b1-x (kopia snapshot k1)

Hooks (1):
  shop/db: exec container db: [\"true\"] (spec hook \"h\")

Warnings (1):
  - w

3 items: 1 create, 1 update, 0 skip, 0 conflict, 1 refused.
"
        );
    }
}
