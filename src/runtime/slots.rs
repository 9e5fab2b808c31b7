//! The request slots that writes and Events take ([`Context::in_slot`]), and giving a slot
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
//! [`Context::in_slot`]: crate::runtime::context::Context::in_slot

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

tokio::task_local! {
    /// The slot of the request being sent in this task, if it took one.
    static HELD: Held;
}

struct Held {
    slots: Arc<Semaphore>,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
}

/// At most so many requests open at once, all reconciles together.
pub struct Slots {
    semaphore: Arc<Semaphore>,
}

impl Slots {
    /// `limit` slots; 0 for no limit.
    pub fn new(limit: usize) -> Slots {
        let limit = if limit == 0 {
            Semaphore::MAX_PERMITS
        } else {
            limit
        };
        Slots {
            semaphore: Arc::new(Semaphore::new(limit)),
        }
    }

    /// `request`, sent in a slot, waiting while every slot is taken. (The slots are never
    /// closed; if they were, the request would go without one.)
    pub async fn run<T>(&self, request: impl Future<Output = T>) -> T {
        let permit = self.semaphore.clone().acquire_owned().await.ok();
        let held = Held {
            slots: self.semaphore.clone(),
            permit: Mutex::new(permit),
        };
        HELD.scope(held, request).await
    }

    /// Slots free now.
    pub fn free(&self) -> usize {
        self.semaphore.available_permits()
    }
}

/// `wait`, with this task's slot (if its request holds one) given back for its length and
/// taken again after it. Called when the wait is decided, so the slot is free at once.
pub fn wait_without_slot<W>(wait: W) -> impl Future<Output = ()> + Send + 'static
where
    W: Future<Output = ()> + Send + 'static,
{
    let slots = HELD
        .try_with(|held| {
            let freed = held.permit.lock().ok().and_then(|mut p| p.take());
            freed.map(|_| held.slots.clone())
        })
        .ok()
        .flatten();
    async move {
        wait.await;
        if let Some(slots) = slots {
            let permit = slots.acquire_owned().await.ok();
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
    use std::time::Duration;

    /// One slot: a request that waits for its retry gives the slot to another request for
    /// the wait, and takes it back before it goes on.
    #[tokio::test]
    async fn a_request_waiting_for_its_retry_lends_its_slot() {
        let slots = Arc::new(Slots::new(1));
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

    /// Outside a slot (a watch, the lease) the wait is only a wait.
    #[tokio::test]
    async fn a_wait_outside_a_slot_takes_none() {
        let slots = Slots::new(1);
        wait_without_slot(async {}).await;
        assert_eq!(slots.free(), 1);
    }
}
