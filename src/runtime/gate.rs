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

use std::future::Future;
use std::time::Instant;

use kube::ResourceExt;
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

/// One controller's gate.
#[derive(Clone)]
pub struct Gate {
    controller: &'static str,
    slots: FairSlots,
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
        Gate { controller, slots }
    }

    /// `reconcile()` run in `obj`'s turn, its writes queued in `obj`'s flow; `None` when the
    /// gate closed first (a shutdown: queued reconciles are dropped, not run).
    pub async fn pass<K, F, Fut>(&self, obj: &K, reconcile: F) -> Option<Fut::Output>
    where
        K: Kind,
        F: FnOnce() -> Fut,
        Fut: Future,
    {
        let flow = flow_of(obj);
        let priority = priority_of(obj);
        let arrived = Instant::now();
        let turn = self.slots.acquire(flow.clone(), priority).await?;
        let let_in = Instant::now();
        debug!(target: TIMELINE, controller = self.controller, ns = %flow, name = %obj.name_any(), ?priority, waited_ms = ms(let_in - arrived), "let in at the gate");
        // Boxed: the waiting future stays small, whatever the reconcile's size.
        let output = Box::pin(in_flow(flow.clone(), reconcile())).await;
        drop(turn);
        debug!(target: TIMELINE, controller = self.controller, ns = %flow, name = %obj.name_any(), ran_ms = ms(let_in.elapsed()), "reconciled");
        Some(output)
    }

    /// Turn every waiting reconcile away, now and later.
    pub fn close(&self) {
        self.slots.close();
    }
}
