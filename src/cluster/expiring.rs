//! What the manager remembers between reconciles (writes whose watch echo has not arrived
//! yet, failures counted for the backoff), in maps whose entries expire.
//!
//! An entry is normally forgotten by the reconcile that looks it up next; but the object may
//! be gone before that (a Fermat shrunk from 20000 to 2 leaves thousands of entries nobody
//! looks up again). So every entry also has a time to live, a periodic [`Expiring::expire`]
//! drops what outlived it, and the size of each map is exported as
//! `math_controller_remembered_entries{memory}`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kube::{Resource, ResourceExt};

use crate::metrics::Metrics;

/// How the manager's memories name an object: `Kind/namespace/name`.
pub(crate) fn key(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind}/{namespace}/{name}")
}

/// [`key`] of an object: what its remembered writes, failures and backoff are filed under.
pub(crate) fn object_key<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    key(
        &K::kind(&()),
        &obj.namespace().unwrap_or_default(),
        &obj.name_any(),
    )
}

/// A map from object keys to remembered values that expire after `ttl`.
pub struct Expiring<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    /// The `memory` label of the size gauge.
    label: &'static str,
    metrics: Metrics,
    ttl: Duration,
}

struct Entry<V> {
    value: V,
    since: Instant,
}

impl<V: Clone> Expiring<V> {
    pub fn new(label: &'static str, metrics: Metrics, ttl: Duration) -> Self {
        Expiring {
            entries: Mutex::default(),
            label,
            metrics,
            ttl,
        }
    }

    /// How long entries live.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry<V>>> {
        // A panic while holding the lock leaves a map that is still a valid map.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn report(&self, entries: &HashMap<String, Entry<V>>) {
        self.metrics.set_remembered(self.label, entries.len());
    }

    /// How many entries are remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Remember `value` for `key` from now on, replacing what was remembered.
    pub fn insert(&self, key: String, value: V) {
        let mut entries = self.lock();
        let since = Instant::now();
        entries.insert(key, Entry { value, since });
        self.report(&entries);
    }

    /// The value remembered for `key` and how much longer it lives; an expired entry is
    /// forgotten and answers `None`.
    pub fn get(&self, key: &str) -> Option<(V, Duration)> {
        let mut entries = self.lock();
        let entry = entries.get(key)?;
        match left(self.ttl, entry.since.elapsed()) {
            Some(left) => Some((entry.value.clone(), left)),
            None => {
                entries.remove(key);
                self.report(&entries);
                None
            }
        }
    }

    /// Forget `key`.
    pub fn remove(&self, key: &str) {
        let mut entries = self.lock();
        if entries.remove(key).is_some() {
            self.report(&entries);
        }
    }

    /// Replace the value for `key` by `update(previous value)` (the previous one only while it
    /// lives), and answer the new value.
    pub fn update(&self, key: &str, update: impl FnOnce(Option<&V>) -> V) -> V {
        let mut entries = self.lock();
        let previous = entries
            .get(key)
            .filter(|e| left(self.ttl, e.since.elapsed()).is_some())
            .map(|e| &e.value);
        let value = update(previous);
        let since = Instant::now();
        let entry = Entry {
            value: value.clone(),
            since,
        };
        entries.insert(key.to_string(), entry);
        self.report(&entries);
        value
    }

    /// Keep only the entries for which `keep(key, value)` holds.
    pub fn retain(&self, mut keep: impl FnMut(&str, &V) -> bool) {
        let mut entries = self.lock();
        entries.retain(|key, e| keep(key, &e.value));
        self.report(&entries);
    }

    /// Forget every entry that outlived its time to live.
    pub fn expire(&self) {
        let mut entries = self.lock();
        entries.retain(|_, e| left(self.ttl, e.since.elapsed()).is_some());
        self.report(&entries);
    }
}

/// The time an entry of age `age` has left to live, `None` once it is over.
fn left(ttl: Duration, age: Duration) -> Option<Duration> {
    ttl.checked_sub(age).filter(|left| !left.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remembered(metrics: &Metrics) -> Option<String> {
        metrics
            .encode()
            .lines()
            .find(|l| l.contains(r#"remembered_entries{memory="child_writes"}"#))
            .map(str::to_string)
    }

    #[test]
    fn entries_live_for_their_time_and_are_counted() {
        let metrics = Metrics::new();
        let memory = Expiring::new("child_writes", metrics.clone(), Duration::from_secs(60));
        memory.insert("a".into(), 1);
        memory.insert("b".into(), 2);
        let (value, left) = memory.get("a").expect("a lives");
        assert_eq!(value, 1);
        assert!(left <= Duration::from_secs(60));
        assert!(remembered(&metrics).is_some_and(|l| l.ends_with(" 2")));
        memory.remove("a");
        assert_eq!(memory.get("a"), None);
        assert_eq!(
            memory.update("b", |v| v.copied().unwrap_or_default() + 1),
            3
        );
        memory.expire();
        assert!(remembered(&metrics).is_some_and(|l| l.ends_with(" 1")));
    }

    #[test]
    fn expired_entries_are_forgotten() {
        let metrics = Metrics::new();
        let memory = Expiring::new("child_writes", metrics.clone(), Duration::ZERO);
        memory.insert("a".into(), 1);
        memory.insert("b".into(), 2);
        assert_eq!(memory.update("b", |v| v.copied().unwrap_or(10)), 10);
        memory.expire();
        assert!(remembered(&metrics).is_some_and(|l| l.ends_with(" 0")));
        assert_eq!(memory.get("a"), None);
        assert_eq!(
            left(Duration::from_secs(2), Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(left(Duration::from_secs(2), Duration::from_secs(3)), None);
    }
}
