//! Credentials files in the format Velero's plugins read from the Secret a location names.

use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CredentialsError {
    #[error("credentials file has no profile [{0}]")]
    MissingProfile(String),
    #[error("credentials file line {line}: {reason}")]
    Malformed { line: usize, reason: &'static str },
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
