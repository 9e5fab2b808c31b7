//! The watch cache (kube-apiserver's `Cacher`): the recent history of changes, from which
//! a watch resumes at a resourceVersion, and the live watchers each change is sent to.
//! Changes older than [`HISTORY_LIMIT`] (or before a [`State::compact`]) are gone: a
//! watch from there answers 410 Expired.

use super::State;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// How many changes the watch history keeps before old resourceVersions expire.
pub const HISTORY_LIMIT: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One write, as recorded in the history and sent to watchers (storage shape).
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub storage: String,
    pub ns: String,
    pub kind: ChangeType,
    pub old: Option<Value>,
    pub new: Value,
}

#[derive(Debug)]
pub enum WatchMsg {
    Change(Arc<Change>),
}

pub struct Watcher {
    pub storage: String,
    pub ns: Option<String>,
    pub tx: UnboundedSender<WatchMsg>,
}

/// The history of changes and the live watchers.
#[derive(Default)]
pub struct WatchCache {
    /// Compaction (etcd's): resourceVersions below this are gone for watches, `continue`
    /// tokens and exact lists (410).
    pub floor: u64,
    /// Where the history starts after a restart (the watch cache's initial list): watches
    /// from below answer 410 Expired, but lists and `continue` tokens, which a real
    /// kube-apiserver serves from etcd, still work.
    pub restarted_at: u64,
    pub history: VecDeque<Arc<Change>>,
    pub watchers: Vec<Watcher>,
}

impl WatchCache {
    pub(super) fn emit(&mut self, change: Change) {
        let change = Arc::new(change);
        self.watchers.retain(|w| {
            if w.storage != change.storage {
                return !w.tx.is_closed();
            }
            if let Some(ns) = &w.ns
                && *ns != change.ns
            {
                return !w.tx.is_closed();
            }
            w.tx.send(WatchMsg::Change(change.clone())).is_ok()
        });
        self.history.push_back(change);
        while self.history.len() > HISTORY_LIMIT {
            if let Some(c) = self.history.pop_front() {
                self.floor = c.rv;
            }
        }
    }

    /// The changes after resourceVersion `from` to one resource (optionally in one
    /// namespace), oldest first: what a watch resuming at `from` replays.
    pub fn changes_since(&self, from: u64, storage: &str, ns: Option<&str>) -> Vec<Arc<Change>> {
        self.history
            .iter()
            .filter(|c| c.rv > from && c.storage == storage && ns.is_none_or(|n| c.ns == n))
            .cloned()
            .collect()
    }
}

impl WatchCache {
    /// The oldest resourceVersion a watch may resume from (older: 410 Expired).
    pub fn watch_floor(&self) -> u64 {
        self.floor.max(self.restarted_at)
    }
}

impl State {
    /// Every resourceVersion issued so far becomes "too old" (410 Gone).
    pub fn compact(&mut self) {
        self.rv += 1;
        self.watch.floor = self.rv;
        self.watch.history.clear();
    }

    /// What a kube-apiserver restart does to the watch cache: it is rebuilt by a list at the
    /// current resourceVersion (after the writes a starting apiserver makes, hence the
    /// bump), so every watch resuming from an earlier resourceVersion is answered
    /// `too old resource version: X (Y)`, 410 Expired; objects, the counter and etcd's
    /// history (lists, `continue` tokens) are kept.
    pub fn lose_watch_cache(&mut self) {
        self.rv += 1;
        self.watch.restarted_at = self.rv;
        self.watch.history.clear();
    }
}
