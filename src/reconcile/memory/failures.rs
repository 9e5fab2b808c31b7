//! Each object's failures in a row, for the retry policy (`reconcile/retry_policy.rs`): what
//! its backoff grows with, and of them the panics, told once and then at most every
//! [`RETELL_PANIC`]. A success starts the count again.

use std::time::{Duration, Instant};

use crate::cluster::expiring::Expiring;
use crate::metrics::Metrics;

/// How long a failure is remembered for the backoff after the last one: twice the longest
/// backoff, so an object that keeps failing keeps its count.
const FAILURE_MEMORY: Duration = Duration::from_secs(600);

/// A panic that keeps coming back is told again, with its count, at most this often (what
/// client-go's EventCorrelator does for a Warning that stays true).
pub(crate) const RETELL_PANIC: Duration = Duration::from_secs(600);

/// An object's failures in a row: what the backoff grows with, and of them the panics, told
/// once and then at most every [`RETELL_PANIC`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Streak {
    failures: u32,
    panics: u32,
    /// When its panic was last told.
    told: Option<Instant>,
}

impl Streak {
    fn failed(self) -> Streak {
        Streak {
            failures: self.failures.saturating_add(1),
            ..self
        }
    }

    /// One more panic at `now`, and whether it is to be told (the first, or the first after
    /// [`RETELL_PANIC`]).
    fn panicked(self, now: Instant) -> (Streak, bool) {
        let tell = self
            .told
            .is_none_or(|told| now.saturating_duration_since(told) >= RETELL_PANIC);
        let streak = Streak {
            failures: self.failures.saturating_add(1),
            panics: self.panics.saturating_add(1),
            told: if tell { Some(now) } else { self.told },
        };
        (streak, tell)
    }
}

/// Consecutive failures per object: what the error policy's backoff grows with, and a
/// success starts again.
pub struct Failures {
    streaks: Expiring<Streak>,
}

impl Failures {
    pub fn new(metrics: Metrics) -> Failures {
        Failures {
            streaks: Expiring::new("failures", metrics, FAILURE_MEMORY),
        }
    }

    /// `key` reconciled: its next failure backs off from the start again. Answers how many
    /// panics in a row this ends (0: none), for the line that says it recovered.
    pub(crate) fn success(&self, key: &str) -> u32 {
        let Some((streak, _)) = self.streaks.get(key) else {
            return 0;
        };
        self.streaks.remove(key);
        streak.panics
    }

    /// One more consecutive failure of `key`; answers the count.
    pub(crate) fn failure(&self, key: &str) -> u32 {
        let streak = self
            .streaks
            .update(key, |s| s.copied().unwrap_or_default().failed());
        streak.failures
    }

    /// One more consecutive failure of `key`, a panic: the count, the panics among them, and
    /// whether to tell it now (see [`Streak::panicked`]).
    pub(crate) fn panic(&self, key: &str) -> (u32, u32, bool) {
        let mut tell = false;
        let streak = self.streaks.update(key, |s| {
            let (streak, told) = s.copied().unwrap_or_default().panicked(Instant::now());
            tell = told;
            streak
        });
        (streak.failures, streak.panics, tell)
    }

    /// Forget what outlived its time to live.
    pub fn expire(&self) {
        self.streaks.expire();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each failure of an object counts one more (the backoff doubles with it), another
    /// object's on its own; a success starts the count again.
    #[test]
    fn failures_count_per_object_until_a_success() {
        let failures = Failures::new(Metrics::new());
        let counts: Vec<u32> = (0..3)
            .map(|_| failures.failure("Tuple/default/t"))
            .collect();
        assert_eq!(counts, [1, 2, 3]);
        assert_eq!(failures.failure("Tuple/default/u"), 1);
        failures.success("Tuple/default/t");
        assert_eq!(failures.failure("Tuple/default/t"), 1);
        assert_eq!(failures.failure("Tuple/default/u"), 2);
    }

    /// A panic that keeps coming back is told the first time and then at most every ten
    /// minutes, each panic still one more failure for the backoff.
    #[test]
    fn a_panic_is_told_once_then_at_most_every_ten_minutes() {
        let start = Instant::now();
        let (first, told) = Streak::default().panicked(start);
        assert!(told);
        let (second, told) = first.panicked(start + Duration::from_secs(60));
        assert!(!told);
        let (third, told) = second.failed().panicked(start + RETELL_PANIC);
        assert!(told);
        assert_eq!((third.failures, third.panics), (4, 3));
        let failures = Failures::new(Metrics::new());
        assert_eq!(failures.panic("Tuple/default/t"), (1, 1, true));
        assert_eq!(failures.panic("Tuple/default/t"), (2, 2, false));
        assert_eq!(failures.success("Tuple/default/t"), 2);
        assert_eq!(failures.panic("Tuple/default/t"), (1, 1, true));
    }
}
