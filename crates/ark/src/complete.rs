//! Completion of backup, restore and location names from the cluster, for clap_complete's dynamic
//! engine (`COMPLETE=bash ark`, registered by `ark completion bash`). A shell waits on every
//! key press: the names come within 300 ms or not at all, and a cluster out of reach completes
//! nothing rather than an error.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use clap::ValueEnum as _;
use clap_complete::engine::{CompletionCandidate, ValueCompleter};
use kube::api::{ApiResource, DynamicObject, ListParams};

use crate::cli::args::{GlobalArgs, Names};

/// All the cluster may take to answer, from the process's start (client set-up included).
const BUDGET: Duration = Duration::from_millis(250);

/// The shells whose completion ark registers (clap_complete's dynamic engine knows each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Elvish,
    Fish,
    Powershell,
    Zsh,
}

impl ValueCompleter for Names {
    fn complete(&self, current: &OsStr) -> Vec<CompletionCandidate> {
        let words: Vec<OsString> = std::env::args_os().collect();
        let line = CommandLine::read(&words);
        let Some(kind) = self.resolve(line.noun.as_deref()) else {
            return Vec::new();
        };
        let prefix = current.to_string_lossy();
        names(&line, kind)
            .into_iter()
            .filter(|name| name.starts_with(prefix.as_ref()))
            .map(CompletionCandidate::new)
            .collect()
    }
}

impl Names {
    fn resolve(self, noun: Option<&str>) -> Option<Names> {
        match (self, noun) {
            (Names::OfTheNoun, Some("backup")) => Some(Names::Backups),
            (Names::OfTheNoun, Some("restore")) => Some(Names::Restores),
            (Names::OfTheNoun, Some("backup-location")) => Some(Names::Locations),
            (Names::OfTheNoun, Some("schedule")) => Some(Names::Schedules),
            (Names::OfTheNoun, _) => None,
            (kind, _) => Some(kind),
        }
    }

    fn resource(self) -> ApiResource {
        match self {
            Names::Backups => ApiResource::erase::<ark_api::Backup>(&()),
            Names::Restores => ApiResource::erase::<ark_api::Restore>(&()),
            Names::Schedules => ApiResource::erase::<ark_api::Schedule>(&()),
            Names::Locations | Names::OfTheNoun => {
                ApiResource::erase::<ark_api::BackupStorageLocation>(&())
            }
        }
    }
}

/// What the completer needs of the words being completed (the engine hands it only the current
/// one): the noun and the global flags that say where to look.
#[derive(Debug, Default, PartialEq, Eq)]
struct CommandLine {
    noun: Option<String>,
    namespace: Option<String>,
    kubeconfig: Option<String>,
    context: Option<String>,
}

impl CommandLine {
    /// Reads `ark -- ark backup describe -n ns ...` (the engine's own invocation): the words after
    /// `--`, the program's name first.
    fn read(args: &[OsString]) -> Self {
        let words: Vec<String> = args
            .iter()
            .skip_while(|w| *w != "--")
            .skip(2)
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        let mut line = CommandLine::default();
        let mut words = words.iter();
        while let Some(word) = words.next() {
            let (flag, inline) = match word.split_once('=') {
                Some((flag, value)) if flag.starts_with('-') => (flag, Some(value.to_string())),
                _ => (word.as_str(), None),
            };
            let slot = match flag {
                "-n" | "--namespace" => &mut line.namespace,
                "--kubeconfig" => &mut line.kubeconfig,
                "--context" => &mut line.context,
                _ => {
                    if line.noun.is_none() && !word.starts_with('-') {
                        line.noun = Some(word.clone());
                    }
                    continue;
                }
            };
            *slot = inline.or_else(|| words.next().cloned());
        }
        line
    }
}

/// The script that registers ark's completion with `shell`: it calls `ark` back on every
/// completion, which answers from its own command definitions and the cluster.
pub fn registration(shell: Shell) -> Vec<u8> {
    let name = shell
        .to_possible_value()
        .map(|value| value.get_name().to_string())
        .unwrap_or_default();
    let mut script = Vec::new();
    if let Some(completer) = clap_complete::env::Shells::builtins().completer(&name) {
        // Writing into memory cannot fail.
        let _ = completer.write_registration("COMPLETE", "ark", "ark", "ark", &mut script);
    }
    script
}

/// The names of `kind` in the namespace the command line (or the environment) names; none when
/// the cluster cannot say within the budget.
fn names(line: &CommandLine, kind: Names) -> Vec<String> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    runtime
        .block_on(async {
            tokio::time::timeout(BUDGET, list(line, kind))
                .await
                .ok()
                .and_then(Result::ok)
        })
        .unwrap_or_default()
}

async fn list(line: &CommandLine, kind: Names) -> anyhow::Result<Vec<String>> {
    crate::tls::install_crypto_provider();
    let global = GlobalArgs {
        // As the command itself would choose it: -n, $ARK_NAMESPACE, `ark client config`, velero.
        namespace: line
            .namespace
            .clone()
            .or_else(|| std::env::var("ARK_NAMESPACE").ok())
            .or_else(|| crate::client_config::namespace().ok().flatten())
            .unwrap_or_else(|| ark_api::DEFAULT_NAMESPACE.to_string()),
        kubeconfig: line.kubeconfig.clone().map(Into::into),
        context: line.context.clone(),
    };
    let client = crate::context::client(&global).await?;
    let api: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(client, &global.namespace, &kind.resource());
    let list = api.list_metadata(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|object| object.metadata.name)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(words: &[&str]) -> CommandLine {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        CommandLine::read(&args)
    }

    #[test]
    fn the_noun_and_where_to_look_are_read_from_the_words_being_completed() {
        assert_eq!(
            read(&[
                "ark", "--", "ark", "-n", "prod", "restore", "describe", "ni"
            ]),
            CommandLine {
                noun: Some("restore".into()),
                namespace: Some("prod".into()),
                ..Default::default()
            }
        );
        assert_eq!(
            read(&[
                "/usr/bin/ark",
                "--",
                "ark",
                "backup",
                "--kubeconfig=/k",
                "get",
                "--context",
                "c",
                ""
            ]),
            CommandLine {
                noun: Some("backup".into()),
                kubeconfig: Some("/k".into()),
                context: Some("c".into()),
                ..Default::default()
            }
        );
        assert_eq!(read(&["ark"]), CommandLine::default());
    }

    #[test]
    fn the_noun_says_which_names_unless_the_argument_does() {
        assert_eq!(
            Names::OfTheNoun.resolve(Some("backup")),
            Some(Names::Backups)
        );
        assert_eq!(
            Names::OfTheNoun.resolve(Some("backup-location")),
            Some(Names::Locations)
        );
        assert_eq!(Names::OfTheNoun.resolve(Some("server")), None);
        assert_eq!(
            Names::Backups.resolve(Some("restore")),
            Some(Names::Backups)
        );
    }
}
