//! The manager's own writes whose echo the watch has not delivered yet (what
//! controller-runtime users know as "expectations"): to children ([`Expectations`], and what a
//! parent sees of its children through them) and to an object's own status
//! ([`WrittenStatuses`]). One question: which of our writes does the cache not show yet.
//!
//! # Children
//!
//! A reconcile that runs between a write and its watch event would see the old state in the
//! cache and write again (a duplicate create answered 409, a second correction): a write is
//! remembered from just before its request until the watch shows its effect, and the parent
//! waits for it instead. The watch clears an expectation on the child's next event, or a
//! relist that is the truth about every answered write; a timeout is only a safety net.
//!
//! # Statuses
//!
//! A status written is remembered until its echo comes: the status as far as we know, for a
//! reconcile that runs in between, and the echo itself recognised when it comes
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

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cluster::cache::Cache;
use crate::cluster::expiring::{Expiring, key, object_key};
use crate::cluster::store::Store;
use crate::kind::{Child, Desired, controller_uid};
use crate::metrics::Metrics;
use crate::reconcile::memory::memory_key;

/// How long a write may go unseen before the cache is believed again regardless: a safety
/// net for a lost watch event (kube-controller-manager's ExpectationsTimeout is the same 5
/// minutes). The watch normally delivers within milliseconds, but a manager starved of CPU
/// can fall tens of seconds behind its watches, and a shorter timeout then creates every
/// child a second time (18406 refused creates for a Fermat 10000 with 30 s, under valgrind).
pub const IN_FLIGHT_TIMEOUT: Duration = Duration::from_secs(300);

/// A write to a child whose echo the watch has not delivered yet.
#[derive(Clone, Debug)]
struct Expected {
    /// The child's resourceVersion in the cache when we wrote (`None`: it was absent).
    seen: Option<String>,
    /// When the API server answered the write: a list begun after then shows its effect.
    answered: Option<Instant>,
}

/// What the cache holds of a parent's children.
pub struct CachedChildren<C> {
    /// The objects of the desired names, in the parent's namespace, whoever controls them.
    pub found: HashMap<String, Arc<C>>,
    /// The objects the parent controls (by UID), in its namespace.
    pub owned: Vec<Arc<C>>,
    /// The names whose last write the cache does not show yet.
    pub in_flight: HashSet<String>,
    /// When the first of those writes times out: the parent must look again by then even if
    /// no watch event comes (a child created and deleted before its echo leaves the cache
    /// exactly as remembered, and nothing else would wake the parent).
    pub recheck_in: Option<Duration>,
}

/// The writes to children that the caches do not show yet, by `Kind/namespace/name`.
pub struct Expectations {
    in_flight: Expiring<Expected>,
}

impl Expectations {
    /// Expectations that the cache is believed again after `timeout` regardless
    /// ([`IN_FLIGHT_TIMEOUT`]; tests shorten it).
    pub fn new(metrics: Metrics, timeout: Duration) -> Expectations {
        Expectations {
            in_flight: Expiring::new("child_writes", metrics, timeout),
        }
    }

    /// How long an expectation lives at most.
    pub fn timeout(&self) -> Duration {
        self.in_flight.ttl()
    }

    /// Remember that we are about to write to a child that the cache shows at `seen` (its
    /// resourceVersion, `None` when absent). Until the cache moves past that, a parent that
    /// looks waits for the write instead of making it again. Set before the request: the
    /// watch may deliver the child (even its deletion by someone else) before the answer.
    pub fn expect<C: Child>(&self, namespace: &str, name: &str, seen: Option<String>) {
        let expected = Expected {
            seen,
            answered: None,
        };
        self.in_flight
            .insert(key(C::KIND, namespace, name), expected);
    }

    /// The API server answered a write to this child (expected with [`Expectations::expect`]):
    /// from now on a relist of the child's kind shows its effect.
    pub fn sent<C: Child>(&self, namespace: &str, name: &str) {
        let key = key(C::KIND, namespace, name);
        if let Some((mut expected, _)) = self.in_flight.get(&key) {
            expected.answered = Some(Instant::now());
            self.in_flight.insert(key, expected);
        }
    }

    /// A write to this child did not happen (the request failed): nothing to wait for.
    pub fn forget<C: Child>(&self, namespace: &str, name: &str) {
        self.in_flight.remove(&key(C::KIND, namespace, name));
    }

    /// The watch delivered an event for `obj`: a write to it that we remembered has reached
    /// the cache, or was overtaken by a later change or a deletion that has. Clearing on the
    /// event, as controller-runtime's expectations do, also covers a child created and
    /// deleted before its parent looked again: the cache then shows exactly what was
    /// remembered (nothing), but both events went by.
    pub fn saw<K: Resource<DynamicType = ()>>(&self, obj: &K) {
        let key = object_key(obj);
        if let Some((expected, _)) = self.in_flight.get(&key)
            && expected.seen != obj.resource_version()
        {
            self.in_flight.remove(&key);
        }
    }

    /// A (re)list of `kind`, begun at `began`, is in the cache: it is the truth about every
    /// write the API server had answered before it began, including those whose watch events
    /// the relist skipped (a child created, then deleted while the watch was down, leaves no
    /// event at all). Those expectations are met. A write answered while it ran may be newer
    /// than its snapshot (a paged list is the first page's snapshot): the watch, resumed from
    /// the list's resourceVersion, shows that one.
    pub(crate) fn relisted(&self, kind: &str, began: Instant) {
        let prefix = format!("{kind}/");
        self.in_flight.retain(|key, expected| {
            !(key.starts_with(&prefix) && expected.answered.is_some_and(|at| at <= began))
        });
    }

    /// One child as the parent sees it: its cached object, and how much longer a write to it
    /// may still be on its way to the cache (`None`: it is not, or no longer; forgotten once
    /// seen or timed out).
    ///
    /// The expectation is read before the cache, never after: the watch puts an object in the
    /// cache first and clears its expectation second, so this order sees at least one of the
    /// two. The other order could read the cache just before the child arrived and the
    /// expectation just after it was cleared, see neither, and create the child again (the
    /// API server answers 409: 1001 Number creates for a Fermat 1000, once in CI).
    fn look<C: Child>(
        &self,
        store: &Store<C>,
        namespace: &str,
        name: &str,
    ) -> (Option<Arc<C>>, Option<Duration>) {
        let key = key(C::KIND, namespace, name);
        let expected = self.in_flight.get(&key);
        let cached = store.get(&ObjectRef::new(name).within(namespace));
        let Some((expected, left)) = expected else {
            return (cached, None);
        };
        if expected.seen == cached.as_ref().and_then(|c| c.resource_version()) {
            return (cached, Some(left));
        }
        self.in_flight.remove(&key);
        (cached, None)
    }

    /// From the cache, the objects of the desired names in the parent's namespace, the
    /// objects there whose controller is the parent (by UID), and the names of those whose
    /// last write has not reached the cache yet. No API request.
    pub fn children<P: Resource, C: Child>(
        &self,
        cache: &Cache<C>,
        parent: &P,
        desired: &[Desired<C::Spec>],
    ) -> CachedChildren<C> {
        let store = &cache.store;
        let ns = parent.meta().namespace.as_deref().unwrap_or_default();
        let mut found = HashMap::new();
        let mut in_flight = HashSet::new();
        let mut recheck_in: Option<Duration> = None;
        let mut note = |name: &str, left: Option<Duration>| {
            if let Some(left) = left {
                in_flight.insert(name.to_string());
                recheck_in = Some(recheck_in.map_or(left, |r| r.min(left)));
            }
        };
        for d in desired {
            let (cached, left) = self.look(store, ns, &d.name);
            note(&d.name, left);
            if let Some(cached) = cached {
                found.insert(d.name.clone(), cached);
            }
        }
        // The children it no longer wants (to be deleted) are looked at the same way; one the
        // cache no longer shows as the parent's leaves the list.
        let uid = parent.meta().uid.as_deref();
        let mut owned = Vec::new();
        for child in uid.map_or_else(Vec::new, |uid| cache.owned(uid, ns)) {
            let name = child.name_any();
            if found.contains_key(&name) {
                owned.push(child);
                continue;
            }
            let (cached, left) = self.look(store, ns, &name);
            note(&name, left);
            owned.extend(cached.filter(|c| controller_uid(c.as_ref()) == uid));
        }
        CachedChildren {
            found,
            owned,
            in_flight,
            recheck_in,
        }
    }

    /// Forget what outlived its time to live.
    pub fn expire(&self) {
        self.in_flight.expire();
    }
}

/// A status write that the watch has not delivered yet.
#[derive(Clone)]
struct WrittenStatus {
    /// The object's resourceVersion in the cache when we wrote.
    seen: String,
    /// The object's generation when we wrote: the spec the status answers.
    generation: Option<i64>,
    /// The status written, as compact JSON text (canonical: serde_json's maps sort their
    /// keys). A `serde_json::Value` of a Number's status is about 1.3 KB of map nodes and
    /// strings, this about 200 B; and thousands wait for their echo while a Fermat 10000
    /// converges (3300 at the peak in memory, 6.7 MB as values).
    status: Box<str>,
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
    let text = status.and_then(|s| serde_json::to_string(s).ok());
    written.generation == generation && text.as_deref() == Some(&*written.status)
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
        let key = memory_key(obj);
        self.last_written(&key, obj.resource_version().as_deref())
            .and_then(|written| serde_json::from_str(&written).ok())
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
                status: status.to_string().into_boxed_str(),
            };
            self.written.insert(memory_key(obj), written);
        }
    }

    /// The status write for `obj` failed: nothing of it will come back.
    pub fn forget<P: Resource<DynamicType = ()>>(&self, obj: &P) {
        self.written.remove(&memory_key(obj));
    }

    /// Whether `obj`, as the watch just delivered it, is only the echo of the status we wrote
    /// last (then its reconcile has nothing to do for it, and the memory is no longer
    /// needed: the cache shows it). Anything else about it (a spec changed meanwhile, a status
    /// somebody else wrote) is news.
    pub fn own_echo<P: Resource<DynamicType = ()> + Serialize>(&self, obj: &P) -> bool {
        let key = memory_key(obj);
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
    fn last_written(&self, key: &str, cached: Option<&str>) -> Option<Box<str>> {
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
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use kube::runtime::watcher;

    use super::*;
    use crate::api::{Number, NumberSpec, Tuple, TupleSpec};

    fn expectations() -> Expectations {
        Expectations::new(Metrics::default(), IN_FLIGHT_TIMEOUT)
    }

    fn desired(name: &str) -> Vec<Desired<NumberSpec>> {
        vec![Desired {
            name: name.to_string(),
            spec: NumberSpec { value: 1 },
        }]
    }

    fn tuple() -> Tuple {
        let mut parent = Tuple::new("t", TupleSpec { numbers: vec![1] });
        parent.meta_mut().namespace = Some("default".into());
        parent.meta_mut().uid = Some("uid-t".into());
        parent
    }

    fn number(name: &str, resource_version: &str) -> Number {
        let mut child = Number::new(name, NumberSpec { value: 1 });
        child.meta_mut().namespace = Some("default".into());
        child.meta_mut().resource_version = Some(resource_version.into());
        child
    }

    /// Whether the parent `t` sees a write to its child `name` still on its way.
    fn awaited(expectations: &Expectations, cache: &Cache<Number>, name: &str) -> bool {
        let seen = expectations.children(cache, &tuple(), &desired(name));
        seen.in_flight.contains(name) && seen.recheck_in.is_some()
    }

    /// A create is awaited until the watch shows the child; an event of the child as the
    /// cache showed it when we wrote (an old one, delivered late) does not end the wait.
    #[test]
    fn a_write_is_awaited_until_the_watch_shows_the_child_moved_on() {
        let expectations = expectations();
        let (store, mut writer) = crate::cluster::store::store();
        let cache = Cache::new(store);
        let child = number("t-0", "1");
        writer.apply_watcher_event(&watcher::Event::Apply(child.clone()));
        expectations.expect::<Number>("default", "t-0", Some("1".into()));
        expectations.sent::<Number>("default", "t-0");
        assert!(awaited(&expectations, &cache, "t-0"));
        expectations.saw(&child);
        assert!(awaited(&expectations, &cache, "t-0"), "an old event");
        expectations.saw(&number("t-0", "2"));
        assert!(!awaited(&expectations, &cache, "t-0"));
        // A write that failed is not awaited either.
        expectations.expect::<Number>("default", "t-1", None);
        expectations.forget::<Number>("default", "t-1");
        assert!(!awaited(&expectations, &cache, "t-1"));
    }

    /// A relist meets the writes the API server answered before it, not those still on their
    /// way (it may have been made before their request arrived), nor another kind's.
    #[test]
    fn a_relist_meets_only_the_answered_writes_of_its_kind() {
        let expectations = expectations();
        let cache = Cache::new(crate::cluster::store::store::<Number>().0);
        expectations.expect::<Number>("default", "answered", None);
        expectations.sent::<Number>("default", "answered");
        expectations.expect::<Number>("default", "unanswered", None);
        expectations.expect::<Tuple>("default", "answered", None);
        expectations.sent::<Tuple>("default", "answered");
        expectations.relisted("Number", Instant::now());
        assert!(!awaited(&expectations, &cache, "answered"));
        assert!(awaited(&expectations, &cache, "unanswered"));
        let tuples = expectations.in_flight.get("Tuple/default/answered");
        assert!(tuples.is_some(), "a relist of Numbers met a Tuple's write");
    }

    /// F4 (issue 39): a create answered while a paged relist ran, after the list's snapshot,
    /// is not in the list: the relist does not meet it (the watch, resumed from the list's
    /// resourceVersion, will). Before, it was cleared and the parent created the child again
    /// (answered 409), for every child created during a relist in a build.
    #[test]
    fn a_relist_does_not_meet_a_write_answered_while_it_ran() {
        let expectations = expectations();
        let cache = Cache::new(crate::cluster::store::store::<Number>().0);
        expectations.expect::<Number>("default", "t-0", None);
        let began = Instant::now();
        expectations.sent::<Number>("default", "t-0");
        expectations.relisted("Number", began);
        assert!(
            awaited(&expectations, &cache, "t-0"),
            "answered while the relist ran"
        );
        expectations.relisted("Number", Instant::now());
        assert!(
            !awaited(&expectations, &cache, "t-0"),
            "a later relist has it"
        );
    }

    /// A child we created is, whenever its parent looks, either in the cache or still
    /// awaited: never neither, or the parent creates it a second time (answered 409; seen in
    /// CI as 1001 Number creates for a Fermat 1000). The watch puts the child in the cache
    /// and then clears the expectation, on its own thread, while the parent looks on another:
    /// a look that read the cache before the child arrived and the expectation after it was
    /// cleared saw neither.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_created_child_is_cached_or_awaited_whenever_its_parent_looks() {
        let (numbers, mut writer) = crate::cluster::store::store();
        let cache = Cache::new(numbers);
        let expectations = Arc::new(expectations());
        let parent = tuple();
        const CHILDREN: usize = 20_000;
        // One more than the child the watch is about to deliver (0: none expected yet; a
        // looker that starts before the first create has nothing to find).
        let current = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let looker = std::thread::spawn({
            let (expectations, cache) = (expectations.clone(), cache.clone());
            let (current, done) = (current.clone(), done.clone());
            move || {
                let mut neither = Vec::new();
                while !done.load(Ordering::Acquire) {
                    let Some(i) = current.load(Ordering::Acquire).checked_sub(1) else {
                        continue;
                    };
                    let name = format!("n-{i}");
                    let seen = expectations.children(&cache, &parent, &desired(&name));
                    if !seen.found.contains_key(&name) && !seen.in_flight.contains(&name) {
                        neither.push(name);
                    }
                }
                neither
            }
        });
        for i in 0..CHILDREN {
            let name = format!("n-{i}");
            expectations.expect::<Number>("default", &name, None);
            current.store(i + 1, Ordering::Release);
            let child = number(&name, &i.to_string());
            // What the watch does, in its order: the cache first, then the expectation.
            writer.apply_watcher_event(&watcher::Event::Apply(child.clone()));
            expectations.saw(&child);
        }
        done.store(true, Ordering::Release);
        let neither = looker.join().expect("the looker did not panic");
        assert!(
            neither.is_empty(),
            "{} looks saw a created child neither cached nor awaited, e.g. {:?}",
            neither.len(),
            neither.first()
        );
    }
}

#[cfg(test)]
mod status_tests {
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
