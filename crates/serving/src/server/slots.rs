//! The connections a server holds, and which one gives way when it is full.
//!
//! A server that stops accepting at its bound can be held shut by anyone who opens that many
//! connections and says nothing (or pipelines requests and never reads the answers): the
//! kubelet's probe then waits in the kernel's backlog until one of them times out, and fails.
//! So a few slots are kept free: whenever fewer than the reserve are free, the connection that
//! has been idle longest (no bytes moved, no request being answered) is closed. A probe, which
//! sends its request as soon as it connects, is then always the newest and never the one to go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// One connection as the accept loop sees it; shared with the connection's task.
pub struct Slot {
    id: u64,
    opened: Instant,
    /// Requests being answered (handlers running) on this connection.
    busy: AtomicUsize,
    /// When bytes last moved, or a request was last answered: nanoseconds after `opened`.
    last_progress: AtomicU64,
    /// Cancelled when the connection must give way to a new one.
    evicted: CancellationToken,
}

impl Slot {
    fn new(id: u64) -> Slot {
        Slot {
            id,
            opened: Instant::now(),
            busy: AtomicUsize::new(0),
            last_progress: AtomicU64::new(0),
            evicted: CancellationToken::new(),
        }
    }

    /// Bytes moved: the connection is not idle.
    pub fn progress(&self) {
        let nanos = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_progress.store(nanos, Ordering::Relaxed);
    }

    /// Since when nothing has happened on the connection; `None` while a request is being
    /// answered (a TokenReview can take seconds without a byte moving).
    pub fn idle_since(&self) -> Option<Instant> {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let nanos = self.last_progress.load(Ordering::Relaxed);
        Some(self.opened + Duration::from_nanos(nanos))
    }

    /// Marks a request as being answered until the guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// Resolves when the connection must close to make room.
    pub async fn evicted(&self) {
        self.evicted.cancelled().await
    }

    /// Resolves once the connection has been idle for `idle` (checked again whenever the
    /// deadline passes, since progress moves it).
    pub async fn idle_for(&self, idle: Duration) {
        loop {
            match self.idle_since() {
                Some(since) if since + idle <= Instant::now() => return,
                Some(since) => tokio::time::sleep_until((since + idle).into()).await,
                None => tokio::time::sleep(idle).await,
            }
        }
    }
}

/// A request being answered; the connection is idle again (from now) when it drops.
pub struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.progress();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Every open connection of one server.
#[derive(Default)]
pub struct Slots {
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Slot>>>,
}

impl Slots {
    fn open_map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Slot>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection; it is forgotten when the returned guard drops.
    pub fn open(self: &Arc<Self>) -> Open {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot::new(id));
        self.open_map().insert(id, slot.clone());
        Open {
            slots: self.clone(),
            slot,
        }
    }

    /// Asks the connection idle longest, other than `newest`, to close; false if every other
    /// connection is answering a request.
    pub fn evict_longest_idle(&self, newest: &Slot) -> bool {
        let open = self.open_map();
        let idle = open
            .values()
            .filter(|slot| !slot.evicted.is_cancelled())
            .map(|slot| (slot.id, slot.idle_since()));
        match longest_idle(idle, newest.id) {
            Some(id) => {
                if let Some(slot) = open.get(&id) {
                    slot.evicted.cancel();
                }
                true
            }
            None => false,
        }
    }
}

/// A registered connection; dropping it (the connection's task ended or was aborted)
/// forgets it.
pub struct Open {
    slots: Arc<Slots>,
    pub slot: Arc<Slot>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.slots.open_map().remove(&self.slot.id);
    }
}

/// Whether a new connection must make room: fewer than `reserved` slots (at least one) are
/// left free once it is counted.
pub fn must_make_room(free: usize, reserved: usize) -> bool {
    free < reserved.max(1)
}

/// Of `(id, idle since)` pairs (`None`: answering a request), the one idle longest, never
/// `except`.
pub fn longest_idle(
    connections: impl IntoIterator<Item = (u64, Option<Instant>)>,
    except: u64,
) -> Option<u64> {
    connections
        .into_iter()
        .filter(|(id, _)| *id != except)
        .filter_map(|(id, since)| since.map(|since| (since, id)))
        .min()
        .map(|(_, id)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_idle_longest_gives_way_never_a_busy_one_nor_the_newest() {
        let t = Instant::now();
        let s = Duration::from_secs(1);
        assert_eq!(
            longest_idle([(1, Some(t + s)), (2, Some(t)), (3, Some(t + 2 * s))], 9),
            Some(2)
        );
        assert_eq!(longest_idle([(1, None), (2, Some(t + s))], 9), Some(2));
        assert_eq!(longest_idle([(1, None), (2, None)], 9), None);
        assert_eq!(longest_idle([(1, Some(t)), (2, Some(t + s))], 1), Some(2));
        assert_eq!(longest_idle([(1, Some(t))], 1), None);
    }

    #[test]
    fn room_is_made_while_fewer_than_the_reserve_are_free() {
        assert!(!must_make_room(16, 16));
        assert!(must_make_room(15, 16));
        assert!(must_make_room(0, 16));
        // A reserve of 0 would let the server fill up and stop accepting.
        assert!(must_make_room(0, 0));
        assert!(!must_make_room(1, 0));
    }

    #[tokio::test]
    async fn a_slot_is_idle_from_its_last_progress_and_not_while_busy() {
        let slots = Arc::new(Slots::default());
        let a = slots.open();
        let b = slots.open();
        assert!(a.slot.idle_since().is_some());
        let busy = a.slot.busy();
        assert_eq!(a.slot.idle_since(), None);
        // `a` is answering a request: `b` would have to go, but `b` is the newest.
        assert!(!slots.evict_longest_idle(&b.slot));
        drop(busy);
        assert!(slots.evict_longest_idle(&b.slot));
        tokio::time::timeout(Duration::from_secs(5), a.slot.evicted())
            .await
            .expect("evicted");
        drop(a);
        assert_eq!(
            slots.open_map().len(),
            1,
            "a closed connection is forgotten"
        );
    }
}
