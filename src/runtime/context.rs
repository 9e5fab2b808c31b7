//! What every reconcile shares: the client, the three caches, the metrics, and the
//! manager's memories, each a part of its own that the reconcile asks in turn. `Context`
//! only holds them (and the request slots) and sweeps them; what each remembers, and why,
//! is in its own file.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::runtime::reflector::Store;

use crate::api::{Fermat, Number, Tuple};
use crate::metrics::Metrics;
use crate::runtime::cache::Cache;
use crate::runtime::events::{Publisher, Reporter};
use crate::runtime::expectations::{Expectations, IN_FLIGHT_TIMEOUT};
use crate::runtime::outage::Outage;
use crate::runtime::pace::PaceKeeper;
use crate::runtime::refusals::Refusals;
use crate::runtime::replan::Replans;
use crate::runtime::retry::Failures;
use crate::runtime::slots::Slots;
use crate::runtime::statuses::WrittenStatuses;

/// The name Events are reported under (`kubectl describe` shows it as "From").
pub const REPORTER: &str = "math-controller";

/// What every reconcile gets. The memories are listed in the order a parent's reconcile
/// asks them: whether its namespace is going away and which refused steps still wait
/// (`refusals`), which children are on their way (`expectations`), the request slots of its
/// writes ([`Context::in_slot`]), the status as far as we know (`statuses`), how its
/// children come along (`pace`), the Events that tell of it (`events`); then the retry
/// policy around it asks `outage`, `replans` and `failures`.
pub struct Context {
    pub client: Client,
    /// Each kind's reflector store, and its objects by the UID of their controller (kept by
    /// the watches). A parent's reconcile is handed the cache of its child kind by type.
    pub numbers: Cache<Number>,
    pub tuples: Cache<Tuple>,
    pub fermats: Cache<Fermat>,
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
    /// Slots for the requests the reconciles have open at once (see [`Context::in_slot`]).
    requests: Slots,
}

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
            numbers: Cache::new(numbers),
            tuples: Cache::new(tuples),
            fermats: Cache::new(fermats),
            requests: Slots::new(0),
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
    /// ([`crate::runtime::fair::FairSlots::shared`]).
    pub fn with_requests_in_flight(mut self, limit: u16, shares: bool) -> Self {
        self.requests = Slots::observed(limit.into(), shares, &self.metrics);
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
