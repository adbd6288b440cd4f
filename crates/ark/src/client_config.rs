//! ark's own settings on this machine, which `ark client config set|get` manage: a YAML file at
//! `$XDG_CONFIG_HOME/ark/config.yaml` (else `$HOME/.config/ark/config.yaml`). Its one key,
//! `namespace`, is the namespace commands use when neither `-n` nor `$ARK_NAMESPACE` gives one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The file's contents. A key it does not know is refused (a misspelt key would otherwise be
/// ignored without a word).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// The default namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Where the file is, from the values of `$XDG_CONFIG_HOME` and `$HOME`; `None` when neither
/// says. As the XDG spec asks, an empty or relative `$XDG_CONFIG_HOME` is ignored.
pub fn path_from(xdg_config_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let base = match xdg_config_home.map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => PathBuf::from(home.filter(|home| !home.is_empty())?).join(".config"),
    };
    Some(base.join("ark").join("config.yaml"))
}

/// Where the file is for this process.
pub fn path() -> Option<PathBuf> {
    path_from(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    )
}

/// Why `namespace` cannot be a namespace's name, if it cannot.
pub fn check_namespace(namespace: &str) -> Result<(), String> {
    if ark_api::selector::is_dns_label(namespace) {
        Ok(())
    } else {
        Err(format!(
            "namespace {namespace:?} is not a DNS-1123 label: lower-case letters, digits and '-', \
             starting and ending with a letter or digit, at most 63 characters"
        ))
    }
}

/// The settings a file's text holds; an empty file holds none.
pub fn parse(text: &str) -> Result<ClientConfig, String> {
    if text.trim().is_empty() {
        return Ok(ClientConfig::default());
    }
    let config: ClientConfig =
        serde_saphyr::from_str(text).map_err(|e| e.without_snippet().to_string())?;
    if let Some(namespace) = &config.namespace {
        check_namespace(namespace)?;
    }
    Ok(config)
}

/// The file's text for `config`.
pub fn to_yaml(config: &ClientConfig) -> anyhow::Result<String> {
    serde_saphyr::to_string(config).context("cannot write the settings as YAML")
}

/// The settings in the file at `path`: none when there is no file.
pub fn load(path: &Path) -> anyhow::Result<ClientConfig> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ClientConfig::default());
        }
        Err(error) => {
            return Err(error)
                .with_context(|| format!("cannot read ark's config file {}", path.display()));
        }
    };
    parse(&text)
        .map_err(|reason| anyhow::anyhow!("invalid ark config file {}: {reason}", path.display()))
}

/// Writes `config` to `path` (and the directories above it), replacing the file whole: a reader
/// never sees half of it.
pub fn save(path: &Path, config: &ClientConfig) -> anyhow::Result<()> {
    let text = to_yaml(config)?;
    let cannot = || format!("cannot write ark's config file {}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(cannot)?;
    }
    let partial = path.with_extension(format!("yaml.{}.tmp", std::process::id()));
    std::fs::write(&partial, text).with_context(cannot)?;
    std::fs::rename(&partial, path).with_context(|| {
        let _ = std::fs::remove_file(&partial);
        cannot()
    })
}

/// The namespace the config file gives, if there is a file and it gives one.
pub fn namespace() -> anyhow::Result<Option<String>> {
    match path() {
        Some(path) => Ok(load(&path)?.namespace),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(text: &str) -> Option<OsString> {
        Some(text.into())
    }

    #[test]
    fn the_file_is_under_xdg_config_home_else_home() {
        let at = |p: &str| Some(PathBuf::from(p));
        assert_eq!(
            path_from(os("/xdg"), os("/home/me")),
            at("/xdg/ark/config.yaml")
        );
        assert_eq!(
            path_from(None, os("/home/me")),
            at("/home/me/.config/ark/config.yaml")
        );
        // Empty or relative: not a valid XDG directory, so HOME decides.
        assert_eq!(
            path_from(os(""), os("/home/me")),
            at("/home/me/.config/ark/config.yaml")
        );
        assert_eq!(
            path_from(os("relative/dir"), os("/home/me")),
            at("/home/me/.config/ark/config.yaml")
        );
        assert_eq!(path_from(os("/xdg"), None), at("/xdg/ark/config.yaml"));
        assert_eq!(path_from(None, None), None);
        assert_eq!(path_from(os(""), os("")), None);
    }

    #[test]
    fn settings_are_read_from_yaml() {
        assert_eq!(parse(""), Ok(ClientConfig::default()));
        assert_eq!(parse("# nothing yet\n"), Ok(ClientConfig::default()));
        assert_eq!(parse("{}\n"), Ok(ClientConfig::default()));
        assert_eq!(
            parse("namespace: backups\n"),
            Ok(ClientConfig {
                namespace: Some("backups".into())
            })
        );
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        let unknown = parse("namespcae: backups\n").unwrap_err();
        assert!(unknown.contains("namespcae"), "{unknown}");
        let invalid = parse("namespace: Back_ups\n").unwrap_err();
        assert!(
            invalid.starts_with("namespace \"Back_ups\" is not a DNS-1123 label"),
            "{invalid}"
        );
        assert!(parse("namespace: [a, b]\n").is_err());
        assert!(parse("- namespace\n").is_err());
    }

    #[test]
    fn settings_are_written_as_yaml_that_reads_back() {
        let config = ClientConfig {
            namespace: Some("backups".into()),
        };
        let text = to_yaml(&config).unwrap();
        assert_eq!(text, "namespace: backups\n");
        assert_eq!(parse(&text), Ok(config));
        let empty = to_yaml(&ClientConfig::default()).unwrap();
        assert_eq!(parse(&empty), Ok(ClientConfig::default()));
    }

    #[test]
    fn files_are_saved_and_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/ark/config.yaml");
        assert_eq!(load(&path).unwrap(), ClientConfig::default());
        let config = ClientConfig {
            namespace: Some("backups".into()),
        };
        save(&path, &config).unwrap();
        assert_eq!(load(&path).unwrap(), config);
        // Nothing but the file is left behind.
        let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, ["config.yaml"]);

        std::fs::write(&path, "namespace: [\n").unwrap();
        let error = format!("{:#}", load(&path).unwrap_err());
        assert!(
            error.starts_with(&format!("invalid ark config file {}: ", path.display())),
            "{error}"
        );
        let error = format!("{:#}", load(dir.path()).unwrap_err());
        assert!(
            error.starts_with(&format!(
                "cannot read ark's config file {}: ",
                dir.path().display()
            )),
            "{error}"
        );
    }
}
