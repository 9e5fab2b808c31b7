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
    ledger: Ledger,
    closed: bool,
    queue: FairQueue<Waiter>,
    /// With shares ([`FairPermits::shared`]): when each flow last asked for a permit.
    shares: Option<Shares>,
}

/// Every permit, free or granted to a flow: `free + granted = limit` is kept here and
/// nowhere else. A grant takes one ([`Ledger::grant`]), and one comes back
/// ([`Ledger::give_back`]) when its [`Permit`] is dropped or its waiter gave up.
#[derive(Debug)]
struct Ledger {
    /// `usize::MAX` for no limit.
    limit: usize,
    free: usize,
    /// The permits each flow holds (flows that hold none are not kept).
    held: HashMap<Flow, usize>,
}

impl Ledger {
    /// `limit` permits (0: as many as asked for), all free.
    fn new(limit: usize) -> Ledger {
        let limit = if limit == 0 { usize::MAX } else { limit };
        Ledger {
            limit,
            free: limit,
            held: HashMap::new(),
        }
    }

    /// A free permit granted to `flow`; `false` if none is free.
    fn grant(&mut self, flow: &Flow) -> bool {
        if self.free == 0 {
            return false;
        }
        self.free -= 1;
        *self.held.entry(flow.clone()).or_insert(0) += 1;
        debug_assert!(self.balanced(), "{self:?}");
        true
    }

    /// A permit of `flow` came back.
    fn give_back(&mut self, flow: &Flow) {
        let Some(held) = self.held.get_mut(flow) else {
            return;
        };
        *held -= 1;
        if *held == 0 {
            self.held.remove(flow);
        }
        self.free += 1;
        debug_assert!(self.balanced(), "{self:?}");
    }

    /// The permits `flow` holds.
    fn held_by(&self, flow: &Flow) -> usize {
        self.held.get(flow).copied().unwrap_or(0)
    }

    /// The permits granted and not given back.
    fn granted(&self) -> usize {
        self.held.values().sum()
    }

    /// The invariant: `free + granted = limit` (checked after each change in debug builds).
    fn balanced(&self) -> bool {
        self.free.checked_add(self.granted()) == Some(self.limit)
    }
}

/// Who asked for a permit of shared slots lately: each flow holds at most its share while
/// others are active.
struct Shares {
    limit: usize,
    asked: HashMap<Flow, Instant>,
}

impl Shares {
    fn asked(&mut self, flow: &Flow, now: Instant) {
        self.asked.insert(flow.clone(), now);
        self.asked
            .retain(|_, at| now.saturating_duration_since(*at) < ACTIVE);
    }

    /// Whether `flow` may take one more permit at `now`, holding what `ledger` says: under
    /// its share of the flows that asked within [`ACTIVE`] or hold a permit.
    fn may_take(&self, ledger: &Ledger, flow: &Flow, now: Instant) -> bool {
        let is_recent = |at: &Instant| now.saturating_duration_since(*at) < ACTIVE;
        let recent = (self.asked.iter())
            .filter(|(_, at)| is_recent(at))
            .map(|(f, _)| f);
        // A flow that holds a permit is active whenever it last asked: counted here unless
        // it counts as recent already (a stale ask of a holder left it out of both).
        let holding = (ledger.held.keys()).filter(|f| !self.asked.get(*f).is_some_and(is_recent));
        let active = recent.chain(holding).count().max(1);
        ledger.held_by(flow) < share(self.limit, active)
    }
}

impl State {
    /// Whether `flow` may be granted a permit now: one is free, and it is under its share.
    fn may_take(&self, flow: &Flow, now: Instant) -> bool {
        self.ledger.free > 0
            && (self.shares.as_ref()).is_none_or(|shares| shares.may_take(&self.ledger, flow, now))
    }

    /// The next grants: the free permits taken, for the waiters next in the queue's order
    /// among the flows under their share; what no such flow waits for stays free. Each
    /// grant is the ledger's until its waiter takes it or gives it back
    /// ([`Shared::dispatch`]).
    fn grants(&mut self, now: Instant) -> Vec<(Flow, Waiter, Duration)> {
        let mut grants = Vec::new();
        while self.ledger.free > 0 {
            let State {
                queue,
                shares,
                ledger,
                ..
            } = &mut *self;
            let popped = queue.pop_where(now, |flow| {
                (shares.as_ref()).is_none_or(|s| s.may_take(ledger, flow, now))
            });
            let Some((flow, waiter, waited)) = popped else {
                break;
            };
            ledger.grant(&flow);
            grants.push((flow, waiter, waited));
        }
        grants
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
        state.ledger.give_back(flow);
        self.dispatch(state);
    }

    /// The free permits go to the next live waiters ([`State::grants`]), handed out after the
    /// lock (a waiter's callback may look at the slots, or drop a permit); those a waiter gave
    /// back go back to the ledger under the lock again, in a loop rather than through
    /// [`Permit`]'s drop, so a run of waiters that gave up costs no stack.
    fn dispatch<'a>(self: &'a Arc<Self>, mut state: MutexGuard<'a, State>) {
        loop {
            let grants = state.grants(Instant::now());
            drop(state);
            let returned = self.hand_out(grants);
            if returned.is_empty() {
                return;
            }
            state = self.lock();
            for flow in &returned {
                state.ledger.give_back(flow);
            }
        }
    }

    /// Each grant to its waiter; answers the flows of those a waiter gave back.
    fn hand_out(self: &Arc<Self>, grants: Vec<(Flow, Waiter, Duration)>) -> Vec<Flow> {
        let mut returned = Vec::new();
        for (flow, waiter, waited) in grants {
            match waiter.grant(self.permit(flow)) {
                Ok(()) => {
                    if let Some(on_grant) = &self.on_grant {
                        on_grant(waited);
                    }
                }
                // The waiter gave up (its reconcile was dropped, or it wants no permit any
                // more): the permit goes to the next one.
                Err(mut unsent) => {
                    unsent.shared = None;
                    returned.push(unsent.flow.clone());
                }
            }
        }
        returned
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
        FairPermits {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    ledger: Ledger::new(limit),
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
            if state.queue.is_empty() && state.may_take(&flow, now) {
                state.ledger.grant(&flow);
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
        self.shared.lock().ledger.free
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

    /// The ledger alone keeps `free + granted = limit`: a grant takes a free permit (none
    /// when none is free), a permit given back frees one, and one given back by a flow that
    /// holds none (twice, or never granted) frees nothing.
    #[test]
    fn the_ledger_keeps_every_permit_free_or_granted() {
        let mut ledger = Ledger::new(2);
        let kept = |l: &Ledger| l.balanced() && l.free + l.granted() == 2;
        assert!(ledger.grant(&flow("a")) && ledger.grant(&flow("b")));
        assert!(!ledger.grant(&flow("a")), "none free");
        assert!(kept(&ledger));
        assert_eq!(
            (ledger.held_by(&flow("a")), ledger.held_by(&flow("b"))),
            (1, 1)
        );
        ledger.give_back(&flow("a"));
        ledger.give_back(&flow("a"));
        ledger.give_back(&flow("never"));
        assert!(kept(&ledger));
        assert_eq!((ledger.free, ledger.held_by(&flow("a"))), (1, 0));
        let unlimited = Ledger::new(0);
        assert_eq!(unlimited.free, usize::MAX);
    }

    /// Through the permits' whole life (granted at once, granted in turn, passed over by a
    /// waiter that gave up and by a callback that gives its permit back, dropped), every
    /// permit is free or granted, and the granted ones are the [`Permit`]s alive.
    #[tokio::test]
    async fn every_permit_is_free_or_held_by_a_live_permit() {
        let slots = FairPermits::new(3, None);
        let ledger = |live: usize| {
            let state = slots.shared.lock();
            let (free, granted) = (state.ledger.free, state.ledger.granted());
            assert_eq!((free + granted, granted), (3, live), "free {free}");
        };
        let a = slots.acquire(flow("a"), Priority::Urgent).await;
        let b = slots.acquire(flow("b"), Priority::Urgent).await;
        let a2 = slots.acquire(flow("a"), Priority::Urgent).await;
        ledger(3);
        let waiting = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(flow("c"), Priority::Urgent).await })
        };
        tokio::task::yield_now().await;
        let gave_up = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(flow("d"), Priority::Urgent).await })
        };
        tokio::task::yield_now().await;
        gave_up.abort();
        slots.offer(flow("e"), Priority::Urgent, Box::new(Err));
        drop(a);
        let c = waiting.await.expect("no panic");
        assert!(c.is_some(), "c waited first");
        ledger(3);
        drop(b);
        ledger(2);
        drop((a2, c));
        ledger(0);
        assert_eq!(slots.stats(), QueueStats::default());
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
            asked: HashMap::new(),
        };
        let mut ledger = Ledger::new(4);
        shares.asked(&flow("big"), start);
        ledger.grant(&flow("big"));
        ledger.grant(&flow("big"));
        let small_asked = start + ACTIVE / 2;
        shares.asked(&flow("small"), small_asked);
        ledger.grant(&flow("small"));
        ledger.grant(&flow("small"));
        let now = start + ACTIVE + ACTIVE / 4;
        assert!(
            !shares.may_take(&ledger, &flow("small"), now),
            "2 of 4 beside a holder"
        );
        assert!(!shares.may_take(&ledger, &flow("big"), now));
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
