//! The backups this server runs now. The deletion controller refuses to delete one of them (its
//! phase says InProgress too, but a deletion may read it before the claim lands), and a stopping
//! server names those it leaves to the next leader.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::runtime::sync::Locked;

#[derive(Default)]
pub struct RunningBackups(Mutex<BTreeSet<String>>);

impl RunningBackups {
    /// Records `name` as running for as long as the guard lives: until the backup ends, or its
    /// term of leadership is cut off.
    pub fn start(&self, name: &str) -> Running<'_> {
        self.0.locked().insert(name.to_string());
        Running {
            backups: self,
            name: name.to_string(),
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.locked().contains(name)
    }

    pub fn names(&self) -> Vec<String> {
        self.0.locked().iter().cloned().collect()
    }
}

pub struct Running<'a> {
    backups: &'a RunningBackups,
    name: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.backups.0.locked().remove(&self.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_is_running_while_its_guard_lives_even_when_its_work_is_cut_off() {
        let running = RunningBackups::default();
        let work = async {
            let _guard = running.start("b1");
            std::future::pending::<()>().await
        };
        // Started, then dropped mid-way, as a lost lease drops a term's work.
        let mut work = Box::pin(work);
        let waker = futures::task::noop_waker();
        let _ = work
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker));
        assert!(running.contains("b1"));
        assert_eq!(running.names(), ["b1"]);
        drop(work);
        assert!(!running.contains("b1"));
    }
}
