//! A parent that waits for its children: when it is planned again ([`Replans`], with what its
//! last plan cost, measured by a [`PlanClock`]) and how its children come along ([`Pace`],
//! kept by the [`PaceKeeper`]), from which `reconcile/status.rs` judges whether a progress
//! report is worth a status write. One question, two answers: when a waiting parent's next
//! plan, and its next status write, are due.
//!
//! # Planned again
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
//!
//! # Its children's pace
//!
//! When a child of each kind last settled, which kinds' caches are relisting, and when each
//! parent last reported its progress: measured here, in a [`Pace`]; judged in
//! `reconcile/status.rs` (whether a progress report is worth a write).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;

use crate::cluster::expiring::Expiring;
use crate::cluster::outage::Outage;
use crate::kind::Child;
use crate::metrics::Metrics;
use crate::reconcile::memory::memory_key;

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
    pub fn waiting(&self, key: &str, generation: Option<i64>, cost: Duration) {
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

/// A parent rewrites a progress report (its ready/desired counts while waiting) at most this
/// often (the pace keeper remembers the reports written that long; `reconcile/status.rs`
/// says when one is due).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How long ago `created` was, zero for timestamps in the future or missing.
pub fn age(created: Option<&Time>, now: Timestamp) -> Duration {
    created
        .and_then(|t| Duration::try_from(now.duration_since(t.0)).ok())
        .unwrap_or_default()
}

/// How a waiting parent's children are coming along: what the status decision
/// needs to tell a progress report worth a write from one that is not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    /// Since the object was created.
    pub age: Duration,
    /// Since a child of this kind last settled anywhere (or the manager started, or the API
    /// server came back).
    pub children_quiet: Duration,
    /// Since this manager last wrote a waiting status for this object (`None`: not recently).
    pub since_report: Option<Duration>,
    /// Ready children now, and as the status shows them.
    pub ready: usize,
    pub shown: usize,
    /// How many children the parent wants.
    pub desired: usize,
}

/// How long a kind's children have been quiet at `now`: since one last `settled`, or the
/// API server came `back` from an outage (nothing could settle while it was away), whichever
/// is later; never while the kind is `relisting` (its cache is catching up, and a parent
/// waiting for such children cannot tell a stall).
fn children_quiet(
    settled: Instant,
    back: Option<Instant>,
    relisting: bool,
    now: Instant,
) -> Duration {
    if relisting {
        return Duration::ZERO;
    }
    let last = back.map_or(settled, |back| back.max(settled));
    now.saturating_duration_since(last)
}

/// The manager's memory of its children's progress, for the [`Pace`] of a waiting parent.
pub struct PaceKeeper {
    /// Waiting statuses written in the last [`PROGRESS_EVERY`], by object.
    reports: Expiring<()>,
    /// When an object of each kind last settled (its status final), or its watch last
    /// relisted or failed: the progress its parents wait for, or the moment the cache was
    /// last disturbed. Starts at the manager's start.
    settled: Mutex<HashMap<Cow<'static, str>, Instant>>,
    /// The kinds whose watch is relisting.
    relisting: Mutex<HashSet<Cow<'static, str>>>,
    started: Instant,
    /// The API server outage, whose end counts as the start of the children's quiet.
    outage: Arc<Outage>,
}

impl PaceKeeper {
    pub fn new(metrics: Metrics, outage: Arc<Outage>) -> PaceKeeper {
        PaceKeeper {
            reports: Expiring::new("progress_reports", metrics, PROGRESS_EVERY),
            settled: Mutex::default(),
            relisting: Mutex::default(),
            started: Instant::now(),
            outage,
        }
    }

    /// An object of this kind settled: its parents' children are making progress.
    pub(crate) fn settled(&self, kind: Cow<'static, str>) {
        if let Ok(mut settled) = self.settled.lock() {
            settled.insert(kind, Instant::now());
        }
    }

    /// A watch of `kind` begins a (re)list: until it is done, the cache of that kind is
    /// catching up, and its children's quiet is no stall.
    pub(crate) fn relist_started(&self, kind: Cow<'static, str>) {
        if let Ok(mut relisting) = self.relisting.lock() {
            relisting.insert(kind);
        }
    }

    /// A (re)list of `kind` is in the cache: the quiet of the kind's children counts from now.
    pub(crate) fn relist_done(&self, kind: Cow<'static, str>) {
        if let Ok(mut relisting) = self.relisting.lock() {
            relisting.remove(&kind);
        }
        self.settled(kind);
    }

    /// A watch of `kind` failed: until it is back, its events are late, so the quiet of its
    /// children counts from now.
    pub(crate) fn watch_failed(&self, kind: Cow<'static, str>) {
        self.settled(kind);
    }

    /// A waiting status (not the answer) was written for `parent`: its last progress report.
    pub(crate) fn reported<P: Resource<DynamicType = ()>>(&self, parent: &P) {
        self.reports.insert(memory_key(parent), ());
    }

    /// How a waiting parent's children of kind `C` are coming along (judged in
    /// `reconcile/status.rs`): `ready` of `desired` now, `shown` in its status.
    pub fn measure<P: Resource<DynamicType = ()>, C: Child>(
        &self,
        parent: &P,
        ready: usize,
        shown: usize,
        desired: usize,
        now: Timestamp,
    ) -> Pace {
        let settled = (self.settled.lock().ok())
            .and_then(|s| s.get(C::KIND).copied())
            .unwrap_or(self.started);
        let relisting = self.relisting.lock().is_ok_and(|r| r.contains(C::KIND));
        let since_report = (self.reports.get(&memory_key(parent)))
            .map(|(_, left)| self.reports.ttl().saturating_sub(left));
        let back = self.outage.back_since();
        Pace {
            age: age(parent.meta().creation_timestamp.as_ref(), now),
            children_quiet: children_quiet(settled, back, relisting, Instant::now()),
            since_report,
            ready,
            shown,
            desired,
        }
    }

    /// Forget what outlived its time to live.
    pub fn expire(&self) {
        self.reports.expire();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Number, Tuple, TupleSpec};

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

    const SECOND: Duration = Duration::from_secs(1);

    /// Quiet counts from the later of the last settled child and the end of an outage, and
    /// is no quiet at all while the kind relists.
    #[test]
    fn children_are_quiet_since_the_last_settled_or_the_servers_return() {
        let t0 = Instant::now();
        let now = t0 + 10 * SECOND;
        assert_eq!(children_quiet(t0, None, false, now), 10 * SECOND);
        assert_eq!(
            children_quiet(t0, Some(t0 + 7 * SECOND), false, now),
            3 * SECOND
        );
        let before = t0.checked_sub(SECOND).unwrap_or(t0);
        assert_eq!(children_quiet(t0, Some(before), false, now), 10 * SECOND);
        assert_eq!(children_quiet(t0, None, true, now), Duration::ZERO);
        assert_eq!(children_quiet(now, None, false, t0), Duration::ZERO);
    }

    fn keeper() -> PaceKeeper {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let client = kube::Client::try_from(config).expect("a client; no request is made");
        PaceKeeper::new(Metrics::new(), Outage::new(client))
    }

    fn tuple() -> Tuple {
        let mut t = Tuple::new(
            "t",
            TupleSpec {
                numbers: vec![1, 2],
            },
        );
        t.meta_mut().namespace = Some("default".into());
        t
    }

    /// A parent that wrote a waiting status has a last report, for [`PROGRESS_EVERY`]; one
    /// that did not has none; the counts are the parent's.
    #[tokio::test] // a client's buffer needs a runtime; no request is made
    async fn a_pace_tells_when_its_parent_last_reported() {
        let keeper = keeper();
        let now = Timestamp::now();
        let pace = |parent: &Tuple| keeper.measure::<Tuple, Number>(parent, 1, 0, 2, now);
        let mut other = tuple();
        other.meta_mut().name = Some("other".into());
        assert_eq!(pace(&tuple()).since_report, None);
        keeper.reported(&tuple());
        let measured = pace(&tuple());
        assert!(measured.since_report.is_some_and(|s| s <= PROGRESS_EVERY));
        assert_eq!(
            (measured.ready, measured.shown, measured.desired),
            (1, 0, 2)
        );
        assert_eq!(pace(&other).since_report, None);
    }
}
