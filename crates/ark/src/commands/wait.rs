//! `--wait`: follow an operation with a progress bar until it reaches a final phase.

use std::fmt::Debug;

use indicatif::{ProgressBar, ProgressStyle};
use kube::Api;
use kube::runtime::wait::await_condition;
use serde::de::DeserializeOwned;

/// What `--wait` needs to know of an operation.
pub trait Operation:
    kube::Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
    /// The phase's name and whether it is final.
    fn phase_state(&self) -> (String, bool);
    /// Items done and in all, once known.
    fn items(&self) -> Option<(i64, i64)>;
    /// Why the server refused it, if it did (`FailedValidation`).
    fn validation_errors(&self) -> &[String];
}

impl Operation for ark_api::Backup {
    fn phase_state(&self) -> (String, bool) {
        let phase = self.phase();
        (format!("{phase:?}"), phase.is_terminal())
    }
    fn items(&self) -> Option<(i64, i64)> {
        let progress = self.status.as_ref()?.progress.as_ref()?;
        Some((
            progress.items_backed_up.unwrap_or(0),
            progress.total_items.unwrap_or(0),
        ))
    }
    fn validation_errors(&self) -> &[String] {
        (self.status.as_ref())
            .and_then(|s| s.validation_errors.as_deref())
            .unwrap_or_default()
    }
}

impl Operation for ark_api::Restore {
    fn phase_state(&self) -> (String, bool) {
        let phase = self.phase();
        (format!("{phase:?}"), phase.is_terminal())
    }
    fn items(&self) -> Option<(i64, i64)> {
        let progress = self.status.as_ref()?.progress.as_ref()?;
        Some((
            progress.items_restored.unwrap_or(0),
            progress.total_items.unwrap_or(0),
        ))
    }
    fn validation_errors(&self) -> &[String] {
        (self.status.as_ref())
            .and_then(|s| s.validation_errors.as_deref())
            .unwrap_or_default()
    }
}

/// How long an operation may stay New before `--wait` says that no server seems to take it.
const UNCLAIMED_NOTICE: std::time::Duration = std::time::Duration::from_secs(10);

/// Watches the object until its phase is final and returns it; the bar goes to stderr (hidden when
/// stderr is not a terminal). An object still New after 10 s gets a notice on stderr: no server
/// seems to run in `namespace` (the wait goes on).
pub async fn until_done<K: Operation>(
    api: Api<K>,
    namespace: &str,
    name: &str,
    timeout: Option<std::time::Duration>,
) -> anyhow::Result<K> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} items ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let shown = bar.clone();
    let condition = move |object: Option<&K>| {
        let Some(object) = object else { return true };
        let (phase, done) = object.phase_state();
        shown.set_message(phase);
        if let Some((items, total)) = object.items() {
            shown.set_length(total.max(items) as u64);
            shown.set_position(items as u64);
        }
        done
    };
    let unclaimed = async {
        tokio::time::sleep(UNCLAIMED_NOTICE).await;
        if matches!(bar.message().as_str(), "" | "New") {
            bar.suspend(|| {
                eprintln!(
                    "{} {name} is still New after {}s: no ark (or Velero) server seems to run in \
                     namespace {namespace}; start one with `ark server -n {namespace}`, or, for a \
                     namespace's own backups, an administrator delegates it to an ark with \
                     `kubectl label namespace {namespace} ark.io/tenant-of=<ark's namespace>`. \
                     Still waiting.",
                    K::kind(&()),
                    UNCLAIMED_NOTICE.as_secs()
                )
            });
        }
        std::future::pending::<()>().await
    };
    let result = within(timeout, async {
        tokio::select! {
            result = await_condition(api, name, condition) => result,
            () = unclaimed => unreachable!(),
        }
    })
    .await;
    bar.finish_and_clear();
    let Some(result) = result else {
        anyhow::bail!(
            "gave up waiting for {name} after {}: it is still {}",
            ark_api::duration::format(timeout.unwrap_or_default()),
            bar.message()
        );
    };
    let object =
        result?.ok_or_else(|| anyhow::anyhow!("{name} was deleted while waiting for it"))?;
    let refused = object.validation_errors();
    if !refused.is_empty() {
        eprintln!("{} {name} was refused:", K::kind(&()));
        for reason in refused {
            eprintln!("  {reason}");
        }
    }
    Ok(object)
}

/// `future`'s output, or None once `timeout` (if any) has passed.
pub async fn within<F: std::future::Future>(
    timeout: Option<std::time::Duration>,
    future: F,
) -> Option<F::Output> {
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout, future).await.ok(),
        None => Some(future.await),
    }
}
