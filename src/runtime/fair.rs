//! Fair queuing, in the spirit of kube-apiserver's API Priority and Fairness: the waiters of a
//! limited resource (the request slots, a controller's reconciles) are queued by *flow*, the
//! flows are served in turn (round-robin, one grant each), and each flow is served in arrival
//! order. A flow with one request waiting is served after at most one request of each other
//! flow, however deep their backlogs; a flow with a backlog still gets every free turn when it
//! is alone, so the resource stays busy while anyone has work.
//!
//! The flow is the namespace (see docs/architecture.md, "Fair to every user"): the unit of
//! tenancy on a shared cluster (a workshop participant, a team), known for every object
//! without a lookup, and a flow per namespace cannot be multiplied by creating more objects.
//!
//! Waiters come in two priorities. An object that is not settled (new, changed, or waiting for
//! its children) is [`Priority::Urgent`]; one whose status is already the answer for its
//! generation (what an initial list after a restart, or a resync, brings in thousands) is
//! [`Priority::Later`]: urgent waiters of any flow go first. A waiter that has waited
//! [`AGING`] counts as urgent, and goes before the urgent waiters of its own flow, so nothing
//! waits forever (controller-runtime's priority queue starved its initial list for good,
//! kubernetes-sigs/controller-runtime#3496).
//!
//! Request slots add what APF calls a flow's share of the server's concurrency
//! ([`FairSlots::shared`]): the server answers what it was sent in arrival order, so a light
//! flow's request, once sent, still waits behind every request a heavy flow already has open
//! there. While more than one flow has asked within [`ACTIVE`], each may hold at most its
//! share of the slots ([`share`]), and the slots a heavy flow may not take stay free: fewer of
//! its requests are queued at the server ahead of the light flow's. Alone, a flow takes them all.
//!
//! [`FairQueue`] decides who is next (pure: no clock, no locks); [`FairSlots`] hands out its
//! permits in that order.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::metrics::QueueNow;

/// After this long a [`Priority::Later`] waiter is served as an urgent one.
pub const AGING: Duration = Duration::from_secs(1);

/// A flow that asked for a slot this recently counts as active for the shares: a small
/// object's requests come in steps (its children's creates, their statuses, its own), with a
/// watch event and a reconcile between two steps, and a heavy flow that took every slot back
/// in each such gap would be ahead of the light flow's next step at the server again.
pub const ACTIVE: Duration = Duration::from_secs(1);

/// How many slots of `limit` one flow may hold while `active` flows share them: an equal share,
/// at least one; all of them for a flow alone.
pub fn share(limit: usize, active: usize) -> usize {
    limit.div_ceil(active.max(1)).max(1)
}

/// The key requests are queued fairly by (a namespace).
pub type Flow = Arc<str>;

/// Whether a waiter goes before the settled objects of a resync or an initial list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// New, changed, or waiting for something: someone is waiting for its answer.
    Urgent,
    /// Already settled: a resync, or the initial list after a restart.
    Later,
}

struct Waiting<T> {
    since: Instant,
    item: T,
}

struct FlowQueue<T> {
    urgent: VecDeque<Waiting<T>>,
    later: VecDeque<Waiting<T>>,
}

impl<T> FlowQueue<T> {
    fn aged(&self, now: Instant, aging: Duration) -> bool {
        self.later
            .front()
            .is_some_and(|w| now.saturating_duration_since(w.since) >= aging)
    }

    fn has_urgent(&self, now: Instant, aging: Duration) -> bool {
        !self.urgent.is_empty() || self.aged(now, aging)
    }

    /// The flow's next waiter: an aged one first (it has waited longest), then urgent ones in
    /// arrival order, then the others.
    fn pop(&mut self, now: Instant, aging: Duration) -> Option<Waiting<T>> {
        if self.aged(now, aging) {
            return self.later.pop_front();
        }
        self.urgent.pop_front().or_else(|| self.later.pop_front())
    }

    fn is_empty(&self) -> bool {
        self.urgent.is_empty() && self.later.is_empty()
    }

    fn len(&self) -> usize {
        self.urgent.len() + self.later.len()
    }

    fn oldest(&self) -> Option<Instant> {
        let fronts = [self.urgent.front(), self.later.front()];
        fronts.into_iter().flatten().map(|w| w.since).min()
    }
}

/// Who is served next: the flows in turn, each in arrival order, urgent waiters first.
pub struct FairQueue<T> {
    flows: HashMap<Flow, FlowQueue<T>>,
    /// The flows with waiters, in the order of their next turn.
    turns: VecDeque<Flow>,
    aging: Duration,
}

impl<T> FairQueue<T> {
    pub fn new(aging: Duration) -> Self {
        FairQueue {
            flows: HashMap::new(),
            turns: VecDeque::new(),
            aging,
        }
    }

    /// `item` waits in `flow` from `now`.
    pub fn push(&mut self, flow: Flow, priority: Priority, now: Instant, item: T) {
        let queue = self.flows.entry(flow.clone()).or_insert_with(|| {
            self.turns.push_back(flow);
            FlowQueue {
                urgent: VecDeque::new(),
                later: VecDeque::new(),
            }
        });
        let waiting = Waiting { since: now, item };
        match priority {
            Priority::Urgent => queue.urgent.push_back(waiting),
            Priority::Later => queue.later.push_back(waiting),
        }
    }

    /// The next waiter and how long it waited: the first flow in turn with an urgent (or aged)
    /// waiter, else the first flow in turn; that flow goes to the back of the turns.
    pub fn pop(&mut self, now: Instant) -> Option<(T, Duration)> {
        self.pop_where(now, |_| true)
            .map(|(_, item, waited)| (item, waited))
    }

    /// [`FairQueue::pop`] among the flows `may` allows (those under their share), with the
    /// waiter's flow; `None` when none of them has a waiter.
    pub fn pop_where(
        &mut self,
        now: Instant,
        may: impl Fn(&Flow) -> bool,
    ) -> Option<(Flow, T, Duration)> {
        let aging = self.aging;
        let turn = (self.turns.iter())
            .position(|f| may(f) && self.flows.get(f).is_some_and(|q| q.has_urgent(now, aging)))
            .or_else(|| self.turns.iter().position(&may))?;
        let flow = self.turns.remove(turn)?;
        let queue = self.flows.get_mut(&flow)?;
        let waiting = queue.pop(now, aging);
        if queue.is_empty() {
            self.flows.remove(&flow);
        } else {
            self.turns.push_back(flow.clone());
        }
        waiting.map(|w| (flow, w.item, now.saturating_duration_since(w.since)))
    }

    /// Waiters now.
    pub fn len(&self) -> usize {
        self.flows.values().map(FlowQueue::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// Flows with waiters now.
    pub fn flows(&self) -> usize {
        self.turns.len()
    }

    /// How long the longest waiter has waited by `now`.
    pub fn longest_wait(&self, now: Instant) -> Duration {
        self.flows
            .values()
            .filter_map(FlowQueue::oldest)
            .min()
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }
}

/// What a [`FairSlots`] shows the metrics: waiters, flows waiting, the longest wait now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueStats {
    pub waiting: usize,
    pub flows: usize,
    pub longest_wait: Duration,
}

/// Called with each grant's wait (for the wait-time histogram).
pub type OnGrant = Arc<dyn Fn(Duration) + Send + Sync>;

/// What takes a permit when its turn comes: [`FairSlots::offer`]'s callback. It runs under the
/// slots' lock (so it must not take a permit or drop one itself), and gives the permit back
/// (`Err`) when it no longer wants it.
pub type Grant = Box<dyn FnOnce(Permit) -> Result<(), Permit> + Send>;

/// Who waits for a permit: a caller that awaits it ([`FairSlots::acquire`]), or a callback
/// ([`FairSlots::offer`]).
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
    /// With shares ([`FairSlots::shared`]): the permits each flow holds, and when each flow
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
        let recent = (self.asked.iter())
            .filter(|(_, at)| now.saturating_duration_since(**at) < ACTIVE)
            .map(|(f, _)| f);
        let holding = self.held.keys().filter(|f| !self.asked.contains_key(*f));
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
    /// Whether a caller yields once before taking a free permit (see [`FairSlots::gathering`]).
    gather: bool,
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
        self.dispatch(&mut state);
    }

    /// The free permits go to the next live waiters, in the queue's order, among the flows
    /// under their share; what no such flow waits for stays free.
    fn dispatch(self: &Arc<Self>, state: &mut State) {
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
                return;
            };
            let permit = self.permit(flow.clone());
            match waiter.grant(permit) {
                Ok(()) => {
                    state.free -= 1;
                    if let Some(shares) = &mut state.shares {
                        shares.took(&flow);
                    }
                    if let Some(on_grant) = &self.on_grant {
                        on_grant(waited);
                    }
                }
                // The waiter gave up (its reconcile was dropped, or it wants no permit any
                // more): the next one. (Not given back through `release`: the lock is held.)
                Err(mut unsent) => unsent.shared = None,
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
pub struct FairSlots {
    shared: Arc<Shared>,
}

/// One permit of a [`FairSlots`], given back when dropped.
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

impl FairSlots {
    /// `limit` permits (0: as many as asked for).
    pub fn new(limit: usize, on_grant: Option<OnGrant>) -> Self {
        let free = if limit == 0 { usize::MAX } else { limit };
        FairSlots {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    free,
                    closed: false,
                    queue: FairQueue::new(AGING),
                    shares: None,
                }),
                on_grant,
                gather: false,
            }),
        }
    }

    /// The same, for requests to a server that answers in arrival order: while several flows
    /// are active, each holds at most its [`share`] of the `limit` permits, and the rest stay
    /// free (see the module's documentation). No limit, no shares.
    pub fn shared(limit: usize, on_grant: Option<OnGrant>) -> Self {
        FairSlots::new(limit, on_grant).with_shares(limit)
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

    /// The same, for reconciles: even with a permit free, a caller queues and yields once
    /// before the free permits are handed out. kube-runtime's `Controller` starts every due
    /// reconcile in one poll, and a reconcile that needs no request (a settled object of the
    /// initial list) runs to its end in its first poll: taking a free permit at once would
    /// serve them in the order they were started, before the ones started after them were
    /// even queued. The yield lets every reconcile started in the same round queue first,
    /// and the queue's order decides. (Writes need no such round: when their slots are free
    /// nobody waits, and when they are not, the queue decides anyway.)
    ///
    /// With `shares`, the reconciles too are shared by the active flows ([`FairSlots::shared`]):
    /// a big object's reconciles spend most of their time waiting for request slots, and
    /// holding every turn of the gate meanwhile they would keep a small object's reconcile
    /// waiting for one of them to end.
    pub fn gathering(limit: usize, shares: bool, on_grant: Option<OnGrant>) -> Self {
        let mut slots = FairSlots::new(limit, on_grant);
        if let Some(shared) = Arc::get_mut(&mut slots.shared) {
            shared.gather = true;
        }
        if shares {
            slots.with_shares(limit)
        } else {
            slots
        }
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
            if !self.shared.gather
                && state.free > 0
                && state.queue.is_empty()
                && state.may_take(&flow, now)
            {
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
        if self.shared.gather {
            tokio::task::yield_now().await;
        }
        self.shared.dispatch(&mut self.shared.lock());
        granted.await.ok()
    }

    /// `grant` gets a permit in `flow`'s turn, from the dispatch that hands it out (at once
    /// when one is free and may be taken): for work that waits without a task of its own
    /// (see [`crate::runtime::gate`]). Nothing happens once closed.
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
        self.shared.dispatch(&mut state);
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

    fn drain(q: &mut FairQueue<&'static str>, now: Instant) -> Vec<&'static str> {
        std::iter::from_fn(|| q.pop(now).map(|(item, _)| item)).collect()
    }

    /// A flow's one waiter goes after at most one of another flow's backlog.
    #[test]
    fn a_light_flow_goes_ahead_of_a_heavy_backlog() {
        let now = Instant::now();
        let mut q = FairQueue::new(AGING);
        for item in ["big-1", "big-2", "big-3", "big-4"] {
            q.push(flow("big"), Priority::Urgent, now, item);
        }
        q.push(flow("small"), Priority::Urgent, now, "small-1");
        q.push(flow("small"), Priority::Urgent, now, "small-2");
        assert_eq!(q.flows(), 2);
        assert_eq!(
            drain(&mut q, now),
            ["big-1", "small-1", "big-2", "small-2", "big-3", "big-4"]
        );
        assert!(q.is_empty());
        assert_eq!(q.len(), 0);
    }

    /// Settled objects (a resync, a restart's initial list) wait for the urgent ones of every
    /// flow, each flow still in arrival order.
    #[test]
    fn urgent_waiters_go_before_settled_ones() {
        let now = Instant::now();
        let mut q = FairQueue::new(AGING);
        q.push(flow("a"), Priority::Later, now, "a-resync-1");
        q.push(flow("a"), Priority::Later, now, "a-resync-2");
        q.push(flow("a"), Priority::Urgent, now, "a-new");
        q.push(flow("b"), Priority::Urgent, now, "b-new");
        assert_eq!(
            drain(&mut q, now),
            ["a-new", "b-new", "a-resync-1", "a-resync-2"]
        );
    }

    /// A settled waiter that waited long enough goes first, even before urgent ones: nothing
    /// starves behind a steady stream of urgent work (controller-runtime#3496).
    #[test]
    fn a_waiter_that_aged_is_served_before_new_urgent_ones() {
        let start = Instant::now();
        let mut q = FairQueue::new(AGING);
        q.push(flow("a"), Priority::Later, start, "a-resync");
        let later = start + AGING;
        q.push(flow("a"), Priority::Urgent, later, "a-new");
        q.push(flow("b"), Priority::Urgent, later, "b-new");
        assert_eq!(q.longest_wait(later), AGING);
        assert_eq!(q.pop(later), Some(("a-resync", AGING)));
        assert_eq!(drain(&mut q, later), ["b-new", "a-new"]);
    }

    /// A flow alone takes every turn: nothing is held back for flows that have no work.
    #[test]
    fn a_flow_alone_is_served_in_arrival_order() {
        let now = Instant::now();
        let mut q = FairQueue::new(AGING);
        for item in ["1", "2", "3"] {
            q.push(flow("only"), Priority::Later, now, item);
        }
        assert_eq!(drain(&mut q, now), ["1", "2", "3"]);
    }

    /// The permits go to the waiters in the queue's order, and a waiter that gave up is
    /// skipped without losing the permit.
    #[tokio::test]
    async fn permits_are_handed_out_in_turn() {
        let slots = FairSlots::new(1, None);
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
        let slots = FairSlots::shared(4, None);
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

    /// Without shares (the gates of other kinds, or `--flow-shares=false`), a flow takes
    /// every free slot whoever else asked.
    #[tokio::test]
    async fn unshared_slots_go_to_whoever_waits() {
        let slots = FairSlots::new(2, None);
        let _light = slots.acquire(flow("small"), Priority::Urgent).await;
        let heavy = slots.acquire(flow("big"), Priority::Urgent).await;
        assert!(heavy.is_some());
        assert_eq!(slots.free(), 0);
    }

    /// A closed gate turns its waiters away.
    #[tokio::test]
    async fn closing_turns_every_waiter_away() {
        let slots = FairSlots::new(1, None);
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
