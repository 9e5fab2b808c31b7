//! The pure decisions of client-go's election, without a client: whether another holder's
//! lease is still valid (on *our* clock), the spec that takes or renews the lease, the spec that
//! hands it back, and the jittered pause between attempts.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// What one attempt to acquire or renew found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Attempt {
    /// We hold the lease now.
    Held,
    /// Someone else holds a valid lease.
    HeldBy(String),
    /// Lost a race (409): try again after the retry period.
    Raced,
}

/// The parts of a lease's spec that tell whether the holder is alive: when any of them changes,
/// the holder (or someone) wrote it, and the expiry clock restarts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) holder: String,
    pub(super) duration_seconds: i32,
    pub(super) acquire_time: Option<Timestamp>,
    pub(super) renew_time: Option<Timestamp>,
    pub(super) transitions: i32,
}

impl Record {
    pub(super) fn of(spec: Option<&LeaseSpec>) -> Record {
        let spec = spec.cloned().unwrap_or_default();
        Record {
            holder: spec.holder_identity.unwrap_or_default(),
            duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.map(|t| t.0),
            renew_time: spec.renew_time.map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }
}

/// Who holds a valid lease other than `me`, judged by when *we* last saw the record change.
pub(super) fn valid_other_holder(
    record: &Record,
    me: &str,
    observed_at: Instant,
    now: Instant,
    default_duration: Duration,
) -> Option<String> {
    if record.holder.is_empty() || record.holder == me {
        return None;
    }
    let duration = u64::try_from(record.duration_seconds)
        .ok()
        .filter(|s| *s > 0)
        .map_or(default_duration, Duration::from_secs);
    (now < observed_at + duration).then(|| record.holder.clone())
}

/// The spec that makes `me` the holder, renewing when we already hold it.
pub(super) fn holder_spec(old: &Record, me: &str, duration: Duration, now: Timestamp) -> LeaseSpec {
    let renewing = old.holder == me;
    LeaseSpec {
        holder_identity: Some(me.to_string()),
        lease_duration_seconds: Some(i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)),
        acquire_time: Some(MicroTime(match (renewing, old.acquire_time) {
            (true, Some(t)) => t,
            _ => now,
        })),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if renewing {
            old.transitions
        } else {
            old.transitions.saturating_add(1)
        }),
        ..LeaseSpec::default()
    }
}

/// The spec that hands the lease back (client-go's release record).
pub(super) fn released_spec(old: &Record, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(old.transitions),
        ..LeaseSpec::default()
    }
}

/// Sleep for the retry period stretched by up to 120 %, as client-go does, so that standbys
/// started together do not all ask at the same moment.
pub(super) fn jittered(period: Duration) -> Duration {
    let factor = (random_u64() % 1000) as f64 / 1000.0 * 1.2;
    period + period.mul_f64(factor)
}

/// A random number, for identity suffixes and jitter: the one the backoffs draw from.
pub(super) use crate::cluster::backoff::random as random_u64;

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn record(holder: &str, duration: i32) -> Record {
        Record {
            holder: holder.to_string(),
            duration_seconds: duration,
            acquire_time: Some(ts("2025-01-01T00:00:00Z")),
            renew_time: Some(ts("2025-01-01T00:00:10Z")),
            transitions: 3,
        }
    }

    #[test]
    fn other_holder_is_valid_until_its_duration_passes_on_our_clock() {
        let seen = Instant::now();
        let r = record("other", 15);
        let d = Duration::from_secs(15);
        assert_eq!(
            valid_other_holder(&r, "me", seen, seen + Duration::from_secs(14), d),
            Some("other".to_string())
        );
        assert_eq!(
            valid_other_holder(&r, "me", seen, seen + Duration::from_secs(15), d),
            None
        );
    }

    #[test]
    fn empty_or_own_holder_can_be_taken_at_once() {
        let seen = Instant::now();
        let d = Duration::from_secs(15);
        assert_eq!(
            valid_other_holder(&record("", 1), "me", seen, seen, d),
            None
        );
        assert_eq!(
            valid_other_holder(&record("me", 15), "me", seen, seen, d),
            None
        );
    }

    #[test]
    fn missing_duration_falls_back_to_ours() {
        let seen = Instant::now();
        let d = Duration::from_secs(15);
        let r = record("other", 0);
        assert!(valid_other_holder(&r, "me", seen, seen + Duration::from_secs(14), d).is_some());
        assert!(valid_other_holder(&r, "me", seen, seen + Duration::from_secs(16), d).is_none());
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_keeps_acquire_time() {
        let now = ts("2025-01-01T00:01:00Z");
        let d = Duration::from_secs(15);
        let taken = holder_spec(&record("other", 15), "me", d, now);
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        assert_eq!(taken.renew_time, Some(MicroTime(now)));
        assert_eq!(taken.lease_duration_seconds, Some(15));

        let renewed = holder_spec(&record("me", 15), "me", d, now);
        assert_eq!(renewed.lease_transitions, Some(3));
        assert_eq!(
            renewed.acquire_time,
            Some(MicroTime(ts("2025-01-01T00:00:00Z")))
        );
        assert_eq!(renewed.renew_time, Some(MicroTime(now)));

        let fresh = holder_spec(&Record::of(None), "me", d, now);
        assert_eq!(fresh.lease_transitions, Some(1));
    }

    #[test]
    fn release_clears_the_holder_like_client_go() {
        let now = ts("2025-01-01T00:01:00Z");
        let released = released_spec(&record("me", 15), now);
        assert_eq!(released.holder_identity, None);
        assert_eq!(released.lease_duration_seconds, Some(1));
        assert_eq!(released.lease_transitions, Some(3));
    }

    #[test]
    fn record_changes_restart_the_expiry_clock() {
        let spec = holder_spec(
            &Record::of(None),
            "other",
            Duration::from_secs(15),
            ts("2025-01-01T00:00:00Z"),
        );
        let a = Record::of(Some(&spec));
        let mut later = spec.clone();
        later.renew_time = Some(MicroTime(ts("2025-01-01T00:00:02Z")));
        assert_ne!(a, Record::of(Some(&later)));
        assert_eq!(a, Record::of(Some(&spec)));
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        let p = Duration::from_secs(2);
        for _ in 0..100 {
            let j = jittered(p);
            assert!(j >= p && j <= p.mul_f64(2.2), "{j:?}");
        }
    }
}
