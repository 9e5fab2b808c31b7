//! Permits handed out in [`FairQueue`] order: the request slots, and the turns of a
//! scheduler's concurrency ([`super::runner`]). With shares ([`FairPermits::shared`]) a flow
//! holds at most its [`share`] of the permits while other flows are active (see
//! [`super::queue`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::queue::{ACTIVE, AGING, FairQueue, Flow, Priority, share};
use crate::metrics::QueueNow;

/// What a [`FairPermits`] shows the metrics: waiters, flows waiting, the longest wait now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueStats {
    pub waiting: usize,
    pub flows: usize,
    pub longest_wait: Duration,
}

/// Called with each grant's wait (for the wait-time histogram).
pub type OnGrant = Arc<dyn Fn(Duration) + Send + Sync>;

/// What takes a permit when its turn comes: [`FairPermits::offer`]'s callback. It runs outside
/// the slots' lock (it may look at them, or take a permit itself), and gives the permit back
/// (`Err`) when it no longer wants it.
pub type Grant = Box<dyn FnOnce(Permit) -> Result<(), Permit> + Send>;

/// Who waits for a permit: a caller that awaits it ([`FairPermits::acquire`]), or a callback
/// ([`FairPermits::offer`]).
enum Waiter {
    Caller(oneshot::Sender<Permit>),
    Callback(Grant),
}

impl Waiter {
    fn grant(self, permit: Permit) -> Result<(), Permit> {
        match self {
            Waiter::Caller(caller) => caller.send(permit),
            Waiter::Callback(grant) => grant(permit),
        }
    }
}

struct State {
    free: usize,
    closed: bool,
    queue: FairQueue<Waiter>,
    /// With shares ([`FairPermits::shared`]): the permits each flow holds, and when each flow
    /// last asked for one.
    shares: Option<Shares>,
}

/// Who holds the permits of shared slots, and who asked lately.
struct Shares {
    limit: usize,
    held: HashMap<Flow, usize>,
    asked: HashMap<Flow, Instant>,
}

impl Shares {
    fn asked(&mut self, flow: &Flow, now: Instant) {
        self.asked.insert(flow.clone(), now);
        self.asked
            .retain(|_, at| now.saturating_duration_since(*at) < ACTIVE);
    }

    /// Whether `flow` may take one more permit at `now`: under its share of the flows that
    /// asked within [`ACTIVE`] or hold a permit.
    fn may_take(&self, flow: &Flow, now: Instant) -> bool {
        let is_recent = |at: &Instant| now.saturating_duration_since(*at) < ACTIVE;
        let recent = (self.asked.iter())
            .filter(|(_, at)| is_recent(at))
            .map(|(f, _)| f);
        // A flow that holds a permit is active whenever it last asked: counted here unless
        // it counts as recent already (a stale ask of a holder left it out of both).
        let holding = (self.held.keys()).filter(|f| !self.asked.get(*f).is_some_and(is_recent));
        let active = recent.chain(holding).count().max(1);
        self.held.get(flow).copied().unwrap_or(0) < share(self.limit, active)
    }

    fn took(&mut self, flow: &Flow) {
        *self.held.entry(flow.clone()).or_insert(0) += 1;
    }

    fn gave_back(&mut self, flow: &Flow) {
        if let Some(held) = self.held.get_mut(flow) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.held.remove(flow);
            }
        }
    }
}

impl State {
    fn may_take(&self, flow: &Flow, now: Instant) -> bool {
        self.shares
            .as_ref()
            .is_none_or(|shares| shares.may_take(flow, now))
    }
}

struct Shared {
    state: Mutex<State>,
    on_grant: Option<OnGrant>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the counts as they were; go on with them.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A permit of `flow` came back.
    fn release(self: &Arc<Self>, flow: &Flow) {
        let mut state = self.lock();
        state.free = state.free.saturating_add(1);
        if let Some(shares) = &mut state.shares {
            shares.gave_back(flow);
        }
        self.dispatch(state);
    }

    /// The free permits go to the next live waiters, in the queue's order, among the flows
    /// under their share; what no such flow waits for stays free. The permits are taken under
    /// the lock and handed out after it (a waiter's callback may look at the slots, or drop a
    /// permit); those a waiter gave back are put back under the lock again, in a loop rather
    /// than through [`Permit`]'s drop, so a run of waiters that gave up costs no stack.
    fn dispatch<'a>(self: &'a Arc<Self>, mut state: MutexGuard<'a, State>) {
        loop {
            let mut grants = Vec::new();
            while state.free > 0 {
                let now = Instant::now();
                let popped = {
                    let State { queue, shares, .. } = &mut *state;
                    let shares = &*shares;
                    queue.pop_where(now, |flow| {
                        shares.as_ref().is_none_or(|s| s.may_take(flow, now))
                    })
                };
                let Some((flow, waiter, waited)) = popped else {
                    break;
                };
                state.free -= 1;
                if let Some(shares) = &mut state.shares {
                    shares.took(&flow);
                }
                grants.push((flow, waiter, waited));
            }
            drop(state);
            let mut returned = Vec::new();
            for (flow, waiter, waited) in grants {
                match waiter.grant(self.permit(flow)) {
                    Ok(()) => {
                        if let Some(on_grant) = &self.on_grant {
                            on_grant(waited);
                        }
                    }
                    // The waiter gave up (its reconcile was dropped, or it wants no permit
                    // any more): the permit goes to the next one.
                    Err(mut unsent) => {
                        unsent.shared = None;
                        returned.push(unsent.flow.clone());
                    }
                }
            }
            if returned.is_empty() {
                return;
            }
            state = self.lock();
            for flow in &returned {
                state.free = state.free.saturating_add(1);
                if let Some(shares) = &mut state.shares {
                    shares.gave_back(flow);
                }
            }
        }
    }

    fn permit(self: &Arc<Self>, flow: Flow) -> Permit {
        Permit {
            shared: Some(self.clone()),
            flow,
        }
    }
}

/// A number of permits, handed out in [`FairQueue`] order when there are not enough.
#[derive(Clone)]
pub struct FairPermits {
    shared: Arc<Shared>,
}

/// One permit of a [`FairPermits`], given back when dropped.
pub struct Permit {
    shared: Option<Arc<Shared>>,
    flow: Flow,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.release(&self.flow);
        }
    }
}

impl FairPermits {
    /// `limit` permits (0: as many as asked for).
    pub fn new(limit: usize, on_grant: Option<OnGrant>) -> Self {
        let free = if limit == 0 { usize::MAX } else { limit };
        FairPermits {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    free,
                    closed: false,
                    queue: FairQueue::new(AGING),
                    shares: None,
                }),
                on_grant,
            }),
        }
    }

    /// The same, for requests to a server that answers in arrival order: while several flows
    /// are active, each holds at most its [`share`] of the `limit` permits, and the rest stay
    /// free (see the module's documentation). No limit, no shares.
    pub fn shared(limit: usize, on_grant: Option<OnGrant>) -> Self {
        FairPermits::new(limit, on_grant).with_shares(limit)
    }

    /// Shares of `limit` for the active flows (none for no limit).
    fn with_shares(self, limit: usize) -> Self {
        if limit > 0 {
            self.shared.lock().shares = Some(Shares {
                limit,
                held: HashMap::new(),
                asked: HashMap::new(),
            });
        }
        self
    }

    /// A permit in `flow`'s turn; `None` once closed.
    pub async fn acquire(&self, flow: Flow, priority: Priority) -> Option<Permit> {
        let granted = {
            let mut state = self.shared.lock();
            if state.closed {
                return None;
            }
            let now = Instant::now();
            if let Some(shares) = &mut state.shares {
                shares.asked(&flow, now);
            }
            if state.free > 0 && state.queue.is_empty() && state.may_take(&flow, now) {
                state.free -= 1;
                if let Some(shares) = &mut state.shares {
                    shares.took(&flow);
                }
                if let Some(on_grant) = &self.shared.on_grant {
                    on_grant(Duration::ZERO);
                }
                return Some(self.shared.permit(flow));
            }
            let (tx, rx) = oneshot::channel();
            state
                .queue
                .push(flow, priority, Instant::now(), Waiter::Caller(tx));
            rx
        };
        self.shared.dispatch(self.shared.lock());
        granted.await.ok()
    }

    /// `grant` gets a permit in `flow`'s turn, from the dispatch that hands it out (at once
    /// when one is free and may be taken): for work that waits without a task of its own
    /// (see [`crate::reconcile::controller_loop`]). Nothing happens once closed.
    pub fn offer(&self, flow: Flow, priority: Priority, grant: Grant) {
        let mut state = self.shared.lock();
        if state.closed {
            return;
        }
        let now = Instant::now();
        if let Some(shares) = &mut state.shares {
            shares.asked(&flow, now);
        }
        state
            .queue
            .push(flow, priority, now, Waiter::Callback(grant));
        self.shared.dispatch(state);
    }

    /// Every waiter gives up (gets `None`), and so does every later caller: for a shutdown,
    /// so that reconciles queued at a gate end at once instead of being run.
    pub fn close(&self) {
        let mut state = self.shared.lock();
        state.closed = true;
        state.queue = FairQueue::new(AGING);
    }

    /// Permits free now.
    pub fn free(&self) -> usize {
        self.shared.lock().free
    }

    /// The queue as the metrics show it ([`crate::metrics::Metrics::show_fair_queue`]).
    pub fn reader(&self) -> impl Fn() -> QueueNow + Send + Sync + 'static {
        let slots = self.clone();
        move || {
            let stats = slots.stats();
            QueueNow {
                waiting: stats.waiting,
                flows: stats.flows,
                longest_wait: stats.longest_wait.as_secs_f64(),
            }
        }
    }

    pub fn stats(&self) -> QueueStats {
        let state = self.shared.lock();
        QueueStats {
            waiting: state.queue.len(),
            flows: state.queue.flows(),
            longest_wait: state.queue.longest_wait(Instant::now()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(name: &str) -> Flow {
        Arc::from(name)
    }
    /// The permits go to the waiters in the queue's order, and a waiter that gave up is
    /// skipped without losing the permit.
    #[tokio::test]
    async fn permits_are_handed_out_in_turn() {
        let slots = FairPermits::new(1, None);
        let held = slots.acquire(flow("big"), Priority::Urgent).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for (ns, name) in [("big", "big-1"), ("big", "big-2"), ("small", "small-1")] {
            let (slots, order) = (slots.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let permit = slots.acquire(flow(ns), Priority::Urgent).await;
                order.lock().map(|mut o| o.push(name)).ok();
                drop(permit);
            }));
            tokio::task::yield_now().await;
        }
        let gave_up = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(flow("gone"), Priority::Urgent).await })
        };
        tokio::task::yield_now().await;
        gave_up.abort();
        assert_eq!(slots.stats().flows, 3);
        drop(held);
        for waiter in waiters {
            waiter.await.expect("no panic");
        }
        let order = order.lock().map(|o| o.clone()).unwrap_or_default();
        assert_eq!(order, ["big-1", "small-1", "big-2"]);
        assert_eq!(slots.stats(), QueueStats::default());
        assert!(slots.acquire(flow("x"), Priority::Later).await.is_some());
    }

    /// Alone a flow may hold every slot; beside others an equal share, never none.
    #[test]
    fn a_flow_holds_its_share_of_the_slots_while_others_are_active() {
        assert_eq!(share(64, 1), 64);
        assert_eq!(share(64, 2), 32);
        assert_eq!(share(64, 3), 22);
        assert_eq!(share(2, 5), 1);
        assert_eq!(share(16, 0), 16);
    }

    /// Four shared slots, all held by a heavy flow: a light flow that asks gets the first slot
    /// given back, and the heavy flow gets no more until it holds no more than its share (2):
    /// the slots it may not take stay free for the light flow's next request, which is
    /// granted at once.
    #[tokio::test]
    async fn a_heavy_flow_gives_back_down_to_its_share_while_a_light_one_is_active() {
        let slots = FairPermits::shared(4, None);
        let mut heavy = Vec::new();
        for _ in 0..4 {
            heavy.push(slots.acquire(flow("big"), Priority::Urgent).await);
        }
        let light = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(flow("small"), Priority::Urgent).await })
        };
        tokio::task::yield_now().await;
        let more_heavy = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(flow("big"), Priority::Urgent).await })
        };
        tokio::task::yield_now().await;
        heavy.pop();
        let light = light.await.expect("no panic");
        assert!(light.is_some(), "the light flow got the slot given back");
        heavy.pop();
        assert_eq!(
            slots.free(),
            1,
            "2 of the heavy flow's, 1 of the light flow's"
        );
        assert!(
            !more_heavy.is_finished(),
            "the heavy flow holds its share already"
        );
        let next_light = slots.acquire(flow("small"), Priority::Urgent).await;
        assert!(next_light.is_some());
        assert_eq!(slots.free(), 0);
        drop((light, next_light));
        tokio::task::yield_now().await;
        assert!(
            !more_heavy.is_finished(),
            "the light flow asked within {ACTIVE:?}: still 2 for the heavy one"
        );
        assert_eq!(slots.free(), 2);
        more_heavy.abort();
    }

    /// A flow that holds permits and last asked more than [`ACTIVE`] ago is still active:
    /// beside it another flow holds at most its half of 4 (issue 39's F6: the holder was left
    /// out of the count, and the other flow's share was all 4).
    #[test]
    fn a_holder_whose_ask_is_old_still_counts_as_active() {
        let start = Instant::now();
        let mut shares = Shares {
            limit: 4,
            held: HashMap::new(),
            asked: HashMap::new(),
        };
        shares.asked(&flow("big"), start);
        shares.took(&flow("big"));
        shares.took(&flow("big"));
        let small_asked = start + ACTIVE / 2;
        shares.asked(&flow("small"), small_asked);
        shares.took(&flow("small"));
        shares.took(&flow("small"));
        let now = start + ACTIVE + ACTIVE / 4;
        assert!(
            !shares.may_take(&flow("small"), now),
            "2 of 4 beside a holder"
        );
        assert!(!shares.may_take(&flow("big"), now));
    }

    /// A callback handed a permit may look at the slots (it ran under their lock, and this
    /// deadlocked: issue 39's F6), and a permit it gives back goes to the next waiter.
    #[test]
    fn a_grant_runs_outside_the_lock() {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let slots = FairPermits::new(1, None);
            let looked = slots.clone();
            let seen = Arc::new(Mutex::new(None));
            let seen_by_grant = seen.clone();
            let grant: Grant = Box::new(move |permit| {
                *seen_by_grant.lock().unwrap_or_else(|e| e.into_inner()) = Some(looked.free());
                Err(permit)
            });
            slots.offer(flow("a"), Priority::Urgent, grant);
            let second: Grant = Box::new(move |permit| {
                drop(permit);
                Ok(())
            });
            slots.offer(flow("b"), Priority::Urgent, second);
            let seen = *seen.lock().unwrap_or_else(|e| e.into_inner());
            let _ = done_tx.send((seen, slots.free()));
        });
        let (seen, free) = done_rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the grant did not deadlock on the slots' lock");
        assert_eq!(seen, Some(0), "the permit it held was taken");
        assert_eq!(free, 1, "both permits came back");
    }

    /// Without shares (the gates of other kinds, or `--flow-shares=false`), a flow takes
    /// every free slot whoever else asked.
    #[tokio::test]
    async fn unshared_slots_go_to_whoever_waits() {
        let slots = FairPermits::new(2, None);
        let _light = slots.acquire(flow("small"), Priority::Urgent).await;
        let heavy = slots.acquire(flow("big"), Priority::Urgent).await;
        assert!(heavy.is_some());
        assert_eq!(slots.free(), 0);
    }

    /// A closed gate turns its waiters away.
    #[tokio::test]
    async fn closing_turns_every_waiter_away() {
        let slots = FairPermits::new(1, None);
        let _held = slots.acquire(flow("a"), Priority::Urgent).await;
        let waiter = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(flow("b"), Priority::Urgent).await })
        };
        tokio::task::yield_now().await;
        slots.close();
        assert!(waiter.await.expect("no panic").is_none());
        assert!(slots.acquire(flow("c"), Priority::Urgent).await.is_none());
    }
}
