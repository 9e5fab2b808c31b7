//! The one exponential backoff every retry in the manager uses: the error policy's per-object
//! retries and its quieter 409s (`retry_policy.rs`), a refused write's retries (`refusals.rs`), the
//! pause before a list after repeated 410s (`watches.rs`), the fast retries while the API
//! server is away (`outage.rs`), and the random numbers their jitter and leader election's
//! draw from. One type instead of five hand-written doublings: each place states only its
//! first delay, its cap and whether it is jittered.
//!
//! A delay is a pure function of the attempt (and of a random number for jitter), so each
//! caller keeps its own count where it already has one (per object, per step, per watch).

use std::time::Duration;

/// Doubling from `first` up to `max`; with jitter, each delay is drawn in its upper half, so
/// that a thousand reconciles waiting for the same thing do not all knock at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exponential {
    first: Duration,
    max: Duration,
    jitter: bool,
}

impl Exponential {
    /// `first`, `2 × first`, `4 × first`, ... never more than `max`.
    pub const fn new(first: Duration, max: Duration) -> Exponential {
        Exponential {
            first,
            max,
            jitter: false,
        }
    }

    /// The same, each delay drawn at random between its half and itself.
    pub const fn jittered(self) -> Exponential {
        Exponential {
            jitter: true,
            ..self
        }
    }

    /// The delay after `retries` earlier retries (0: the first delay), for a random number
    /// `random` (used only when jittered; [`random`] gives one).
    pub fn delay(&self, retries: u32, random: u64) -> Duration {
        let full = self
            .first
            .saturating_mul(2u32.saturating_pow(retries.min(31)))
            .min(self.max);
        if !self.jitter {
            return full;
        }
        let half = full / 2;
        half + half.mul_f64((random % 1000) as f64 / 1000.0)
    }

    /// The delay before the `attempt`-th retry, counted from 1 (0 counts as 1).
    pub fn nth(&self, attempt: u32, random: u64) -> Duration {
        self.delay(attempt.saturating_sub(1), random)
    }
}

/// A random number from the standard library's per-process hash keys (seeded from the OS):
/// plenty for jitter and identity suffixes, without a dependency on `rand`.
pub fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn delays_double_from_the_first_up_to_the_cap() {
        let backoff = Exponential::new(MS * 100, MS * 1000);
        let delays: Vec<_> = (0..6).map(|n| backoff.delay(n, 0)).collect();
        assert_eq!(
            delays,
            [MS * 100, MS * 200, MS * 400, MS * 800, MS * 1000, MS * 1000]
        );
        assert_eq!(backoff.delay(u32::MAX, 0), MS * 1000);
        assert_eq!(backoff.nth(1, 0), MS * 100);
        assert_eq!(backoff.nth(0, 0), MS * 100);
        assert_eq!(backoff.nth(3, 0), MS * 400);
    }

    #[test]
    fn jittered_delays_stay_in_their_upper_half() {
        let backoff = Exponential::new(MS * 100, MS * 1000).jittered();
        assert_eq!(backoff.delay(0, 0), MS * 50);
        for n in 0..12 {
            let full = Exponential::new(MS * 100, MS * 1000).delay(n, 0);
            for _ in 0..100 {
                let d = backoff.delay(n, random());
                assert!(d >= full / 2 && d < full, "{d:?} for {full:?}");
            }
        }
    }
}
