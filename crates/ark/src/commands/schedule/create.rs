use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use ark_api::cron::Cron;
use ark_api::{Schedule, ScheduleSpec, labels};
use clap::Args;
use kube::Api;
use kube::api::PostParams;

use crate::cli::args::{BackupTemplateArgs, GlobalArgs, parse_name};
use crate::commands::spec_file;

#[derive(Debug, Args)]
pub struct ScheduleCreateArgs {
    /// The schedule's name (its backups are named <NAME>-<yyyyMMddHHmmss>)
    #[arg(value_parser = parse_name)]
    pub name: String,
    /// When to back up: a cron expression ('0 3 * * *', '@daily', '@every 6h'), optionally
    /// prefixed by 'CRON_TZ=<zone> ' (times are UTC otherwise)
    #[arg(long, value_name = "EXPRESSION")]
    pub schedule: String,
    #[command(flatten)]
    pub template: BackupTemplateArgs,
    /// Create it paused: no backup is made until it is unpaused
    #[arg(long)]
    pub paused: bool,
    /// Wait for the first slot after now, rather than backing up at the first check
    #[arg(long)]
    pub skip_immediately: bool,
    /// Make the schedule the owner of its backups (deleting it then deletes their Backup
    /// objects, never their data; sync brings them back)
    #[arg(long)]
    pub use_owner_references_in_backup: bool,
    /// Keep the schedule's Completed backups by these rules instead of their TTL, e.g.
    /// 'last=7,daily=14,weekly=8,monthly=12,yearly=3' (ark's own: the annotation ark.io/retention)
    #[arg(long, value_name = "RULES", value_parser = parse_retention)]
    pub retention: Option<String>,
    /// Test the schedule's backups by restoring them into throwaway namespaces and running a
    /// check: a restore test file, YAML or JSON, '-' for standard input (ark's own: the annotation
    /// ark.io/restore-test; docs/verifying.md#restore-tests-on-a-schedule)
    #[arg(long, value_name = "FILE")]
    pub restore_test_file: Option<PathBuf>,
    /// The restore hooks of the test's restores, as `ark restore create --hooks-file` takes
    /// them, naming the namespaces as backed up (for a test file without `hooks`)
    #[arg(long, value_name = "FILE", requires = "restore_test_file")]
    pub restore_test_hooks_file: Option<PathBuf>,
}

/// The restore test of `--restore-test-file`, with the hooks of `--restore-test-hooks-file`, as
/// its annotation holds it; refused with every error at its place.
fn restore_test(file: &Path, hooks_file: Option<&Path>) -> anyhow::Result<String> {
    let mut test = spec_file::read(file, "restore test", ark_api::restore_test::parse)?;
    if let Some(hooks_file) = hooks_file {
        if test.hooks.is_some() {
            anyhow::bail!(
                "restore test file {} has hooks already: leave out --restore-test-hooks-file, or \
                 the file's `hooks`",
                file.display()
            );
        }
        test.hooks = Some(spec_file::read(
            hooks_file,
            "hooks",
            ark_api::hooks::parse_file,
        )?);
    }
    Ok(serde_json::to_string(&test)?)
}

/// A retention policy as ark's server reads it, refused here with the rule at fault.
fn parse_retention(text: &str) -> Result<String, String> {
    let policy: ark_server::retention::Retention = text.parse().map_err(|e| format!("{e}"))?;
    Ok(policy.to_string())
}

pub async fn run(global: &GlobalArgs, args: ScheduleCreateArgs) -> anyhow::Result<ExitCode> {
    // Refused here, before anything is created, with the part at fault shown.
    if let Err(error) = Cron::parse(&args.schedule) {
        anyhow::bail!("{}\n{}", error, error.pointing_into(&args.schedule));
    }
    if let Some(error) = ark_api::schedule_name_error(&args.name) {
        anyhow::bail!("{error}; nothing was created");
    }
    let test = (args.restore_test_file.as_deref())
        .map(|file| restore_test(file, args.restore_test_hooks_file.as_deref()))
        .transpose()?;
    let spec = ScheduleSpec {
        template: args.template.spec(),
        schedule: args.schedule,
        use_owner_references_in_backup: args.use_owner_references_in_backup.then_some(true),
        paused: args.paused,
        skip_immediately: args.skip_immediately.then_some(true),
        ..Default::default()
    };
    let mut schedule = Schedule::new(&args.name, spec);
    let annotations = [
        args.retention
            .map(|policy| (labels::RETENTION.to_string(), policy)),
        test.map(|test| (ark_api::restore_test::ANNOTATION.to_string(), test)),
    ];
    let annotations: BTreeMap<String, String> = annotations.into_iter().flatten().collect();
    schedule.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    let client = crate::context::client(global).await?;
    let api: Api<Schedule> = Api::namespaced(client, &global.namespace);
    api.create(&PostParams::default(), &schedule)
        .await
        .with_context(|| {
            format!(
                "cannot create schedule {:?} in namespace {:?}",
                args.name, global.namespace
            )
        })?;
    println!("Schedule {:?} created successfully.", args.name);
    Ok(ExitCode::SUCCESS)
}
