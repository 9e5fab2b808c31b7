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

use serde_json::{Value, json};

use super::Session;
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

/// Whether `child` has a controller ownerReference naming `parent` (by uid).
fn controlled_by(child: &Value, parent: &Value) -> bool {
    let uid = &parent["metadata"]["uid"];
    child["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r["controller"] == json!(true) && &r["uid"] == uid)
        })
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
                        wrong.push(format!("{name} has spec {}", child["spec"]))
                    }
                    Some(child) => found.push(child),
                }
            }
            match (missing.is_empty(), wrong.is_empty()) {
                (true, true) => Ok(found),
                (false, _) => Err(Seen::Missing(format!("missing: {}", missing.join(", ")))),
                (true, false) => Err(Seen::Wrong(wrong.join("; "))),
            }
        })
        .await;
    let names = match want {
        [] => "none".to_string(),
        [only] => only.0.clone(),
        [first, .., last] => format!("{} … {}", first.0, last.0),
    };
    let subject = format!(
        "{parent_kind} {parent} has its {} {child_kind}s ({names}) with the desired specs",
        want.len()
    );
    let after = s.after();
    let found = match seen {
        Ok(found) => {
            s.pass(subject);
            found
        }
        Err(Seen::Missing(what) | Seen::Wrong(what)) => {
            s.fail(kinds, format!("{subject}: {what} {after}"), create_hint);
            return;
        }
        Err(Seen::NoStatus) => return,
    };
    let parent_object = r.get(parent_kind, parent).await.unwrap_or_default();
    let strays: Vec<String> = found
        .iter()
        .filter(|child| !controlled_by(child, &parent_object))
        .map(|child| {
            child["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    s.verdict(
        strays.is_empty(),
        kinds,
        format!("each of them has a controller ownerReference to {parent_kind} {parent}"),
        format!(
            "{} {}: {owner_hint}",
            strays.join(", "),
            if strays.len() == 1 {
                "has none"
            } else {
                "have none"
            }
        ),
    );
}

/// `kubectl delete <child>`: it comes back (a new object: another uid).
pub(super) async fn heal(s: &mut Session, kinds: &[Kind], kind: &str, name: &str, hint: &str) {
    let r = s.reader.clone();
    let Some(before) = r.get(kind, name).await else {
        return s.fail(
            kinds,
            format!("cannot delete {kind} {name} to see it come back: it never appeared"),
            hint,
        );
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
    let text = format!("{kind} {name} comes back after kubectl delete");
    let after = s.after();
    match back {
        Ok(()) => s.pass(text),
        Err(()) => {
            s.not_back
                .insert((kind.to_string(), name.to_string()), hint.to_string());
            s.fail(
                kinds,
                format!("{kind} {name} did not come back {after}"),
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
            Some(now) => Err(format!("its spec is still {}", now["spec"])),
            None => Err("it does not exist".to_string()),
        })
        .await;
    let after = s.after();
    match seen {
        Ok(()) => s.pass(text),
        Err(what) => s.fail(kinds, format!("{text}: {what} {after}"), hint),
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
            format!("cannot {step}: {kind}s {} never appeared", never.join(", ")),
            hint,
        );
    }
    // Deleted by an earlier step of this check and not healed: that step's cause, not the
    // creation's (they did appear).
    if let Some((_, heal_hint)) = not_back.first() {
        let names: Vec<&str> = not_back.iter().map(|(name, _)| *name).collect();
        s.fail(
            kinds,
            format!(
                "cannot {step}: {kind}s {} did not come back after the kubectl delete above",
                names.join(", ")
            ),
            heal_hint.clone(),
        );
    }
    never.is_empty() && not_back.is_empty()
}

/// Objects that must disappear.
pub(super) async fn gone(
    s: &mut Session,
    kinds: &[Kind],
    when: &str,
    kind: &str,
    names: &[&str],
    hint: &str,
) {
    let r = s.reader.clone();
    let seen = s
        .wait(kinds, async || {
            let present: Vec<String> = r
                .list(kind)
                .await
                .iter()
                .filter_map(|o| o["metadata"]["name"].as_str())
                .filter(|name| names.contains(name))
                .map(str::to_string)
                .collect();
            if present.is_empty() {
                Ok(())
            } else {
                Err(present)
            }
        })
        .await;
    let text = format!("{when}: {} {kind}s are gone", names.len());
    let after = s.after();
    match seen {
        Ok(()) => s.pass(text),
        Err(present) => s.fail(
            kinds,
            format!("{when}: {kind}s {} still exist {after}", present.join(", ")),
            hint,
        ),
    }
}
