//! One module per top-level command, laid out like the CLI tree.

mod backup;
mod backup_delete;
mod backup_location;
mod bucket;
mod completion;
mod restore;
mod server;
mod version;
mod wait;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs one parsed command line; errors are reported by `main`.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let global = &cli.global;
    match cli.command {
        Command::Backup(command) => backup::run(global, command).await,
        Command::Restore(command) => restore::run(global, command).await,
        Command::BackupLocation(command) => backup_location::run(global, command).await,
        Command::Server(args) => server::run(global, args).await,
        Command::Completion(args) => completion::run(args),
        Command::Version(args) => version::run(global, args).await,
    }
}

/// Objects the user asked for, and how many of the names they gave do not exist.
struct Found<K> {
    items: Vec<K>,
    missing: usize,
}

impl<K> Found<K> {
    fn exit_code(&self) -> ExitCode {
        if self.missing == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// The named objects (each missing one reported by name on stderr), or all matching the selector.
async fn get_named_or_listed<K>(
    api: &kube::Api<K>,
    args: &crate::cli::GetArgs,
    kind: &str,
) -> anyhow::Result<Found<K>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    use anyhow::Context as _;
    if args.names.is_empty() {
        let mut params = kube::api::ListParams::default();
        if let Some(selector) = &args.selector {
            params = params.labels(selector);
        }
        let list = api
            .list(&params)
            .await
            .with_context(|| format!("cannot list {kind}s"))?;
        return Ok(Found {
            items: list.items,
            missing: 0,
        });
    }
    if args.selector.is_some() {
        anyhow::bail!("give either {kind} names or --selector, not both");
    }
    let mut found = Found {
        items: Vec::new(),
        missing: 0,
    };
    for name in &args.names {
        match api
            .get_opt(name)
            .await
            .with_context(|| format!("cannot get {kind} {name:?}"))?
        {
            Some(item) => found.items.push(item),
            None => {
                eprintln!("{kind} {name:?} not found");
                found.missing += 1;
            }
        }
    }
    Ok(found)
}
