//! A parent that waits for its children: when it is planned again ([`Replans`], with what its
//! last plan cost, measured by a [`PlanClock`]).
//!
//! Every child that settles triggers its parent, and a parent's plan looks at every one of
//! its children: a Fermat 10000 has 5000 Tuples, each of which triggers it once or twice while
//! the tree is built. kube-runtime runs a triggered object again as soon as its reconcile
//! ends, so the Fermat was planned back to back for the whole build (1362 plans of 5000
//! children in 62 s on the real control plane; two thirds of the manager's CPU, `perf`), CPU
//! taken from the API server on the same machine. A parent whose last reconcile ended waiting
//! for its children is therefore planned again no sooner than ten times what that plan cost
//! (the decision's CPU, not the writes it waited for): its replanning takes at most a tenth
//! of a core, and a small parent (a Tuple plans in microseconds) is not held at all. A change
//! of its own spec (a new generation) is planned at once, and so is everything after an
//! answer. `math_controller_replans_put_off_total` counts the triggers put off.

use std::time::{Duration, Instant};

use crate::cluster::expiring::Expiring;
use crate::metrics::Metrics;

/// A waiting parent is planned again after this many times its last plan's cost...
const FACTOR: u32 = 10;
/// ...but never held longer than this: what a deleted child waits, at most, during a build.
const LONGEST: Duration = Duration::from_secs(1);
/// A shorter wait is not worth a requeue.
const SHORTEST: Duration = Duration::from_millis(1);
/// A plan cheaper than this is never held: replanning it back to back costs nothing worth
/// saving (a Tuple plans in tens of microseconds, a few hundred in a debug build on a busy
/// machine), and holding it only holds its answer back.
const CHEAP: Duration = Duration::from_millis(1);

/// The last plan of a parent that ended waiting for its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastPlan {
    pub generation: Option<i64>,
    pub at: Instant,
    pub cost: Duration,
}

/// How long a trigger of a parent at `generation` should wait before it is planned again
/// (`None`: plan now).
pub fn wait_before_replan(
    last: Option<&LastPlan>,
    generation: Option<i64>,
    now: Instant,
) -> Option<Duration> {
    let last = last.filter(|l| l.generation == generation && l.cost >= CHEAP)?;
    let due = last.at + last.cost.saturating_mul(FACTOR).min(LONGEST);
    due.checked_duration_since(now).filter(|d| *d >= SHORTEST)
}

/// Measures what a plan cost: the CPU its thread spent on it, not the wall clock. A thread
/// preempted in the middle of a Tuple's plan (two cores, a busy machine) would otherwise
/// count the other threads' time as the plan's, and hold the Tuple for ten times that.
/// The plan is synchronous, so it runs on one thread from start to end.
pub struct PlanClock {
    started: Duration,
}

impl PlanClock {
    pub fn start() -> PlanClock {
        PlanClock {
            started: Self::now(),
        }
    }

    /// The CPU spent since [`PlanClock::start`].
    pub fn elapsed(&self) -> Duration {
        Self::now().saturating_sub(self.started)
    }

    /// The calling thread's CPU time; the wall clock where the system cannot tell it.
    fn now() -> Duration {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes the timespec it is given.
        let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        match (read, u64::try_from(t.tv_sec), u32::try_from(t.tv_nsec)) {
            (0, Ok(secs), Ok(nanos)) => Duration::new(secs, nanos),
            _ => {
                static WALL: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                WALL.get_or_init(Instant::now).elapsed()
            }
        }
    }
}

/// The last plans of the parents that wait, by object key.
pub struct Replans {
    last: Expiring<LastPlan>,
}

impl Replans {
    pub fn new(metrics: Metrics) -> Replans {
        Replans {
            last: Expiring::new("waiting_plans", metrics, LONGEST),
        }
    }

    /// How long a trigger of `key` at `generation` should wait; see [`wait_before_replan`].
    pub fn wait(&self, key: &str, generation: Option<i64>) -> Option<Duration> {
        let last = self.last.get(key).map(|(last, _)| last);
        wait_before_replan(last.as_ref(), generation, Instant::now())
    }

    /// A reconcile of `key` ended waiting for its children; its decision took `cost` (the
    /// plan and the status, not the writes: a Tuple that just created its Numbers waited
    /// 0.2 s for the API server, and holding it for ten times that held its answer back).
    ///
    /// A cheap plan is never held ([`wait_before_replan`]), so it is not remembered either
    /// (it forgets the parent's earlier plan): while a Fermat 10000 is built its 5000 Tuples
    /// each wait for their Numbers, and a memory of each was 0.7 MB for nothing.
    pub fn waiting(&self, key: &str, generation: Option<i64>, cost: Duration) {
        if cost < CHEAP {
            self.last.remove(key);
            return;
        }
        self.last.insert(
            key.to_string(),
            LastPlan {
                generation,
                at: Instant::now(),
                cost,
            },
        );
    }

    /// A reconcile of `key` ended with an answer, blocked, or failed: its next trigger plans
    /// at once.
    pub fn answered(&self, key: &str) {
        self.last.remove(key);
    }

    /// Forget what outlived its time to live.
    pub fn expire(&self) {
        self.last.expire();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_costs_its_cpu_not_the_time_its_thread_was_away() {
        let clock = PlanClock::start();
        // Off the CPU, as a preempted thread is.
        std::thread::sleep(Duration::from_millis(50));
        let cost = clock.elapsed();
        assert!(cost < Duration::from_millis(10), "{cost:?}");
        // On the CPU: counted.
        let clock = PlanClock::start();
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(20) {
            std::hint::black_box(spin.elapsed());
        }
        assert!(clock.elapsed() >= Duration::from_millis(1));
    }

    #[test]
    fn a_waiting_parent_is_planned_again_after_ten_times_its_cost() {
        let now = Instant::now();
        let ms = Duration::from_millis;
        let last = LastPlan {
            generation: Some(1),
            at: now,
            cost: ms(40),
        };
        assert_eq!(wait_before_replan(Some(&last), Some(1), now), Some(ms(400)));
        assert_eq!(
            wait_before_replan(Some(&last), Some(1), now + ms(150)),
            Some(ms(250))
        );
        assert_eq!(
            wait_before_replan(Some(&last), Some(1), now + ms(400)),
            None
        );
        // Its own spec changed: at once.
        assert_eq!(wait_before_replan(Some(&last), Some(2), now), None);
        // Nothing remembered (it answered, or is new): at once.
        assert_eq!(wait_before_replan(None, Some(1), now), None);
        // An expensive plan still waits at most a second.
        let slow = LastPlan {
            cost: Duration::from_secs(3),
            ..last
        };
        assert_eq!(wait_before_replan(Some(&slow), Some(1), now), Some(LONGEST));
        // A Tuple's plan costs microseconds: no wait.
        let tuple = LastPlan {
            cost: Duration::from_micros(20),
            ..last
        };
        assert_eq!(wait_before_replan(Some(&tuple), Some(1), now), None);
        // Nor when a debug build on a busy machine took ten times as long.
        let busy_tuple = LastPlan {
            cost: Duration::from_micros(200),
            ..last
        };
        assert_eq!(wait_before_replan(Some(&busy_tuple), Some(1), now), None);
    }

    /// A cheap plan leaves nothing behind (it forgets an earlier, costly one), so that
    /// thousands of waiting Tuples cost no memory; a costly one is remembered and holds.
    #[test]
    fn only_a_costly_plan_is_remembered() {
        let replans = Replans::new(Metrics::new());
        replans.waiting("Tuple/ns/t", Some(1), Duration::from_micros(20));
        assert_eq!(replans.last.len(), 0, "a Tuple's plan kept");
        replans.waiting("Fermat/ns/f", Some(1), Duration::from_millis(40));
        assert!(replans.wait("Fermat/ns/f", Some(1)).is_some());
        replans.waiting("Fermat/ns/f", Some(1), Duration::from_micros(20));
        assert_eq!(replans.wait("Fermat/ns/f", Some(1)), None);
        assert_eq!(replans.last.len(), 0);
    }
}
