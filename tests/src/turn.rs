//! Turns on what the test ground has once and tests cannot share: tests of one process and of
//! the test command's other groups (scripts/test.sh runs them side by side) take them through a
//! lock on a file, released when the turn is dropped.

use std::fs::{File, TryLockError};
use std::time::Duration;

/// How long a test waits for its turn before it fails: the longest group's bound.
const LONGEST_WAIT: Duration = Duration::from_secs(40 * 60);

pub struct Turn {
    _lock: File,
}

impl Turn {
    /// The fixed ports of the real node's host network (the test ground's pods take the host's
    /// network: its API server listens on 127.0.0.1): Velero's node agent serves on 8085 and its
    /// controller manager on 8080, ark installed with its own defaults on 8085 and 8086 (the
    /// demo, say). ark installed by the tests' harness (`node_agent::Installed`) serves on ports
    /// of its own and needs no turn: the tests of ark's agent run side by side.
    pub async fn fixed_host_ports() -> Turn {
        Self::take("fixed-host-ports").await
    }

    /// Velero's server: its controller manager always serves metrics on `:8080`.
    pub async fn velero_server() -> Turn {
        Self::take("velero-server").await
    }

    async fn take(what: &str) -> Turn {
        let path = std::env::temp_dir().join(format!("ark-tests-{what}.lock"));
        let lock =
            File::create(&path).unwrap_or_else(|e| panic!("the lock file {}: {e}", path.display()));
        let deadline = tokio::time::Instant::now() + LONGEST_WAIT;
        loop {
            match lock.try_lock() {
                Ok(()) => return Turn { _lock: lock },
                Err(TryLockError::WouldBlock) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "no turn on the {what} within {LONGEST_WAIT:?}: another test held {} all along",
                        path.display()
                    );
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(TryLockError::Error(e)) => panic!("locking {}: {e}", path.display()),
            }
        }
    }
}
