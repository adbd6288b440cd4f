//! The pause between tries of something that must happen however long the API server or the
//! bucket is gone: doubling from a first pause up to 30 s, so a short outage costs little wait and
//! a long one few requests. The same, with a lower cap, paces the looks at something the cluster
//! is about to do: most of it is done within a second.

use std::time::Duration;

const CAP: Duration = Duration::from_secs(30);

pub struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    pub fn starting_at(first: Duration) -> Self {
        Self::between(first, CAP)
    }

    /// Doubling from `first` up to `cap`.
    pub fn between(first: Duration, cap: Duration) -> Self {
        Self {
            next: first.min(cap),
            cap,
        }
    }

    /// How long the next [`Self::wait`] sleeps.
    pub fn pause(&self) -> Duration {
        self.next
    }

    pub async fn wait(&mut self) {
        tokio::time::sleep(self.advance()).await;
    }

    /// This pause, the next one doubled.
    fn advance(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.cap);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_thirty_seconds() {
        let mut backoff = Backoff::starting_at(Duration::from_secs(4));
        let pauses: Vec<u64> = (0..5).map(|_| backoff.advance().as_secs()).collect();
        assert_eq!(pauses, [4, 8, 16, 30, 30]);
        assert_eq!(backoff.pause(), Duration::from_secs(30));
    }

    #[test]
    fn pauses_double_up_to_their_cap() {
        let mut backoff = Backoff::between(Duration::from_millis(100), Duration::from_secs(1));
        let pauses: Vec<u128> = (0..6).map(|_| backoff.advance().as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1000, 1000]);
    }
}
