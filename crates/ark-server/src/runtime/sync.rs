//! One policy for a poisoned lock: the data behind ark's locks (sets of names, maps of cells,
//! counters) stays whole whatever a panicking holder was doing, so the lock is taken anyway. A
//! panic in one backup's task must not become a panic in every other that shares the lock.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub trait Locked<T> {
    /// The lock, taken even when a holder panicked.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_whose_holder_panicked_is_taken_with_its_data() {
        let names = std::sync::Arc::new(Mutex::new(vec!["a"]));
        let held = names.clone();
        let _ = std::thread::spawn(move || {
            let _guard = held.lock().unwrap();
            panic!("a holder panics");
        })
        .join();
        assert!(names.is_poisoned());
        names.locked().push("b");
        assert_eq!(*names.locked(), ["a", "b"]);
    }
}
