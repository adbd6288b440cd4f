//! `ark client config set|get`: the settings file of `crate::client_config`, as Velero's `velero
//! client config` manages its own.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};

use crate::client_config::{self, ClientConfig};

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Set settings as KEY=VALUE (KEY= unsets one)
    ///
    /// The one key, `namespace`, is the namespace commands use when neither -n nor $ARK_NAMESPACE
    /// gives one: `ark client config set namespace=backups`.
    Set(ConfigSetArgs),
    /// Print settings as `key: value` (`<unset>` when not set)
    Get(ConfigGetArgs),
}

#[derive(Debug, Args)]
pub struct ConfigSetArgs {
    /// Settings to set; the one key is `namespace`
    #[arg(required = true, value_name = "KEY=VALUE", value_parser = parse_setting)]
    pub settings: Vec<Setting>,
}

#[derive(Debug, Args)]
pub struct ConfigGetArgs {
    /// Settings to print (all when none is given)
    #[arg(value_enum, value_name = "KEY")]
    pub keys: Vec<Key>,
}

/// A setting's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Key {
    Namespace,
}

impl Key {
    const ALL: [Key; 1] = [Key::Namespace];

    fn name(self) -> &'static str {
        match self {
            Key::Namespace => "namespace",
        }
    }

    fn value(self, config: &ClientConfig) -> Option<&str> {
        match self {
            Key::Namespace => config.namespace.as_deref(),
        }
    }
}

/// One `KEY=VALUE` of `set`; no value unsets the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    Namespace(Option<String>),
}

impl Setting {
    fn apply(self, config: &mut ClientConfig) {
        match self {
            Setting::Namespace(namespace) => config.namespace = namespace,
        }
    }
}

fn parse_setting(text: &str) -> Result<Setting, String> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(format!("{text:?} is not KEY=VALUE"));
    };
    match key {
        "namespace" if value.is_empty() => Ok(Setting::Namespace(None)),
        "namespace" => {
            client_config::check_namespace(value)?;
            Ok(Setting::Namespace(Some(value.to_string())))
        }
        _ => Err(format!("unknown key {key:?}; the one key is namespace")),
    }
}

pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Set(args) => {
            let path = client_config::path().context(
                "cannot tell where to keep ark's settings: neither XDG_CONFIG_HOME nor HOME is set",
            )?;
            let mut config = client_config::load(&path)?;
            for setting in args.settings {
                setting.apply(&mut config);
            }
            client_config::save(&path, &config)?;
        }
        ConfigCommand::Get(args) => {
            let config = match client_config::path() {
                Some(path) => client_config::load(&path)?,
                None => ClientConfig::default(),
            };
            let keys = if args.keys.is_empty() {
                &Key::ALL[..]
            } else {
                &args.keys[..]
            };
            print!("{}", lines(&config, keys));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `key: value` lines, `<unset>` for a key without a value.
fn lines(config: &ClientConfig, keys: &[Key]) -> String {
    keys.iter()
        .map(|key| {
            let value = key.value(config).unwrap_or("<unset>");
            format!("{}: {value}\n", key.name())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_parsed_and_checked() {
        assert_eq!(
            parse_setting("namespace=backups"),
            Ok(Setting::Namespace(Some("backups".into())))
        );
        assert_eq!(parse_setting("namespace="), Ok(Setting::Namespace(None)));
        assert_eq!(
            parse_setting("colour=red"),
            Err("unknown key \"colour\"; the one key is namespace".into())
        );
        assert_eq!(
            parse_setting("namespace"),
            Err("\"namespace\" is not KEY=VALUE".into())
        );
        let invalid = parse_setting("namespace=Back_ups").unwrap_err();
        assert!(
            invalid.starts_with("namespace \"Back_ups\" is not a DNS-1123 label"),
            "{invalid}"
        );
    }

    #[test]
    fn settings_are_printed_as_key_value_lines() {
        let mut config = ClientConfig::default();
        assert_eq!(lines(&config, &Key::ALL), "namespace: <unset>\n");
        Setting::Namespace(Some("backups".into())).apply(&mut config);
        assert_eq!(lines(&config, &Key::ALL), "namespace: backups\n");
        Setting::Namespace(None).apply(&mut config);
        assert_eq!(config, ClientConfig::default());
    }
}
