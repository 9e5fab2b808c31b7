//! The gate a reconcile passes before it runs: a controller's concurrency, handed out fairly.
//!
//! kube-runtime's `Controller` has no priority queue: it starts the objects it was told about
//! in the order they became due, up to its concurrency, so a small object's reconcile waits
//! behind the thousands of Tuples a big Fermat just created (or behind the whole initial list
//! after a restart). Rather than fork its scheduler, the manager lets the `Controller` start
//! every due reconcile (no concurrency bound of its own) and bounds them here: each waits at
//! the gate of its controller, which lets `--concurrency` of them run at once, chosen by
//! [`crate::runtime::fair`] (namespaces in turn; objects that are not settled before settled
//! ones; aging). A waiting reconcile is a small future (the object and its turn); the
//! reconcile itself is only built once it is let in.
//!
//! A reconcile let in acts on the object as the cache holds it *then*, not as it was when the
//! `Controller` started it (kube-runtime hands a reconcile the object of its trigger): a Tuple
//! whose spec changed while it waited creates the Numbers of its new spec, never the old
//! one's. So news of an object whose reconcile still waits adds nothing, and the gate
//! [absorbs](Gate::absorbs) it before it reaches the `Controller`: otherwise the `Controller`
//! holds it until the waiting reconcile has run, then runs another, and on every poll scans
//! what it holds (kube-runtime's scheduler looks through its held messages one by one). With
//! thousands of reconciles waiting that scan was a third of the manager's CPU.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::debug;

use crate::kind::Kind;
use crate::metrics::Metrics;
use crate::runtime::TIMELINE;
use crate::runtime::fair::{FairSlots, Flow, Priority};
use crate::runtime::slots::in_flow;

/// Whose an object's reconcile is: its namespace.
pub fn flow_of<K: Kind>(obj: &K) -> Flow {
    Flow::from(obj.namespace().unwrap_or_default())
}

/// An object whose status already answers its generation is most likely here for a resync or
/// an initial list: nobody waits for it. Anything else (new, changed, waiting for its
/// children, failed) is someone's answer in the making.
pub fn priority_of<K: Kind>(obj: &K) -> Priority {
    if obj.is_ready() {
        Priority::Later
    } else {
        Priority::Urgent
    }
}

/// Milliseconds, for the timeline's lines.
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

/// An object of one kind, by namespace and name.
type Key = (String, String);

fn key_of<K: Kind>(obj: &K) -> Key {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

/// One controller's gate.
#[derive(Clone)]
pub struct Gate {
    controller: &'static str,
    slots: FairSlots,
    /// The objects whose reconcile waits for its turn (one at most each: the `Controller`
    /// never runs two reconciles of one object at once).
    waiting: Arc<Mutex<HashSet<Key>>>,
}

impl Gate {
    /// `concurrency` reconciles at once (0: no bound), their waits shown in `metrics` under
    /// the controller's name.
    pub fn new(
        controller: &'static str,
        concurrency: u16,
        shares: bool,
        metrics: &Metrics,
    ) -> Gate {
        let slots = FairSlots::gathering(
            concurrency.into(),
            shares,
            Some(metrics.fair_queue_waits(controller)),
        );
        metrics.show_fair_queue(controller, slots.reader());
        Gate {
            controller,
            slots,
            waiting: Arc::default(),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashSet<Key>> {
        // A panic while holding the lock leaves the set as it was; go on with it.
        (self.waiting.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `reconcile(obj)` run in `obj`'s turn, with `obj` as `store` holds it then, its writes
    /// queued in `obj`'s flow. `None` when the gate closed first (a shutdown: queued
    /// reconciles are dropped, not run), or the object is no longer cached (deleted while it
    /// waited: there is nothing left to reconcile, and its children go with it).
    pub async fn pass<K, F, Fut>(
        &self,
        obj: &K,
        store: &Store<K>,
        reconcile: F,
    ) -> Option<Fut::Output>
    where
        K: Kind,
        F: FnOnce(Arc<K>) -> Fut,
        Fut: Future,
    {
        let flow = flow_of(obj);
        let priority = priority_of(obj);
        let arrived = Instant::now();
        let waiting = Waiting::new(self, key_of(obj));
        let turn = self.slots.acquire(flow.clone(), priority).await;
        // Out of the waiting set before the cache is read: news that arrives from now on
        // reaches the `Controller`, and news absorbed before now is in the cache already
        // (the watch fills the cache before it tells anyone).
        drop(waiting);
        let turn = turn?;
        let latest = store.get(&ObjectRef::from_obj(obj))?;
        let let_in = Instant::now();
        debug!(target: TIMELINE, controller = self.controller, ns = %flow, name = %obj.name_any(), ?priority, waited_ms = ms(let_in - arrived), "let in at the gate");
        // Boxed: the waiting future stays small, whatever the reconcile's size.
        let output = Box::pin(in_flow(flow.clone(), reconcile(latest))).await;
        drop(turn);
        debug!(target: TIMELINE, controller = self.controller, ns = %flow, name = %obj.name_any(), ran_ms = ms(let_in.elapsed()), "reconciled");
        Some(output)
    }

    /// Whether news of the object `namespace`/`name` adds nothing: its reconcile waits at the
    /// gate, and will read the cache (which holds the news already) when it is let in.
    pub fn absorbs(&self, namespace: Option<&str>, name: &str) -> bool {
        let key = (namespace.unwrap_or_default().to_string(), name.to_string());
        self.waiting().contains(&key)
    }

    /// Turn every waiting reconcile away, now and later.
    pub fn close(&self) {
        self.slots.close();
    }
}

/// An object's place in its gate's waiting set, left when its reconcile is let in, or dropped
/// (so that a reconcile cancelled while it waits does not leave its object's news absorbed
/// for good).
struct Waiting<'a> {
    gate: &'a Gate,
    key: Option<Key>,
}

impl<'a> Waiting<'a> {
    fn new(gate: &'a Gate, key: Key) -> Self {
        let key = gate.waiting().insert(key.clone()).then_some(key);
        Waiting { gate, key }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.gate.waiting().remove(&key);
        }
    }
}
