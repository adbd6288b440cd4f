//! Leader election through a coordination.k8s.io Lease, so that two server replicas never run the
//! same backup, restore or deletion twice. The leader renews the lease; a replica that cannot renew
//! within the lease's duration stops (its replacement takes over), as controllers conventionally do.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::PostParams;
use kube::{Api, Client};

pub const LEASE_NAME: &str = "ark-server";

#[derive(Clone, Debug)]
pub struct Election {
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_period: Duration,
    pub retry_period: Duration,
}

/// Whether `lease` may be taken by `identity` at `now`: it is ours, unheld, or expired.
pub fn can_take(lease: &LeaseSpec, identity: &str, now: Timestamp) -> bool {
    let holder = lease.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == identity {
        return true;
    }
    let duration = SignedDuration::from_secs(lease.lease_duration_seconds.unwrap_or(15).into());
    match &lease.renew_time {
        Some(MicroTime(renewed)) => *renewed + duration < now,
        None => true,
    }
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

/// One attempt to take or renew the lease; `Ok(true)` when this replica holds it afterwards.
async fn try_hold(api: &Api<Lease>, election: &Election) -> kube::Result<bool> {
    let now = Timestamp::now();
    match api.get_opt(LEASE_NAME).await? {
        None => {
            let mut lease = Lease::default();
            lease.metadata.name = Some(LEASE_NAME.to_string());
            lease.spec = Some(spec(election, None, now));
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            }
        }
        Some(mut lease) => {
            let current = lease.spec.clone().unwrap_or_default();
            if !can_take(&current, &election.identity, now) {
                return Ok(false);
            }
            lease.spec = Some(spec(election, Some(&current), now));
            // The resourceVersion makes this a compare-and-swap: of two replicas, one wins.
            match api
                .replace(LEASE_NAME, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            }
        }
    }
}

/// Waits until this replica leads.
pub async fn acquire(client: &Client, namespace: &str, election: &Election) {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    loop {
        match try_hold(&api, election).await {
            Ok(true) => {
                tracing::info!(
                    "{} leads (lease {namespace}/{LEASE_NAME})",
                    election.identity
                );
                return;
            }
            Ok(false) => tracing::debug!("another replica leads; waiting"),
            Err(error) => tracing::warn!("leader election: {error}"),
        }
        tokio::time::sleep(election.retry_period).await;
    }
}

/// Renews the lease; returns when leadership is lost (not renewed within the lease's duration).
pub async fn hold(client: &Client, namespace: &str, election: &Election) {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let mut last_renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(election.renew_period).await;
        match try_hold(&api, election).await {
            Ok(true) => last_renewed = tokio::time::Instant::now(),
            Ok(false) => return,
            Err(error) => tracing::warn!("renewing the lease: {error}"),
        }
        if last_renewed.elapsed() > election.lease_duration {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed_secs_ago: i64) -> LeaseSpec {
        let now = Timestamp::now();
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(now - SignedDuration::from_secs(renewed_secs_ago))),
            ..Default::default()
        }
    }

    #[test]
    fn a_lease_is_taken_only_when_ours_free_or_expired() {
        let now = Timestamp::now();
        assert!(can_take(&lease("me", 1), "me", now));
        assert!(!can_take(&lease("other", 1), "me", now));
        assert!(can_take(&lease("other", 30), "me", now));
        assert!(can_take(&LeaseSpec::default(), "me", now));
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_keeps_the_acquire_time() {
        let election = Election {
            identity: "me".into(),
            lease_duration: Duration::from_secs(15),
            renew_period: Duration::from_secs(5),
            retry_period: Duration::from_secs(2),
        };
        let now = Timestamp::now();
        let mut theirs = lease("other", 30);
        theirs.lease_transitions = Some(2);
        let taken = spec(&election, Some(&theirs), now);
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(3));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        let later = now + SignedDuration::from_secs(5);
        let renewed = spec(&election, Some(&taken), later);
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.renew_time, Some(MicroTime(later)));
        assert_eq!(renewed.lease_transitions, Some(3));
    }
}
