//! Prometheus metrics of the deletion controller, served as text on `/metrics` (Velero's names,
//! with ark's prefix), beside the liveness (`/healthz`) and readiness (`/readyz`) endpoints of the
//! Deployment's probes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Default)]
pub struct Metrics {
    /// Whether this replica leads now (shown by `/readyz`).
    leading: AtomicBool,
    deletion_attempts: AtomicU64,
    deletion_successes: AtomicU64,
    deletion_failures: AtomicU64,
}

impl Metrics {
    pub fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::Relaxed);
    }

    pub fn deletion_attempted(&self) {
        self.deletion_attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn deletion_succeeded(&self) {
        self.deletion_successes.fetch_add(1, Ordering::Relaxed);
    }

    pub fn deletion_failed(&self) {
        self.deletion_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, value) in [
            (
                "ark_backup_deletion_attempt_total",
                "Total number of attempted backup deletions",
                &self.deletion_attempts,
            ),
            (
                "ark_backup_deletion_success_total",
                "Total number of successful backup deletions",
                &self.deletion_successes,
            ),
            (
                "ark_backup_deletion_failure_total",
                "Total number of failed backup deletions",
                &self.deletion_failures,
            ),
        ] {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}\n",
                value.load(Ordering::Relaxed)
            ));
        }
        out
    }
}

/// The answer to one request: `(status line, content type, body)`.
fn answer(request: &[u8], metrics: &Metrics) -> (&'static str, &'static str, String) {
    let path = std::str::from_utf8(request)
        .ok()
        .and_then(|text| text.split_whitespace().nth(1))
        .unwrap_or_default();
    match path.split('?').next().unwrap_or_default() {
        "/metrics" => ("200 OK", "text/plain; version=0.0.4", metrics.render()),
        // The process answers, so it lives, whatever it can reach.
        "/healthz" => ("200 OK", "text/plain", "ok\n".into()),
        // Every replica, leading or standing by, is ready (a standby that is not would keep the
        // Deployment unavailable for nothing); the body says which.
        "/readyz" => {
            let role = if metrics.leading.load(Ordering::Relaxed) {
                "ok: leading\n"
            } else {
                "ok: standing by, not leading\n"
            };
            ("200 OK", "text/plain", role.into())
        }
        _ => ("404 Not Found", "text/plain", "not found\n".into()),
    }
}

/// Serves the metrics and health endpoints on `address`.
pub async fn serve(address: SocketAddr, metrics: std::sync::Arc<Metrics>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
    loop {
        // A failed accept (a connection reset before it was taken, no file descriptors left)
        // concerns that connection only: the endpoint keeps serving.
        let mut stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!("metrics: accepting a connection: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut request = [0u8; 1024];
            let read = stream.read(&mut request).await.unwrap_or(0);
            let (status, content_type, body) = answer(&request[..read], &metrics);
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_render_in_prometheus_text_format() {
        let metrics = Metrics::default();
        metrics.deletion_attempted();
        metrics.deletion_attempted();
        metrics.deletion_succeeded();
        metrics.deletion_failed();
        let text = metrics.render();
        assert!(text.contains("# TYPE ark_backup_deletion_attempt_total counter\nark_backup_deletion_attempt_total 2\n"));
        assert!(text.contains("ark_backup_deletion_success_total 1\n"));
        assert!(text.contains("ark_backup_deletion_failure_total 1\n"));
    }

    #[test]
    fn requests_are_answered_by_path() {
        let metrics = Metrics::default();
        let status = |request: &str| answer(request.as_bytes(), &metrics).0;
        assert_eq!(status("GET /healthz HTTP/1.1\r\n\r\n"), "200 OK");
        assert_eq!(status("GET /readyz HTTP/1.1\r\n\r\n"), "200 OK");
        assert_eq!(status("GET /metrics?x=1 HTTP/1.1\r\n\r\n"), "200 OK");
        assert_eq!(status("GET /other HTTP/1.1\r\n\r\n"), "404 Not Found");
        assert_eq!(status(""), "404 Not Found");
    }
}
