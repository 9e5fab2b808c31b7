//! The watches: one per kind, feeding the cache that reconcilers read, and handing every
//! change to the controllers that care (the fan-out); and the periodic resync, the safety net
//! under both.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};

use crate::runtime::context::Context;
use crate::runtime::outage::{WatchBackoff, is_unreachable, random};

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

/// The owners of kind `P` named in a child's ownerReferences, as cache keys, and the parent
/// whose desired child carries this name: a deleted object that somebody else controlled
/// (a conflict) frees the name, and that parent must hear of it to create its own.
fn owners<P: Resource<DynamicType = ()>, C: Resource>(child: &C) -> Vec<ObjectRef<P>> {
    let namespace = child.namespace();
    let by_name = parent_name::<P>(&child.name_any())
        .map(|name| ObjectRef::new(&name).within(namespace.as_deref().unwrap_or_default()));
    child
        .owner_references()
        .iter()
        .filter_map(|r| ObjectRef::from_owner_ref(namespace.as_deref(), r, ()))
        .chain(by_name)
        .collect()
}

/// The name of the parent of kind `P` that wants a child of this name: `<tuple>-<index>`
/// for a Tuple, `<fermat>-<a>-and-<b>` for a Fermat.
fn parent_name<P: Resource<DynamicType = ()>>(child: &str) -> Option<String> {
    fn strip_number(name: &str) -> Option<&str> {
        let (rest, digits) = name.rsplit_once('-')?;
        (!rest.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then_some(rest)
    }
    match P::kind(&()).as_ref() {
        "Tuple" => strip_number(child).map(str::to_string),
        "Fermat" => strip_number(child)
            .and_then(|rest| rest.strip_suffix("-and"))
            .and_then(strip_number)
            .map(str::to_string),
        _ => None,
    }
}

/// One watch of kind `K`: it feeds the cache behind `reader`, and hands every change to the
/// controllers that care: the object itself to `K`'s own controller, and its owners of kind
/// `P` (for a child that appeared, changed or was deleted) to the parent's controller.
///
/// This is kube-runtime's "shared stream" idea with plain unbounded channels for the
/// fan-out: kube-runtime 5's shared-store dispatcher does not forward deletions (so a
/// `kubectl delete number t-1` would never wake the Tuple), and its bounded buffer makes a
/// watch wait for the slowest controller.
pub(crate) fn watch_and_fan_out<K, P>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    reader: Store<K>,
    own: mpsc::UnboundedSender<Arc<K>>,
    parents: Option<mpsc::UnboundedSender<ObjectRef<P>>>,
    ctx: Arc<Context>,
) -> impl Stream<Item = ()> + Send
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    P: Resource<DynamicType = ()> + 'static,
{
    let tell_parents = move |obj: &K| {
        if let Some(tx) = &parents {
            for owner in owners::<P, K>(obj) {
                let _ = tx.unbounded_send(owner);
            }
        }
    };
    // What the cache held when a (re)list began: the objects that are not in the new list
    // were deleted while the watch was down, and no Delete event will ever say so.
    let mut before_relist: Vec<Arc<K>> = Vec::new();
    let outage = ctx.outage.clone();
    let gone_kind = K::kind(&());
    let relisting = ctx.clone();
    watcher(api, config)
        // 410 Gone: the API server no longer has the history to resume from (compacted, or
        // lost in a restart). The watcher lists again by itself; taken out before the
        // backoff, which would otherwise wait (up to a second after an outage) before that
        // list, as client-go's reflector does not.
        .filter(move |event| {
            let gone = matches!(event, Err(watcher::Error::WatchError(s)) if s.code == 410);
            if gone {
                relisting.relist_started(gone_kind.clone());
                debug!(
                    "watching {}s: resourceVersion too old; listing again",
                    gone_kind
                );
            }
            futures::future::ready(!gone)
        })
        .backoff(WatchBackoff::default())
        .modify(slim)
        .reflect(writer)
        .inspect(move |event| {
            if let Err(error) = event
                && watch_unreachable(error)
            {
                outage.unreachable(None, error);
            }
        })
        .map(move |event| match event {
            Ok(watcher::Event::Apply(obj)) => {
                ctx.saw_event(&obj);
                if let Some(index) = ctx.owner_index_of(&K::kind(&())) {
                    index.apply(&obj);
                }
                tell_parents(&obj);
                // The cache's own copy: a burst of 10000 events queues pointers, not 10000
                // second copies of the objects.
                let cached = reader.get(&ObjectRef::from_obj(&obj));
                let _ = own.unbounded_send(cached.unwrap_or_else(|| Arc::new(obj)));
            }
            Ok(watcher::Event::Delete(obj)) => {
                ctx.saw_event(&obj);
                if let Some(index) = ctx.owner_index_of(&K::kind(&())) {
                    index.delete(&obj);
                }
                tell_parents(&obj)
            }
            // The reflector fills a new cache on the side; until InitDone, `reader` still
            // shows the old one. (Init comes again before every attempt of a failing list:
            // the snapshot is of the cache, which only InitDone replaces.)
            Ok(watcher::Event::Init) => {
                ctx.relist_started(K::kind(&()));
                if before_relist.is_empty() {
                    before_relist = reader.state();
                }
            }
            // A (re)list is complete and the cache swapped in: everything is news, and so is
            // everything that vanished while the watch was down.
            Ok(watcher::Event::InitDone) => {
                ctx.relist_done(K::kind(&()));
                let now = reader.state();
                if let Some(index) = ctx.owner_index_of(&K::kind(&())) {
                    index.rebuild(&now);
                }
                for gone in vanished(&std::mem::take(&mut before_relist), &now) {
                    debug!(
                        "{} {}/{} vanished while the watch was down",
                        K::kind(&()),
                        gone.namespace().unwrap_or_default(),
                        gone.name_any()
                    );
                    tell_parents(&gone);
                }
                for obj in now {
                    tell_parents(&obj);
                    let _ = own.unbounded_send(obj);
                }
            }
            Ok(watcher::Event::InitApply(_)) => {}
            // An unreachable server is reported once, by the outage above.
            Err(error) if watch_unreachable(&error) => {
                ctx.watch_failed(K::kind(&()));
                debug!(%error, "watching {}s failed; retrying", K::kind(&()))
            }
            Err(error) => {
                ctx.watch_failed(K::kind(&()));
                warn!(%error, "watching {}s failed; retrying with backoff", K::kind(&()))
            }
        })
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
    use crate::api::{Fermat, Number, Tuple};

    #[test]
    fn a_child_name_leads_to_the_parent_that_wants_it() {
        assert_eq!(parent_name::<Tuple>("t-0").as_deref(), Some("t"));
        assert_eq!(
            parent_name::<Tuple>("f-1-and-49-1").as_deref(),
            Some("f-1-and-49")
        );
        assert_eq!(parent_name::<Tuple>("number-sample"), None);
        assert_eq!(
            parent_name::<Fermat>("fermat-50-1-and-49").as_deref(),
            Some("fermat-50")
        );
        assert_eq!(parent_name::<Fermat>("t-1"), None);
        assert_eq!(parent_name::<Fermat>("-1-and-2"), None);
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
