//! Each object's failures in a row, for the retry policy (`reconcile/retry_policy.rs`): what
//! its backoff grows with; a failure that lasts is told once and then at most every
//! [`RETELL`] (and so, apart, are its panics). A success starts the count again.

use std::time::{Duration, Instant};

use crate::cluster::expiring::Expiring;
use crate::metrics::Metrics;

/// How long a failure is remembered for the backoff after the last one: twice the longest
/// backoff, so an object that keeps failing keeps its count.
const FAILURE_MEMORY: Duration = Duration::from_secs(600);

/// A failure (or a panic) that keeps coming back is told again, with its count, at most this
/// often (what client-go's EventCorrelator does for a Warning that stays true).
pub(crate) const RETELL: Duration = Duration::from_secs(600);

/// An object's failures in a row: what the backoff grows with, and of them the panics; each
/// told once and then at most every [`RETELL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Streak {
    failures: u32,
    panics: u32,
    /// When its panic was last told.
    told: Option<Instant>,
    /// When its failure (other than a panic or a conflict) was last told.
    failure_told: Option<Instant>,
}

/// Whether something last told at `told` is to be told at `now`: the first time, or once
/// [`RETELL`] has passed.
fn due(told: Option<Instant>, now: Instant) -> bool {
    told.is_none_or(|told| now.saturating_duration_since(told) >= RETELL)
}

impl Streak {
    fn failed(self) -> Streak {
        Streak {
            failures: self.failures.saturating_add(1),
            ..self
        }
    }

    /// One more failure at `now` that is the object's own (not a conflict, not a panic), and
    /// whether it is to be told (the first, or the first after [`RETELL`]).
    fn failed_loudly(self, now: Instant) -> (Streak, bool) {
        let tell = due(self.failure_told, now);
        let streak = Streak {
            failure_told: if tell { Some(now) } else { self.failure_told },
            ..self.failed()
        };
        (streak, tell)
    }

    /// One more panic at `now`, and whether it is to be told (the first, or the first after
    /// [`RETELL`]).
    fn panicked(self, now: Instant) -> (Streak, bool) {
        let tell = due(self.told, now);
        let streak = Streak {
            failures: self.failures.saturating_add(1),
            panics: self.panics.saturating_add(1),
            told: if tell { Some(now) } else { self.told },
            ..self
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

    /// `key` reconciled: its next failure backs off from the start again. Answers what this
    /// ends, for the line that says it recovered.
    pub(crate) fn success(&self, key: &str) -> Ended {
        let Some((streak, _)) = self.streaks.get(key) else {
            return Ended::Nothing;
        };
        self.streaks.remove(key);
        match streak {
            Streak { panics: 1.., .. } => Ended::Panics(streak.panics),
            Streak {
                failure_told: Some(_),
                ..
            } => Ended::Failures(streak.failures),
            _ => Ended::Nothing,
        }
    }

    /// One more consecutive failure of `key` of its own (not a conflict, not a panic): the
    /// count, and whether to tell it now (the first of the streak, then at most every
    /// [`RETELL`]).
    pub(crate) fn failure_to_tell(&self, key: &str) -> (u32, bool) {
        let mut tell = false;
        let streak = self.streaks.update(key, |s| {
            let (streak, told) = s.copied().unwrap_or_default().failed_loudly(Instant::now());
            tell = told;
            streak
        });
        (streak.failures, tell)
    }

    /// One more consecutive failure of `key` that nobody is told of (a conflict); answers
    /// the count.
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

/// What a success ended: nothing told, panics in a row, or failures in a row that were told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    Nothing,
    Panics(u32),
    Failures(u32),
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
        let (third, told) = second.failed().panicked(start + RETELL);
        assert!(told);
        assert_eq!((third.failures, third.panics), (4, 3));
        let failures = Failures::new(Metrics::new());
        assert_eq!(failures.panic("Tuple/default/t"), (1, 1, true));
        assert_eq!(failures.panic("Tuple/default/t"), (2, 2, false));
        assert_eq!(failures.success("Tuple/default/t"), Ended::Panics(2));
        assert_eq!(failures.panic("Tuple/default/t"), (1, 1, true));
    }

    /// A failure that lasts is told once, then at most every ten minutes, its recovery said
    /// with the count; conflicts are counted for the backoff, never told.
    #[test]
    fn a_failure_is_told_once_then_at_most_every_ten_minutes() {
        let start = Instant::now();
        let (first, told) = Streak::default().failed_loudly(start);
        assert!(told);
        let (second, told) = first.failed_loudly(start + Duration::from_secs(60));
        assert!(!told);
        let (third, told) = second.failed_loudly(start + RETELL);
        assert!(told);
        assert_eq!(third.failures, 3);
        let failures = Failures::new(Metrics::new());
        assert_eq!(failures.failure_to_tell("Tuple/default/t"), (1, true));
        assert_eq!(failures.failure_to_tell("Tuple/default/t"), (2, false));
        assert_eq!(failures.success("Tuple/default/t"), Ended::Failures(2));
        assert_eq!(failures.failure("Tuple/default/c"), 1);
        assert_eq!(failures.success("Tuple/default/c"), Ended::Nothing);
    }
}
