//! The scheduler's invariants, checked over many random interleavings of its events (news,
//! turns, run ends with and without a requeue, timers, gave-up places) against the same pure
//! parts the runner drives ([`Book`], [`FairQueue`]), with a limit of concurrent runs:
//!
//! - one run of a key at a time;
//! - no key lost: every key with news after its last run's start runs again;
//! - every flow served: once every waiter aged (all equally urgent), a flow with a waiter is
//!   served within as many turns as there are flows.
//!
//! A seeded generator rather than a property-testing crate: the cases are reproducible from
//! their seed, which a failure prints.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::book::{AfterRun, Book};
use super::queue::{AGING, FairQueue, Flow, Priority};

/// xorshift64*: enough randomness for interleavings, no crate.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

const KEYS: u64 = 12;
const FLOWS: u64 = 3;
const LIMIT: usize = 3;

struct Model {
    book: Book<u64>,
    queue: FairQueue<u64>,
    running: HashSet<u64>,
    timers: Vec<(u64, u64)>,
    /// Keys with news since their last run started: each must run again.
    owed: HashSet<u64>,
    start: Instant,
    now: Instant,
}

fn flow_of(key: u64) -> Flow {
    Flow::from(format!("ns-{}", key % FLOWS))
}

impl Model {
    fn new() -> Model {
        let start = Instant::now();
        Model {
            book: Book::default(),
            queue: FairQueue::new(AGING),
            running: HashSet::new(),
            timers: Vec::new(),
            owed: HashSet::new(),
            start,
            now: start,
        }
    }

    fn news(&mut self, key: u64, priority: Priority) {
        self.owed.insert(key);
        if self.book.news(key, flow_of(key), priority) {
            self.queue.push(flow_of(key), priority, self.now, key);
        }
    }

    /// A free permit goes to the next waiter: `Some(flow)` served (a gave-up place too).
    fn turn(&mut self) -> Option<Flow> {
        if self.running.len() >= LIMIT {
            return None;
        }
        let (key, _) = self.queue.pop(self.now)?;
        if self.book.let_in(&key) {
            assert!(self.running.insert(key), "{key} runs twice at once");
            self.owed.remove(&key);
        }
        Some(flow_of(key))
    }

    fn end(&mut self, key: u64, requeue: Option<Duration>) {
        assert!(self.running.remove(&key));
        match self.book.done(&key, requeue) {
            AfterRun::Queue(flow) => self.queue.push(flow, Priority::Urgent, self.now, key),
            AfterRun::Delay(_, token) => self.timers.push((key, token)),
            AfterRun::Idle => {}
        }
    }

    fn fire(&mut self, index: usize, priority: Priority) {
        let (key, token) = self.timers.swap_remove(index);
        if let Some(flow) = self.book.due(&key, token, priority) {
            self.owed.insert(key);
            self.queue.push(flow, priority, self.now, key);
        }
    }

    fn step(&mut self, random: &mut Random) {
        self.now += Duration::from_millis(random.below(300));
        let priority = if random.below(2) == 0 {
            Priority::Urgent
        } else {
            Priority::Later
        };
        match random.below(5) {
            0 | 1 => self.news(random.below(KEYS), priority),
            2 => {
                self.turn();
            }
            3 if !self.running.is_empty() => {
                let mut keys: Vec<u64> = self.running.iter().copied().collect();
                keys.sort_unstable();
                let key = keys[random.below(keys.len() as u64) as usize];
                let requeue = (random.below(3) == 0).then(|| Duration::from_secs(1));
                self.end(key, requeue);
            }
            _ if !self.timers.is_empty() => {
                let index = random.below(self.timers.len() as u64) as usize;
                self.fire(index, priority);
            }
            _ => {}
        }
    }

    /// Runs end without a requeue, timers fire, turns are taken, until nothing is pending;
    /// every flow with a waiter is served within [`FLOWS`] turns meanwhile.
    fn drain(&mut self, seed: u64) {
        self.now = self.start + Duration::from_secs(3600);
        let mut since_served: HashMap<Flow, u64> = HashMap::new();
        for _ in 0..10_000 {
            // Every waiter aged: all flows equally urgent.
            self.now += AGING * 2;
            while let Some(index) = self.timers.len().checked_sub(1) {
                self.fire(index, Priority::Later);
            }
            if let Some(served) = self.turn() {
                for (flow, turns) in since_served.iter_mut() {
                    *turns += 1;
                    assert!(*turns <= FLOWS, "seed {seed}: {flow} not served");
                }
                since_served.remove(&served);
                for key in 0..KEYS {
                    if self.book.stage(&key).is_some() && !self.running.contains(&key) {
                        since_served.entry(flow_of(key)).or_insert(0);
                    }
                }
                continue;
            }
            let Some(&key) = self.running.iter().next() else {
                break;
            };
            self.end(key, None);
        }
        assert!(self.owed.is_empty(), "seed {seed}: lost {:?}", self.owed);
        assert!(self.book.is_empty(), "seed {seed}: still pending");
    }
}

#[test]
fn no_key_is_lost_none_runs_twice_every_flow_is_served() {
    for seed in 1..=300u64 {
        let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut model = Model::new();
        for _ in 0..400 {
            model.step(&mut random);
        }
        model.drain(seed);
    }
}
