//! The record of one backup or restore as it runs: its operation log and its results (Velero's
//! warnings and errors), kept together so that one call puts a message everywhere it belongs.

use std::fs::File;

use ark_api::hooks::PodHookResults;

use crate::records::operation_log::{Level, OperationLog};
use crate::records::results::Results;

pub struct Recorder {
    log: OperationLog,
    results: Results,
}

impl Recorder {
    /// A record whose log is written to a scratch file under `scratch`; `subject` (such as
    /// `backup=velero/nightly`) ends every line of the log.
    pub fn create(scratch: &std::path::Path, subject: String) -> std::io::Result<Recorder> {
        Ok(Recorder {
            log: OperationLog::create(scratch, subject)?,
            results: Results::default(),
        })
    }

    /// A line of the log only: what happened, not a warning or an error.
    pub fn info(&mut self, message: &str) {
        self.log.info(message);
    }

    /// A warning about an item of `namespace` (`None`: a cluster-scoped one).
    pub fn warning(&mut self, namespace: Option<&str>, message: String) {
        self.log.log(Level::Warning, &message);
        self.results.warnings.add(namespace, message);
    }

    /// An error about an item of `namespace` (`None`: a cluster-scoped one).
    pub fn error(&mut self, namespace: Option<&str>, message: String) {
        self.log.log(Level::Error, &message);
        self.results.errors.add(namespace, message);
    }

    /// A warning about the operation as a whole (Velero's `velero` list).
    pub fn general_warning(&mut self, message: String) {
        self.log.log(Level::Warning, &message);
        self.results.warnings.add_general(message);
    }

    /// An error about the operation as a whole (Velero's `velero` list).
    pub fn general_error(&mut self, message: String) {
        self.log.log(Level::Error, &message);
        self.results.errors.add_general(message);
    }

    /// The reason the operation failed: logged, as the status carries it (not the results).
    pub fn failure(&mut self, reason: &str) {
        self.log.log(Level::Error, reason);
    }

    /// Errors counted elsewhere and not listed (entries of a hostile tarball past its limit).
    pub fn omitted_errors(&mut self, count: u64) {
        self.results.errors.omitted += count;
    }

    /// Each hook's outcome, as Velero logs them: a failure is an error of its pod's namespace.
    pub fn hook_outcomes(&mut self, pods: &[PodHookResults]) {
        for pod in pods {
            for hook in &pod.hooks {
                let phase = hook.phase.map(|p| format!("{p} ")).unwrap_or_default();
                let what = format!(
                    "{phase}hook {:?} ({}) in container {} of pod {}/{}",
                    hook.command.join(" "),
                    hook.source,
                    hook.container,
                    pod.namespace,
                    pod.pod
                );
                match (&hook.error, &hook.skipped) {
                    (Some(error), _) => {
                        self.error(Some(&pod.namespace), format!("{what} failed: {error}"))
                    }
                    (None, Some(skipped)) => self.info(&format!("{what} skipped: {skipped}")),
                    (None, None) => {
                        self.info(&format!("{what} succeeded in {}ms", hook.duration_ms))
                    }
                }
            }
        }
    }

    /// Errors recorded so far, the omitted ones counted.
    pub fn errors(&self) -> i64 {
        self.results.errors.count()
    }

    /// Warnings recorded so far, the omitted ones counted.
    pub fn warnings(&self) -> i64 {
        self.results.warnings.count()
    }

    /// Ends the log (its gzip stream finished; the file is gone when the handle drops) and hands
    /// over the results.
    pub fn finish(self) -> std::io::Result<(File, Results)> {
        Ok((self.log.finish()?, self.results))
    }
}
