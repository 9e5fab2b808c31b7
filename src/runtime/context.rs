//! What every reconcile shares: the client, the three caches, the Event recorder, the
//! metrics, and the manager's memory of writes the caches do not show yet (what
//! controller-runtime users know as "expectations").

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::api::{Fermat, Number, Tuple};
use crate::kind::{Child, Desired, controller_uid};
use crate::metrics::Metrics;
use crate::runtime::cache::Cache;
use crate::runtime::events::{Publisher, Reporter};
use crate::runtime::expiring::{Expiring, key, object_key};
use crate::runtime::outage::Outage;
use crate::runtime::refusals::Refusals;
use crate::runtime::replan::Replans;
use crate::runtime::slots::Slots;

/// A parent rewrites a progress report (its ready/desired counts while waiting) at most this
/// often (the context remembers the reports written that long; `reconcile/status.rs` says
/// when one is due).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How long ago `created` was, zero for timestamps in the future or missing.
pub fn age(created: Option<&Time>, now: Timestamp) -> Duration {
    created
        .and_then(|t| Duration::try_from(now.duration_since(t.0)).ok())
        .unwrap_or_default()
}

/// How a waiting parent's children are coming along: what the status decision
/// needs to tell a progress report worth a write from one that is not. Measured here, where
/// the manager's memory of children settling and statuses written is; judged in
/// `reconcile/status.rs`.
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

/// The name Events are reported under (`kubectl describe` shows it as "From").
pub const REPORTER: &str = "math-controller";

/// What every reconcile gets: the client, the caches, the Event recorder and the metrics.
pub struct Context {
    pub client: Client,
    /// Each kind's reflector store, and its objects by the UID of their controller (kept by
    /// the watches). A parent's reconcile is handed the cache of its child kind by type.
    pub numbers: Cache<Number>,
    pub tuples: Cache<Tuple>,
    pub fermats: Cache<Fermat>,
    /// Events about what the reconciles did.
    pub events: Publisher,
    pub metrics: Metrics,
    /// Writes the API server refused, and when to try them again.
    pub refusals: Refusals,
    /// When parents that wait for their children may be planned again.
    pub replans: Replans,
    /// The API server outage in progress, if any (shared with the watches).
    pub outage: Arc<Outage>,
    /// Consecutive failures per object, for the error policy's exponential backoff.
    failures: Expiring<u32>,
    /// Children written to whose change the cache has not shown yet (see
    /// [`Context::expect_change`]).
    in_flight: Expiring<Expected>,
    /// Statuses written whose echo the cache has not shown yet (see
    /// [`Context::status_written`]).
    statuses: Expiring<WrittenStatus>,
    /// Waiting statuses written in the last [`PROGRESS_EVERY`], by object.
    reports: Expiring<()>,
    /// When an object of each kind last settled (its status final), or its watch last
    /// relisted or failed: the progress its parents wait for, or the moment the cache was
    /// last disturbed. Starts at the manager's start.
    settled: Mutex<HashMap<Cow<'static, str>, Instant>>,
    /// The kinds whose watch is relisting: their cache is catching up, and a parent waiting
    /// for such children cannot tell a stall.
    relisting: Mutex<HashSet<Cow<'static, str>>>,
    started: Instant,
    /// Slots for the requests the reconciles have open at once (see [`Context::in_slot`]).
    requests: Slots,
}

/// A write to a child whose echo the watch has not delivered yet.
#[derive(Clone, Debug)]
struct Expected {
    /// The child's resourceVersion in the cache when we wrote (`None`: it was absent).
    seen: Option<String>,
    /// The API server answered the write: a list made after now shows its effect.
    answered: bool,
}

/// A status write that the watch has not delivered yet.
#[derive(Clone)]
struct WrittenStatus {
    /// The object's resourceVersion in the cache when we wrote.
    seen: String,
    status: serde_json::Value,
}

/// What the cache holds of a parent's children.
pub struct CachedChildren<C> {
    /// The objects of the desired names, in the parent's namespace, whoever controls them.
    pub found: HashMap<String, Arc<C>>,
    /// The objects the parent controls (by UID), in its namespace.
    pub owned: Vec<Arc<C>>,
    /// The names whose last write the cache does not show yet.
    pub in_flight: HashSet<String>,
    /// When the first of those writes times out: the parent must look again by then even if
    /// no watch event comes (a child created and deleted before its echo leaves the cache
    /// exactly as remembered, and nothing else would wake the parent).
    pub recheck_in: Option<Duration>,
}

/// How long a failure is remembered for the backoff after the last one: twice the longest
/// backoff, so an object that keeps failing keeps its count.
const FAILURE_MEMORY: Duration = Duration::from_secs(600);

/// How long a write may go unseen before the cache is believed again regardless: a safety
/// net for a lost watch event (kube-controller-manager's ExpectationsTimeout is the same 5
/// minutes). The watch normally delivers within milliseconds, but a manager starved of CPU
/// can fall tens of seconds behind its watches, and a shorter timeout then creates every
/// child a second time (18406 refused creates for a Fermat 10000 with 30 s, under valgrind).
pub const IN_FLIGHT_TIMEOUT: Duration = Duration::from_secs(300);

impl Context {
    /// A context over the three caches, with its own Event recorder.
    pub fn new(
        client: Client,
        caches: (Store<Number>, Store<Tuple>, Store<Fermat>),
        metrics: Metrics,
    ) -> Self {
        let (numbers, tuples, fermats) = caches;
        let reporter = Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Context {
            events: Publisher::new(client.clone(), reporter, metrics.clone()),
            refusals: Refusals::new(metrics.clone()),
            replans: Replans::new(metrics.clone()),
            outage: Outage::new(client.clone()),
            client,
            numbers: Cache::new(numbers),
            tuples: Cache::new(tuples),
            fermats: Cache::new(fermats),
            failures: Expiring::new("failures", metrics.clone(), FAILURE_MEMORY),
            in_flight: Expiring::new("child_writes", metrics.clone(), IN_FLIGHT_TIMEOUT),
            statuses: Expiring::new("status_writes", metrics.clone(), IN_FLIGHT_TIMEOUT),
            reports: Expiring::new("progress_reports", metrics.clone(), PROGRESS_EVERY),
            settled: Mutex::default(),
            relisting: Mutex::default(),
            started: Instant::now(),
            requests: Slots::new(0),
            metrics,
        }
    }

    /// The same context with another in-flight timeout (tests shorten it).
    pub fn with_in_flight_timeout(mut self, timeout: Duration) -> Self {
        self.in_flight = Expiring::new("child_writes", self.metrics.clone(), timeout);
        self.statuses = Expiring::new("status_writes", self.metrics.clone(), timeout);
        self
    }

    /// At most `limit` write and Event requests open at once (0: no limit).
    pub fn with_requests_in_flight(mut self, limit: u16) -> Self {
        self.requests = Slots::observed(limit.into(), &self.metrics);
        self
    }

    /// `request` (a write or an Event), sent in one of the slots and holding it until its
    /// answer is read; waits while every slot is taken. kube-rs speaks HTTP/1.1, so each
    /// request open at once is a TLS connection of its own (client-go multiplexes its
    /// requests over one HTTP/2 connection): without a bound, 64 reconciles and their create
    /// fan-out opened 176 connections for a Fermat 1000 on a real kube-apiserver (v1.24), a
    /// handshake each on both sides, and could pass kube-apiserver's
    /// `--max-mutating-requests-inflight` (200) on their own. Watches, the lease and the
    /// liveness checks of an outage take no slot. (The slots are never closed; if they were,
    /// the request would go without one.)
    /// A request the client waits to send again (a 429) lends its slot for the wait
    /// ([`crate::runtime::slots`]).
    pub async fn in_slot<T>(&self, request: impl Future<Output = T>) -> T {
        self.requests.run(request).await
    }

    /// Whether every cache holds its first complete list. Awaited once, before the
    /// controllers start (see `run_controllers`), never from reconciles.
    pub(crate) async fn caches_ready(&self) {
        let _ = self.numbers.store.wait_until_ready().await;
        let _ = self.tuples.store.wait_until_ready().await;
        let _ = self.fermats.store.wait_until_ready().await;
    }

    /// Remember that we just wrote to a child that the cache showed at `seen` (its
    /// resourceVersion, `None` when absent). Until the cache moves past that, a reconcile
    /// that runs before the watch event arrives would see the old state and write again
    /// (a duplicate create answered 409, a second correction): it waits instead. This is
    /// what controller-runtime users know as "expectations".
    pub fn expect_change<C: Child>(&self, namespace: &str, name: &str, seen: Option<String>) {
        let expected = Expected {
            seen,
            answered: false,
        };
        self.in_flight
            .insert(key(C::KIND, namespace, name), expected);
    }

    /// The API server answered a write to this child (expected with
    /// [`Context::expect_change`]): from now on a relist of the child's kind shows its effect.
    pub fn change_sent<C: Child>(&self, namespace: &str, name: &str) {
        let key = key(C::KIND, namespace, name);
        if let Some((mut expected, _)) = self.in_flight.get(&key) {
            expected.answered = true;
            self.in_flight.insert(key, expected);
        }
    }

    /// A write to this child did not happen (the request failed): nothing to wait for.
    pub fn forget_change<C: Child>(&self, namespace: &str, name: &str) {
        self.in_flight.remove(&key(C::KIND, namespace, name));
    }

    /// The watch delivered an event for `obj`: a write to it that we remembered has reached
    /// the cache, or was overtaken by a later change or a deletion that has. Clearing on the
    /// event, as controller-runtime's expectations do, also covers a child created and
    /// deleted before its parent looked again: the cache then shows exactly what was
    /// remembered (nothing), but both events went by.
    pub fn saw_event<K: Resource<DynamicType = ()>>(&self, obj: &K) {
        let key = object_key(obj);
        if let Some((expected, _)) = self.in_flight.get(&key)
            && expected.seen != obj.resource_version()
        {
            self.in_flight.remove(&key);
        }
    }

    /// A watch of `kind` begins a (re)list: until it is done, the cache of that kind is
    /// catching up, and its children's quiet is no stall.
    pub(crate) fn relist_started(&self, kind: Cow<'static, str>) {
        if let Ok(mut relisting) = self.relisting.lock() {
            relisting.insert(kind);
        }
    }

    /// A watch of `kind` failed: until it is back, its events are late, so the quiet of its
    /// children counts from now.
    pub(crate) fn watch_failed(&self, kind: Cow<'static, str>) {
        self.note_settled(kind);
    }

    /// A (re)list of `kind` is in the cache: it is the truth about every write the API server
    /// had answered before it, including those whose watch events the relist skipped (a child
    /// created, then deleted while the watch was down, leaves no event at all). Those
    /// expectations are met; the quiet of the kind's children counts from now.
    pub(crate) fn relist_done(&self, kind: Cow<'static, str>) {
        let prefix = format!("{kind}/");
        self.in_flight
            .retain(|key, expected| !(key.starts_with(&prefix) && expected.answered));
        if let Ok(mut relisting) = self.relisting.lock() {
            relisting.remove(&kind);
        }
        self.note_settled(kind);
    }

    /// One child as the parent sees it: its cached object, and how much longer a write to it
    /// may still be on its way to the cache (`None`: it is not, or no longer; forgotten once
    /// seen or timed out).
    ///
    /// The expectation is read before the cache, never after: the watch puts an object in the
    /// cache first and clears its expectation second, so this order sees at least one of the
    /// two. The other order could read the cache just before the child arrived and the
    /// expectation just after it was cleared, see neither, and create the child again (the
    /// API server answers 409: 1001 Number creates for a Fermat 1000, once in CI).
    fn look<C: Child>(
        &self,
        store: &Store<C>,
        namespace: &str,
        name: &str,
    ) -> (Option<Arc<C>>, Option<Duration>) {
        let key = key(C::KIND, namespace, name);
        let expected = self.in_flight.get(&key);
        let cached = store.get(&ObjectRef::new(name).within(namespace));
        let Some((expected, left)) = expected else {
            return (cached, None);
        };
        if expected.seen == cached.as_ref().and_then(|c| c.resource_version()) {
            return (cached, Some(left));
        }
        self.in_flight.remove(&key);
        (cached, None)
    }

    /// From the cache, the objects of the desired names in the parent's namespace, the
    /// objects there whose controller is the parent (by UID), and the names of those whose
    /// last write has not reached the cache yet. No API request.
    pub fn children<P: Resource, C: Child>(
        &self,
        cache: &Cache<C>,
        parent: &P,
        desired: &[Desired<C::Spec>],
    ) -> CachedChildren<C> {
        let store = &cache.store;
        let ns = parent.meta().namespace.as_deref().unwrap_or_default();
        let mut found = HashMap::new();
        let mut in_flight = HashSet::new();
        let mut recheck_in: Option<Duration> = None;
        let mut note = |name: &str, left: Option<Duration>| {
            if let Some(left) = left {
                in_flight.insert(name.to_string());
                recheck_in = Some(recheck_in.map_or(left, |r| r.min(left)));
            }
        };
        for d in desired {
            let (cached, left) = self.look(store, ns, &d.name);
            note(&d.name, left);
            if let Some(cached) = cached {
                found.insert(d.name.clone(), cached);
            }
        }
        // The children it no longer wants (to be deleted) are looked at the same way; one the
        // cache no longer shows as the parent's leaves the list.
        let uid = parent.meta().uid.as_deref();
        let mut owned = Vec::new();
        for child in uid.map_or_else(Vec::new, |uid| cache.owned(uid, ns)) {
            let name = child.name_any();
            if found.contains_key(&name) {
                owned.push(child);
                continue;
            }
            let (cached, left) = self.look(store, ns, &name);
            note(&name, left);
            owned.extend(cached.filter(|c| controller_uid(c.as_ref()) == uid));
        }
        CachedChildren {
            found,
            owned,
            in_flight,
            recheck_in,
        }
    }

    /// The object's status as far as we know: the one we wrote last, while the cache still
    /// shows the object as it was before that write; else the cached one (`cached`).
    ///
    /// A reconcile that runs between a status write and its echo (a second child reported
    /// meanwhile) builds on what we wrote, not on the stale cache: the `Ready` condition keeps
    /// the `lastTransitionTime` we wrote, and the same status is not written twice.
    pub fn known_status<P, S>(&self, obj: &P, cached: Option<&S>) -> Option<S>
    where
        P: Resource<DynamicType = ()>,
        S: Clone + DeserializeOwned,
    {
        let key = object_key(obj);
        self.written_status(&key, obj.resource_version().as_deref())
            .and_then(|written| serde_json::from_value(written).ok())
            .or_else(|| cached.cloned())
    }

    /// An object of this kind settled: its parents' children are making progress.
    pub(crate) fn note_settled(&self, kind: Cow<'static, str>) {
        if let Ok(mut settled) = self.settled.lock() {
            settled.insert(kind, Instant::now());
        }
    }

    /// How a waiting parent's children of kind `C` are coming along (judged in `reconcile/status.rs`).
    /// Time the API server was unreachable does not count as the children's quiet: nothing
    /// could settle then.
    pub fn pace<P: Resource<DynamicType = ()>, C: Child>(
        &self,
        parent: &P,
        ready: usize,
        shown: usize,
        desired: usize,
        now: Timestamp,
    ) -> Pace {
        let last = self
            .settled
            .lock()
            .ok()
            .and_then(|s| s.get(C::KIND).copied())
            .unwrap_or(self.started);
        let last = self.outage.back_since().map_or(last, |back| back.max(last));
        let relisting = self.relisting.lock().is_ok_and(|r| r.contains(C::KIND));
        let since_report = self
            .reports
            .get(&object_key(parent))
            .map(|(_, left)| self.reports.ttl().saturating_sub(left));
        Pace {
            age: age(parent.meta().creation_timestamp.as_ref(), now),
            children_quiet: if relisting {
                Duration::ZERO
            } else {
                last.elapsed()
            },
            since_report,
            ready,
            shown,
            desired,
        }
    }

    /// A status was written (see [`crate::reconcile::writes::write_status`]): remembered until
    /// the cache shows the object past the resourceVersion it had when we wrote; and, for a
    /// status that is not the answer (`waiting`), when this object last reported its progress
    /// (see [`Context::pace`]).
    pub(crate) fn status_written<P: Resource<DynamicType = ()>>(
        &self,
        obj: &P,
        status: serde_json::Value,
        waiting: bool,
    ) {
        let key = object_key(obj);
        if waiting {
            self.reports.insert(key.clone(), ());
        }
        if let Some(seen) = obj.resource_version() {
            self.statuses.insert(key, WrittenStatus { seen, status });
        }
    }

    /// The status we last wrote for `key`, while the cache still shows the object as it was
    /// before that write (resourceVersion `cached`).
    fn written_status(&self, key: &str, cached: Option<&str>) -> Option<serde_json::Value> {
        let (written, _) = self.statuses.get(key)?;
        if Some(written.seen.as_str()) == cached {
            return Some(written.status);
        }
        self.statuses.remove(key);
        None
    }

    /// Forget what outlived its time to live; run periodically by the manager (every
    /// [`Context::sweep_period`]) so that entries of objects nobody looks up again (deleted
    /// children, deleted parents) do not pile up.
    pub(crate) fn sweep(&self) {
        self.in_flight.expire();
        self.statuses.expire();
        self.reports.expire();
        self.failures.expire();
        self.refusals.expire();
        self.events.expire();
        self.replans.expire();
    }

    /// How often [`Context::sweep`] should run.
    pub(crate) fn sweep_period(&self) -> Duration {
        self.in_flight.ttl().min(Duration::from_secs(30))
    }

    pub(crate) fn note_success(&self, key: &str) {
        self.failures.remove(key);
    }

    /// Count one more consecutive failure of `key`; answers the count.
    pub(crate) fn note_failure(&self, key: &str) -> u32 {
        self.failures.update(key, |count| {
            count.copied().unwrap_or_default().saturating_add(1)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::api::{NumberSpec, TupleSpec};

    fn context() -> (Context, reflector::store::Writer<Number>) {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let client = Client::try_from(config).expect("a client; no request is made");
        let (numbers, writer) = reflector::store();
        let (tuples, _) = reflector::store();
        let (fermats, _) = reflector::store();
        let ctx = Context::new(client, (numbers, tuples, fermats), Metrics::default());
        (ctx, writer)
    }

    fn desired(name: &str) -> Vec<Desired<NumberSpec>> {
        vec![Desired {
            name: name.to_string(),
            spec: NumberSpec { value: 1 },
        }]
    }

    /// A child we created is, whenever its parent looks, either in the cache or still
    /// awaited: never neither, or the parent creates it a second time (answered 409; seen in
    /// CI as 1001 Number creates for a Fermat 1000). The watch puts the child in the cache
    /// and then clears the expectation, on its own thread, while the parent looks on another:
    /// a look that read the cache before the child arrived and the expectation after it was
    /// cleared saw neither.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_created_child_is_cached_or_awaited_whenever_its_parent_looks() {
        let (ctx, mut writer) = context();
        let ctx = Arc::new(ctx);
        let mut parent = Tuple::new("t", TupleSpec { numbers: vec![1] });
        parent.meta_mut().namespace = Some("default".into());
        parent.meta_mut().uid = Some("uid-t".into());
        const CHILDREN: usize = 20_000;
        // One more than the child the watch is about to deliver (0: none expected yet; a
        // looker that starts before the first create has nothing to find).
        let current = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let looker = std::thread::spawn({
            let (ctx, current, done) = (ctx.clone(), current.clone(), done.clone());
            move || {
                let mut neither = Vec::new();
                while !done.load(Ordering::Acquire) {
                    let Some(i) = current.load(Ordering::Acquire).checked_sub(1) else {
                        continue;
                    };
                    let name = format!("n-{i}");
                    let seen = ctx.children(&ctx.numbers, &parent, &desired(&name));
                    if !seen.found.contains_key(&name) && !seen.in_flight.contains(&name) {
                        neither.push(name);
                    }
                }
                neither
            }
        });
        for i in 0..CHILDREN {
            let name = format!("n-{i}");
            ctx.expect_change::<Number>("default", &name, None);
            current.store(i + 1, Ordering::Release);
            let mut child = Number::new(&name, NumberSpec { value: 1 });
            child.meta_mut().namespace = Some("default".into());
            child.meta_mut().resource_version = Some(i.to_string());
            // What the watch does, in its order: the cache first, then the expectation.
            writer.apply_watcher_event(&watcher::Event::Apply(child.clone()));
            ctx.saw_event(&child);
        }
        done.store(true, Ordering::Release);
        let neither = looker.join().expect("the looker did not panic");
        assert!(
            neither.is_empty(),
            "{} looks saw a created child neither cached nor awaited, e.g. {:?}",
            neither.len(),
            neither.first()
        );
    }
}
