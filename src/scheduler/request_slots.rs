//! The request slots that writes and Events take ([`Context::requests`]), and giving a slot
//! back while its request waits to be sent again.
//!
//! The client retries a 429 (API Priority and Fairness over the manager's share), a 503 or a
//! 504 by itself, up to ten times a second apart (`ops/client.rs`). Those retries happen inside
//! the request, so a request that is being throttled would keep its slot through every wait:
//! under a sustained 429 every slot ends up held by requests that are only waiting, and the
//! writes of every other parent queue behind them. The retry policy therefore asks
//! [`wait_without_slot`] for its wait: the slot is freed for the wait and taken again, in
//! turn, before the request is sent again.
//!
//! [`Context::requests`]: crate::reconcile::context::Context::requests

use std::future::Future;
use std::sync::Mutex;
use std::time::Instant;

use tracing::debug;

use super::permits::{FairPermits, Permit};
use super::queue::{Flow, Priority};
use super::{TIMELINE, ms};
use crate::metrics::Metrics;

tokio::task_local! {
    /// The slot of the request being sent in this task, if it took one.
    static HELD: Held;
    /// Whose request this task sends: the flow its slot is queued in ([`in_flow`]).
    static FLOW: Flow;
}

struct Held {
    slots: FairPermits,
    flow: Flow,
    permit: Mutex<Option<Permit>>,
}

/// `work` (a reconcile), with every request it sends through [`RequestSlots`] queued in `flow`: the
/// reconcile's caller says whose it is, and the writes inside (`reconcile/writes.rs`) need not
/// know.
pub fn in_flow<F: Future>(flow: Flow, work: F) -> impl Future<Output = F::Output> {
    FLOW.scope(flow, work)
}

/// The flow of this task's requests; those sent outside a reconcile share one.
fn current_flow() -> Flow {
    FLOW.try_with(Flow::clone)
        .unwrap_or_else(|_| Flow::from(""))
}

/// At most so many requests open at once, all reconciles together, handed out fairly across
/// flows (namespaces) when they are all taken ([`crate::scheduler`]).
pub struct RequestSlots {
    fair: FairPermits,
}

impl RequestSlots {
    /// `limit` slots; 0 for no limit.
    pub fn new(limit: usize) -> RequestSlots {
        RequestSlots {
            fair: FairPermits::shared(limit, None),
        }
    }

    /// The same slots (shared by the active flows if `shares`), with their queue shown in
    /// `metrics` as `writes`.
    pub fn observed(limit: usize, shares: bool, metrics: &Metrics) -> RequestSlots {
        let waits = Some(metrics.fair_queue_waits("writes"));
        let fair = if shares {
            FairPermits::shared(limit, waits)
        } else {
            FairPermits::new(limit, waits)
        };
        metrics.show_fair_queue("writes", fair.reader());
        RequestSlots { fair }
    }

    /// `request`, sent in a slot, waiting while every slot is taken, in its flow's turn.
    /// (The slots are never closed; if they were, the request would go without one.)
    pub async fn run<T>(&self, request: impl Future<Output = T>) -> T {
        let flow = current_flow();
        let asked = Instant::now();
        let permit = self.fair.acquire(flow.clone(), Priority::Urgent).await;
        let sent = Instant::now();
        let held = Held {
            slots: self.fair.clone(),
            flow: flow.clone(),
            permit: Mutex::new(permit),
        };
        let answer = HELD.scope(held, request).await;
        debug!(target: TIMELINE, ns = %flow, slot_ms = ms(sent - asked), answer_ms = ms(sent.elapsed()), free = self.fair.free(), "request answered");
        answer
    }

    /// Slots free now.
    pub fn free(&self) -> usize {
        self.fair.free()
    }
}

/// `wait`, with this task's slot (if its request holds one) given back for its length and
/// taken again after it, in its flow's turn. Called when the wait is decided, so the slot is
/// free at once.
pub fn wait_without_slot<W>(wait: W) -> impl Future<Output = ()> + Send + 'static
where
    W: Future<Output = ()> + Send + 'static,
{
    let slots = HELD
        .try_with(|held| {
            let freed = held.permit.lock().ok().and_then(|mut p| p.take());
            freed.map(|_| (held.slots.clone(), held.flow.clone()))
        })
        .ok()
        .flatten();
    async move {
        wait.await;
        if let Some((slots, flow)) = slots {
            let permit = slots.acquire(flow, Priority::Urgent).await;
            let _ = HELD.try_with(|held| {
                if let Ok(mut slot) = held.permit.lock() {
                    *slot = permit;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// One slot: a request that waits for its retry gives the slot to another request for
    /// the wait, and takes it back before it goes on.
    #[tokio::test]
    async fn a_request_waiting_for_its_retry_lends_its_slot() {
        let slots = Arc::new(RequestSlots::new(1));
        let (waiting_tx, waiting_rx) = tokio::sync::oneshot::channel();
        let (resume_tx, resume_rx) = tokio::sync::oneshot::channel::<()>();
        let throttled = tokio::spawn({
            let slots = slots.clone();
            async move {
                slots
                    .run(async move {
                        let wait = wait_without_slot(async move {
                            let _ = waiting_tx.send(());
                            let _ = resume_rx.await;
                        });
                        wait.await;
                        "sent again"
                    })
                    .await
            }
        });
        waiting_rx.await.expect("the throttled request waits");
        assert_eq!(slots.free(), 1, "the waiting request still holds its slot");
        let other = tokio::time::timeout(Duration::from_secs(5), slots.run(async { "other" }))
            .await
            .expect("another request gets the slot while the first one waits");
        assert_eq!(other, "other");
        let _ = resume_tx.send(());
        assert_eq!(throttled.await.expect("no panic"), "sent again");
        assert_eq!(slots.free(), 1);
    }

    /// The flow set around a reconcile is the one its requests queue in: with every slot
    /// taken, another namespace's request goes after the first of a backlog, not after all.
    #[tokio::test]
    async fn requests_queue_in_the_flow_of_their_reconcile() {
        let slots = Arc::new(RequestSlots::new(1));
        let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
        let order = Arc::new(Mutex::new(Vec::new()));
        let holder = tokio::spawn({
            let slots = slots.clone();
            async move { slots.run(async move { release_rx.await.ok() }).await }
        });
        tokio::task::yield_now().await;
        let mut senders = Vec::new();
        for (ns, name) in [("big", "big-1"), ("big", "big-2"), ("small", "small-1")] {
            let (slots, order) = (slots.clone(), order.clone());
            senders.push(tokio::spawn(in_flow(Flow::from(ns), async move {
                slots
                    .run(async move { order.lock().map(|mut o| o.push(name)).ok() })
                    .await
            })));
            tokio::task::yield_now().await;
        }
        let _ = release_tx.send(());
        holder.await.expect("no panic");
        for sender in senders {
            sender.await.expect("no panic");
        }
        let order = order.lock().map(|o| o.clone()).unwrap_or_default();
        assert_eq!(order, ["big-1", "small-1", "big-2"]);
    }

    /// Outside a slot (a watch, the lease) the wait is only a wait.
    #[tokio::test]
    async fn a_wait_outside_a_slot_takes_none() {
        let slots = RequestSlots::new(1);
        wait_without_slot(async {}).await;
        assert_eq!(slots.free(), 1);
    }
}
