//! Running exec hooks: wait (a watch) until the container runs, then exec through the API, each
//! with its timeouts, never longer than the restore's overall bound.

use ark_api::HookErrorMode;
use ark_api::hooks::HookResult;
use k8s_openapi::api::core::v1::Pod;
use kube::api::AttachParams;
use kube::runtime::wait::await_condition;
use kube::{Api, Client};
use tokio::time::Instant;

use super::ExecHook;

/// How much of a hook's output is kept for `describe --details`.
const OUTPUT_TAIL: usize = 2048;

/// The exit code in an exec's final status: a kubelet sends an `ExitCode` cause; kwok and others
/// say "... exit status N" / "exit code N" in the message.
pub fn exit_code(status: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Status) -> Option<i32> {
    if status.status.as_deref() == Some("Success") {
        return Some(0);
    }
    let from_cause = status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.reason.as_deref() == Some("ExitCode"))
        .and_then(|c| c.message.as_deref()?.trim().parse().ok());
    from_cause.or_else(|| {
        let message = status.message.as_deref()?;
        ["exit status ", "exit code "].iter().find_map(|marker| {
            let at = message.rfind(marker)? + marker.len();
            message[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
    })
}

fn tail(text: &str) -> String {
    let start = text.len().saturating_sub(OUTPUT_TAIL);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[start..].to_string()
}

/// Where a container stands for its hooks.
enum Readiness {
    Ready,
    NoSuchContainer,
    Finished(String),
    Deleted,
    TimedOut,
}

fn container_state(pod: &Pod, container: &str, want_ready: bool) -> Option<Readiness> {
    let spec = pod.spec.as_ref()?;
    if !spec.containers.iter().any(|c| c.name == container) {
        return Some(Readiness::NoSuchContainer);
    }
    let status = pod.status.as_ref()?;
    if let Some(phase @ ("Succeeded" | "Failed")) = status.phase.as_deref() {
        return Some(Readiness::Finished(phase.to_string()));
    }
    let container_status = status
        .container_statuses
        .iter()
        .flatten()
        .find(|s| s.name == container)?;
    let running = container_status
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .is_some();
    (running && (!want_ready || container_status.ready)).then_some(Readiness::Ready)
}

async fn wait_for_container(
    pods: &Api<Pod>,
    pod: &str,
    hook: &ExecHook,
    until: Instant,
) -> Readiness {
    let container = hook.container.clone();
    let ready = hook.wait_for_ready;
    let condition = move |pod: Option<&Pod>| match pod {
        None => true,
        Some(pod) => container_state(pod, &container, ready).is_some(),
    };
    match tokio::time::timeout_at(until, await_condition(pods.clone(), pod, condition)).await {
        Err(_) => Readiness::TimedOut,
        Ok(Err(_)) | Ok(Ok(None)) => Readiness::Deleted,
        Ok(Ok(Some(pod))) => container_state(&pod, &hook.container, hook.wait_for_ready)
            .unwrap_or(Readiness::TimedOut),
    }
}

async fn exec(
    pods: &Api<Pod>,
    pod: &str,
    hook: &ExecHook,
) -> Result<(i32, String), (Option<i32>, String, String)> {
    let params = AttachParams::default()
        .container(hook.container.clone())
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut process = pods
        .exec(pod, hook.command.clone(), &params)
        .await
        .map_err(|e| (None, format!("exec failed: {e}"), String::new()))?;
    let mut stdout = process.stdout();
    let mut stderr = process.stderr();
    let read_all = |stream: Option<_>| async move {
        let mut text = String::new();
        if let Some(mut stream) = stream {
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut text).await;
        }
        text
    };
    let (out, err) = tokio::join!(read_all(stdout.take()), read_all(stderr.take()));
    let output = tail(&format!("{out}{err}"));
    let status = match process.take_status() {
        Some(status) => status.await,
        None => None,
    };
    let _ = process.join().await;
    match status {
        Some(status) if status.status.as_deref() == Some("Success") => Ok((0, output)),
        Some(status) => {
            let code = exit_code(&status);
            let message = match code {
                Some(code) => format!("command exited with code {code}"),
                None => status
                    .message
                    .clone()
                    .unwrap_or_else(|| "the command failed".into()),
            };
            Err((code, message, output))
        }
        None => Err((None, "the exec ended without a status".into(), output)),
    }
}

/// Runs a pod's exec hooks one after another in order; `onError: Fail` stops the rest. Waiting
/// for the container costs only a watch; running a command takes a permit from `execs`, which
/// bounds the commands running at once. Nothing outlives `deadline`.
pub async fn run_pod(
    client: &Client,
    namespace: &str,
    pod: &str,
    hooks: &[ExecHook],
    execs: &tokio::sync::Semaphore,
    deadline: Instant,
) -> Vec<HookResult> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut results = Vec::new();
    for hook in hooks {
        let started = Instant::now();
        let mut result = HookResult {
            container: hook.container.clone(),
            command: hook.command.clone(),
            source: hook.source.clone(),
            ..Default::default()
        };
        let wait_until = hook
            .wait_timeout
            .map_or(deadline, |w| (started + w).min(deadline));
        let readiness = wait_for_container(&pods, pod, hook, wait_until).await;
        let failure = match readiness {
            Readiness::NoSuchContainer => Some(format!(
                "container {:?} not found in pod {namespace}/{pod}",
                hook.container
            )),
            Readiness::Deleted => Some(format!(
                "pod {namespace}/{pod} was deleted before its hooks ran"
            )),
            Readiness::Finished(phase) => Some(format!(
                "pod {namespace}/{pod} finished ({phase}) before its hooks ran"
            )),
            Readiness::TimedOut if wait_until < deadline => Some(format!(
                "container {:?} was not {} within the wait timeout {}",
                hook.container,
                if hook.wait_for_ready {
                    "ready"
                } else {
                    "running"
                },
                ark_api::duration::format(hook.wait_timeout.unwrap_or_default())
            )),
            Readiness::TimedOut => Some(format!(
                "container {:?} was not running before the restore's hooks timeout",
                hook.container
            )),
            Readiness::Ready => None,
        };
        match failure {
            Some(error) => result.error = Some(error),
            None => {
                let exec_started = Instant::now();
                let exec_until = (exec_started + hook.exec_timeout).min(deadline);
                let run = async {
                    let _permit = execs
                        .acquire()
                        .await
                        .expect("the semaphore is never closed");
                    exec(&pods, pod, hook).await
                };
                match tokio::time::timeout_at(exec_until, run).await {
                    Ok(Ok((code, output))) => {
                        result.succeeded = true;
                        result.exit_code = Some(code);
                        result.output_tail = output;
                    }
                    Ok(Err((code, error, output))) => {
                        result.exit_code = code;
                        result.error = Some(error);
                        result.output_tail = output;
                    }
                    Err(_) => {
                        let allowed = exec_until.saturating_duration_since(exec_started);
                        result.error = Some(format!(
                            "timed out after {}",
                            ark_api::duration::format(allowed)
                        ));
                    }
                }
            }
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
        let stop = !result.succeeded && hook.on_error == HookErrorMode::Fail;
        results.push(result);
        if stop {
            break;
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

    #[test]
    fn exit_codes_from_a_kubelet_and_from_kwok() {
        let kubelet = Status {
            status: Some("Failure".into()),
            reason: Some("NonZeroExitCode".into()),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ExitCode".into()),
                    message: Some("2".into()),
                    field: None,
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(exit_code(&kubelet), Some(2));
        let kwok = Status {
            status: Some("Failure".into()),
            message: Some("Internal error occurred: error executing command in container: cmd wait: sh -c exit 3: exit status 3".into()),
            ..Default::default()
        };
        assert_eq!(exit_code(&kwok), Some(3));
        assert_eq!(
            exit_code(&Status {
                status: Some("Success".into()),
                ..Default::default()
            }),
            Some(0)
        );
        assert_eq!(
            exit_code(&Status {
                status: Some("Failure".into()),
                message: Some("boom".into()),
                ..Default::default()
            }),
            None
        );
    }

    #[test]
    fn output_tails_keep_the_end() {
        let long = "x".repeat(5000) + "END";
        let kept = tail(&long);
        assert_eq!(kept.len(), OUTPUT_TAIL);
        assert!(kept.ends_with("END"));
        assert_eq!(tail("short"), "short");
    }
}
