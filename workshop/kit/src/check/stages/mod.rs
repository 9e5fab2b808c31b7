//! What each stage is judged by: the behaviour the original Go hands-on is judged by too
//! (statuses, children with controller ownerReferences, healing after `kubectl delete`,
//! extras removed, cascade on parent deletion), each with the hint a beginner can act on.
//! This module holds the probes the stages share; one module per stage.

mod fermat;
mod foreground;
mod number;
mod tuple;
mod watched;

pub(super) use fermat::fermat;
use foreground::foreground;
pub(super) use number::{number, number_crd};
pub(super) use tuple::tuple;
use watched::watched;

use serde_json::{Value, json};

use super::Session;
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
    /// Its status still answers an older generation of its spec (left behind): what it says.
    Behind(String),
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
    let seen = wanted(s, kinds, child_kind, want).await;
    let subject = t!(
        m::CHILDREN,
        parent_kind = parent_kind,
        parent = parent,
        count = want.len(),
        child_kind = child_kind,
        names = first_and_last(want)
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
        Err(Seen::NoStatus | Seen::Behind(_)) => return,
    };
    owned(s, kinds, (parent_kind, parent), &found, owner_hint).await;
}

/// The parent controls each of the children `found`, with `blockOwnerDeletion`.
async fn owned(
    s: &mut Session,
    kinds: &[Kind],
    (parent_kind, parent): (&str, &str),
    found: &[Value],
    owner_hint: &str,
) {
    let parent_object = s.reader.get(parent_kind, parent).await.unwrap_or_default();
    let (strays, unblocking) = not_owned(found, &parent_object);
    let hint = match strays.len() {
        0 => t!(
            m::NO_BLOCK_OWNER_DELETION,
            names = unblocking.join(", "),
            hint = owner_hint
        ),
        1 => t!(
            m::HAS_NO_OWNER,
            names = strays.join(", "),
            hint = owner_hint
        ),
        _ => t!(
            m::HAVE_NO_OWNER,
            names = strays.join(", "),
            hint = owner_hint
        ),
    };
    s.verdict(
        strays.is_empty() && unblocking.is_empty(),
        kinds,
        t!(m::OWNED, parent_kind = parent_kind, parent = parent),
        hint,
    );
}

/// Waits until every wanted child exists with its spec: the children, or which are missing
/// (else which have another spec).
async fn wanted(
    s: &mut Session,
    kinds: &[Kind],
    child_kind: &str,
    want: &[(String, Value)],
) -> Result<Vec<Value>, Seen> {
    let r = s.reader.clone();
    s.wait(kinds, async || {
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
    .await
}

/// The wanted children's names as a line says them: the one, or the first … the last.
fn first_and_last(want: &[(String, Value)]) -> String {
    match want {
        [] => m::NONE.text(),
        [only] => only.0.clone(),
        [first, .., last] => format!("{} … {}", first.0, last.0),
    }
}

/// The children of `found` that `parent` does not control (no controller ownerReference to its
/// uid), and those it controls without `blockOwnerDeletion: true`, which kubebuilder's
/// SetControllerReference sets (kube's controller_owner_ref leaves it out).
fn not_owned(found: &[Value], parent: &Value) -> (Vec<String>, Vec<String>) {
    let name = |child: &Value| {
        child["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let strays = (found.iter())
        .filter(|child| controller_ref(child, parent).is_none())
        .map(name)
        .collect();
    let unblocking = (found.iter())
        .filter(|child| {
            controller_ref(child, parent).is_some_and(|r| r["blockOwnerDeletion"] != json!(true))
        })
        .map(name)
        .collect();
    (strays, unblocking)
}

/// Whether the children a parent's spec wants (`parent_kind` `parent`) all exist with an answer
/// for their current spec (the status field `answer`). A parent without a status then was not
/// woken when they answered, or wrote nothing: its step's hint leads with `.owns`.
pub(super) async fn children_answered(s: &Session, (parent_kind, parent): (&str, &str)) -> bool {
    let Some(object) = s.reader.get(parent_kind, parent).await else {
        return false;
    };
    let (child_kind, answer, names): (&str, &str, Vec<String>) = match parent_kind {
        "Tuple" => {
            let count = object["spec"]["numbers"].as_array().map_or(0, Vec::len);
            let names = (0..count).map(|i| format!("{parent}-{i}")).collect();
            ("Number", "isSquare", names)
        }
        _ => {
            let n = object["spec"]["number"].as_i64().unwrap_or_default();
            let names = (1..=n / 2)
                .map(|a| format!("{parent}-{a}-and-{}", n - a))
                .collect();
            ("Tuple", "allSquares", names)
        }
    };
    for name in names {
        match s.reader.get(child_kind, &name).await {
            Some(child) if generation_matches(&child) && !child["status"][answer].is_null() => {}
            _ => return false,
        }
    }
    true
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
    let after = t!(
        m::AFTER,
        seconds = crate::check::evidence::seconds(deletions.waited, deletions.ran_out)
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_owned_by_a_controller_reference_that_blocks_the_owners_deletion() {
        let parent = json!({ "metadata": { "uid": "p" } });
        let child = |name: &str, refs: Value| json!({ "metadata": { "name": name, "ownerReferences": refs } });
        let found = [
            child(
                "owned",
                json!([{ "uid": "p", "controller": true, "blockOwnerDeletion": true }]),
            ),
            child("unblocking", json!([{ "uid": "p", "controller": true }])),
            child("not-controller", json!([{ "uid": "p" }])),
            child(
                "another-parent",
                json!([{ "uid": "q", "controller": true, "blockOwnerDeletion": true }]),
            ),
            json!({ "metadata": { "name": "no-references" } }),
        ];
        let (strays, unblocking) = not_owned(&found, &parent);
        assert_eq!(
            strays,
            ["not-controller", "another-parent", "no-references"]
        );
        assert_eq!(unblocking, ["unblocking"]);
    }

    #[test]
    fn a_line_names_the_first_and_the_last_child() {
        let want = |names: &[&str]| -> Vec<(String, Value)> {
            names.iter().map(|n| (n.to_string(), json!({}))).collect()
        };
        assert_eq!(first_and_last(&want(&["a"])), "a");
        assert_eq!(first_and_last(&want(&["a", "b", "c"])), "a … c");
    }
}
