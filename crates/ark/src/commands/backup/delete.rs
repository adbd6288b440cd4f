//! `ark backup delete`: look every backup up, confirm, then one DeleteBackupRequest per backup;
//! with `--wait`, follow the requests until each backup is gone or its request failed.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::{Backup, DeleteBackupRequest, DeleteBackupRequestPhase, labels};
use clap::Args;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use crate::cli::args::{GlobalArgs, WaitArgs, parse_selector};
use crate::commands::lookup::{Found, get_named_or_listed};

/// Exactly one way of choosing what to delete.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["names", "all", "selector"]))]
pub struct BackupDeleteArgs {
    /// The backups to delete
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::cli::args::Names::Backups))]
    pub names: Vec<String>,
    /// Delete every backup in the namespace
    #[arg(long)]
    pub all: bool,
    /// Delete the backups matching this label selector
    #[arg(short = 'l', long, value_name = "SELECTOR", value_parser = parse_selector)]
    pub selector: Option<ark_api::LabelSelector>,
    /// Do not ask for confirmation (required when standard input is not a terminal)
    #[arg(long)]
    pub confirm: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

/// How many times a generateName collision is retried before giving up.
const CREATE_ATTEMPTS: usize = 5;

/// Requests created at once by `--all` or a selector.
const SUBMITTED_AT_ONCE: usize = 16;

pub async fn run(global: &GlobalArgs, args: BackupDeleteArgs) -> anyhow::Result<ExitCode> {
    let client = crate::context::client(global).await?;
    let backups: Api<Backup> = Api::namespaced(client.clone(), &global.namespace);
    let selector = (args.selector.clone())
        .map(kube::core::Selector::try_from)
        .transpose()
        .context("invalid selector")?
        .map(|selector| selector.to_string());
    let Found {
        items: found,
        missing,
        ..
    } = get_named_or_listed(
        &client,
        &global.namespace,
        &args.names,
        selector.as_deref(),
        "backup",
    )
    .await?;
    if found.is_empty() {
        if missing == 0 {
            println!("No backups found.");
        }
        return Ok(exit(missing == 0));
    }
    if !args.confirm && !confirmed(&found)? {
        println!("Cancelled.");
        return Ok(exit(missing == 0));
    }
    let requests: Api<DeleteBackupRequest> = Api::namespaced(client, &global.namespace);
    let mut submitted = Vec::new();
    let mut failed = missing;
    // Submitted several at a time, reported in the order chosen.
    let mut outcomes = futures::stream::iter(&found)
        .map(|backup| {
            let requests = &requests;
            async move { (backup, submit(requests, backup).await) }
        })
        .buffered(SUBMITTED_AT_ONCE);
    while let Some((backup, outcome)) = outcomes.next().await {
        match outcome {
            Ok(request) => {
                println!(
                    "Request to delete backup {:?} submitted successfully.\nThe backup will be fully deleted after all associated data (disk snapshots, backup files, restores) are removed.",
                    backup.name_any()
                );
                submitted.push((request, backup.clone()));
            }
            Err(error) => {
                eprintln!("error: backup {:?}: {error:#}", backup.name_any());
                failed += 1;
            }
        }
    }
    if args.wait.wait && !submitted.is_empty() {
        let waited =
            crate::commands::wait::within(args.wait.timeout, wait(&requests, &backups, submitted))
                .await;
        let Some(waited) = waited else {
            anyhow::bail!(
                "gave up waiting after {}: the deletions go on; `ark backup get` shows them",
                ark_api::duration::format(args.wait.timeout.unwrap_or_default())
            );
        };
        failed += waited?;
    }
    Ok(exit(failed == 0))
}

fn exit(success: bool) -> ExitCode {
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn confirmed(backups: &[Backup]) -> anyhow::Result<bool> {
    crate::commands::confirm::confirmed(
        &format!("deleting {} backup(s)", backups.len()),
        "You are about to delete these backups and all their data (snapshots, backup files, restores):",
        &Vec::from_iter(backups.iter().map(|b| b.name_any())),
    )
}

/// Creates the request, retrying when the generated name collides with an existing one.
async fn submit(requests: &Api<DeleteBackupRequest>, backup: &Backup) -> anyhow::Result<String> {
    let request = DeleteBackupRequest::for_backup(backup);
    let mut attempt = 0;
    loop {
        attempt += 1;
        match requests.create(&PostParams::default(), &request).await {
            Ok(created) => return Ok(created.name_any()),
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < CREATE_ATTEMPTS => {
                continue;
            }
            Err(error) => return Err(error).context("cannot create the DeleteBackupRequest"),
        }
    }
}

/// What the wait watches: the requests (a failed one ends its backup's wait) and the backups (a
/// deleted one is done).
enum Watched {
    Request(Box<watcher::Event<DeleteBackupRequest>>),
    Backup(Box<watcher::Event<Backup>>),
}

/// Follows the requests and the backups (watches, not polling); returns how many deletions
/// failed.
async fn wait(
    requests: &Api<DeleteBackupRequest>,
    backups: &Api<Backup>,
    submitted: Vec<(String, Backup)>,
) -> anyhow::Result<usize> {
    let bar = ProgressBar::new(submitted.len() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} deleting backups [{bar:30}] {pos}/{len} ({elapsed})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let mut pending: BTreeMap<String, Backup> = submitted.into_iter().collect();
    let mut failures = Vec::new();
    let request_events = watcher::watcher(requests.clone(), watcher::Config::default())
        .map(|event| event.map(|event| Watched::Request(Box::new(event))))
        .boxed();
    let backup_events = watcher::watcher(backups.clone(), watcher::Config::default())
        .map(|event| event.map(|event| Watched::Backup(Box::new(event))))
        .boxed();
    let mut events = futures::stream::select(request_events, backup_events);
    let (mut listed, mut listed_backups) = (BTreeSet::new(), BTreeSet::new());
    while !pending.is_empty() {
        let event = events
            .next()
            .await
            .context("the watch on DeleteBackupRequests and Backups ended")??;
        // (request name, the request as seen, or None when it is gone)
        let seen: Vec<(String, Option<DeleteBackupRequest>)> = match event {
            Watched::Backup(event) => {
                // Uids of backups now known to be gone.
                let gone: Vec<String> = match *event {
                    watcher::Event::Delete(b) => b.metadata.uid.into_iter().collect(),
                    watcher::Event::Init => {
                        listed_backups.clear();
                        vec![]
                    }
                    watcher::Event::InitApply(b) => {
                        listed_backups.extend(b.metadata.uid);
                        vec![]
                    }
                    watcher::Event::InitDone => pending
                        .values()
                        .filter_map(|b| b.metadata.uid.clone())
                        .filter(|uid| !listed_backups.contains(uid))
                        .collect(),
                    watcher::Event::Apply(_) => vec![],
                };
                pending.retain(|_, backup| {
                    let deleted = backup
                        .metadata
                        .uid
                        .as_ref()
                        .is_some_and(|u| gone.contains(u));
                    if deleted {
                        bar.inc(1);
                    }
                    !deleted
                });
                continue;
            }
            Watched::Request(event) => match *event {
                watcher::Event::Apply(r) => vec![(r.name_any(), Some(r))],
                watcher::Event::Delete(r) => vec![(r.name_any(), None)],
                watcher::Event::Init => {
                    listed.clear();
                    continue;
                }
                watcher::Event::InitApply(r) => {
                    listed.insert(r.name_any());
                    vec![(r.name_any(), Some(r))]
                }
                // A request finished and removed before the watch began is gone as well.
                watcher::Event::InitDone => pending
                    .keys()
                    .filter(|n| !listed.contains(*n))
                    .map(|n| (n.clone(), None))
                    .collect(),
            },
        };
        for (request_name, request) in seen {
            let Some(backup) = pending.get(&request_name).cloned() else {
                continue;
            };
            let name = backup.name_any();
            match request {
                Some(request) => {
                    let processed = request.phase() == Some(DeleteBackupRequestPhase::Processed);
                    if processed && !request.errors().is_empty() {
                        failures.push(format!("backup {name:?}: {}", request.errors().join("; ")));
                        pending.remove(&request_name);
                        bar.inc(1);
                    }
                }
                None => {
                    // The server removes requests once their backup is deleted (the backup's
                    // own watch may not have said so yet), and removes duplicates of a request
                    // it is already carrying out: look at the backup.
                    pending.remove(&request_name);
                    let uid = backup.metadata.uid.clone();
                    let still_there = backups
                        .get_opt(&name)
                        .await?
                        .is_some_and(|b| b.metadata.uid == uid);
                    if still_there {
                        let selector =
                            labels::selector_for_backup(&name, uid.as_deref().unwrap_or_default());
                        // The server removes a backup's earlier requests when a newer one
                        // starts: follow the newest, which carries this deletion on.
                        if let Some(other) = requests
                            .list(&ListParams::default().labels(&selector))
                            .await?
                            .items
                            .into_iter()
                            .max_by_key(|r| r.metadata.creation_timestamp.clone())
                        {
                            pending.insert(other.name_any(), backup);
                            continue;
                        }
                        failures.push(format!(
                            "backup {name:?}: its request was removed before the backup was deleted"
                        ));
                    }
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    for failure in &failures {
        eprintln!("error: deleting {failure}");
    }
    Ok(failures.len())
}
