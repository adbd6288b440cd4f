//! Running one hook's command in a pod's container through the API server's exec, with its
//! timeout, keeping the exit code and the end of the output: the step backup and restore hooks
//! share.

use ark_api::hooks::HookResult;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::AttachParams;
use std::time::Duration;

use super::ExecHook;

/// How much of a hook's output is kept for `describe --details`.
const OUTPUT_TAIL: usize = 2048;

/// The exit code in an exec's final status: a kubelet sends an `ExitCode` cause; kwok and others
/// say "... exit status N" / "exit code N" in the message.
fn exit_code(status: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Status) -> Option<i32> {
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

/// Reads a stream to its end keeping only its last `OUTPUT_TAIL` bytes, so that a hook printing
/// gigabytes costs the server a few kilobytes.
async fn tail_of(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    let mut kept = Vec::with_capacity(2 * OUTPUT_TAIL);
    let Some(mut stream) = stream else {
        return kept;
    };
    let mut chunk = [0u8; 8192];
    loop {
        match tokio::io::AsyncReadExt::read(&mut stream, &mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                kept.extend_from_slice(&chunk[..read]);
                if kept.len() > 2 * OUTPUT_TAIL {
                    kept.drain(..kept.len() - OUTPUT_TAIL);
                }
            }
        }
    }
    kept
}

/// The last `OUTPUT_TAIL` bytes of a hook's output, as text (bytes that are not UTF-8 replaced).
fn tail(mut output: Vec<u8>) -> String {
    output.drain(..output.len().saturating_sub(OUTPUT_TAIL));
    String::from_utf8_lossy(&output).into_owned()
}

/// What running a hook's command came to.
struct Ran {
    /// Its exit code, when the API server said one (0 when it succeeded).
    exit_code: Option<i32>,
    /// Why it failed, if it did.
    error: Option<String>,
    /// The end of its output, stdout then stderr.
    output: String,
}

impl Ran {
    fn failed(exit_code: Option<i32>, error: String, output: String) -> Ran {
        Ran {
            exit_code,
            error: Some(error),
            output,
        }
    }
}

async fn exec(pods: &Api<Pod>, pod: &str, hook: &ExecHook) -> Ran {
    let params = AttachParams::default()
        .container(hook.container.clone())
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut process = match pods.exec(pod, hook.command.clone(), &params).await {
        Ok(process) => process,
        Err(error) => return Ran::failed(None, format!("exec failed: {error}"), String::new()),
    };
    let (mut out, err) = tokio::join!(tail_of(process.stdout()), tail_of(process.stderr()));
    out.extend(err);
    let output = tail(out);
    let status = match process.take_status() {
        Some(status) => status.await,
        None => None,
    };
    let _ = process.join().await;
    match status {
        Some(status) if status.status.as_deref() == Some("Success") => Ran {
            exit_code: Some(0),
            error: None,
            output,
        },
        Some(status) => {
            let code = exit_code(&status);
            let message = match code {
                Some(code) => format!("command exited with code {code}"),
                None => status
                    .message
                    .clone()
                    .unwrap_or_else(|| "the command failed".into()),
            };
            Ran::failed(code, message, output)
        }
        None => Ran::failed(None, "the exec ended without a status".into(), output),
    }
}

/// Runs `hook` in its container of `pod`, giving up after `timeout`, and records how it went in
/// `result`. A command that outlives `timeout` may go on running in the container (the API gives
/// no way to stop it), as in Velero.
pub async fn run(
    pods: &Api<Pod>,
    pod: &str,
    hook: &ExecHook,
    timeout: Duration,
    result: &mut HookResult,
) {
    match tokio::time::timeout(timeout, exec(pods, pod, hook)).await {
        Ok(ran) => {
            result.succeeded = ran.error.is_none();
            result.exit_code = ran.exit_code;
            result.error = ran.error;
            result.output_tail = ran.output;
        }
        Err(_) => {
            result.error = Some(format!(
                "timed out after {}",
                ark_api::duration::format(timeout)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hook_s_output_is_kept_as_a_bounded_lossy_tail() {
        // 64 MiB of output, then bytes that are not UTF-8 and a last line.
        let flood = tokio::io::AsyncReadExt::chain(
            tokio::io::AsyncReadExt::take(tokio::io::repeat(b'x'), 64 << 20),
            &b"\xff\xfe done\n"[..],
        );
        let kept = tail_of(Some(flood)).await;
        assert!(kept.len() <= 2 * OUTPUT_TAIL);
        let text = tail(kept);
        assert!(text.ends_with("x\u{fffd}\u{fffd} done\n"), "{text:?}");
        assert!(text.len() <= OUTPUT_TAIL + 4);
        assert_eq!(tail_of(None::<&[u8]>).await, b"");
    }
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
        let kept = tail(long.into_bytes());
        assert_eq!(kept.len(), OUTPUT_TAIL);
        assert!(kept.ends_with("END"));
        assert_eq!(tail(b"short".to_vec()), "short");
    }
}
