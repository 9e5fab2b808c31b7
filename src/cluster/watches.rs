//! The watches: one per kind, feeding the cache that reconcilers read, and handing every
//! change to the controllers that care (the fan-out); and the periodic resync, the safety net
//! under both.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tracing::debug;

use crate::cluster::backoff::random;
use crate::cluster::cache::Cache;
use crate::cluster::outage::Outage;
use crate::cluster::undecodable::{Decoded, Sorted, Undecoded, sort_out};
use crate::cluster::watch_retry::{Watched, retried};
use crate::kind::{Kind, Parent};
use crate::scheduler::TIMELINE;

/// What a child's watch tells the controller of its parents of kind `P`: the owners of kind
/// `P` named in the child's ownerReferences, as cache keys, and the parent whose desired child
/// carries this name ([`Parent::parent_of`]): a deleted object that somebody else controlled
/// (a conflict) frees the name, and that parent must hear of it to create its own. Only the
/// child's metadata is read: a child that does not decode is told of too.
pub(crate) fn tell_parents<P: Parent>(
    parents: impl Fn(ObjectRef<P>) + Send + 'static,
) -> impl Fn(&ObjectMeta) + Send + 'static {
    move |child| {
        for owner in owners::<P>(child) {
            parents(owner);
        }
    }
}

/// The watch of a kind nobody owns has no parents to tell.
pub(crate) fn no_parents(_: &ObjectMeta) {}

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
/// 4. [`cached`]: the owner index and the store take the change (the index first moves an
///    object out of its old controller's filing, orphaned or re-parented);
/// 5. [`FanOut`]: the controllers and the memories hear of it.
pub(crate) fn watch_and_fan_out<K: Kind, W: Witness>(
    api: Api<Decoded<K>>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    cache: Cache<K>,
    own: impl Fn(&K) + Send + 'static,
    tell_parents: impl Fn(&ObjectMeta) + Send + 'static,
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
    cached(sorted, writer, cache).map(move |cached| fan_out.tell(cached))
}

/// What the cache took: the change the controllers hear of (stage 4's output; only
/// [`cached`] makes one).
pub(crate) struct Cached<K>(Sorted<K>);

/// Stage 4: each change taken by the owner index and the store, in that order (the index
/// reads what the store held before).
fn cached<K: Kind>(
    sorted: impl Stream<Item = Sorted<K>> + Send,
    mut writer: reflector::store::Writer<K>,
    cache: Cache<K>,
) -> impl Stream<Item = Cached<K>> + Send {
    sorted.map(move |sorted| {
        if let Some(Watched::Event(event)) = &sorted.watched {
            if let watcher::Event::Apply(obj) = event
                && let Some(previous) = cache.store.get(&ObjectRef::from_obj(obj))
            {
                cache.moved(previous.as_ref(), obj);
            }
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

impl<K: Kind, O: Fn(&K), P: Fn(&ObjectMeta), W: Witness> FanOut<K, O, P, W> {
    fn tell(&mut self, Cached(sorted): Cached<K>) {
        for undecodable in &sorted.undecodable {
            (self.tell_parents)(undecodable);
        }
        match sorted.watched {
            Some(Watched::Event(event)) => self.event(event),
            Some(Watched::Relisting) => self.witness.relist_started::<K>(),
            // Told by the retry stage, once.
            Some(Watched::Failed) => self.witness.watch_failed::<K>(),
            None => {}
        }
    }

    fn event(&mut self, event: watcher::Event<K>) {
        match event {
            watcher::Event::Apply(obj) => {
                debug!(target: TIMELINE, kind = %K::kind(&()), ns = obj.namespace().unwrap_or_default(), name = %obj.name_any(), rv = obj.resource_version().unwrap_or_default(), "watch event");
                self.witness.saw(&obj);
                self.cache.apply(&obj);
                (self.tell_parents)(obj.meta());
                // The manager's own status write coming back is no news to its reconcile
                // (its parent still hears of it, above).
                if !self.witness.own_echo(&obj) {
                    (self.own)(&obj);
                }
            }
            watcher::Event::Delete(obj) => {
                self.witness.saw(&obj);
                self.cache.delete(&obj);
                (self.tell_parents)(obj.meta())
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
        self.cache.rebuild(&now);
        for gone in vanished(&std::mem::take(&mut self.before_relist), &now) {
            debug!(
                "{} {}/{} vanished while the watch was down",
                K::kind(&()),
                gone.namespace().unwrap_or_default(),
                gone.name_any()
            );
            (self.tell_parents)(gone.meta());
        }
        for obj in now {
            (self.tell_parents)(obj.meta());
            (self.own)(&obj);
        }
    }
}

/// The objects of `before` (the cache when a relist began) that `after` (the relisted cache)
/// no longer holds: deleted during the gap.
fn vanished<K: Resource>(before: &[Arc<K>], after: &[Arc<K>]) -> Vec<Arc<K>> {
    let key = |k: &Arc<K>| (k.meta().namespace.clone(), k.meta().name.clone());
    let present: HashSet<_> = after.iter().map(key).collect();
    before
        .iter()
        .filter(|k| !present.contains(&key(k)))
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
