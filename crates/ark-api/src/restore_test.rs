//! ark's restore tests of a schedule's backups: every N backups, or once the last test is so old,
//! the newest Completed backup is restored into throwaway namespaces and a check (an exec hook, in
//! the restore hooks' format, with the answer it must print) is run in one of its pods. The test
//! is the Schedule's annotation `ark.io/restore-test` (YAML or JSON); its last result is the
//! annotation `ark.io/restore-test-result` on the Schedule and on the tested Backup. Velero's CRDs
//! keep annotations as they are, and Velero ignores them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::hooks::{self, HookError, Rules};
use crate::verification::Outcome;
use crate::{LabelSelector, RestoreHooks};

/// The annotation of a Schedule that holds its restore test.
pub const ANNOTATION: &str = "ark.io/restore-test";
/// The annotation of a Schedule and of a Backup that holds the last test's result.
pub const RESULT_ANNOTATION: &str = "ark.io/restore-test-result";
/// The label of a test's throwaway namespaces and Restore: the uid of the schedule it tests.
pub const OF_LABEL: &str = "ark.io/restore-test-of";
/// The label of a test's throwaway namespaces: the namespace of the server that runs the test
/// (the only one that may delete them, and the one that removes them when left behind).
pub const BY_LABEL: &str = "ark.io/restore-test-by";

/// How long a whole test may take, unless it says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long the check waits for its pod's container to run (and be ready), unless it says.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How long the check's command may run, unless it says.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// The shortest period between tests: a test restores a whole backup.
const MIN_PERIOD: Duration = Duration::from_secs(60);
/// How much of the check's output a result keeps (the end of it).
const MAX_OUTPUT_CHARS: usize = 1000;

/// A restore test, as written.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreTest {
    /// A number of backups (`3`: every third Completed backup), or a Go duration (`168h`: the
    /// newest Completed backup once the last test is that old).
    pub every: Every,
    /// The namespaces to restore, each into a throwaway namespace; by default the backup's
    /// included namespaces (which must then be names, not patterns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// How long the whole test may take (a Go duration; 30m by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The restore's hooks (a Restore's `spec.hooks`, as in `ark restore create --hooks-file`),
    /// naming the namespaces as backed up: the test maps them to its throwaway namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<RestoreHooks>,
    pub check: Check,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Every {
    Backups(u32),
    Period(String),
}

/// The check: an exec hook run in a restored pod once it runs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Check {
    /// The pod's namespace as backed up; the first restored namespace by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Which pod: the first, by name, that matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The pod's first container by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    pub command: Vec<String>,
    /// How long to wait for the container to run and be ready (5m by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_timeout: Option<String>,
    /// How long the command may run (1m by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_timeout: Option<String>,
    /// What the command must print (its standard output, surrounding white space aside); without
    /// it, exit code 0 passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
}

/// How often a schedule's backups are tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cadence {
    Backups(u32),
    Period(Duration),
}

/// A restore test as the server runs it: checked, its durations read, its defaults given.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidTest {
    pub every: Cadence,
    pub namespaces: Option<Vec<String>>,
    pub timeout: Duration,
    pub hooks: Option<RestoreHooks>,
    pub check: ValidCheck,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ValidCheck {
    pub namespace: Option<String>,
    pub label_selector: Option<LabelSelector>,
    pub container: Option<String>,
    pub command: Vec<String>,
    pub wait_timeout: Duration,
    pub exec_timeout: Duration,
    pub expect: Option<String>,
}

fn error(path: &str, message: impl Into<String>) -> HookError {
    HookError {
        path: path.to_string(),
        message: message.into(),
        position: None,
    }
}

fn duration(
    errors: &mut Vec<HookError>,
    path: &str,
    text: Option<&String>,
    default: Duration,
) -> Duration {
    match text.map(|text| crate::duration::parse(text)) {
        None => default,
        Some(Ok(duration)) if !duration.is_zero() => duration,
        Some(Ok(_)) => {
            errors.push(error(path, "must be longer than 0"));
            default
        }
        Some(Err(e)) => {
            errors.push(error(path, e.to_string()));
            default
        }
    }
}

impl RestoreTest {
    /// The test as the server runs it, or every error, each at its field path.
    pub fn validate(&self) -> Result<ValidTest, Vec<HookError>> {
        let mut errors = Vec::new();
        let every = match &self.every {
            Every::Backups(0) => {
                errors.push(error("every", "a number of backups must be at least 1"));
                Cadence::Backups(1)
            }
            Every::Backups(n) => Cadence::Backups(*n),
            Every::Period(text) => {
                let period = duration(&mut errors, "every", Some(text), MIN_PERIOD);
                if period < MIN_PERIOD {
                    errors.push(error("every", "a period must be at least 1m"));
                }
                Cadence::Period(period)
            }
        };
        for (i, name) in self.namespaces.iter().flatten().enumerate() {
            if !crate::selector::is_dns_label(name) {
                let message = format!("{name:?} is not a namespace's name (no patterns)");
                errors.push(error(&format!("namespaces[{i}]"), message));
            }
        }
        if self.namespaces.as_ref().is_some_and(Vec::is_empty) {
            errors.push(error(
                "namespaces",
                "name at least one namespace, or leave it out",
            ));
        }
        let timeout = duration(
            &mut errors,
            "timeout",
            self.timeout.as_ref(),
            DEFAULT_TIMEOUT,
        );
        if let Some(hooks) = &self.hooks {
            errors.extend(
                hooks::validate(hooks, Rules::Strict)
                    .into_iter()
                    .map(|mut e| {
                        e.path = format!("hooks.{}", e.path);
                        e
                    }),
            );
        }
        let check = self.check.validate(self.namespaces.as_deref(), &mut errors);
        if errors.is_empty() {
            Ok(ValidTest {
                every,
                namespaces: self.namespaces.clone(),
                timeout,
                hooks: self.hooks.clone(),
                check,
            })
        } else {
            Err(errors)
        }
    }

    /// A schedule's restore test, if it has one; one that does not parse or check is the text of
    /// every error.
    pub fn of(schedule: &crate::Schedule) -> Option<Result<ValidTest, String>> {
        let text = schedule.metadata.annotations.as_ref()?.get(ANNOTATION)?;
        Some(
            parse(text)
                .and_then(|test| test.validate())
                .map_err(|errors| {
                    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                    format!("annotation {ANNOTATION}: {}", errors.join("; "))
                }),
        )
    }
}

impl Check {
    fn validate(&self, namespaces: Option<&[String]>, errors: &mut Vec<HookError>) -> ValidCheck {
        if self.command.iter().all(|word| word.trim().is_empty()) {
            errors.push(error("check.command", "a command is required"));
        }
        if let (Some(namespace), Some(namespaces)) = (&self.namespace, namespaces)
            && !namespaces.contains(namespace)
        {
            let message = format!("{namespace:?} is not one of the namespaces restored");
            errors.push(error("check.namespace", message));
        }
        if let Some(selector) = &self.label_selector
            && let Err(e) = kube::core::Selector::try_from(selector.clone())
        {
            let message = format!("invalid label selector: {e}");
            errors.push(error("check.labelSelector", message));
        }
        ValidCheck {
            namespace: self.namespace.clone(),
            label_selector: self.label_selector.clone(),
            container: self.container.clone().filter(|c| !c.is_empty()),
            command: self.command.clone(),
            wait_timeout: duration(
                errors,
                "check.waitTimeout",
                self.wait_timeout.as_ref(),
                DEFAULT_WAIT_TIMEOUT,
            ),
            exec_timeout: duration(
                errors,
                "check.execTimeout",
                self.exec_timeout.as_ref(),
                DEFAULT_EXEC_TIMEOUT,
            ),
            expect: self.expect.clone(),
        }
    }
}

/// Parses and checks a restore test (YAML or JSON): the test as written, or every error with its
/// field path, line and column.
pub fn parse(text: &str) -> Result<RestoreTest, Vec<HookError>> {
    let (test, index) = hooks::parse_located::<RestoreTest>(text)?;
    match test.validate() {
        Ok(_) => Ok(test),
        Err(errors) => Err(hooks::locate(errors, &index)),
    }
}

/// How a restore test ended, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestResult {
    pub outcome: Outcome,
    /// The backup tested.
    pub backup: String,
    /// The Restore it made (empty when it failed before making one).
    pub restore: String,
    /// When it started and ended (RFC 3339, UTC).
    pub started: String,
    pub ended: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The end of the check's output, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl TestResult {
    /// `output` cut to its last [`MAX_OUTPUT_CHARS`] characters.
    pub fn tail(output: &str) -> String {
        let chars = output.chars().count();
        match chars.checked_sub(MAX_OUTPUT_CHARS) {
            Some(skip) if skip > 0 => {
                let kept: String = output.chars().skip(skip).collect();
                format!("...{kept}")
            }
            _ => output.to_string(),
        }
    }

    /// The last result recorded on an object; one that does not parse is an error naming it.
    pub fn of(
        annotations: Option<&std::collections::BTreeMap<String, String>>,
    ) -> Option<Result<TestResult, String>> {
        let text = annotations?.get(RESULT_ANNOTATION)?;
        Some(
            serde_json::from_str(text)
                .map_err(|e| format!("annotation {RESULT_ANNOTATION} does not parse: {e}")),
        )
    }

    /// The result of a test of `backup` itself: a Backup made from a schedule carries the
    /// schedule's annotations, so a result found on it may be of another backup.
    pub fn of_backup(backup: &crate::Backup) -> Option<Result<TestResult, String>> {
        let name = backup.metadata.name.as_deref().unwrap_or_default();
        TestResult::of(backup.metadata.annotations.as_ref())
            .filter(|result| result.as_ref().map_or(true, |r| r.backup == name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEMO: &str = r#"
every: 3
namespaces: [shop]
timeout: 10m
check:
  namespace: shop
  labelSelector: {matchLabels: {app: postgres}}
  container: postgres
  command: [psql, -Atc, "select count(*) from orders"]
  waitTimeout: 2m
  expect: "3"
"#;

    #[test]
    fn a_test_reads_with_its_defaults() {
        let test = parse(DEMO).unwrap().validate().unwrap();
        assert_eq!(test.every, Cadence::Backups(3));
        assert_eq!(test.timeout, Duration::from_secs(600));
        assert_eq!(test.check.wait_timeout, Duration::from_secs(120));
        assert_eq!(test.check.exec_timeout, DEFAULT_EXEC_TIMEOUT);
        assert_eq!(test.check.expect.as_deref(), Some("3"));
        let weekly = (parse("every: 168h\ncheck: {command: [true]}")
            .unwrap()
            .validate())
        .unwrap();
        assert_eq!(
            weekly.every,
            Cadence::Period(Duration::from_secs(168 * 3600))
        );
        assert_eq!(weekly.namespaces, None);
        assert_eq!(weekly.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn every_error_of_a_test_is_named_at_its_field_line_and_column() {
        let text = "every: 0\nnamespaces: [shop, 'app-*']\ntimeout: soon\ncheck:\n  namespace: other\n  command: []\n  execTimeout: 0s\n";
        let errors: Vec<String> = parse(text)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "1:1: every: a number of backups must be at least 1",
                "2:20: namespaces[1]: \"app-*\" is not a namespace's name (no patterns)",
                "3:1: timeout: invalid duration \"soon\": expected a number (expected a Go duration such as 30s, 5m or 720h)",
                "6:3: check.command: a command is required",
                "5:3: check.namespace: \"other\" is not one of the namespaces restored",
                "7:3: check.execTimeout: must be longer than 0",
            ]
        );
        let typo = parse("every: 1\ncheck: {command: [x], expected: '3'}").unwrap_err();
        assert_eq!(typo[0].path, "check.expected");
        assert!(
            typo[0].message.contains("unknown field `expected`"),
            "{typo:?}"
        );
        let period = parse("every: 10s\ncheck: {command: [x]}").unwrap_err();
        assert_eq!(
            period[0].to_string(),
            "1:1: every: a period must be at least 1m"
        );
    }

    #[test]
    fn a_backup_shows_only_a_result_of_its_own() {
        let result = TestResult {
            outcome: Outcome::Passed,
            backup: "nightly-1".into(),
            restore: "nightly-1-test-x".into(),
            started: "2026-12-07T00:00:00Z".into(),
            ended: "2026-12-07T00:01:00Z".into(),
            reason: None,
            output: Some("3".into()),
        };
        let text = serde_json::to_string(&result).unwrap();
        let mut backup = crate::Backup::new("nightly-1", Default::default());
        backup.metadata.annotations = Some([(RESULT_ANNOTATION.to_string(), text)].into());
        assert_eq!(TestResult::of_backup(&backup), Some(Ok(result)));
        backup.metadata.name = Some("nightly-2".into());
        assert_eq!(TestResult::of_backup(&backup), None);
        assert_eq!(TestResult::tail(&"x".repeat(1500)).len(), 1003);
    }
}
