//! A parent that waits for its children: how its children come along ([`Pace`], kept by the
//! [`PaceKeeper`]), from which `reconcile/status.rs` judges whether a progress report is worth
//! a status write. When it is planned again is the replan throttle's (`replans.rs`).
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
