//! Where each key is between its news and the end of its reconcile: pure (no clock, no lock,
//! no task), so that the runner's decisions are tested and model-checked on their own.
//!
//! A key is in the book from its first news until a run of it ends with nothing left to do;
//! only that run's end ([`Book::done`]) takes it out. So news of an object whose reconcile
//! runs (or of another object re-created under its name meanwhile) is never lost: it marks
//! the run, and the key is queued again when the run ends.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::time::Duration;

use super::queue::{Flow, Priority};

/// A key's stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for a turn; `urgent` once it was queued as urgent.
    Queued { urgent: bool },
    /// Waiting for its requeue time; `token` names the timer that ends the wait (a timer of an
    /// earlier wait finds another token, and does nothing).
    Delayed { token: u64 },
    /// Reconciling; `again` when news came meanwhile (the run may have read the cache before).
    Running { again: bool },
}

/// What the runner does when a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AfterRun {
    /// News came while it ran: queue it again (urgent) in its flow.
    Queue(Flow),
    /// Wake it after the delay, with this token ([`Book::due`]).
    Delay(Duration, u64),
    /// Nothing left to do: out of the book.
    Idle,
}

struct Pending {
    flow: Flow,
    stage: Stage,
}

/// Every key with something pending, and its stage.
pub struct Book<K> {
    entries: HashMap<K, Pending>,
    tokens: u64,
}

impl<K: Hash + Eq + Clone> Default for Book<K> {
    fn default() -> Self {
        Book {
            entries: HashMap::new(),
            tokens: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> Book<K> {
    /// News of `key`: `true` when it must be queued now with `priority` (new, delayed, or a
    /// settled waiter that became urgent: its older place is given up when its turn comes);
    /// `false` when it waits already or runs (it runs again after, see [`Book::done`]).
    pub fn news(&mut self, key: K, flow: Flow, priority: Priority) -> bool {
        let urgent = priority == Priority::Urgent;
        match self.entries.entry(key) {
            Entry::Vacant(vacant) => {
                let stage = Stage::Queued { urgent };
                vacant.insert(Pending { flow, stage });
                true
            }
            Entry::Occupied(mut occupied) => {
                let stage = &mut occupied.get_mut().stage;
                match stage {
                    Stage::Queued { urgent: was } => {
                        let upgraded = urgent && !*was;
                        *was |= urgent;
                        upgraded
                    }
                    Stage::Delayed { .. } => {
                        *stage = Stage::Queued { urgent };
                        true
                    }
                    Stage::Running { again } => {
                        *again = true;
                        false
                    }
                }
            }
        }
    }

    /// `key`'s turn came: `true` when it waited (it runs now), `false` for an older place of a
    /// key that was let in already, delayed, or is gone (the turn goes to the next).
    pub fn let_in(&mut self, key: &K) -> bool {
        match self.entries.get_mut(key) {
            Some(entry) if matches!(entry.stage, Stage::Queued { .. }) => {
                entry.stage = Stage::Running { again: false };
                true
            }
            _ => false,
        }
    }

    /// `key`'s run ended, asking to be woken after `requeue_after` (none: on news only).
    pub fn done(&mut self, key: &K, requeue_after: Option<Duration>) -> AfterRun {
        let Entry::Occupied(mut occupied) = self.entries.entry(key.clone()) else {
            return AfterRun::Idle;
        };
        let entry = occupied.get_mut();
        match (entry.stage, requeue_after) {
            (Stage::Running { again: true }, _) => {
                entry.stage = Stage::Queued { urgent: true };
                AfterRun::Queue(entry.flow.clone())
            }
            (Stage::Running { again: false }, Some(after)) => {
                self.tokens = self.tokens.wrapping_add(1);
                entry.stage = Stage::Delayed { token: self.tokens };
                AfterRun::Delay(after, self.tokens)
            }
            (Stage::Running { again: false }, None) => {
                occupied.remove();
                AfterRun::Idle
            }
            // Not running: nothing of ours to end.
            _ => AfterRun::Idle,
        }
    }

    /// The timer `token` of `key` fired: its flow when it must be queued now, with
    /// `priority` (recorded, so that news as urgent adds no second place).
    pub fn due(&mut self, key: &K, token: u64, priority: Priority) -> Option<Flow> {
        let entry = self.entries.get_mut(key)?;
        if entry.stage != (Stage::Delayed { token }) {
            return None;
        }
        let urgent = priority == Priority::Urgent;
        entry.stage = Stage::Queued { urgent };
        Some(entry.flow.clone())
    }

    /// `key`'s stage, if it has something pending.
    pub fn stage(&self, key: &K) -> Option<Stage> {
        self.entries.get(key).map(|e| e.stage)
    }

    /// Keys with something pending (queued, delayed or running): the scheduler's depth.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keys waiting for a turn (neither running nor waiting for their requeue time): what
    /// client-go's `workqueue_depth` counts; urgent ones and settled ones apart.
    pub fn queued(&self) -> (usize, usize) {
        let (mut urgent, mut settled) = (0, 0);
        for entry in self.entries.values() {
            match entry.stage {
                Stage::Queued { urgent: true } => urgent += 1,
                Stage::Queued { urgent: false } => settled += 1,
                _ => {}
            }
        }
        (urgent, settled)
    }

    /// Everything pending is dropped: a shutdown.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> Flow {
        Flow::from("ns")
    }

    /// News of a waiting key adds nothing, unless it makes a settled waiter urgent.
    #[test]
    fn news_of_a_waiting_key_is_absorbed() {
        let mut book = Book::default();
        assert!(book.news("x", flow(), Priority::Later));
        assert!(!book.news("x", flow(), Priority::Later));
        assert!(book.news("x", flow(), Priority::Urgent));
        assert!(!book.news("x", flow(), Priority::Urgent));
        assert_eq!(book.len(), 1);
        assert!(book.let_in(&"x"));
        assert!(!book.let_in(&"x"), "its older place gives the turn away");
    }

    /// An object let in, deleted and re-created under the same name before its run ends: the
    /// re-created one's news marks the run, and it is queued again when the run ends (issue
    /// 39's F2: it waited for the resync).
    #[test]
    fn news_while_running_queues_the_key_again_after_the_run() {
        let mut book = Book::default();
        book.news("x", flow(), Priority::Urgent);
        assert!(book.let_in(&"x"));
        assert!(!book.news("x", flow(), Priority::Urgent), "deleted");
        assert!(!book.news("x", flow(), Priority::Urgent), "re-created");
        assert_eq!(book.done(&"x", None), AfterRun::Queue(flow()));
        assert!(book.let_in(&"x"));
        assert_eq!(book.done(&"x", None), AfterRun::Idle);
        assert!(book.is_empty());
    }

    /// A requeue waits for its timer; news cuts the wait short, and the old timer then does
    /// nothing.
    #[test]
    fn a_delay_ends_with_its_timer_or_with_news() {
        let mut book = Book::default();
        book.news("x", flow(), Priority::Urgent);
        book.let_in(&"x");
        let AfterRun::Delay(after, first) = book.done(&"x", Some(Duration::from_secs(1))) else {
            panic!("a delay")
        };
        assert_eq!(after, Duration::from_secs(1));
        assert_eq!(book.due(&"x", first, Priority::Later), Some(flow()));
        assert_eq!(
            book.due(&"x", first, Priority::Later),
            None,
            "queued already"
        );
        book.let_in(&"x");
        let AfterRun::Delay(_, second) = book.done(&"x", Some(Duration::from_secs(5))) else {
            panic!("a delay")
        };
        assert!(
            book.news("x", flow(), Priority::Later),
            "news ends the wait"
        );
        assert_eq!(book.due(&"x", second, Priority::Later), None);
        assert_eq!(book.stage(&"x"), Some(Stage::Queued { urgent: false }));
    }

    /// A timer queues its key as urgent as it is told, and the book says so: news as urgent
    /// then adds no second place (issue 48's N4: the book recorded every timer's requeue as
    /// settled, and urgent news queued the key a second time).
    #[test]
    fn a_timer_queues_its_key_as_urgent_as_it_is_told() {
        let mut book = Book::default();
        book.news("x", flow(), Priority::Urgent);
        book.let_in(&"x");
        let AfterRun::Delay(_, token) = book.done(&"x", Some(Duration::from_secs(1))) else {
            panic!("a delay")
        };
        assert_eq!(book.due(&"x", token, Priority::Urgent), Some(flow()));
        assert_eq!(book.stage(&"x"), Some(Stage::Queued { urgent: true }));
        assert!(
            !book.news("x", flow(), Priority::Urgent),
            "queued as urgent already"
        );
    }
}
