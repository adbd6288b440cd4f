//! `ark debug`: a support bundle (`.tar.gz`) of what a person helping with ark asks for first: the
//! namespace's ark objects, its server's and node agents' workloads and logs, Events, `get` and
//! `describe --details` outputs and logs of a backup or restore, and each location's listing.
//! Nothing in it may be a credential: values of the Secrets the locations and repositories name
//! are blanked wherever they appear, signed download URLs are dropped, and so are the values of
//! environment variables named like a secret.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kube::api::{DynamicObject, ListParams, LogParams};
use kube::discovery::{self, Scope};
use kube::{Api, Client, ResourceExt as _};
use serde_json::Value;

use crate::cli::args::GlobalArgs;

#[derive(Debug, Args)]
pub struct DebugArgs {
    /// Also take this backup's `describe --details` and log
    #[arg(long, value_name = "NAME")]
    pub backup: Option<String>,
    /// Also take this restore's `describe --details` and log
    #[arg(long, value_name = "NAME")]
    pub restore: Option<String>,
    /// Where to write the bundle (default: ark-debug-<time>.tar.gz here)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Lines of each container's log taken.
const LOG_LINES: i64 = 10_000;
/// What replaces a credential.
const REDACTED: &str = "<redacted>";
/// Shorter pieces of a Secret are not looked for: they would blank ordinary words.
const SHORTEST_SECRET: usize = 8;

/// The bundle's files as they are gathered: path, contents.
#[derive(Default)]
struct Bundle {
    files: Vec<(String, String)>,
    /// What could not be gathered, and why: the bundle's `errors.txt`.
    errors: Vec<String>,
}

impl Bundle {
    fn add(&mut self, path: impl Into<String>, text: impl Into<String>) {
        self.files.push((path.into(), text.into()));
    }

    fn failed(&mut self, what: &str, error: impl std::fmt::Display) {
        self.errors.push(format!("{what}: {error}"));
    }
}

pub async fn run(global: &GlobalArgs, args: DebugArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let ns = global.namespace.as_str();
    let mut bundle = Bundle::default();
    objects(&client, ns, &mut bundle).await;
    workloads(&client, ns, &mut bundle).await;
    logs(&client, ns, &mut bundle).await;
    events(&client, ns, &mut bundle).await;
    commands(global, &args, &mut bundle);
    listings(&client, ns, &mut bundle).await;
    let secrets = secret_values(&client, ns, &mut bundle).await;
    let errors = bundle.errors.join("\n");
    bundle.add("errors.txt", errors);
    let output = args.output.clone().unwrap_or_else(|| {
        let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S");
        PathBuf::from(format!("ark-debug-{now}.tar.gz"))
    });
    write(&output, &bundle, &secrets)?;
    println!(
        "wrote {} ({} files; what could not be gathered is in errors.txt)",
        output.display(),
        bundle.files.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every object of every `velero.io` kind in the namespace, as YAML, one file per kind; a
/// DownloadRequest's signed URL left out (it lets whoever holds it read the file).
async fn objects(client: &Client, ns: &str, bundle: &mut Bundle) {
    let group = match discovery::group(client, "velero.io").await {
        Ok(group) => group,
        Err(error) => return bundle.failed("discovering velero.io", error),
    };
    for (resource, caps) in group.recommended_resources() {
        if caps.scope != Scope::Namespaced {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
        match api.list(&ListParams::default()).await {
            Ok(list) => {
                let mut items: Vec<Value> = list
                    .items
                    .iter()
                    .map(|o| serde_json::to_value(o).unwrap_or_default())
                    .collect();
                for item in &mut items {
                    if let Some(status) = item.get_mut("status").and_then(Value::as_object_mut) {
                        status.remove("downloadURL");
                    }
                    if let Some(metadata) = item.get_mut("metadata").and_then(Value::as_object_mut)
                    {
                        metadata.remove("managedFields");
                    }
                }
                bundle.add(format!("resources/{}.yaml", resource.plural), yaml(&items));
            }
            Err(error) => bundle.failed(&format!("listing {}", resource.plural), error),
        }
    }
}

/// The namespace's Deployments and DaemonSets (the server, the node agents), the values of
/// environment variables named like a secret left out.
async fn workloads(client: &Client, ns: &str, bundle: &mut Bundle) {
    let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await;
    let daemon_sets = Api::<DaemonSet>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await;
    let mut found: Vec<(String, Value)> = Vec::new();
    match deployments {
        Ok(list) => found.extend(list.items.iter().map(|d| {
            (
                format!("deployment-{}", d.name_any()),
                serde_json::to_value(d).unwrap_or_default(),
            )
        })),
        Err(error) => bundle.failed("listing deployments", error),
    }
    match daemon_sets {
        Ok(list) => found.extend(list.items.iter().map(|d| {
            (
                format!("daemonset-{}", d.name_any()),
                serde_json::to_value(d).unwrap_or_default(),
            )
        })),
        Err(error) => bundle.failed("listing daemonsets", error),
    }
    for (name, mut workload) in found {
        blank_secret_env(&mut workload);
        if let Some(metadata) = workload.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        bundle.add(format!("workloads/{name}.yaml"), yaml(&workload));
    }
}

/// Whether an environment variable's name says its value is a credential.
fn secret_named(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    ["KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|word| name.contains(word))
}

/// Blanks the literal values of secret-named variables in every container of a workload.
fn blank_secret_env(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            let secret = fields
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(secret_named);
            if secret && fields.get("value").is_some_and(Value::is_string) {
                fields.insert("value".into(), REDACTED.into());
            }
            fields.values_mut().for_each(blank_secret_env);
        }
        Value::Array(items) => items.iter_mut().for_each(blank_secret_env),
        _ => {}
    }
}

/// The last lines of each container of each pod in the namespace (the server, the node agents).
async fn logs(client: &Client, ns: &str, bundle: &mut Bundle) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let listed = match pods.list(&ListParams::default()).await {
        Ok(listed) => listed,
        Err(error) => return bundle.failed("listing pods", error),
    };
    for pod in listed.items {
        let name = pod.name_any();
        let containers = pod.spec.iter().flat_map(|s| {
            s.init_containers
                .iter()
                .flatten()
                .chain(&s.containers)
                .map(|c| c.name.clone())
        });
        for container in containers.collect::<Vec<_>>() {
            let params = LogParams {
                container: Some(container.clone()),
                tail_lines: Some(LOG_LINES),
                timestamps: true,
                ..Default::default()
            };
            match pods.logs(&name, &params).await {
                Ok(text) => bundle.add(format!("logs/{name}/{container}.log"), text),
                Err(error) => bundle.failed(&format!("log of {name}/{container}"), error),
            }
        }
    }
}

async fn events(client: &Client, ns: &str, bundle: &mut Bundle) {
    match Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
    {
        Ok(list) => {
            let lines: Vec<String> = list
                .items
                .iter()
                .map(|e| {
                    format!(
                        "{} {} {}/{}: {} {}",
                        e.last_timestamp
                            .as_ref()
                            .map(|t| t.0.to_string())
                            .unwrap_or_default(),
                        e.type_.clone().unwrap_or_default(),
                        e.involved_object.kind.clone().unwrap_or_default(),
                        e.involved_object.name.clone().unwrap_or_default(),
                        e.reason.clone().unwrap_or_default(),
                        e.message.clone().unwrap_or_default()
                    )
                })
                .collect();
            bundle.add("events.txt", lines.join("\n"));
        }
        Err(error) => bundle.failed("listing events", error),
    }
}

/// Each location's backups as its bucket lists them (read with the location's credentials, which
/// the person running `ark debug` may lack: then the reason).
async fn listings(client: &Client, ns: &str, bundle: &mut Bundle) {
    let locations = match Api::<ark_api::BackupStorageLocation>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
    {
        Ok(list) => list.items,
        Err(error) => return bundle.failed("listing the locations", error),
    };
    for location in locations {
        let name = location.name_any();
        let listed = match ark_server::locations::open(client, location).await {
            Ok(open) => open.store.backup_names().await.map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        let text = match listed {
            Ok(backups) => backups.into_iter().collect::<Vec<_>>().join("\n"),
            Err(error) => format!("cannot list the location's backups: {error}"),
        };
        bundle.add(format!("locations/{name}.txt"), text);
    }
}

/// What ark's own commands print, run as the person running `ark debug` would run them.
fn commands(global: &GlobalArgs, args: &DebugArgs, bundle: &mut Bundle) {
    let mut runs: Vec<(String, Vec<String>)> = vec![
        ("version.txt".into(), vec!["version".into()]),
        (
            "get/backups.txt".into(),
            vec!["backup".into(), "get".into()],
        ),
        (
            "get/restores.txt".into(),
            vec!["restore".into(), "get".into()],
        ),
        (
            "get/schedules.txt".into(),
            vec!["schedule".into(), "get".into()],
        ),
        (
            "get/backup-locations.txt".into(),
            vec!["backup-location".into(), "get".into()],
        ),
    ];
    for (noun, name) in [("backup", &args.backup), ("restore", &args.restore)] {
        if let Some(name) = name {
            runs.push((
                format!("describe/{noun}-{name}.txt"),
                vec![
                    noun.into(),
                    "describe".into(),
                    name.clone(),
                    "--details".into(),
                ],
            ));
            runs.push((
                format!("logs/{noun}-{name}.log"),
                vec![noun.into(), "logs".into(), name.clone()],
            ));
        }
    }
    let ark = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ark"));
    for (path, run) in runs {
        let mut command = std::process::Command::new(&ark);
        command.args(&run).args(["-n", &global.namespace]);
        if let Some(kubeconfig) = &global.kubeconfig {
            command.arg("--kubeconfig").arg(kubeconfig);
        }
        if let Some(context) = &global.context {
            command.args(["--context", context]);
        }
        command.stdin(std::process::Stdio::null());
        match command.output() {
            Ok(output) => bundle.add(
                path,
                format!(
                    "$ ark {}\n{}{}",
                    run.join(" "),
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ),
            ),
            Err(error) => bundle.failed(&format!("ark {}", run.join(" ")), error),
        }
    }
}

/// The pieces of every Secret a location or repository of the namespace names (a credentials
/// file's keys, a repository password): what must appear nowhere in the bundle. The Secrets are
/// read only to be blanked; a person who may not read them has no credential to leak through
/// what they gather either, but their names are recorded in errors.txt.
async fn secret_values(client: &Client, ns: &str, bundle: &mut Bundle) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = BTreeSet::from(["velero-repo-credentials".to_string()]);
    match Api::<ark_api::BackupStorageLocation>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
    {
        Ok(list) => {
            for location in list.items {
                names.extend(location.spec.credential.map(|c| c.name));
                names.extend(location.spec.object_storage.ca_cert_ref.map(|c| c.name));
            }
        }
        Err(error) => bundle.failed("listing the locations' Secrets", error),
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let mut values = BTreeSet::new();
    for name in names {
        match secrets.get_opt(&name).await {
            Ok(Some(secret)) => {
                for bytes in secret.data.into_iter().flatten().map(|(_, v)| v.0) {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    values.extend(pieces(&text));
                    values.insert(text);
                }
            }
            Ok(None) => {}
            Err(error) => bundle.failed(&format!("reading Secret {name} to blank it"), error),
        }
    }
    values.retain(|v| v.len() >= SHORTEST_SECRET);
    values
}

/// The words of a credentials file (`key = value`, `KEY=VALUE`, JSON), each a secret in itself.
fn pieces(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '=' | '"' | ',' | ':' | '{' | '}'))
        .map(str::to_string)
        .collect()
}

fn yaml<T: serde::Serialize>(value: &T) -> String {
    serde_saphyr::to_string(value).unwrap_or_else(|error| format!("cannot write YAML: {error}"))
}

/// The bundle as a `.tar.gz` under `ark-debug/`, every Secret's value blanked in every file.
fn write(
    output: &std::path::Path,
    bundle: &Bundle,
    secrets: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let file = std::fs::File::create(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::default(),
    ));
    // The longest first: a secret that holds another is blanked whole.
    let mut ordered: Vec<&String> = secrets.iter().collect();
    ordered.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for (path, text) in &bundle.files {
        let mut text = text.clone();
        for secret in &ordered {
            text = text.replace(secret.as_str(), REDACTED);
        }
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        );
        tar.append_data(&mut header, format!("ark-debug/{path}"), text.as_bytes())
            .with_context(|| format!("cannot write {}", output.display()))?;
    }
    tar.into_inner()
        .and_then(|gz| gz.finish())
        .with_context(|| format!("cannot write {}", output.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_named_variables_lose_their_values_and_references_stay() {
        let mut workload = serde_json::json!({ "spec": { "template": { "spec": { "containers": [{
            "env": [
                { "name": "AWS_SECRET_ACCESS_KEY", "value": "abc123abc123" },
                { "name": "AZURE_STORAGE_ACCOUNT_KEY", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k" } } },
                { "name": "LOG_LEVEL", "value": "info" },
            ],
        }] } } } });
        blank_secret_env(&mut workload);
        let env = &workload["spec"]["template"]["spec"]["containers"][0]["env"];
        assert_eq!(env[0]["value"], REDACTED);
        assert_eq!(env[1]["valueFrom"]["secretKeyRef"]["name"], "s");
        assert_eq!(env[2]["value"], "info");
    }

    #[test]
    fn a_credentials_file_is_blanked_key_by_key() {
        let file = "[default]\naws_access_key_id = AKIAEXAMPLE123\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n";
        let words = pieces(file);
        assert!(words.contains(&"AKIAEXAMPLE123".to_string()));
        assert!(words.contains(&"wJalrXUtnFEMI/K7MDENG".to_string()));
    }
}
