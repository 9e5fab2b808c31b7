//! Statuses written whose echo the watch has not delivered yet: the status as far as we
//! know, for a reconcile that runs in between, and the echo itself recognised when it comes
//! ([`WrittenStatuses::own_echo`]): the manager's own status write does not reconcile its
//! object again (for a Fermat 10000, a plan over 5000 Tuples after each of its status writes).
//!
//! It only decides whether a write is due (and keeps the `Ready` condition's
//! `lastTransitionTime`): every write states the whole status
//! ([`whole_status`](crate::reconcile::status::whole_status)), so a memory older than the
//! server's status costs at most a write, never a field left from another spec. Without it,
//! a reconcile between a status write and its echo (a second child reported meanwhile) builds
//! on the stale cache: the `Ready` condition gets a new `lastTransitionTime` and the same
//! status is written twice.

use std::time::Duration;

use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cluster::expiring::{Expiring, object_key};
use crate::metrics::Metrics;

/// A status write that the watch has not delivered yet.
#[derive(Clone)]
struct WrittenStatus {
    /// The object's resourceVersion in the cache when we wrote.
    seen: String,
    /// The object's generation when we wrote: the spec the status answers.
    generation: Option<i64>,
    status: serde_json::Value,
}

/// Whether an object as the watch shows it (its `generation`, its `status` as JSON) is the
/// echo of `written`: the status we wrote, for the spec we wrote it for. Then nothing in it
/// is news to its reconcile: its spec is the one reconciled, its status the one decided. An
/// echo carrying a newer spec (changed while we wrote) is news.
fn is_echo_of(
    written: &WrittenStatus,
    generation: Option<i64>,
    status: Option<&serde_json::Value>,
) -> bool {
    written.generation == generation && status == Some(&written.status)
}

/// The statuses written last, by object, until the cache shows the object past the
/// resourceVersion it had when we wrote.
pub struct WrittenStatuses {
    written: Expiring<WrittenStatus>,
}

impl WrittenStatuses {
    /// A memory whose entries are dropped after `timeout` even if no echo came (the same
    /// safety net as the children's expectations).
    pub fn new(metrics: Metrics, timeout: Duration) -> WrittenStatuses {
        WrittenStatuses {
            written: Expiring::new("status_writes", metrics, timeout),
        }
    }

    /// The object's status as far as we know: the one we wrote last, while the cache still
    /// shows the object as it was before that write; else the cached one (`cached`).
    pub fn known<P, S>(&self, obj: &P, cached: Option<&S>) -> Option<S>
    where
        P: Resource<DynamicType = ()>,
        S: Clone + DeserializeOwned,
    {
        let key = object_key(obj);
        self.last_written(&key, obj.resource_version().as_deref())
            .and_then(|written| serde_json::from_value(written).ok())
            .or_else(|| cached.cloned())
    }

    /// `status` is being written for `obj` (as the cache shows it now): remembered until the
    /// cache shows the object past that resourceVersion, or its echo comes. Said before the
    /// write is sent, so that an echo faster than the write's answer is recognised; a write
    /// that fails is [`WrittenStatuses::forget`]ten.
    pub fn written<P: Resource<DynamicType = ()>>(&self, obj: &P, status: serde_json::Value) {
        if let Some(seen) = obj.resource_version() {
            let generation = obj.meta().generation;
            let written = WrittenStatus {
                seen,
                generation,
                status,
            };
            self.written.insert(object_key(obj), written);
        }
    }

    /// The status write for `obj` failed: nothing of it will come back.
    pub fn forget<P: Resource<DynamicType = ()>>(&self, obj: &P) {
        self.written.remove(&object_key(obj));
    }

    /// Whether `obj`, as the watch just delivered it, is only the echo of the status we wrote
    /// last (then its reconcile has nothing to do for it, and the memory is no longer
    /// needed: the cache shows it). Anything else about it (a spec changed meanwhile, a status
    /// somebody else wrote) is news.
    pub fn own_echo<P: Resource<DynamicType = ()> + Serialize>(&self, obj: &P) -> bool {
        let key = object_key(obj);
        let Some((written, _)) = self.written.get(&key) else {
            return false;
        };
        let Ok(shown) = serde_json::to_value(obj) else {
            return false;
        };
        let echo = is_echo_of(&written, obj.meta().generation, shown.get("status"));
        if echo {
            self.written.remove(&key);
        }
        echo
    }

    /// The status we last wrote for `key`, while the cache still shows the object as it was
    /// before that write (resourceVersion `cached`).
    fn last_written(&self, key: &str, cached: Option<&str>) -> Option<serde_json::Value> {
        let (written, _) = self.written.get(key)?;
        if Some(written.seen.as_str()) == cached {
            return Some(written.status);
        }
        self.written.remove(key);
        None
    }

    /// Forget what outlived its time to live.
    pub fn expire(&self) {
        self.written.expire();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::api::{Number, NumberSpec};

    fn number(resource_version: &str) -> Number {
        let mut n = Number::new("n", NumberSpec { value: 4 });
        n.metadata.namespace = Some("default".into());
        n.metadata.resource_version = Some(resource_version.into());
        n.metadata.generation = Some(1);
        n
    }

    fn with_status(mut n: Number, status: Value) -> Number {
        n.status = serde_json::from_value(status).ok();
        n
    }

    /// The echo of our own write is recognised once (it is then forgotten); the same status
    /// under a newer generation, or another status, is news.
    #[test]
    fn the_echo_of_our_own_write_is_recognised_once() {
        let statuses = WrittenStatuses::new(Metrics::new(), Duration::from_secs(300));
        let written = json!({ "isSquare": true, "observedGeneration": 1 });
        assert!(!statuses.own_echo(&with_status(number("2"), written.clone())));
        statuses.written(&number("1"), written.clone());
        let other = json!({ "isSquare": false, "observedGeneration": 1 });
        assert!(!statuses.own_echo(&with_status(number("2"), other)));
        let mut respecced = with_status(number("2"), written.clone());
        respecced.metadata.generation = Some(2);
        assert!(!statuses.own_echo(&respecced));
        assert!(statuses.own_echo(&with_status(number("3"), written.clone())));
        assert!(
            !statuses.own_echo(&with_status(number("4"), written)),
            "recognised once"
        );
    }

    /// A write that failed leaves nothing to recognise.
    #[test]
    fn a_failed_write_is_forgotten() {
        let statuses = WrittenStatuses::new(Metrics::new(), Duration::from_secs(300));
        let written = json!({ "isSquare": true });
        statuses.written(&number("1"), written.clone());
        statuses.forget(&number("1"));
        assert!(!statuses.own_echo(&with_status(number("2"), written)));
    }

    /// The status written is the one known while the cache shows the object as it was when
    /// we wrote; once the cache moves on, the cache is the truth again, for good.
    #[test]
    fn the_written_status_is_known_until_the_cache_moves_past_it() {
        let statuses = WrittenStatuses::new(Metrics::new(), Duration::from_secs(300));
        let cached = json!({ "isSquare": false });
        let known = |rv| statuses.known::<_, Value>(&number(rv), Some(&cached));
        assert_eq!(known("1"), Some(cached.clone()));
        let written = json!({ "isSquare": true });
        statuses.written(&number("1"), written.clone());
        assert_eq!(known("1"), Some(written));
        assert_eq!(known("2"), Some(cached.clone()));
        assert_eq!(
            known("1"),
            Some(cached),
            "forgotten once the cache moved on"
        );
    }
}
