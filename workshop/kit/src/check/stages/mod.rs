//! What each stage is judged by: the behaviour the original Go hands-on is judged by too
//! (statuses, children with controller ownerReferences, healing after `kubectl delete`,
//! extras removed, cascade on parent deletion), each with the hint a beginner can act on.
//! This module holds the probes the stages share; one module per stage.

mod fermat;
mod number;
mod tuple;

pub(super) use fermat::fermat;
pub(super) use number::{number, number_crd};
pub(super) use tuple::tuple;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{PATIENCE, Session};
use crate::messages as m;
use crate::t;
use crate::track::Kind;

pub(super) const NUMBER: &[Kind] = &[Kind::Number];
pub(super) const TUPLE: &[Kind] = &[Kind::Tuple, Kind::Number];
pub(super) const FERMAT: &[Kind] = &[Kind::Fermat, Kind::Tuple, Kind::Number];

/// What a probe saw instead of what it expected.
pub(super) enum Seen {
    /// The object does not exist.
    Missing(String),
    /// It exists without (that part of) a status.
    NoStatus,
    /// It is there, but wrong: what it says.
    Wrong(String),
}

pub(super) fn generation_matches(object: &Value) -> bool {
    object["status"]["observedGeneration"] == object["metadata"]["generation"]
}

/// The ownerReference of `child` that names `parent` (by uid) as its controller.
fn controller_ref<'a>(child: &'a Value, parent: &Value) -> Option<&'a Value> {
    let uid = &parent["metadata"]["uid"];
    child["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == json!(true) && &r["uid"] == uid)
}

/// The parent's children exist with the desired specs, and the parent controls each.
pub(super) async fn children(
    s: &mut Session,
    kinds: &[Kind],
    (parent_kind, parent): (&str, &str),
    child_kind: &str,
    want: &[(String, Value)],
    create_hint: &str,
    owner_hint: &str,
) {
    let r = s.reader.clone();
    let seen = s
        .wait(kinds, async || {
            let mut wrong = Vec::new();
            let mut missing = Vec::new();
            let mut found = Vec::new();
            for (name, spec) in want {
                match r.get(child_kind, name).await {
                    None => missing.push(name.clone()),
                    Some(child) if &child["spec"] != spec => {
                        wrong.push(t!(m::HAS_SPEC, name = name, spec = child["spec"]))
                    }
                    Some(child) => found.push(child),
                }
            }
            match (missing.is_empty(), wrong.is_empty()) {
                (true, true) => Ok(found),
                (false, _) => Err(Seen::Missing(t!(m::MISSING, names = missing.join(", ")))),
                (true, false) => Err(Seen::Wrong(wrong.join("; "))),
            }
        })
        .await;
    let names = match want {
        [] => m::NONE.text(),
        [only] => only.0.clone(),
        [first, .., last] => format!("{} … {}", first.0, last.0),
    };
    let subject = t!(
        m::CHILDREN,
        parent_kind = parent_kind,
        parent = parent,
        count = want.len(),
        child_kind = child_kind,
        names = names
    );
    let after = s.after();
    let found = match seen {
        Ok(found) => {
            s.pass(subject);
            found
        }
        Err(Seen::Missing(what) | Seen::Wrong(what)) => {
            s.fail(
                kinds,
                t!(m::SEEN, subject = subject, what = what, after = after),
                create_hint,
            );
            return;
        }
        Err(Seen::NoStatus) => return,
    };
    let parent_object = r.get(parent_kind, parent).await.unwrap_or_default();
    let name = |child: &Value| {
        child["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let strays: Vec<String> = found
        .iter()
        .filter(|child| controller_ref(child, &parent_object).is_none())
        .map(name)
        .collect();
    // controller: true, and blockOwnerDeletion: true as kubebuilder's SetControllerReference
    // sets it (kube's controller_owner_ref leaves it out).
    let unblocking: Vec<String> = found
        .iter()
        .filter(|child| {
            controller_ref(child, &parent_object)
                .is_some_and(|r| r["blockOwnerDeletion"] != json!(true))
        })
        .map(name)
        .collect();
    let hint = if strays.is_empty() {
        t!(
            m::NO_BLOCK_OWNER_DELETION,
            names = unblocking.join(", "),
            hint = owner_hint
        )
    } else if strays.len() == 1 {
        t!(
            m::HAS_NO_OWNER,
            names = strays.join(", "),
            hint = owner_hint
        )
    } else {
        t!(
            m::HAVE_NO_OWNER,
            names = strays.join(", "),
            hint = owner_hint
        )
    };
    s.verdict(
        strays.is_empty() && unblocking.is_empty(),
        kinds,
        t!(m::OWNED, parent_kind = parent_kind, parent = parent),
        hint,
    );
}

/// `kubectl delete <child>`: it comes back (a new object: another uid).
pub(super) async fn heal(s: &mut Session, kinds: &[Kind], kind: &str, name: &str, hint: &str) {
    let r = s.reader.clone();
    let Some(before) = r.get(kind, name).await else {
        return s.fail(kinds, t!(m::CANNOT_HEAL, kind = kind, name = name), hint);
    };
    let lower = kind.to_lowercase();
    if !s.kubectl(kinds, &["delete", &lower, name], "").await {
        return;
    }
    let uid = before["metadata"]["uid"].clone();
    let spec = before["spec"].clone();
    let back = s
        .wait(kinds, async || match r.get(kind, name).await {
            Some(now) if now["metadata"]["uid"] != uid && now["spec"] == spec => Ok(()),
            _ => Err(()),
        })
        .await;
    let text = t!(m::COMES_BACK, kind = kind, name = name);
    let after = s.after();
    match back {
        Ok(()) => s.pass(text),
        Err(()) => {
            s.not_back
                .insert((kind.to_string(), name.to_string()), hint.to_string());
            s.fail(
                kinds,
                t!(m::NOT_BACK, kind = kind, name = name, after = after),
                hint,
            )
        }
    }
}

/// An edited child converges back to `spec`.
pub(super) async fn converge(
    s: &mut Session,
    kinds: &[Kind],
    text: &str,
    kind: &str,
    name: &str,
    spec: Value,
    hint: &str,
) {
    let r = s.reader.clone();
    let seen = s
        .wait(kinds, async || match r.get(kind, name).await {
            Some(now) if now["spec"] == spec => Ok(()),
            Some(now) => Err(t!(m::SPEC_STILL, spec = now["spec"])),
            None => Err(m::DOES_NOT_EXIST.text()),
        })
        .await;
    let after = s.after();
    match seen {
        Ok(()) => s.pass(text),
        Err(what) => s.fail(
            kinds,
            t!(m::SEEN, subject = text, what = what, after = after),
            hint,
        ),
    }
}

/// Before a step that must make objects disappear: they exist (else the step proves nothing,
/// and is reported as a ✗ with how to create them, or, for those an earlier step deleted and
/// that did not come back, with that step's hint).
pub(super) async fn exist(
    s: &mut Session,
    kinds: &[Kind],
    step: &str,
    kind: &str,
    names: &[&str],
    hint: &str,
) -> bool {
    let r = s.reader.clone();
    let mut never = Vec::new();
    let mut not_back = Vec::new();
    for name in names {
        if r.get(kind, name).await.is_none() {
            match s.not_back.get(&(kind.to_string(), name.to_string())) {
                Some(heal_hint) => not_back.push((*name, heal_hint.clone())),
                None => never.push(*name),
            }
        }
    }
    if !never.is_empty() {
        s.fail(
            kinds,
            t!(
                m::NEVER_APPEARED,
                step = step,
                kind = kind,
                names = never.join(", ")
            ),
            hint,
        );
    }
    // Deleted by an earlier step of this check and not healed: that step's cause, not the
    // creation's (they did appear).
    if let Some((_, heal_hint)) = not_back.first() {
        let names: Vec<&str> = not_back.iter().map(|(name, _)| *name).collect();
        s.fail(
            kinds,
            t!(
                m::DID_NOT_COME_BACK,
                step = step,
                kind = kind,
                names = names.join(", ")
            ),
            heal_hint.clone(),
        );
    }
    never.is_empty() && not_back.is_empty()
}

/// Who deletes the objects a check waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum By {
    /// The participant's controller (children no longer wanted).
    Controller,
    /// The cluster's garbage collector (the children of a deleted parent), at the cluster's
    /// pace: shared by the whole room.
    Collector,
}

/// Objects that must disappear. The check waits as long as they keep going (a garbage
/// collector shared by a room is slow). `hint` says what the participant may have got wrong;
/// when the garbage collector is what is slow (objects it deletes that carry their controller
/// ownerReference, so the exercise is done), the ✗ says that instead.
pub(super) async fn gone(
    s: &mut Session,
    kinds: &[Kind],
    (when, by): (&str, By),
    kind: &str,
    names: &[&str],
    hint: &str,
) {
    let r = s.reader.clone();
    let seen = s
        .wait_for_deletions(kinds, async || {
            r.list(kind)
                .await
                .iter()
                .filter_map(|o| o["metadata"]["name"].as_str())
                .filter(|name| names.contains(name))
                .map(str::to_string)
                .collect()
        })
        .await;
    let text = t!(m::ARE_GONE, when = when, count = names.len(), kind = kind);
    let Err(deletions) = seen else {
        return s.pass(text);
    };
    let after = t!(m::AFTER, seconds = deletions.waited.as_secs());
    let owned = |o: &Value| {
        o["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|refs| refs.iter().any(|r| r["controller"] == json!(true)))
    };
    let left = r.list(kind).await;
    let collector_is_slow = by == By::Collector
        && (left.iter())
            .filter(|o| {
                (o["metadata"]["name"].as_str())
                    .is_some_and(|n| deletions.left.iter().any(|l| l == n))
            })
            .all(owned);
    let hint = if collector_is_slow {
        s.slow_deletions(deletions.gone, deletions.left.len(), deletions.waited)
    } else {
        hint.to_string()
    };
    s.fail(
        kinds,
        t!(
            m::STILL_EXIST,
            when = when,
            kind = kind,
            names = deletions.left.join(", "),
            after = after
        ),
        hint,
    );
}

/// The finalizer with which a check holds a child back for a moment, as a slow child would.
pub(crate) const HOLD: &str = "math.example.com/check-hold";

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
pub(super) async fn foreground(
    s: &mut Session,
    kinds: &[Kind],
    (parent_kind, parent): (&str, &str),
    (child_kind, held): (&str, &str),
    hint: &str,
) {
    use futures::StreamExt;
    use kube::runtime::watcher;

    let r = s.reader.clone();
    let Some(before) = r.get(parent_kind, parent).await else {
        return s.fail(
            kinds,
            t!(
                m::FOREGROUND_NO_PARENT,
                parent_kind = parent_kind,
                parent = parent
            ),
            m::APPLY_FAILED_ABOVE.text(),
        );
    };
    if r.get(child_kind, held).await.is_none() {
        return s.fail(
            kinds,
            t!(
                m::FOREGROUND_NO_CHILD,
                parent_kind = parent_kind,
                parent = parent,
                child_kind = child_kind,
                held = held
            ),
            hint,
        );
    }
    let parent_uid = before["metadata"]["uid"].clone();
    let owned_by_parent = |child: &kube::api::DynamicObject| {
        child
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|refs| refs.iter().any(|o| json!(o.uid) == parent_uid))
    };
    let child = child_kind.to_lowercase();
    let hold = format!(r#"{{"metadata":{{"finalizers":["{HOLD}"]}}}}"#);
    if !s
        .kubectl(
            kinds,
            &["patch", &child, held, "--type=merge", "-p", &hold],
            "",
        )
        .await
    {
        return;
    }
    // Every child the watch has seen, by uid; those seen after the deletion began are
    // re-creations.
    let mut events = watcher(r.api(child_kind), watcher::Config::default()).boxed();
    let mut seen = std::collections::BTreeSet::new();
    let deadline = tokio::time::Instant::now() + s.opts.timeout;
    let mut ready = false;
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.next()).await {
        match event {
            Ok(watcher::Event::InitApply(child)) => {
                seen.insert(child.metadata.uid.clone().unwrap_or_default());
            }
            Ok(watcher::Event::InitDone) => {
                ready = true;
                break;
            }
            _ => {}
        }
    }
    let lower = parent_kind.to_lowercase();
    let delete = [
        "delete",
        &lower,
        parent,
        "--cascade=foreground",
        "--wait=false",
    ];
    let deleted = ready && s.kubectl(kinds, &delete, "").await;
    let mut recreated: BTreeMap<String, usize> = BTreeMap::new();
    let window = s.opts.pace.window;
    let started = tokio::time::Instant::now();
    let counted_from = started + window;
    let release_at = counted_from + window;
    // A controller that re-creates children keeps the parent for good: a timeout after the
    // release is enough to say so. One that does not leaves the pace to the garbage collector,
    // which a room shares (a request of its per child and grandchild deleted, one more per
    // child that waited for its own, and kube-controller-manager sends about 20 a second for
    // everyone): the check's whole patience.
    let timely = release_at + s.opts.timeout;
    let patience = release_at + s.opts.timeout * PATIENCE;
    let deadline = |recreated: &BTreeMap<String, usize>| {
        if recreated.is_empty() {
            patience
        } else {
            timely
        }
    };
    let mut deleted_children = 0;
    let mut released = false;
    let mut parent_gone = false;
    let mut poll = tokio::time::interval(s.opts.pace.poll);
    while deleted && tokio::time::Instant::now() < deadline(&recreated) {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(watcher::Event::Apply(child) | watcher::Event::InitApply(child))) => {
                    let uid = child.metadata.uid.clone().unwrap_or_default();
                    if owned_by_parent(&child)
                        && seen.insert(uid)
                        && tokio::time::Instant::now() >= counted_from
                    {
                        *recreated.entry(child.metadata.name.clone().unwrap_or_default()).or_insert(0) += 1;
                    }
                }
                Some(Ok(watcher::Event::Delete(child))) if owned_by_parent(&child) => {
                    deleted_children += 1;
                }
                Some(_) => {}
                None => break,
            },
            _ = poll.tick() => {
                if !released && tokio::time::Instant::now() >= release_at {
                    released = true;
                    release(s, kinds, &child, held).await;
                }
                if released && r.get(parent_kind, parent).await.is_none() {
                    parent_gone = true;
                    break;
                }
            }
        }
    }
    if !released {
        release(s, kinds, &child, held).await;
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
    if !deleted {
        return;
    }
    let subject = t!(
        m::FOREGROUND_NONE_RECREATED,
        parent_kind = parent_kind,
        parent = parent,
        child_kind = child_kind
    );
    if recreated.is_empty() {
        s.pass(subject);
    } else {
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
        // The parent's controller is the one at fault; the children's last errors (a status
        // written to a child that was just deleted) would only distract.
        s.fail(
            &kinds[..1],
            t!(
                m::FOREGROUND_RECREATED,
                parent_kind = parent_kind,
                parent = parent,
                child_kind = child_kind,
                names = names.join(", ")
            ),
            hint,
        );
    }
    let waited = started.elapsed();
    let after = t!(m::AFTER, seconds = waited.as_secs());
    let still = if recreated.is_empty() {
        // The controller let the collector work: what keeps the parent is the collector.
        let left = r
            .list(child_kind)
            .await
            .iter()
            .filter(|o| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| refs.iter().any(|o| o["uid"] == parent_uid))
            })
            .count();
        t!(
            m::FOREGROUND_STILL_SLOW,
            parent_kind = parent_kind,
            parent = parent,
            after = after,
            child_kind = child_kind,
            slow = s.slow_deletions(deleted_children, left, waited)
        )
    } else {
        t!(
            m::FOREGROUND_STILL,
            parent_kind = parent_kind,
            parent = parent,
            after = after,
            hint = hint
        )
    };
    s.verdict(
        parent_gone,
        kinds,
        t!(
            m::FOREGROUND_GONE,
            parent_kind = parent_kind,
            parent = parent,
            child_kind = child_kind
        ),
        still,
    );
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
