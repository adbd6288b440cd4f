//! Credentials files in the format Velero's plugins read from the Secret a location names.

use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CredentialsError {
    #[error("credentials file has no profile [{0}]")]
    MissingProfile(String),
    #[error("credentials file line {line}: {reason}")]
    Malformed { line: usize, reason: &'static str },
    #[error("{0}")]
    Incomplete(String),
    #[error("{variable} names {path:?}, which cannot be read: {reason}")]
    Unreadable {
        variable: &'static str,
        path: String,
        reason: String,
    },
}

/// The credentials file of a location that names no Secret: the file the provider's variable
/// names, as Velero's plugins read it (`velero install` mounts the Secret `cloud-credentials` at
/// `/credentials/cloud` and sets `AWS_SHARED_CREDENTIALS_FILE` or `AZURE_CREDENTIALS_FILE` to it).
/// A variable set to a file that cannot be read is an error, never a fall-back.
pub fn file_named_by(variable: &'static str, env: Env) -> Result<Option<String>, CredentialsError> {
    let Some(path) = env(variable).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    std::fs::read_to_string(&path)
        .map(Some)
        .map_err(|e| CredentialsError::Unreadable {
            variable,
            path,
            reason: e.to_string(),
        })
}

/// The environment as credentials are looked up in it (a snapshot in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where S3 credentials come from. Never the machine's own identity (instance metadata), which
/// object_store falls back to whenever no other source is complete.
#[derive(Debug, PartialEq, Eq)]
pub enum AwsSource {
    Keys {
        id: String,
        secret: String,
        token: Option<String>,
    },
    WebIdentity {
        token_file: String,
        role_arn: String,
    },
    /// ECS: the task role, at the address the platform set.
    ContainerRelative { uri: String },
    /// EKS Pod Identity.
    ContainerFull { uri: String, token_file: String },
}

/// S3 credentials from the location's Secret (the keys of `profile`), or else from the server's
/// environment; a source given only in part is an error naming what it lacks.
pub fn aws_source(
    secret: Option<&str>,
    profile: &str,
    env: Env,
) -> Result<Option<AwsSource>, CredentialsError> {
    if let Some(text) = secret {
        let keys = aws_profile(text, profile)?;
        return match (
            keys.get("aws_access_key_id"),
            keys.get("aws_secret_access_key"),
        ) {
            (Some(id), Some(secret)) => Ok(Some(AwsSource::Keys {
                id: id.clone(),
                secret: secret.clone(),
                token: keys.get("aws_session_token").cloned(),
            })),
            _ => Err(CredentialsError::Incomplete(format!(
                "profile [{profile}] needs aws_access_key_id and aws_secret_access_key (ark reads \
                 static keys only, not role_arn, credential_process or sso settings)"
            ))),
        };
    }
    let pair = |a: &str, b: &str| match (env(a), env(b)) {
        (Some(x), Some(y)) => Ok(Some((x, y))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(CredentialsError::Incomplete(format!(
            "{a} is set without {b}"
        ))),
        (None, Some(_)) => Err(CredentialsError::Incomplete(format!(
            "{b} is set without {a}"
        ))),
    };
    if let Some((id, secret)) = pair("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")? {
        let token = env("AWS_SESSION_TOKEN");
        return Ok(Some(AwsSource::Keys { id, secret, token }));
    }
    if let Some((token_file, role_arn)) = pair("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")? {
        return Ok(Some(AwsSource::WebIdentity {
            token_file,
            role_arn,
        }));
    }
    let full = "AWS_CONTAINER_CREDENTIALS_FULL_URI";
    if let Some((uri, token_file)) = pair(full, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")? {
        return Ok(Some(AwsSource::ContainerFull { uri, token_file }));
    }
    Ok(env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        .map(|uri| AwsSource::ContainerRelative { uri }))
}

/// Where Azure Blob credentials come from. Never the machine's managed identity, which
/// object_store falls back to whenever no other source is complete.
#[derive(Debug, PartialEq, Eq)]
pub enum AzureSource {
    AccessKey(String),
    ServicePrincipal {
        client_id: String,
        secret: String,
        tenant_id: String,
    },
    WorkloadIdentity {
        client_id: String,
        tenant_id: String,
        token_file: String,
    },
    Sas(String),
}

/// Azure credentials from the location's Secret, a KEY=VALUE file as Velero's Azure plugin reads
/// it (the account key under `key_variable`, Velero's `storageAccountKeyEnvVar`, else
/// `AZURE_STORAGE_ACCOUNT_ACCESS_KEY`; or a service principal), or else from the environment.
pub fn azure_source(
    secret: Option<&str>,
    key_variable: Option<&str>,
    env: Env,
) -> Result<Option<AzureSource>, CredentialsError> {
    let file = secret.map(dotenv).transpose()?;
    let lookup = |name: &str| match &file {
        Some(file) => file.get(name).filter(|v| !v.is_empty()).cloned(),
        None => env(name).filter(|v| !v.is_empty()),
    };
    let key_names: &[&str] = match (key_variable, &file) {
        (Some(name), _) => &[name][..],
        (None, Some(_)) => &["AZURE_STORAGE_ACCOUNT_ACCESS_KEY"],
        (None, None) => &["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"],
    };
    if let Some(key) = key_names.iter().find_map(|name| lookup(name)) {
        return Ok(Some(AzureSource::AccessKey(key)));
    }
    if let Some(name) = key_variable {
        return Err(CredentialsError::Incomplete(format!(
            "storageAccountKeyEnvVar names {name}, which the credentials do not set"
        )));
    }
    let principal = ["AZURE_CLIENT_ID", "AZURE_TENANT_ID"].map(lookup);
    let missing = |what: &str| {
        let lacking: Vec<&str> = ["AZURE_CLIENT_ID", "AZURE_TENANT_ID"]
            .into_iter()
            .zip(&principal)
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name)
            .collect();
        CredentialsError::Incomplete(format!("{what} is set without {}", lacking.join(" and ")))
    };
    if let Some(secret) = lookup("AZURE_CLIENT_SECRET") {
        let [Some(client_id), Some(tenant_id)] = principal else {
            return Err(missing("AZURE_CLIENT_SECRET"));
        };
        return Ok(Some(AzureSource::ServicePrincipal {
            client_id,
            secret,
            tenant_id,
        }));
    }
    // Workload identity's token file is mounted by the platform: always from the environment.
    if let Some(token_file) = env("AZURE_FEDERATED_TOKEN_FILE") {
        let [Some(client_id), Some(tenant_id)] = principal else {
            return Err(missing("AZURE_FEDERATED_TOKEN_FILE"));
        };
        return Ok(Some(AzureSource::WorkloadIdentity {
            client_id,
            tenant_id,
            token_file,
        }));
    }
    if let Some(sas) = lookup("AZURE_STORAGE_SAS_KEY") {
        return Ok(Some(AzureSource::Sas(sas)));
    }
    match file {
        Some(_) => Err(CredentialsError::Incomplete(
            "the credentials hold no account key (AZURE_STORAGE_ACCOUNT_ACCESS_KEY, or the variable \
             storageAccountKeyEnvVar names) and no service principal (AZURE_CLIENT_ID, \
             AZURE_CLIENT_SECRET, AZURE_TENANT_ID); ark never falls back to the machine's managed \
             identity"
                .into(),
        )),
        None => Ok(None),
    }
}

/// A KEY=VALUE file as Velero's plugins read it (godotenv): comments, `export `, quotes.
pub fn dotenv(text: &str) -> Result<BTreeMap<String, String>, CredentialsError> {
    let mut values = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let (key, value) = line.split_once('=').ok_or(CredentialsError::Malformed {
            line: index + 1,
            reason: "expected KEY=VALUE",
        })?;
        let value = value.trim();
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q))
            .unwrap_or(value);
        values.insert(key.trim().to_string(), unquoted.to_string());
    }
    Ok(values)
}

/// The keys of one profile of an AWS shared-credentials (INI) file, as the AWS plugin reads it.
pub fn aws_profile(
    text: &str,
    profile: &str,
) -> Result<BTreeMap<String, String>, CredentialsError> {
    let mut current: Option<&str> = None;
    let mut found = false;
    let mut keys = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let section = section
                .strip_suffix(']')
                .ok_or(CredentialsError::Malformed {
                    line: index + 1,
                    reason: "section header without ']'",
                })?;
            let section = section.trim();
            let section = section.strip_prefix("profile ").unwrap_or(section).trim();
            current = Some(section);
            found |= section == profile;
            continue;
        }
        let (key, value) = line.split_once('=').ok_or(CredentialsError::Malformed {
            line: index + 1,
            reason: "expected key = value",
        })?;
        if current == Some(profile) {
            keys.insert(key.trim().to_string(), value.trim().to_string());
        }
    }
    if found {
        Ok(keys)
    } else {
        Err(CredentialsError::MissingProfile(profile.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn s3_credentials_come_whole_or_not_at_all() {
        let none = env_of(&[]);
        let keys = "[default]\naws_access_key_id=a\naws_secret_access_key=b\n";
        assert_eq!(
            aws_source(Some(keys), "default", &none),
            Ok(Some(AwsSource::Keys {
                id: "a".into(),
                secret: "b".into(),
                token: None
            }))
        );
        assert_eq!(
            aws_source(Some("[default]\nrole_arn=x\n"), "default", &none)
                .unwrap_err()
                .to_string(),
            "profile [default] needs aws_access_key_id and aws_secret_access_key (ark reads static \
             keys only, not role_arn, credential_process or sso settings)"
        );
        assert_eq!(aws_source(None, "default", &none), Ok(None));
        let cases = [
            (
                &[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")][..],
                "AWS_WEB_IDENTITY_TOKEN_FILE is set without AWS_ROLE_ARN",
            ),
            (
                &[("AWS_ROLE_ARN", "r")][..],
                "AWS_ROLE_ARN is set without AWS_WEB_IDENTITY_TOKEN_FILE",
            ),
            (
                &[("AWS_ACCESS_KEY_ID", "a")][..],
                "AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY",
            ),
            (
                &[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://x")][..],
                "AWS_CONTAINER_CREDENTIALS_FULL_URI is set without AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            ),
        ];
        for (vars, error) in cases {
            assert_eq!(
                aws_source(None, "default", &env_of(vars))
                    .unwrap_err()
                    .to_string(),
                error
            );
        }
        let web = env_of(&[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t"), ("AWS_ROLE_ARN", "r")]);
        assert_eq!(
            aws_source(None, "default", &web),
            Ok(Some(AwsSource::WebIdentity {
                token_file: "/t".into(),
                role_arn: "r".into()
            }))
        );
    }

    #[test]
    fn azure_credentials_are_a_key_or_a_whole_principal_never_the_machine_identity() {
        let none = env_of(&[]);
        let key = "AZURE_STORAGE_ACCOUNT_ACCESS_KEY=\"k\"\n";
        assert_eq!(
            azure_source(Some(key), None, &none),
            Ok(Some(AzureSource::AccessKey("k".into())))
        );
        assert_eq!(
            azure_source(Some("export MY_KEY=k2\n"), Some("MY_KEY"), &none),
            Ok(Some(AzureSource::AccessKey("k2".into())))
        );
        assert_eq!(
            azure_source(Some(key), Some("MY_KEY"), &none)
                .unwrap_err()
                .to_string(),
            "storageAccountKeyEnvVar names MY_KEY, which the credentials do not set"
        );
        let principal = "AZURE_CLIENT_ID=c\nAZURE_CLIENT_SECRET=s\nAZURE_TENANT_ID=t\nAZURE_SUBSCRIPTION_ID=x\n";
        assert_eq!(
            azure_source(Some(principal), None, &none),
            Ok(Some(AzureSource::ServicePrincipal {
                client_id: "c".into(),
                secret: "s".into(),
                tenant_id: "t".into()
            }))
        );
        assert_eq!(
            azure_source(
                Some("AZURE_CLIENT_SECRET=s\nAZURE_CLIENT_ID=c\n"),
                None,
                &none
            )
            .unwrap_err()
            .to_string(),
            "AZURE_CLIENT_SECRET is set without AZURE_TENANT_ID"
        );
        assert!(
            azure_source(Some("AZURE_SUBSCRIPTION_ID=x\n"), None, &none)
                .unwrap_err()
                .to_string()
                .ends_with("ark never falls back to the machine's managed identity")
        );
        let federated = env_of(&[("AZURE_FEDERATED_TOKEN_FILE", "/f")]);
        assert_eq!(
            azure_source(None, None, &federated)
                .unwrap_err()
                .to_string(),
            "AZURE_FEDERATED_TOKEN_FILE is set without AZURE_CLIENT_ID and AZURE_TENANT_ID"
        );
        assert_eq!(azure_source(None, None, &none), Ok(None));
    }

    #[test]
    fn a_credentials_file_is_read_from_the_variable_that_names_it() {
        let dir = std::env::temp_dir().join(format!("ark-credentials-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cloud");
        std::fs::write(&file, "[default]\naws_access_key_id=a\n").unwrap();
        let path = file.to_string_lossy().into_owned();
        let vars = [("AWS_SHARED_CREDENTIALS_FILE", path.as_str())];
        let env = env_of(&vars);
        assert_eq!(
            file_named_by("AWS_SHARED_CREDENTIALS_FILE", &env),
            Ok(Some("[default]\naws_access_key_id=a\n".into()))
        );
        assert_eq!(file_named_by("AZURE_CREDENTIALS_FILE", &env), Ok(None));
        let missing = env_of(&[("AZURE_CREDENTIALS_FILE", "/nonexistent/cloud")]);
        assert_eq!(
            file_named_by("AZURE_CREDENTIALS_FILE", &missing)
                .unwrap_err()
                .to_string(),
            "AZURE_CREDENTIALS_FILE names \"/nonexistent/cloud\", which cannot be read: No such \
             file or directory (os error 2)"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reads_the_named_profile() {
        let text = "[default]\naws_access_key_id = A\naws_secret_access_key=B\n\n[profile other]\naws_access_key_id=C\n";
        let keys = aws_profile(text, "default").unwrap();
        assert_eq!(keys["aws_access_key_id"], "A");
        assert_eq!(keys["aws_secret_access_key"], "B");
        assert_eq!(
            aws_profile(text, "other").unwrap()["aws_access_key_id"],
            "C"
        );
        assert_eq!(
            aws_profile(text, "missing"),
            Err(CredentialsError::MissingProfile("missing".into()))
        );
        assert_eq!(
            aws_profile("[default]\nnonsense\n", "default"),
            Err(CredentialsError::Malformed {
                line: 2,
                reason: "expected key = value"
            })
        );
    }
}
