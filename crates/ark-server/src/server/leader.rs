//! Leader election through a coordination.k8s.io Lease, so that two server replicas never run the
//! same backup, restore or deletion twice. The rules are client-go's:
//! - a replica that does not hold the lease times its expiry from when *it* saw the record last
//!   change, on its own monotonic clock, never by comparing another machine's `renewTime` with
//!   its own clock;
//! - the leader renews every retry period and stops leading once it has gone `renew_deadline`
//!   without a successful renewal, counted from when that renewal was *sent*; the deadline is
//!   shorter than the lease, so it has stopped before anyone else may take over;
//! - every call to the API server is bounded in time, so a hung call cannot keep an old leader
//!   working;
//! - on shutdown the leader releases the lease, so the next one need not wait for it to expire.
//!
//! Work-claiming writes are conditional besides (see `patch`): even a leader paused past all of
//! this cannot complete what its successor has ended.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};
use tokio::time::Instant;

pub const LEASE_NAME: &str = "ark-server";

#[derive(Clone, Debug)]
pub struct Election {
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Election {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period.
    pub fn new(identity: String) -> Self {
        Self {
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// The lease record as this replica last saw it change, and when (on its own clock).
#[derive(Clone, Debug)]
struct Observed {
    holder: String,
    resource_version: Option<String>,
    at: Instant,
}

/// Whether `identity` may take a lease held by `holder`, which this replica saw last change at
/// `observed_at`: it is ours or unheld, or its holder has not renewed it for a whole lease.
pub fn may_take(
    holder: &str,
    identity: &str,
    observed_at: Instant,
    now: Instant,
    lease: Duration,
) -> bool {
    holder.is_empty() || holder == identity || now.duration_since(observed_at) > lease
}

fn spec(election: &Election, previous: Option<&LeaseSpec>, now: Timestamp) -> LeaseSpec {
    let ours =
        previous.and_then(|p| p.holder_identity.as_deref()) == Some(election.identity.as_str());
    LeaseSpec {
        holder_identity: Some(election.identity.clone()),
        lease_duration_seconds: Some(election.lease_duration.as_secs() as i32),
        acquire_time: if ours {
            previous.and_then(|p| p.acquire_time.clone())
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(
            previous.and_then(|p| p.lease_transitions).unwrap_or(0)
                + i32::from(!ours && previous.is_some()),
        ),
        ..Default::default()
    }
}

#[derive(Debug, thiserror::Error)]
enum AttemptError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("the API server did not answer within {0:?}")]
    TimedOut(Duration),
}

/// `call`, or an error once `limit` has passed.
async fn bounded<T>(
    limit: Duration,
    call: impl Future<Output = kube::Result<T>>,
) -> Result<T, AttemptError> {
    match tokio::time::timeout(limit, call).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(AttemptError::TimedOut(limit)),
    }
}

struct Elector {
    api: Api<Lease>,
    election: Election,
    observed: Option<Observed>,
}

impl Elector {
    /// One attempt to take or renew the lease, each call bounded by `limit`; `Ok(true)` when this
    /// replica holds it afterwards.
    async fn try_hold(&mut self, limit: Duration) -> Result<bool, AttemptError> {
        let identity = self.election.identity.clone();
        let Some(mut lease) = bounded(limit, self.api.get_opt(LEASE_NAME)).await? else {
            let mut lease = Lease::default();
            lease.metadata.name = Some(LEASE_NAME.to_string());
            lease.spec = Some(spec(&self.election, None, Timestamp::now()));
            return match bounded(limit, self.api.create(&PostParams::default(), &lease)).await {
                Ok(_) => Ok(true),
                Err(AttemptError::Api(kube::Error::Api(s))) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let current = lease.spec.clone().unwrap_or_default();
        let holder = current.holder_identity.clone().unwrap_or_default();
        let now = Instant::now();
        let changed = self.observed.as_ref().is_none_or(|o| {
            o.holder != holder || o.resource_version != lease.metadata.resource_version
        });
        if changed {
            self.observed = Some(Observed {
                holder: holder.clone(),
                resource_version: lease.metadata.resource_version.clone(),
                at: now,
            });
        }
        let observed_at = self.observed.as_ref().map_or(now, |o| o.at);
        if !may_take(
            &holder,
            &identity,
            observed_at,
            now,
            self.election.lease_duration,
        ) {
            return Ok(false);
        }
        lease.spec = Some(spec(&self.election, Some(&current), Timestamp::now()));
        // The resourceVersion makes this a compare-and-swap: of two replicas, one wins.
        match bounded(
            limit,
            self.api.replace(LEASE_NAME, &PostParams::default(), &lease),
        )
        .await
        {
            Ok(_) => Ok(true),
            Err(AttemptError::Api(kube::Error::Api(s))) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Leadership, once acquired.
pub struct Leadership {
    elector: Elector,
    /// When the last successful renewal was sent.
    renewed: Instant,
}

/// Waits until this replica leads.
pub async fn acquire(client: &Client, namespace: &str, election: Election) -> Leadership {
    let mut elector = Elector {
        api: Api::namespaced(client.clone(), namespace),
        election,
        observed: None,
    };
    loop {
        let sent = Instant::now();
        match elector.try_hold(elector.election.retry_period).await {
            Ok(true) => {
                tracing::info!(
                    "{} leads (lease {namespace}/{LEASE_NAME})",
                    elector.election.identity
                );
                return Leadership {
                    elector,
                    renewed: sent,
                };
            }
            Ok(false) => tracing::debug!("another replica leads; waiting"),
            Err(error) => tracing::warn!("leader election: {error}"),
        }
        tokio::time::sleep(elector.election.retry_period).await;
    }
}

impl Leadership {
    /// Renews the lease; returns as soon as leadership is lost: another replica holds the lease,
    /// or no renewal succeeded within the renew deadline.
    pub async fn hold(&mut self) {
        loop {
            tokio::time::sleep(self.elector.election.retry_period).await;
            let deadline = self.renewed + self.elector.election.renew_deadline;
            let sent = Instant::now();
            let Some(left) = deadline.checked_duration_since(sent) else {
                tracing::warn!("the lease was not renewed within the renew deadline");
                return;
            };
            match self.elector.try_hold(left).await {
                Ok(true) => self.renewed = sent,
                Ok(false) => {
                    tracing::warn!("another replica holds the lease");
                    return;
                }
                Err(error) => tracing::warn!("renewing the lease: {error}"),
            }
        }
    }

    /// Gives the lease up (client-go's ReleaseOnCancel): no holder, a one-second duration.
    pub async fn release(mut self) {
        let limit = self.elector.election.retry_period;
        let api = self.elector.api.clone();
        let released = async {
            let Some(mut lease) = bounded(limit, api.get_opt(LEASE_NAME)).await? else {
                return Ok(());
            };
            let spec = lease.spec.get_or_insert_with(Default::default);
            if spec.holder_identity.as_deref() != Some(self.elector.election.identity.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            bounded(
                limit,
                api.replace(LEASE_NAME, &PostParams::default(), &lease),
            )
            .await?;
            Ok::<_, AttemptError>(())
        };
        match released.await {
            Ok(()) => tracing::info!("{} released the lease", self.elector.election.identity),
            Err(error) => tracing::warn!("releasing the lease: {error}"),
        }
        self.elector.observed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_taken_only_when_ours_free_or_unrenewed_for_a_whole_lease_as_seen_here() {
        let lease = Duration::from_secs(15);
        let seen = Instant::now();
        let later = |secs| seen + Duration::from_secs(secs);
        assert!(may_take("me", "me", seen, later(1), lease));
        assert!(may_take("", "me", seen, later(1), lease));
        assert!(!may_take("other", "me", seen, later(1), lease));
        assert!(!may_take("other", "me", seen, later(15), lease));
        assert!(may_take("other", "me", seen, later(16), lease));
    }

    #[test]
    fn the_leader_stops_before_anyone_may_take_over() {
        let election = Election::new("me".into());
        assert!(election.renew_deadline < election.lease_duration);
        assert!(election.retry_period < election.renew_deadline);
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_keeps_the_acquire_time() {
        let election = Election::new("me".into());
        let now = Timestamp::now();
        let theirs = LeaseSpec {
            holder_identity: Some("other".into()),
            lease_transitions: Some(2),
            ..Default::default()
        };
        let taken = spec(&election, Some(&theirs), now);
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(3));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        let later = now + k8s_openapi::jiff::SignedDuration::from_secs(5);
        let renewed = spec(&election, Some(&taken), later);
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.renew_time, Some(MicroTime(later)));
        assert_eq!(renewed.lease_transitions, Some(3));
    }
}
