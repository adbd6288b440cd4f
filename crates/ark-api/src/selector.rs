//! Label selectors as users type them (`app=web,tier in (a,b),!legacy`), into the API's form.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid label selector {input:?}: {reason}")]
pub struct SelectorError {
    pub input: String,
    pub reason: String,
}

/// Parses kubectl's selector syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
pub fn parse(input: &str) -> Result<LabelSelector, SelectorError> {
    let err = |reason: String| SelectorError {
        input: input.to_string(),
        reason,
    };
    let mut match_labels = BTreeMap::new();
    let mut expressions = Vec::new();
    for term in split_terms(input).map_err(|r| err(r.to_string()))? {
        let term = term.trim();
        if term.is_empty() {
            return Err(err("empty requirement".into()));
        }
        let requirement = |key: &str,
                           operator: &str,
                           values: Option<Vec<String>>|
         -> Result<LabelSelectorRequirement, SelectorError> {
            check_key(key).map_err(|r| err(format!("{key:?}: {r}")))?;
            for value in values.iter().flatten() {
                check_value(value).map_err(|r| err(format!("{value:?}: {r}")))?;
            }
            Ok(LabelSelectorRequirement {
                key: key.to_string(),
                operator: operator.to_string(),
                values,
            })
        };
        if let Some(key) = term.strip_prefix('!') {
            expressions.push(requirement(key.trim(), "DoesNotExist", None)?);
        } else if let Some((key, rest)) = split_set(term, " notin ") {
            expressions.push(requirement(
                key,
                "NotIn",
                Some(set_values(rest).map_err(|r| err(r.into()))?),
            )?);
        } else if let Some((key, rest)) = split_set(term, " in ") {
            expressions.push(requirement(
                key,
                "In",
                Some(set_values(rest).map_err(|r| err(r.into()))?),
            )?);
        } else if let Some((key, value)) = term.split_once("!=") {
            expressions.push(requirement(
                key.trim(),
                "NotIn",
                Some(vec![value.trim().to_string()]),
            )?);
        } else if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
            let (key, value) = (key.trim(), value.trim());
            requirement(key, "In", Some(vec![value.to_string()]))?;
            match_labels.insert(key.to_string(), value.to_string());
        } else {
            expressions.push(requirement(term, "Exists", None)?);
        }
    }
    Ok(LabelSelector {
        match_labels: (!match_labels.is_empty()).then_some(match_labels),
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

/// Splits on commas outside parentheses.
fn split_terms(input: &str) -> Result<Vec<&str>, &'static str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err("unbalanced ')'");
        }
    }
    if depth != 0 {
        return Err("unclosed '('");
    }
    terms.push(&input[start..]);
    Ok(terms)
}

fn split_set<'a>(term: &'a str, operator: &str) -> Option<(&'a str, &'a str)> {
    term.split_once(operator)
        .map(|(k, rest)| (k.trim(), rest.trim()))
}

fn set_values(rest: &str) -> Result<Vec<String>, &'static str> {
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or("a set must be written (a,b)")?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

fn check_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err("the key's prefix must be a DNS subdomain".into());
    }
    if name.is_empty() {
        return Err("the key must not be empty".into());
    }
    check_value(name)
}

fn check_value(value: &str) -> Result<(), String> {
    let ok_chars = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ok_ends = value.is_empty()
        || (value
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && value
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric()));
    if value.len() > 63 || !ok_chars || !ok_ends {
        return Err(
            "must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric"
                .into(),
        );
    }
    Ok(())
}

/// A DNS-1123 label: lower-case alphanumerics and '-', at most 63, alphanumeric at both ends.
pub fn is_dns_label(text: &str) -> bool {
    text.len() <= 63 && is_dns_label_shaped(text)
}

/// A DNS-1123 subdomain, the rule for most object names (Backups, Restores, locations): at most
/// 253 characters of label-shaped parts between dots. Kubernetes (`IsDNS1123Subdomain`) caps only
/// the whole, not each part, so a 100-character name without dots is valid.
pub fn is_dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_dns_label_shaped)
}

/// Lower-case alphanumerics and '-', not empty, alphanumeric at both ends (any length).
fn is_dns_label_shaped(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubectl_syntax() {
        let selector = parse("app=web, tier in (a, b),!legacy,env!=prod,team").unwrap();
        assert_eq!(selector.match_labels.unwrap()["app"], "web");
        let ops: Vec<(String, String, Option<Vec<String>>)> = selector
            .match_expressions
            .unwrap()
            .into_iter()
            .map(|r| (r.key, r.operator, r.values))
            .collect();
        assert_eq!(
            ops,
            [
                (
                    "tier".into(),
                    "In".into(),
                    Some(vec!["a".into(), "b".into()])
                ),
                ("legacy".into(), "DoesNotExist".into(), None),
                ("env".into(), "NotIn".into(), Some(vec!["prod".into()])),
                ("team".into(), "Exists".into(), None),
            ]
        );
    }

    #[test]
    fn rejects_malformed_selectors_with_the_reason() {
        assert_eq!(
            parse("app=we b").unwrap_err().reason,
            "\"we b\": must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric"
        );
        assert_eq!(parse("tier in (a").unwrap_err().reason, "unclosed '('");
        assert_eq!(parse("a=b,").unwrap_err().reason, "empty requirement");
        assert!(parse("=x").is_err());
    }

    #[test]
    fn dns_names() {
        assert!(is_dns_subdomain("nightly-2026.11"));
        assert!(!is_dns_subdomain("Nightly"));
        assert!(!is_dns_subdomain("-x"));
        assert!(!is_dns_subdomain(""));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_subdomain("a.-b"));
    }

    #[test]
    fn a_100_character_name_without_dots_is_a_valid_object_name() {
        assert!(is_dns_subdomain(&"a".repeat(100)));
        assert!(is_dns_subdomain(&"b".repeat(253)));
        assert!(!is_dns_subdomain(&"b".repeat(254)));
        assert!(!is_dns_label(&"a".repeat(64)));
    }
}
