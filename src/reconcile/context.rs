//! What every reconcile shares: the client, every kind's cache, the metrics, and the
//! manager's memories ([`super::memory`]), each a part of its own that the reconcile asks in
//! turn. `Context` only holds them (and the request slots) and sweeps them; what each
//! remembers, and why, is in its part's file under `memory/`, and a reconcile asks each part itself (no method
//! here forwards to one). It names no kind: a parent's reconcile finds the cache of its
//! children by type ([`Caches::of`]), and the wiring (`ops/manager.rs`) says which kinds
//! there are. It is also what the watches tell what they see ([`Witness`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;

use crate::cluster::cache::Caches;
use crate::cluster::outage::Outage;
use crate::cluster::undecodable::Undecoded;
use crate::cluster::watches::Witness;
use crate::kind::Kind;
use crate::metrics::Metrics;
use crate::reconcile::events::{self, Publisher, Reporter};
use crate::reconcile::memory::expectations::{Expectations, IN_FLIGHT_TIMEOUT, WrittenStatuses};
use crate::reconcile::memory::failures::Failures;
use crate::reconcile::memory::pace::PaceKeeper;
use crate::reconcile::memory::refusals::Refusals;
use crate::reconcile::memory::replans::Replans;
use crate::scheduler::request_slots::RequestSlots;

/// The name Events are reported under (`kubectl describe` shows it as "From").
pub const REPORTER: &str = "math-controller";

/// What every reconcile gets. The memories are listed in the order a parent's reconcile
/// asks them: whether its namespace is going away and which refused steps still wait
/// (`refusals`), which children are on their way (`expectations`), the request slots of its
/// writes (`requests`), the status as far as we know (`statuses`), how its
/// children come along (`pace`), the Events that tell of it (`events`); then the retry
/// policy around it asks `outage`, `replans` and `failures`.
pub struct Context {
    pub client: Client,
    /// Each kind's store, and its objects by the UID of their controller (kept by
    /// the watches), found by type ([`Caches::of`]; a kind that is not wired in is a bug of
    /// the wiring, said as an error of the reconcile that asked).
    pub caches: Caches,
    pub metrics: Metrics,
    /// Writes the API server refused, and when to try them again; parents in a namespace
    /// being deleted.
    pub refusals: Refusals,
    /// Children written to whose change the cache has not shown yet.
    pub expectations: Expectations,
    /// Statuses written whose echo the cache has not shown yet.
    pub statuses: WrittenStatuses,
    /// How each kind's children come along, for parents that wait for them.
    pub pace: PaceKeeper,
    /// Events about what the reconciles did.
    pub events: Publisher,
    /// The API server outage in progress, if any (shared with the watches).
    pub outage: Arc<Outage>,
    /// When parents that wait for their children may be planned again.
    pub replans: Replans,
    /// Consecutive failures per object, for the error policy's exponential backoff.
    pub failures: Failures,
    /// Slots for the write and Event requests the reconciles have open at once: each is sent
    /// with [`RequestSlots::run`], which holds a slot until its answer is read and waits while every
    /// slot is taken. kube-rs speaks HTTP/1.1, so each request open at once is a TLS
    /// connection of its own (client-go multiplexes its requests over one HTTP/2
    /// connection): without a bound, 64 reconciles and their create fan-out opened 176
    /// connections for a Fermat 1000 on a real kube-apiserver (v1.24), a handshake each on
    /// both sides, and could pass kube-apiserver's `--max-mutating-requests-inflight` (200) on
    /// their own. Watches, the lease and the liveness checks of an outage take no slot. A
    /// request the client waits to send again (a 429) lends its slot for the wait
    /// ([`crate::scheduler::request_slots`]).
    pub requests: RequestSlots,
}

impl Context {
    /// A context over `caches`, with its own Event recorder.
    pub fn new(client: Client, caches: Caches, metrics: Metrics) -> Self {
        let reporter = Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        let outage = Outage::new(client.clone());
        Context {
            events: Publisher::new(client.clone(), reporter, metrics.clone()),
            refusals: Refusals::new(metrics.clone()),
            replans: Replans::new(metrics.clone()),
            expectations: Expectations::new(metrics.clone(), IN_FLIGHT_TIMEOUT),
            statuses: WrittenStatuses::new(metrics.clone(), IN_FLIGHT_TIMEOUT),
            pace: PaceKeeper::new(metrics.clone(), outage.clone()),
            failures: Failures::new(metrics.clone()),
            outage,
            client,
            caches,
            requests: RequestSlots::new(0),
            metrics,
        }
    }

    /// The same context with another in-flight timeout (tests shorten it).
    pub fn with_in_flight_timeout(mut self, timeout: Duration) -> Self {
        self.expectations = Expectations::new(self.metrics.clone(), timeout);
        self.statuses = WrittenStatuses::new(self.metrics.clone(), timeout);
        self
    }

    /// At most `limit` write and Event requests open at once (0: no limit), each flow
    /// (namespace) holding at most its share of them while others write too if `shares`
    /// ([`crate::scheduler::permits::FairPermits::shared`]).
    pub fn with_requests_in_flight(mut self, limit: u16, shares: bool) -> Self {
        self.requests = RequestSlots::observed(limit.into(), shares, &self.metrics);
        self
    }

    /// Forget what outlived its time to live; run periodically by the manager (every
    /// [`Context::sweep_period`]) so that entries of objects nobody looks up again (deleted
    /// children, deleted parents) do not pile up.
    pub(crate) fn sweep(&self) {
        self.expectations.expire();
        self.statuses.expire();
        self.pace.expire();
        self.failures.expire();
        self.refusals.expire();
        self.events.expire();
        self.replans.expire();
    }

    /// How often [`Context::sweep`] should run.
    pub(crate) fn sweep_period(&self) -> Duration {
        self.expectations.timeout().min(Duration::from_secs(30))
    }
}

/// What the watches see, told to the memories that care: a child's write seen
/// (`expectations`), the manager's own status echo (`statuses`), relists and failed watches
/// (`expectations`, `pace`).
impl Witness for Context {
    fn outage(&self) -> Arc<Outage> {
        self.outage.clone()
    }

    fn saw<K: Kind>(&self, obj: &K) {
        self.expectations.saw(obj);
    }

    fn own_echo<K: Kind>(&self, obj: &K) -> bool {
        self.statuses.own_echo(obj)
    }

    fn relist_started<K: Kind>(&self) {
        self.pace.relist_started(K::kind(&()));
    }

    fn relisted<K: Kind>(&self, began: Instant) {
        self.expectations.relisted(&K::kind(&()), began);
        self.pace.relist_done(K::kind(&()));
    }

    fn watch_failed<K: Kind>(&self) {
        self.pace.watch_failed(K::kind(&()));
    }

    fn undecodable<K: Kind>(self: &Arc<Self>, object: &Undecoded) {
        // Not awaited by the watch, which must not wait for an Event.
        let (ctx, object) = (self.clone(), object.clone());
        tokio::spawn(async move { events::undecodable::<K>(&ctx, &object).await });
    }

    fn undecodable_count<K: Kind>(&self, count: usize) {
        self.metrics.set_undecodable(K::KIND, count);
    }
}
