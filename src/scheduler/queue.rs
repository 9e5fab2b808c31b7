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
//! [`AGING`] counts as urgent, and takes turns with the urgent waiters of its own flow, so
//! nothing waits forever (controller-runtime's priority queue starved its initial list for good,
//! kubernetes-sigs/controller-runtime#3496).
//!
//! Request slots add what APF calls a flow's share of the server's concurrency
//! ([`FairPermits::shared`]): the server answers what it was sent in arrival order, so a light
//! flow's request, once sent, still waits behind every request a heavy flow already has open
//! there. While more than one flow has asked within [`ACTIVE`], each may hold at most its
//! share of the slots ([`share`]), and the slots a heavy flow may not take stay free: fewer of
//! its requests are queued at the server ahead of the light flow's. Alone, a flow takes them all.
//!
//! [`FairQueue`] decides who is next (pure: no clock, no locks); [`super::permits::FairPermits`]
//! hands out its permits in that order.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Whether the flow's last turn went to an aged waiter: aged and urgent waiters take
    /// turns, so neither waits behind the other's whole backlog.
    aged_last: bool,
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

    /// The flow's next waiter: urgent ones in arrival order, then the others; an aged one
    /// (it has waited longest) takes every other turn from the urgent ones, never all of them:
    /// after a restart, a new object waits behind one settled object, not behind its
    /// namespace's whole backlog.
    fn pop(&mut self, now: Instant, aging: Duration) -> Option<Waiting<T>> {
        let aged = self.aged(now, aging) && (self.urgent.is_empty() || !self.aged_last);
        self.aged_last = aged;
        if aged {
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
                aged_last: false,
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

    /// 100 settled objects that aged, then a new one 2 s later: the new one is served second,
    /// not after the whole backlog (issue 39's F5: it was served 101st), and the aged ones
    /// still get every other turn.
    #[test]
    fn aged_work_takes_turns_with_new_urgent_work() {
        let start = Instant::now();
        let mut q = FairQueue::new(AGING);
        let names: Vec<String> = (0..100).map(|i| format!("settled-{i}")).collect();
        for name in &names {
            q.push(flow("big"), Priority::Later, start, name.as_str());
        }
        let later = start + Duration::from_secs(2);
        q.push(flow("big"), Priority::Urgent, later, "new");
        q.push(flow("big"), Priority::Urgent, later, "newer");
        let served: Vec<&str> = std::iter::from_fn(|| q.pop(later).map(|(item, _)| item))
            .take(5)
            .collect();
        assert_eq!(
            served,
            ["settled-0", "new", "settled-1", "newer", "settled-2"]
        );
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
}
