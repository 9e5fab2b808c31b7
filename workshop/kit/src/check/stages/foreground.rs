//! The foreground deletion of a parent, with one of its children held back for a moment: the
//! parent waits while the garbage collector deletes its children, and a controller that
//! re-creates them keeps it waiting.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::DynamicObject;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::check::{PATIENCE, Session};
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// The finalizer with which a check holds a child back for a moment, as a slow child would.
pub(crate) const HOLD: &str = "math.example.com/check-hold";

/// The watch on the children of the parent's kind.
type Events = BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>>;

/// `kubectl delete <parent> --cascade=foreground`: the parent waits, with a deletionTimestamp,
/// while the garbage collector deletes its children; then it goes too. A controller that
/// applies the children of a parent being deleted re-creates each one the collector deletes
/// (the given `reconcile` returns at once for such a parent). The check holds one child with a
/// finalizer for two windows ([`Pace::window`](crate::check::Pace): a second each on a cluster,
/// half a second on the private test API server), as a child that takes time to go would, so
/// that the parent waits visibly on any cluster; a watch on the children, started before the
/// deletion, sees every re-creation however briefly it lived.
///
/// Only re-creations in the second window count. In the first, even a correct controller may
/// re-create a child once: a reconcile that began before the deletion (the hold's own patch
/// triggers one) applies the children it planned from the parent as it was, and the parent's
/// watch may deliver the deletionTimestamp after the children's watch delivered the
/// collector's deletes (kube-controller-manager's controllers have the same window, and the
/// collector deletes such a child again). A controller without the guard never stops: the
/// collector deletes each re-created child and the deletion triggers the next re-creation,
/// for as long as the parent waits. Seen on kube-apiserver + kube-controller-manager v1.24
/// (`--cluster`): a Tuple controller without the guard re-created each of its five Numbers
/// 53–55 times in the counted second; the reference solutions, none. On the test API server
/// (in-process, where a reconcile takes milliseconds) half a second each is ample, and a save
/// in `make workshop-watch` waits a second less.
///
/// Without re-creations the parent's going is the garbage collector's business, and a room
/// shares it: thirty checks on a real v1.24 at kube-controller-manager's default client limit
/// saw none of their six Tuples go within 30 s. Then the check waits its whole patience
/// ([`PATIENCE`] timeouts), and a parent still there is the collector's slowness, said so.
pub(in crate::check) async fn foreground(
    s: &mut Session,
    kinds: &[Kind],
    (parent_kind, parent): (&str, &str),
    (child_kind, held): (&str, &str),
    hint: &str,
) {
    let Some(d) = hold(s, kinds, (parent_kind, parent), (child_kind, held), hint).await else {
        return;
    };
    // Every child the watch has seen, by uid; those seen after the deletion began are
    // re-creations.
    let mut events: Events = watcher(s.reader.api(child_kind), watcher::Config::default()).boxed();
    let seen = listed(&mut events, s.opts.timeout).await;
    let ready = seen.is_some();
    let lower = parent_kind.to_lowercase();
    let delete = [
        "delete",
        &lower,
        parent,
        "--cascade=foreground",
        "--wait=false",
    ];
    let deleted = ready && s.kubectl(kinds, &delete, "").await;
    let started = Instant::now();
    let windows = Windows::new(started, s.opts.pace.window, s.opts.timeout);
    let watched = match seen {
        Some(seen) if deleted => observe(s, kinds, &d, &mut events, seen, &windows).await,
        _ => Watched::default(),
    };
    if !watched.released {
        release(s, kinds, &d.child, d.held).await;
    }
    if !ready {
        return s.fail(
            kinds,
            t!(
                m::FOREGROUND_NO_WATCH,
                child_kind = child_kind,
                parent_kind = parent_kind,
                parent = parent
            ),
            m::REACHABLE.text(),
        );
    }
    if deleted {
        none_recreated(s, kinds, &d, &watched.recreated, hint);
        parent_went(s, kinds, &d, &watched, started, hint).await;
    }
}

/// The parent being deleted and the child the check holds back.
struct Deletion<'a> {
    parent_kind: &'a str,
    parent: &'a str,
    child_kind: &'a str,
    /// `child_kind` as kubectl names it.
    child: String,
    /// The child held back.
    held: &'a str,
    parent_uid: Value,
}

impl Deletion<'_> {
    /// Whether `child` names the parent among its owners.
    fn owns(&self, child: &DynamicObject) -> bool {
        (child.metadata.owner_references.as_ref())
            .is_some_and(|refs| refs.iter().any(|o| json!(o.uid) == self.parent_uid))
    }
}

/// The parent and the child to hold exist; the child gets the check's finalizer. `None` after
/// a ✗ that says which does not exist, or after kubectl's failure (shown).
async fn hold<'a>(
    s: &mut Session,
    kinds: &[Kind],
    (parent_kind, parent): (&'a str, &'a str),
    (child_kind, held): (&'a str, &'a str),
    hint: &str,
) -> Option<Deletion<'a>> {
    let r = s.reader.clone();
    let Some(before) = r.get(parent_kind, parent).await else {
        let text = t!(
            m::FOREGROUND_NO_PARENT,
            parent_kind = parent_kind,
            parent = parent
        );
        s.fail(kinds, text, m::APPLY_FAILED_ABOVE.text());
        return None;
    };
    if r.get(child_kind, held).await.is_none() {
        let text = t!(
            m::FOREGROUND_NO_CHILD,
            parent_kind = parent_kind,
            parent = parent,
            child_kind = child_kind,
            held = held
        );
        s.fail(kinds, text, hint);
        return None;
    }
    let child = child_kind.to_lowercase();
    let hold = format!(r#"{{"metadata":{{"finalizers":["{HOLD}"]}}}}"#);
    let patch = ["patch", &child, held, "--type=merge", "-p", &hold];
    if !s.kubectl(kinds, &patch, "").await {
        return None;
    }
    Some(Deletion {
        parent_kind,
        parent,
        child_kind,
        child,
        held,
        parent_uid: before["metadata"]["uid"].clone(),
    })
}

/// The uids of the children before the deletion (the watch's initial list), or `None` when the
/// watch did not start within `timeout`.
async fn listed(events: &mut Events, timeout: Duration) -> Option<BTreeSet<String>> {
    let deadline = Instant::now() + timeout;
    let mut seen = BTreeSet::new();
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.next()).await {
        match event {
            Ok(watcher::Event::InitApply(child)) => {
                seen.insert(child.metadata.uid.clone().unwrap_or_default());
            }
            Ok(watcher::Event::InitDone) => return Some(seen),
            _ => {}
        }
    }
    None
}

/// The moments of a foreground deletion, from when it began.
struct Windows {
    /// Re-creations from here on count (in the first window even a correct controller may
    /// re-create a child once).
    counted_from: Instant,
    /// The held child is released here, at the end of the second window.
    release_at: Instant,
    /// How long to watch once a child was re-created.
    timely: Instant,
    /// How long to wait for the garbage collector when none was.
    patience: Instant,
}

impl Windows {
    fn new(started: Instant, window: Duration, timeout: Duration) -> Windows {
        let counted_from = started + window;
        let release_at = counted_from + window;
        Windows {
            counted_from,
            release_at,
            timely: release_at + timeout,
            patience: release_at + timeout * PATIENCE,
        }
    }

    /// A controller that re-creates children keeps the parent for good: a timeout after the
    /// release is enough to say so. One that does not leaves the pace to the garbage collector,
    /// which a room shares (a request of its per child and grandchild deleted, one more per
    /// child that waited for its own, and kube-controller-manager sends about 20 a second for
    /// everyone): the check's whole patience.
    fn deadline(&self, recreated: &BTreeMap<String, usize>) -> Instant {
        if recreated.is_empty() {
            self.patience
        } else {
            self.timely
        }
    }
}

/// What the watch on the children saw while the parent was being deleted.
#[derive(Default)]
struct Watched {
    /// The children re-created in the counted window, by name, and how often.
    recreated: BTreeMap<String, usize>,
    /// How many of the parent's children were deleted.
    deleted_children: usize,
    /// Whether the held child was released.
    released: bool,
    /// Whether the parent is gone.
    parent_gone: bool,
}

/// Watches the children while the parent is deleted: counts the re-creations of the counted
/// window, releases the held child after it, and stops once the parent is gone or at the
/// deadline.
async fn observe(
    s: &mut Session,
    kinds: &[Kind],
    d: &Deletion<'_>,
    events: &mut Events,
    mut seen: BTreeSet<String>,
    windows: &Windows,
) -> Watched {
    let r = s.reader.clone();
    let mut watched = Watched::default();
    let mut poll = tokio::time::interval(s.opts.pace.poll);
    while Instant::now() < windows.deadline(&watched.recreated) {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(watcher::Event::Apply(child) | watcher::Event::InitApply(child))) => {
                    let uid = child.metadata.uid.clone().unwrap_or_default();
                    if d.owns(&child) && seen.insert(uid) && Instant::now() >= windows.counted_from {
                        let name = child.metadata.name.clone().unwrap_or_default();
                        *watched.recreated.entry(name).or_insert(0) += 1;
                    }
                }
                Some(Ok(watcher::Event::Delete(child))) if d.owns(&child) => {
                    watched.deleted_children += 1;
                }
                Some(_) => {}
                None => break,
            },
            _ = poll.tick() => {
                if !watched.released && Instant::now() >= windows.release_at {
                    watched.released = true;
                    release(s, kinds, &d.child, d.held).await;
                }
                if watched.released && r.get(d.parent_kind, d.parent).await.is_none() {
                    watched.parent_gone = true;
                    break;
                }
            }
        }
    }
    watched
}

/// ✓ when the parent's controller re-created none of the children in the counted window; ✗
/// with their names (and how often) when it did.
fn none_recreated(
    s: &mut Session,
    kinds: &[Kind],
    d: &Deletion<'_>,
    recreated: &BTreeMap<String, usize>,
    hint: &str,
) {
    let subject = t!(
        m::FOREGROUND_NONE_RECREATED,
        parent_kind = d.parent_kind,
        parent = d.parent,
        child_kind = d.child_kind
    );
    if recreated.is_empty() {
        return s.pass(subject);
    }
    // The parent's controller is the one at fault; the children's last errors (a status
    // written to a child that was just deleted) would only distract.
    s.fail(
        &kinds[..1],
        t!(
            m::FOREGROUND_RECREATED,
            parent_kind = d.parent_kind,
            parent = d.parent,
            child_kind = d.child_kind,
            names = recreated_names(recreated)
        ),
        hint,
    );
}

/// "tuple-sample-0, tuple-sample-1 (3×)": each re-created child, with how often when more than
/// once.
fn recreated_names(recreated: &BTreeMap<String, usize>) -> String {
    let names: Vec<String> = recreated
        .iter()
        .map(|(name, n)| {
            if *n == 1 {
                name.clone()
            } else {
                format!("{name} ({n}×)")
            }
        })
        .collect();
    names.join(", ")
}

/// ✓ when the parent went; ✗ with what keeps it: the re-creations, or else the garbage
/// collector's pace.
async fn parent_went(
    s: &mut Session,
    kinds: &[Kind],
    d: &Deletion<'_>,
    watched: &Watched,
    started: Instant,
    hint: &str,
) {
    let waited = started.elapsed();
    let after = t!(m::AFTER, seconds = waited.as_secs());
    let still = if watched.recreated.is_empty() {
        // The controller let the collector work: what keeps the parent is the collector.
        let left = (s.reader.list(d.child_kind).await.iter())
            .filter(|o| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| refs.iter().any(|o| o["uid"] == d.parent_uid))
            })
            .count();
        t!(
            m::FOREGROUND_STILL_SLOW,
            parent_kind = d.parent_kind,
            parent = d.parent,
            after = after,
            child_kind = d.child_kind,
            slow = s.slow_deletions(watched.deleted_children, left, waited)
        )
    } else {
        t!(
            m::FOREGROUND_STILL,
            parent_kind = d.parent_kind,
            parent = d.parent,
            after = after,
            hint = hint
        )
    };
    let subject = t!(
        m::FOREGROUND_GONE,
        parent_kind = d.parent_kind,
        parent = d.parent,
        child_kind = d.child_kind
    );
    s.verdict(watched.parent_gone, kinds, subject, still);
}

/// Takes the check's finalizer off a held child (what a slow child's own controller does
/// when it is done), so that the garbage collector can finish.
async fn release(s: &mut Session, kinds: &[Kind], child: &str, held: &str) {
    let args = [
        "patch",
        child,
        held,
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ];
    let ran = s.kubectl.run(&args).await;
    // Gone already is fine: nothing holds it any more.
    let shown = s.kubectl.shown(&args);
    if ran.ok || ran.stderr.contains("NotFound") || ran.stderr.contains("not found") {
        s.pass(shown);
    } else {
        s.fail(
            kinds,
            t!(m::COMMAND_FAILED, command = shown, said = ran.said()),
            "",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_re_created_more_than_once_says_how_often() {
        let recreated = BTreeMap::from([("t-0".to_string(), 1), ("t-1".to_string(), 3)]);
        assert_eq!(recreated_names(&recreated), "t-0, t-1 (3×)");
    }

    #[test]
    fn the_check_waits_its_whole_patience_only_for_the_garbage_collector() {
        let started = Instant::now();
        let (window, timeout) = (Duration::from_secs(1), Duration::from_secs(10));
        let windows = Windows::new(started, window, timeout);
        assert_eq!(windows.counted_from, started + window);
        assert_eq!(windows.release_at, started + window * 2);
        let none = BTreeMap::new();
        assert_eq!(
            windows.deadline(&none),
            started + window * 2 + timeout * PATIENCE
        );
        let some = BTreeMap::from([("t-0".to_string(), 1)]);
        assert_eq!(windows.deadline(&some), started + window * 2 + timeout);
    }
}
