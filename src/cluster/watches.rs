//! The watches: one per kind, feeding the cache that reconcilers read, and handing every
//! change to the controllers that care (the fan-out); and the periodic resync, the safety net
//! under both.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use tracing::{debug, error, warn};

use crate::cluster::backoff::{Exponential, random};
use crate::cluster::cache::Cache;
use crate::cluster::outage::{Outage, WatchBackoff};
use crate::error::is_unreachable;
use crate::kind::{Kind, Parent};
use crate::scheduler::TIMELINE;
use crate::scheduler::panics::catch_now;

/// Kept by `kubectl apply` on every object; the manager never reads it.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drop what the manager never reads before it reaches the cache: managedFields and the
/// last-applied annotation are often larger than the object itself.
fn slim<K: Resource>(obj: &mut K) {
    // `None`, not an emptied Vec: that would keep its buffer, per object.
    obj.meta_mut().managed_fields = None;
    let annotations = &mut obj.meta_mut().annotations;
    if let Some(map) = annotations {
        map.remove(LAST_APPLIED);
        if map.is_empty() {
            *annotations = None;
        }
    }
}

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
/// to create its own.
pub(crate) fn tell_parents<P: Parent>(
    parents: impl Fn(ObjectRef<P>, Cause) + Send + 'static,
) -> impl Fn(&P::Child, Cause) + Send + 'static {
    move |child, cause| {
        for owner in owners::<P>(child) {
            parents(owner, cause);
        }
    }
}

/// The watch of a kind nobody owns has no parents to tell.
pub(crate) fn no_parents<K>(_: &K, _: Cause) {}

fn owners<P: Parent>(child: &P::Child) -> Vec<ObjectRef<P>> {
    let namespace = child.namespace();
    let by_name = P::parent_of(&child.name_any())
        .map(|name| ObjectRef::new(name).within(namespace.as_deref().unwrap_or_default()));
    child
        .owner_references()
        .iter()
        .filter_map(|r| ObjectRef::from_owner_ref(namespace.as_deref(), r, ()))
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
}

/// One watch of kind `K`: it feeds `cache` (the store behind `writer`, and the owner index),
/// and hands every change to the controllers that care: the object itself to `K`'s own
/// controller, and (for a child that appeared, changed or was deleted) its parents to the
/// parent's controller ([`tell_parents`]); `witness` hears what the reconciles remember.
///
/// This is kube-runtime's "shared stream" idea with the controllers told directly (their
/// schedulers keep each object once, so nothing piles up while the caches sync):
/// kube-runtime 5's shared-store dispatcher does not forward deletions (so a
/// `kubectl delete number t-1` would never wake the Tuple), and its bounded buffer makes a
/// watch wait for the slowest controller.
///
/// A 410 Gone says the API server no longer has the history to resume from (compacted, or
/// lost in a restart). The watcher lists again by itself; the 410 is taken out before the
/// backoff, which would otherwise wait (up to a second after an outage) before the first
/// such list. A 410 again soon after (every watch answered 410) waits longer each time
/// ([`GoneBackoff`]): the filter holds the stream, and with it the list. Before the cache
/// takes a change, what it held moves the object out of its old controller's filing
/// (orphaned, re-parented).
pub(crate) fn watch_and_fan_out<K: Kind, W: Witness>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    cache: Cache<K>,
    own: impl Fn(&K, Cause) + Send + 'static,
    tell_parents: impl Fn(&K, Cause) + Send + 'static,
    witness: Arc<W>,
) -> impl Stream<Item = ()> + Send {
    let before = cache.clone();
    let outage = witness.outage();
    let mut fan_out = FanOut {
        cache,
        own,
        tell_parents,
        witness: witness.clone(),
        before_relist: Vec::new(),
        relist_began: Instant::now(),
    };
    let mut gone_backoff = GoneBackoff::default();
    watcher(api, config)
        // 410 Gone, taken out before the backoff (see above).
        .filter(move |event| {
            let gone = is_gone(event);
            let pause = gone_backoff.after(event, gone);
            if let Some(pause) = pause {
                witness.relist_started::<K>();
                debug!(
                    "watching {}s: resourceVersion too old; listing again in {pause:?}",
                    K::kind(&())
                );
            }
            async move {
                if let Some(pause) = pause.filter(|p| !p.is_zero()) {
                    tokio::time::sleep(pause).await;
                }
                !gone
            }
        })
        .backoff(WatchBackoff::default())
        .modify(slim)
        // What the cache held before the change: an object's old controller (see above).
        .inspect(move |event| {
            if let Ok(watcher::Event::Apply(obj)) = event
                && let Some(previous) = before.store.get(&ObjectRef::from_obj(obj))
            {
                before.moved(previous.as_ref(), obj);
            }
        })
        .reflect(writer)
        .inspect(move |event| {
            if let Err(error) = event
                && watch_unreachable(error)
            {
                outage.unreachable(None, error);
            }
        })
        .map(move |event| fan_out.caught(event))
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

impl<K: Kind, O: Fn(&K, Cause), P: Fn(&K, Cause), W: Witness> FanOut<K, O, P, W> {
    /// [`FanOut::event`], a panic in it ending that event's fan-out only: the watch, and with
    /// it the manager, goes on (the object's next change, or the resync, tells it again).
    fn caught(&mut self, event: Result<watcher::Event<K>, watcher::Error>) {
        let Err(panic) = catch_now(|| self.event(&event)) else {
            return;
        };
        let object = match &event {
            Ok(watcher::Event::Apply(obj) | watcher::Event::Delete(obj)) => format!(
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

    fn event(&mut self, event: &Result<watcher::Event<K>, watcher::Error>) {
        match event {
            Ok(watcher::Event::Apply(obj)) => {
                debug!(target: TIMELINE, kind = %K::kind(&()), ns = obj.namespace().unwrap_or_default(), name = %obj.name_any(), rv = obj.resource_version().unwrap_or_default(), "watch event");
                self.witness.saw(obj);
                self.cache.apply(obj);
                (self.tell_parents)(obj, Cause::Change);
                // The manager's own status write coming back is no news to its reconcile
                // (its parent still hears of it, above).
                if !self.witness.own_echo(obj) {
                    (self.own)(obj, Cause::Change);
                }
            }
            Ok(watcher::Event::Delete(obj)) => {
                self.witness.saw(obj);
                self.cache.delete(obj);
                (self.tell_parents)(obj, Cause::Change)
            }
            // The reflector fills a new cache on the side; until InitDone, the store still
            // shows the old one. (Init comes again before every attempt of a failing list:
            // the snapshot is of the cache, which only InitDone replaces.)
            Ok(watcher::Event::Init) => {
                self.relist_began = Instant::now();
                self.witness.relist_started::<K>();
                if self.before_relist.is_empty() {
                    self.before_relist = self.cache.store.state();
                }
            }
            Ok(watcher::Event::InitDone) => self.relisted(),
            Ok(watcher::Event::InitApply(_)) => {}
            // An unreachable server is reported once, by the outage.
            Err(error) if watch_unreachable(error) => {
                self.witness.watch_failed::<K>();
                debug!(%error, "watching {}s failed; retrying", K::kind(&()))
            }
            Err(error) => {
                self.witness.watch_failed::<K>();
                warn!(%error, "watching {}s failed; retrying with backoff", K::kind(&()))
            }
        }
    }

    /// A (re)list is complete and the cache swapped in: everything is news, and so is
    /// everything that vanished while the watch was down. What the list shows as it was
    /// before is a recheck; what changed or vanished meanwhile is a change.
    fn relisted(&mut self) {
        self.witness.relisted::<K>(self.relist_began);
        let now = self.cache.store.state();
        self.cache.rebuild(&now);
        let before = std::mem::take(&mut self.before_relist);
        for gone in vanished(&before, &now) {
            debug!(
                "{} {}/{} vanished while the watch was down",
                K::kind(&()),
                gone.namespace().unwrap_or_default(),
                gone.name_any()
            );
            (self.tell_parents)(&gone, Cause::Change);
        }
        let versions = versions(&before);
        for obj in now {
            let cause = cause_in_list(&versions, obj.as_ref());
            (self.tell_parents)(&obj, cause);
            (self.own)(&obj, cause);
        }
    }
}

/// An object's namespace and name, and its resourceVersion.
type Versions = HashMap<(Option<String>, Option<String>), Option<String>>;

/// The resourceVersion of each object the cache held before a relist.
fn versions<K: Resource>(before: &[Arc<K>]) -> Versions {
    let entry = |k: &Arc<K>| {
        let meta = k.meta();
        let key = (meta.namespace.clone(), meta.name.clone());
        (key, meta.resource_version.clone())
    };
    before.iter().map(entry).collect()
}

/// What a list shows of `obj`, given what the cache held before it (nothing: the first list):
/// a change when it is new or another version since, a recheck when it is as it was or when
/// there is nothing to compare with.
fn cause_in_list<K: Resource>(before: &Versions, obj: &K) -> Cause {
    if before.is_empty() {
        return Cause::Recheck;
    }
    let meta = obj.meta();
    let key = (meta.namespace.clone(), meta.name.clone());
    match before.get(&key) {
        Some(version) if *version == meta.resource_version => Cause::Recheck,
        _ => Cause::Change,
    }
}

/// Whether the API server answered 410 Gone: the resourceVersion is too old to resume
/// from (an ERROR event in the watch, or the watch's or a list page's answer).
fn is_gone<K>(event: &Result<watcher::Event<K>, watcher::Error>) -> bool {
    match event {
        Err(watcher::Error::WatchError(status)) => status.code == 410,
        Err(
            watcher::Error::WatchStartFailed(kube::Error::Api(status))
            | watcher::Error::InitialListFailed(kube::Error::Api(status)),
        ) => status.code == 410,
        _ => false,
    }
}

/// The pause before the list that follows a 410. The first relists at once (after a
/// compaction or an apiserver restart the cache is stale until it does); a 410 again
/// before any watch event came through means the new list did not help (an apiserver or
/// proxy answering 410 to every watch), and each such list and its fan-out to every
/// controller then waits longer: 800 ms doubling up to 30 s, client-go's reflector backoff.
/// Two quiet minutes since the last 410 start the count again, as client-go's do.
#[derive(Debug, Default)]
pub(crate) struct GoneBackoff {
    /// 410s since a watch last delivered an event.
    in_a_row: u32,
    last: Option<Instant>,
}

const GONE_FIRST_PAUSE: Duration = Duration::from_millis(800);
const GONE_MAX_PAUSE: Duration = Duration::from_secs(30);
const GONE_QUIET_RESET: Duration = Duration::from_secs(120);

impl GoneBackoff {
    /// A 410 at `now`: how long to wait before listing again.
    pub(crate) fn gone(&mut self, now: Instant) -> Duration {
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > GONE_QUIET_RESET)
        {
            self.in_a_row = 0;
        }
        self.last = Some(now);
        self.in_a_row = self.in_a_row.saturating_add(1);
        gone_pause(self.in_a_row)
    }

    /// The watch delivered an event: it works again.
    pub(crate) fn resumed(&mut self) {
        self.in_a_row = 0;
    }

    /// The pause before listing again after `event` (`gone`: a 410), if it is one; an
    /// event of an object says the watch works again.
    fn after<K>(
        &mut self,
        event: &Result<watcher::Event<K>, watcher::Error>,
        gone: bool,
    ) -> Option<Duration> {
        match event {
            Err(_) if gone => Some(self.gone(Instant::now())),
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {
                self.resumed();
                None
            }
            _ => None,
        }
    }
}

/// The pause before the list after the `in_a_row`th 410 in a row.
fn gone_pause(in_a_row: u32) -> Duration {
    match in_a_row {
        0 | 1 => Duration::ZERO,
        n => Exponential::new(GONE_FIRST_PAUSE, GONE_MAX_PAUSE).delay(n - 2, 0),
    }
}

/// Whether a watch failed because the API server could not be reached.
fn watch_unreachable(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => is_unreachable(e),
        _ => false,
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

    /// One watch whose connection breaks while the server is up (a proxy's idle timeout, a
    /// reset) is not an outage: the watcher reconnects, and reconciles go on. An outage shows
    /// as the reconnect (or a list) failing to reach the server. Before: a reset read was an
    /// outage, and every reconcile was put off until `GET /version` answered (issue 39).
    #[test]
    fn a_broken_watch_stream_is_not_an_outage_but_a_failed_connect_is() {
        let reset = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let broken = watcher::Error::WatchFailed(kube::Error::ReadEvents(reset()));
        assert!(!watch_unreachable(&broken));
        let refused = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        )));
        assert!(watch_unreachable(&watcher::Error::WatchStartFailed(
            refused
        )));
    }

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
    }

    /// A panic while one change is told (here in the controller it is told to) ends that
    /// change's fan-out only: the next change is told as usual (issue 48, item 3: it unwound
    /// through the task of every watch and controller, and the manager stopped).
    #[tokio::test] // a client's buffer needs a runtime; no request is made
    async fn a_panic_in_the_fan_out_of_one_change_stops_no_other() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let client = kube::Client::try_from(config).expect("a client; no request is made");
        let told = std::sync::Mutex::new(Vec::new());
        let (store, _writer) = reflector::store::<Number>();
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
            fan_out.caught(Ok(watcher::Event::Apply(number(name))));
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
        let before = versions(&[number("a", "1"), number("b", "2")]);
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
    fn a_first_410_relists_at_once_and_more_in_a_row_wait_longer() {
        let pauses: Vec<u64> = (1..=9).map(|n| gone_pause(n).as_millis() as u64).collect();
        assert_eq!(
            pauses,
            [0, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]
        );
        assert_eq!(gone_pause(u32::MAX), GONE_MAX_PAUSE);
    }

    #[test]
    fn an_event_or_two_quiet_minutes_start_the_count_again() {
        let start = Instant::now();
        let mut backoff = GoneBackoff::default();
        assert_eq!(backoff.gone(start), Duration::ZERO);
        assert_eq!(backoff.gone(start), GONE_FIRST_PAUSE);
        backoff.resumed();
        assert_eq!(backoff.gone(start), Duration::ZERO);
        assert_eq!(
            backoff.gone(start + Duration::from_secs(1)),
            GONE_FIRST_PAUSE
        );
        let later = start + Duration::from_secs(200);
        assert_eq!(backoff.gone(later), Duration::ZERO);
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
