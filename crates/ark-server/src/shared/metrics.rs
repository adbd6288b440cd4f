//! Prometheus metrics of the deletion controller, served as text on `/metrics`. Velero's names,
//! with ark's prefix.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Default)]
pub struct Metrics {
    deletion_attempts: AtomicU64,
    deletion_successes: AtomicU64,
    deletion_failures: AtomicU64,
}

impl Metrics {
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

/// Answers every request on `address` with the metrics: a scrape endpoint needs no more.
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
            let _ = stream.read(&mut request).await;
            let body = metrics.render();
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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
}
