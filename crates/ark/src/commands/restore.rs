use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, Restore, RestorePhase, RestoreSpec};
use kube::Api;
use kube::api::PostParams;

use super::{bucket, wait};
use crate::cli::{
    DescribeArgs, ExistingResourcePolicy, GetArgs, GlobalArgs, LogsArgs, OutputFormat,
    RestoreCommand, RestoreCreateArgs,
};
use crate::describe::Describe;
use crate::output;

pub async fn run(global: &GlobalArgs, command: RestoreCommand) -> anyhow::Result<ExitCode> {
    match command {
        RestoreCommand::Create(args) => create(global, *args).await,
        RestoreCommand::Get(args) => get(global, args).await,
        RestoreCommand::Describe(args) => describe(global, args).await,
        RestoreCommand::Logs(args) => logs(global, args).await,
    }
}

fn non_empty(list: Vec<String>) -> Option<Vec<String>> {
    (!list.is_empty()).then_some(list)
}

/// Reads and checks a hooks file; every error with its path, line and column.
fn read_hooks_file(path: &std::path::Path) -> anyhow::Result<ark_api::RestoreHooks> {
    use std::io::Read;
    let shown = path.display().to_string();
    // No more than one byte past the limit is read: parse_file refuses a longer file by its size.
    let limit = ark_api::hooks::MAX_FILE_BYTES as u64 + 1;
    let text = if shown == "-" {
        std::io::read_to_string(std::io::stdin().take(limit))
            .context("cannot read hooks from standard input")?
    } else {
        std::fs::File::open(path)
            .and_then(|file| std::io::read_to_string(file.take(limit)))
            .with_context(|| format!("cannot read hooks file {shown}"))?
    };
    let name = if shown == "-" {
        "<stdin>"
    } else {
        shown.as_str()
    };
    ark_api::hooks::parse_file(&text).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {name}:{e}")).collect();
        anyhow::anyhow!(
            "invalid hooks file {name}; nothing was created:\n{}",
            lines.join("\n")
        )
    })
}

async fn create(global: &GlobalArgs, args: RestoreCreateArgs) -> anyhow::Result<ExitCode> {
    // The hooks file first: a broken file fails fast, even when the cluster is out of reach.
    let hooks = args
        .hooks_file
        .as_deref()
        .map(read_hooks_file)
        .transpose()?;
    let client = crate::context::client(global).await?;
    // The backup is looked up first: a typo is named before anything is created.
    let backups = Api::<Backup>::namespaced(client.clone(), &global.namespace);
    let found = backups
        .get_opt(&args.from_backup)
        .await
        .with_context(|| format!("cannot look up backup {:?}", args.from_backup))?;
    if found.is_none() {
        anyhow::bail!(
            "backup {:?} not found in namespace {:?}{}",
            args.from_backup,
            global.namespace,
            super::missing::suggestion(&backups, &args.from_backup).await
        );
    }
    let name = args.name.unwrap_or_else(|| {
        let stamp = k8s_openapi::jiff::Timestamp::now().strftime("%Y%m%d%H%M%S");
        format!("{}-{stamp}", args.from_backup)
    });
    let filters = args.filters;
    let spec = RestoreSpec {
        backup_name: args.from_backup,
        included_namespaces: non_empty(filters.include_namespaces),
        excluded_namespaces: non_empty(filters.exclude_namespaces),
        included_resources: non_empty(filters.include_resources),
        excluded_resources: non_empty(filters.exclude_resources),
        include_cluster_resources: filters.include_cluster_resources,
        label_selector: filters.selector,
        namespace_mapping: (!args.namespace_mappings.is_empty())
            .then(|| args.namespace_mappings.into_iter().collect()),
        existing_resource_policy: Some(
            match args.existing_resource_policy {
                ExistingResourcePolicy::None => "none",
                ExistingResourcePolicy::Update => "update",
            }
            .to_string(),
        ),
        hooks,
    };
    let api: Api<Restore> = Api::namespaced(client, &global.namespace);
    api.create(&PostParams::default(), &Restore::new(&name, spec))
        .await
        .with_context(|| {
            format!(
                "cannot create restore {name:?} in namespace {:?}",
                global.namespace
            )
        })?;
    println!("Restore request {name:?} submitted successfully.");
    if !args.wait.wait {
        println!(
            "Run `ark restore describe {name}` or `ark restore logs {name}` for more details."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let restore = wait::until_done(api, &global.namespace, &name, args.wait.timeout).await?;
    let phase = restore.phase();
    println!(
        "Restore completed with status: {phase:?}. You may check for more information using the commands `ark restore describe {name}` and `ark restore logs {name}`."
    );
    Ok(if phase == RestorePhase::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn get(global: &GlobalArgs, args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let found: super::Found<Restore> =
        super::get_named_or_listed(&client, &global.namespace, &args, "restore").await?;
    match args.output.output {
        OutputFormat::Table => println!("{}", table(&found.items)),
        format => output::print_objects(format, &found.items, args.names.len() == 1)?,
    }
    Ok(found.exit_code())
}

async fn describe(global: &GlobalArgs, args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let lookup = GetArgs {
        names: args.names.clone(),
        selector: None,
        output: args.output,
    };
    let found: super::Found<Restore> =
        super::get_named_or_listed(&client, &global.namespace, &lookup, "restore").await?;
    if lookup.output.output != OutputFormat::Table {
        output::print_objects(lookup.output.output, &found.items, args.names.len() == 1)?;
        return Ok(found.exit_code());
    }
    let backups: Api<Backup> = Api::namespaced(client.clone(), &global.namespace);
    for (index, restore) in found.items.iter().enumerate() {
        if index > 0 {
            println!();
        }
        let mut text = describe_text(restore);
        let name = restore.metadata.name.clone().unwrap_or_default();
        let location = backups
            .get_opt(&restore.spec.backup_name)
            .await
            .ok()
            .flatten()
            .and_then(|b| b.spec.storage_location)
            .unwrap_or_default();
        let with_hooks = restore
            .status
            .as_ref()
            .and_then(|s| s.hook_status.as_ref())
            .is_some()
            || restore.spec.hooks.is_some();
        if with_hooks {
            text.push_str(
                &match bucket::hook_results(&client, &global.namespace, &location, &name).await {
                    Ok(pods) => hooks_text(&pods, args.details),
                    Err(error) => format!("\nHooks: <unavailable: {error:#}>\n"),
                },
            );
        }
        if args.details {
            text.push_str(
                &bucket::details(
                    &client,
                    &global.namespace,
                    &location,
                    bucket::Of::Restore(&name),
                )
                .await,
            );
        }
        print!("{text}");
    }
    Ok(found.exit_code())
}

pub fn describe_text(restore: &Restore) -> String {
    let spec = &restore.spec;
    let status = restore.status.clone().unwrap_or_default();
    let list = |l: Option<&Vec<String>>, default: &str| {
        l.filter(|l| !l.is_empty())
            .map_or(default.to_string(), |l| l.join(", "))
    };
    let mut d = Describe::default();
    d.metadata(&restore.metadata);
    d.blank();
    d.field("Phase", &format!("{:?}", restore.phase()));
    if let Some(progress) = &status.progress {
        d.fields(&[
            (
                "Total items to be restored",
                progress.total_items.unwrap_or(0).to_string(),
            ),
            (
                "Items restored",
                progress.items_restored.unwrap_or(0).to_string(),
            ),
        ]);
    }
    if let Some(errors) = status.validation_errors.as_ref().filter(|e| !e.is_empty()) {
        d.blank();
        d.line("Validation errors:");
        for error in errors {
            d.line(&format!("  {error}"));
        }
    }
    if let Some(reason) = status.failure_reason.as_ref().filter(|r| !r.is_empty()) {
        d.field("Failure reason", reason);
    }
    d.blank();
    d.fields(&[
        ("Started", output::time(status.start_timestamp.as_ref())),
        (
            "Completed",
            output::time(status.completion_timestamp.as_ref()),
        ),
    ]);
    d.blank();
    d.fields(&[
        ("Errors", status.errors.unwrap_or(0).to_string()),
        ("Warnings", status.warnings.unwrap_or(0).to_string()),
    ]);
    if let Some(hooks) = &status.hook_status {
        d.blank();
        d.fields(&[
            (
                "HooksAttempted",
                hooks.hooks_attempted.unwrap_or(0).to_string(),
            ),
            ("HooksFailed", hooks.hooks_failed.unwrap_or(0).to_string()),
        ]);
    }
    d.blank();
    d.field("Backup", &spec.backup_name);
    d.blank();
    d.line("Namespaces:");
    d.nested(&[
        (
            "Included",
            list(
                spec.included_namespaces.as_ref(),
                "all namespaces found in the backup",
            ),
        ),
        (
            "Excluded",
            list(spec.excluded_namespaces.as_ref(), "<none>"),
        ),
    ]);
    d.blank();
    d.line("Resources:");
    let cluster = match spec.include_cluster_resources {
        None => "auto",
        Some(true) => "included",
        Some(false) => "excluded",
    };
    d.nested(&[
        ("Included", list(spec.included_resources.as_ref(), "*")),
        (
            "Excluded",
            list(
                spec.excluded_resources.as_ref(),
                "nodes, events, events.events.k8s.io, backups.velero.io, restores.velero.io",
            ),
        ),
        ("Cluster-scoped", cluster.to_string()),
    ]);
    d.blank();
    let mapping = spec
        .namespace_mapping
        .as_ref()
        .filter(|m| !m.is_empty())
        .map_or("<none>".to_string(), |m| {
            m.iter()
                .map(|(a, b)| format!("{a}:{b}"))
                .collect::<Vec<_>>()
                .join(", ")
        });
    d.field("Namespace mappings", &mapping);
    d.blank();
    d.field(
        "Label selector",
        &crate::describe::selector(spec.label_selector.as_ref()),
    );
    d.blank();
    d.field(
        "Existing Resource Policy",
        spec.existing_resource_policy.as_deref().unwrap_or("none"),
    );
    d.finish()
}

/// Each restored pod's hooks: init containers injected, and every exec hook with its container,
/// result, exit code, duration and error; with `details`, the end of its output.
pub fn hooks_text(pods: &[ark_api::hooks::PodHookResults], details: bool) -> String {
    let mut out = String::from("\nHooks:\n");
    if pods.is_empty() {
        out.push_str("  <none>\n");
    }
    for pod in pods {
        out.push_str(&format!("  {}/{}:\n", pod.namespace, pod.pod));
        if !pod.init_containers.is_empty() {
            out.push_str(&format!(
                "    init containers injected: {}\n",
                pod.init_containers.join(", ")
            ));
        }
        for hook in &pod.hooks {
            let result = if hook.succeeded {
                "Succeeded"
            } else {
                "Failed"
            };
            let code = hook.exit_code.map_or("-".to_string(), |c| c.to_string());
            out.push_str(&format!(
                "    exec in {}: {:?}: {result} (exit code {code}, {:.1}s){}\n",
                hook.container,
                hook.command.join(" "),
                hook.duration_ms as f64 / 1000.0,
                hook.error
                    .as_ref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ));
            if details && !hook.output_tail.is_empty() {
                for line in hook.output_tail.lines() {
                    out.push_str(&format!("      | {line}\n"));
                }
            }
        }
    }
    out
}

async fn logs(global: &GlobalArgs, args: LogsArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let restore = Api::<Restore>::namespaced(client.clone(), &global.namespace)
        .get_opt(&args.name)
        .await?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "restore {:?} not found in namespace {:?}",
                args.name,
                global.namespace
            )
        })?;
    let backup = Api::<Backup>::namespaced(client.clone(), &global.namespace)
        .get_opt(&restore.spec.backup_name)
        .await?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "backup {:?} of restore {:?} not found: its location is unknown",
                restore.spec.backup_name,
                args.name
            )
        })?;
    let location = backup.spec.storage_location.unwrap_or_default();
    print!(
        "{}",
        bucket::read_log(
            &client,
            &global.namespace,
            &location,
            bucket::Of::Restore(&args.name)
        )
        .await?
    );
    Ok(ExitCode::SUCCESS)
}

fn table(restores: &[Restore]) -> String {
    output::table(
        &[
            "NAME",
            "BACKUP",
            "STATUS",
            "STARTED",
            "COMPLETED",
            "ERRORS",
            "WARNINGS",
            "CREATED",
        ],
        restores.iter().map(|restore| {
            let status = restore.status.clone().unwrap_or_default();
            vec![
                restore.metadata.name.clone().unwrap_or_default(),
                restore.spec.backup_name.clone(),
                format!("{:?}", restore.phase()),
                output::time(status.start_timestamp.as_ref()),
                output::time(status.completion_timestamp.as_ref()),
                status.errors.unwrap_or(0).to_string(),
                status.warnings.unwrap_or(0).to_string(),
                output::time(restore.metadata.creation_timestamp.as_ref()),
            ]
        }),
    )
}
