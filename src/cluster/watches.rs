//! The watches: one per kind, feeding the cache that reconcilers read, and handing every
//! change to the controllers that care (the fan-out); and the periodic resync, the safety net
//! under both.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tracing::{debug, error};

use crate::cluster::backoff::random;
use crate::cluster::cache::Cache;
use crate::cluster::outage::Outage;
use crate::cluster::store::Writer;
use crate::cluster::undecodable::{Decoded, Sorted, Undecoded, sort_out};
use crate::cluster::watch_retry::{Watched, retried};
use crate::kind::{Kind, Parent};
use crate::scheduler::TIMELINE;
use crate::scheduler::panics::catch_now;

/// Why a watch (or a resync) tells a controller of an object: what the object's turn follows
/// (`reconcile/controller_loop.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Someone acted: the object, or a child of it, was created, changed or deleted (a watch
    /// event, or a relist that shows it changed or gone while the watch was down).
    Change,
    /// Nothing is known to have changed: a list brings it again (the first one after a
    /// start, or a relist that shows it as it was), or a resync.
    Recheck,
}

/// What a child's watch tells the controller of its parents of kind `P`, with the child's
/// [`Cause`]: the owners of kind `P` named in the child's ownerReferences, as cache keys, and
/// the parent whose desired child carries this name ([`Parent::parent_of`]): a deleted object
/// that somebody else controlled (a conflict) frees the name, and that parent must hear of it
/// to create its own. Only the child's metadata is read: a child that does not decode is told
/// of too.
pub(crate) fn tell_parents<P: Parent>(
    parents: impl Fn(ObjectRef<P>, Cause) + Send + 'static,
) -> impl Fn(&ObjectMeta, Cause) + Send + 'static {
    move |child, cause| {
        for owner in owners::<P>(child) {
            parents(owner, cause);
        }
    }
}

/// The watch of a kind nobody owns has no parents to tell.
pub(crate) fn no_parents(_: &ObjectMeta, _: Cause) {}

fn owners<P: Parent>(child: &ObjectMeta) -> Vec<ObjectRef<P>> {
    let namespace = child.namespace.as_deref();
    let name = child.name.as_deref().unwrap_or_default();
    let by_name =
        P::parent_of(name).map(|name| ObjectRef::new(name).within(namespace.unwrap_or_default()));
    (child.owner_references.iter().flatten())
        .filter_map(|r| ObjectRef::from_owner_ref(namespace, r, ()))
        .chain(by_name)
        .collect()
}

/// What a watch tells the reconciles' memories of what it sees (the reconcile's context
/// implements it): the glue knows when a child's write is seen, an echo comes, a relist
/// begins and ends, and the memories decide what that means.
pub trait Witness: Send + Sync + 'static {
    /// The outage an unreachable server is reported to.
    fn outage(&self) -> Arc<Outage>;
    /// The watch brought `obj`, created, changed or deleted (it is in the cache now).
    fn saw<K: Kind>(&self, obj: &K);
    /// Whether `obj`, just brought, is only the echo of the manager's own status write: no
    /// news to its own reconcile.
    fn own_echo<K: Kind>(&self, obj: &K) -> bool;
    /// A (re)list of kind `K` begins.
    fn relist_started<K: Kind>(&self);
    /// The (re)list of kind `K` that began at `began` is complete and in the cache.
    fn relisted<K: Kind>(&self, began: Instant);
    /// The watch of kind `K` failed; the watcher retries.
    fn watch_failed<K: Kind>(&self);
    /// An object of kind `K` that does not decode was seen, newly or with another error (the
    /// watch has logged it): say so where its owner looks, once.
    fn undecodable<K: Kind>(self: &Arc<Self>, object: &Undecoded);
    /// `count` objects of kind `K` do not decode now.
    fn undecodable_count<K: Kind>(&self, count: usize);
}

/// One watch of kind `K`: it feeds `cache` (the store behind `writer`, the owner index, the
/// objects that do not decode), and hands every change to the controllers that care: the
/// object itself to `K`'s own controller, and (for a child that appeared, changed or was
/// deleted, decodable or not) its parents to the parent's controller ([`tell_parents`]);
/// `witness` hears what the reconciles remember.
///
/// This is kube-runtime's "shared stream" idea with the controllers told directly (their
/// schedulers keep each object once, so nothing piles up while the caches sync):
/// kube-runtime 5's shared-store dispatcher does not forward deletions (so a
/// `kubectl delete number t-1` would never wake the Tuple), and its bounded buffer makes a
/// watch wait for the slowest controller.
///
/// Its stages, each a function of its own whose input only the stage before produces:
/// 1. kube-runtime's watcher lists and watches [`Decoded`] objects: each decoded on its own
///    and lean (`cluster/undecodable.rs`), so that one that does not decode fails nothing else;
/// 2. [`retried`]: a failure is classed, paused for and told once (`cluster/watch_retry.rs`);
/// 3. [`sort_out`]: what does not decode is set aside and named; what does goes on as `K`;
/// 4. [`cached`]: the store takes the change (and with it its owner index);
/// 5. [`FanOut`]: the controllers and the memories hear of it.
pub(crate) fn watch_and_fan_out<K: Kind, W: Witness>(
    api: Api<Decoded<K>>,
    config: watcher::Config,
    writer: Writer<K>,
    cache: Cache<K>,
    own: impl Fn(&K, Cause) + Send + 'static,
    tell_parents: impl Fn(&ObjectMeta, Cause) + Send + 'static,
    witness: Arc<W>,
) -> impl Stream<Item = ()> + Send {
    let watched = retried(K::KIND, watcher(api, config), witness.outage());
    let sorted = sort_out(watched, cache.clone(), witness.clone());
    let mut fan_out = FanOut {
        cache: cache.clone(),
        own,
        tell_parents,
        witness,
        before_relist: Vec::new(),
        relist_began: Instant::now(),
    };
    cached(sorted, writer).map(move |cached| fan_out.tell(cached))
}

/// What the cache took: the change the controllers hear of (stage 4's output; only
/// [`cached`] makes one).
pub(crate) struct Cached<K>(Sorted<K>);

/// Stage 4: each change taken by the store.
fn cached<K: Kind>(
    sorted: impl Stream<Item = Sorted<K>> + Send,
    mut writer: Writer<K>,
) -> impl Stream<Item = Cached<K>> + Send {
    sorted.map(move |sorted| {
        if let Some(Watched::Event(event)) = &sorted.watched {
            writer.apply_watcher_event(event);
        }
        Cached(sorted)
    })
}

/// One watch's fan-out of what the cache just took: to the kind's own controller (`own`),
/// to the parents' (`tell_parents`), and to the reconciles' memories (`witness`).
struct FanOut<K: Kind, O, P, W> {
    cache: Cache<K>,
    own: O,
    tell_parents: P,
    witness: Arc<W>,
    /// What the cache held when a (re)list began: the objects that are not in the new list
    /// were deleted while the watch was down, and no Delete event will ever say so.
    before_relist: Vec<Arc<K>>,
    /// When the list that the next InitDone completes began: the writes answered before then
    /// are in it.
    relist_began: Instant,
}

impl<K: Kind, O: Fn(&K, Cause), P: Fn(&ObjectMeta, Cause), W: Witness> FanOut<K, O, P, W> {
    fn tell(&mut self, Cached(sorted): Cached<K>) {
        for undecodable in &sorted.undecodable {
            (self.tell_parents)(undecodable, Cause::Change);
        }
        match sorted.watched {
            Some(Watched::Event(event)) => self.caught(event),
            Some(Watched::Relisting) => self.witness.relist_started::<K>(),
            // Told by the retry stage, once.
            Some(Watched::Failed) => self.witness.watch_failed::<K>(),
            None => {}
        }
    }

    /// [`FanOut::event`], a panic in it ending that event's fan-out only: the watch, and with
    /// it the manager, goes on (the object's next change, or the resync, tells it again).
    fn caught(&mut self, event: watcher::Event<K>) {
        let Err(panic) = catch_now(|| self.event(&event)) else {
            return;
        };
        let object = match &event {
            watcher::Event::Apply(obj) | watcher::Event::Delete(obj) => format!(
                " {}/{}",
                obj.namespace().unwrap_or_default(),
                obj.name_any()
            ),
            _ => String::new(),
        };
        error!(
            "watching {}s: telling the controllers of {}{object} {panic}; going on",
            K::kind(&()),
            K::kind(&())
        );
    }

    fn event(&mut self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Apply(obj) => {
                debug!(target: TIMELINE, kind = %K::kind(&()), ns = obj.namespace().unwrap_or_default(), name = %obj.name_any(), rv = obj.resource_version().unwrap_or_default(), "watch event");
                self.witness.saw(obj);
                (self.tell_parents)(obj.meta(), Cause::Change);
                // The manager's own status write coming back is no news to its reconcile
                // (its parent still hears of it, above).
                if !self.witness.own_echo(obj) {
                    (self.own)(obj, Cause::Change);
                }
            }
            watcher::Event::Delete(obj) => {
                self.witness.saw(obj);
                (self.tell_parents)(obj.meta(), Cause::Change)
            }
            // The reflector fills a new cache on the side; until InitDone, the store still
            // shows the old one. (Init comes again before every attempt of a failing list:
            // the snapshot is of the cache, which only InitDone replaces.)
            watcher::Event::Init => {
                self.relist_began = Instant::now();
                self.witness.relist_started::<K>();
                if self.before_relist.is_empty() {
                    self.before_relist = self.cache.store.state();
                }
            }
            watcher::Event::InitDone => self.relisted(),
            watcher::Event::InitApply(_) => {}
        }
    }

    /// A (re)list is complete and the cache swapped in: everything is news, and so is
    /// everything that vanished while the watch was down.
    fn relisted(&mut self) {
        self.witness.relisted::<K>(self.relist_began);
        let now = self.cache.store.state();
        let before = std::mem::take(&mut self.before_relist);
        for gone in vanished(&before, &now) {
            debug!(
                "{} {}/{} vanished while the watch was down",
                K::kind(&()),
                gone.namespace().unwrap_or_default(),
                gone.name_any()
            );
            (self.tell_parents)(gone.meta(), Cause::Change);
        }
        let versions = versions(&before);
        for obj in now {
            let cause = cause_in_list(&versions, obj.as_ref());
            (self.tell_parents)(obj.meta(), cause);
            (self.own)(&obj, cause);
        }
    }
}

/// Objects by namespace and name, with their resourceVersion, borrowed from the objects (a
/// relist of thousands copies no name).
type Versions<'a> = HashMap<(&'a str, &'a str), Option<&'a str>>;

/// The namespace and name of `obj`, the key of [`Versions`].
fn name_of<K: Resource>(obj: &K) -> (&str, &str) {
    let meta = obj.meta();
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    (namespace, meta.name.as_deref().unwrap_or_default())
}

/// The resourceVersion of each object the cache held before a relist.
fn versions<K: Resource>(before: &[Arc<K>]) -> Versions<'_> {
    (before.iter())
        .map(|k| (name_of(k.as_ref()), k.meta().resource_version.as_deref()))
        .collect()
}

/// What a list shows of `obj`, given what the cache held before it (nothing: the first list):
/// a change when it is new or another version since, a recheck when it is as it was or when
/// there is nothing to compare with.
fn cause_in_list<K: Resource>(before: &Versions, obj: &K) -> Cause {
    if before.is_empty() {
        return Cause::Recheck;
    }
    match before.get(&name_of(obj)) {
        Some(version) if *version == obj.meta().resource_version.as_deref() => Cause::Recheck,
        _ => Cause::Change,
    }
}

/// The objects of `before` (the cache when a relist began) that `after` (the relisted cache)
/// no longer holds: deleted during the gap.
fn vanished<K: Resource>(before: &[Arc<K>], after: &[Arc<K>]) -> Vec<Arc<K>> {
    let present: HashSet<_> = after.iter().map(|k| name_of(k.as_ref())).collect();
    (before.iter())
        .filter(|k| !present.contains(&name_of(k.as_ref())))
        .cloned()
        .collect()
}

/// Ticks every `period`, each interval drawn anew within ±10 %, so that resyncs of many
/// managers (or of the three controllers) do not fall on the same instant.
pub(crate) fn resync(period: Duration) -> impl Stream<Item = ()> + Send {
    futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(jittered(period, random())).await;
        Some(((), ()))
    })
}

/// `period` scaled by a factor between 0.9 and 1.1 chosen by `random`.
fn jittered(period: Duration, random: u64) -> Duration {
    let permille = 900 + (random % 201) as u32;
    period.saturating_mul(permille) / 1000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Number;

    /// A witness that remembers nothing.
    struct Blind(Arc<Outage>);

    impl Witness for Blind {
        fn outage(&self) -> Arc<Outage> {
            self.0.clone()
        }
        fn saw<K: Kind>(&self, _: &K) {}
        fn own_echo<K: Kind>(&self, _: &K) -> bool {
            false
        }
        fn relist_started<K: Kind>(&self) {}
        fn relisted<K: Kind>(&self, _: Instant) {}
        fn watch_failed<K: Kind>(&self) {}
        fn undecodable<K: Kind>(self: &Arc<Self>, _: &Undecoded) {}
        fn undecodable_count<K: Kind>(&self, _: usize) {}
    }

    /// A panic while one change is told (here in the controller it is told to) ends that
    /// change's fan-out only: the next change is told as usual (issue 48, item 3: it unwound
    /// through the task of every watch and controller, and the manager stopped).
    #[tokio::test] // a client's buffer needs a runtime; no request is made
    async fn a_panic_in_the_fan_out_of_one_change_stops_no_other() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let client = kube::Client::try_from(config).expect("a client; no request is made");
        let told = std::sync::Mutex::new(Vec::new());
        let (store, _writer) = crate::cluster::store::store::<Number>();
        let mut fan_out = FanOut {
            cache: Cache::new(store),
            own: |n: &Number, _| {
                assert_ne!(
                    n.name_any(),
                    "bad",
                    "a controller that panics for one object"
                );
                told.lock().map(|mut t| t.push(n.name_any())).ok();
            },
            tell_parents: no_parents,
            witness: Arc::new(Blind(Outage::new(client))),
            before_relist: Vec::new(),
            relist_began: Instant::now(),
        };
        let number = |name: &str| Number::new(name, crate::api::NumberSpec { value: 1 });
        for name in ["bad", "good"] {
            fan_out.caught(watcher::Event::Apply(number(name)));
        }
        let told = told.lock().map(|t| t.clone()).unwrap_or_default();
        assert_eq!(told, ["good"]);
    }

    /// A relist's objects are news of a change when they changed (or are new) since the cache
    /// held them, a recheck when they did not; on the first list nothing is known to change.
    #[test]
    fn a_relist_tells_what_changed_as_a_change() {
        let number = |name: &str, version: &str| {
            let mut n = Number::new(name, crate::api::NumberSpec { value: 1 });
            n.metadata.resource_version = Some(version.into());
            Arc::new(n)
        };
        let held = [number("a", "1"), number("b", "2")];
        let before = versions(&held);
        assert_eq!(
            cause_in_list(&before, number("a", "1").as_ref()),
            Cause::Recheck
        );
        assert_eq!(
            cause_in_list(&before, number("b", "7").as_ref()),
            Cause::Change
        );
        assert_eq!(
            cause_in_list(&before, number("c", "8").as_ref()),
            Cause::Change
        );
        let first = versions::<Number>(&[]);
        assert_eq!(
            cause_in_list(&first, number("c", "8").as_ref()),
            Cause::Recheck
        );
    }

    #[test]
    fn vanished_objects_are_those_missing_from_the_relist() {
        let number = |name: &str| Arc::new(Number::new(name, crate::api::NumberSpec { value: 1 }));
        let before = [number("a"), number("b"), number("c")];
        let after = [number("a"), number("c"), number("d")];
        let gone: Vec<_> = vanished(&before, &after)
            .iter()
            .map(|n| n.name_any())
            .collect();
        assert_eq!(gone, ["b"]);
        assert!(vanished(&[], &after).is_empty());
    }

    #[test]
    fn resync_intervals_stay_within_ten_percent() {
        let period = Duration::from_secs(600);
        assert_eq!(jittered(period, 0), Duration::from_secs(540));
        assert_eq!(jittered(period, 200), Duration::from_secs(660));
        assert_eq!(jittered(period, 100), period);
        for r in [1, 7, 12345, u64::MAX] {
            let d = jittered(period, r);
            assert!(d >= Duration::from_secs(540) && d <= Duration::from_secs(660));
        }
    }
}
