//! What a status must say, and the wrong answers and loops a [`History`](super::history) of
//! `kubectl get -w` shows. Pure functions: the history in, the verdicts out.
//!
//! A status is an answer when its `observedGeneration` is the object's `generation`: it says
//! that it describes the spec beside it, and then it must be right. One that describes an older
//! generation says so, and is never wrong (the guide's "surprising line", a Number's answer for
//! a value already put back). A wrong answer of a parent names what its children were at the
//! time: one that had not answered yet (the Go original's `allSquares: true` for a Tuple whose
//! Numbers were not computed), one whose status was for an older spec, or none (the answer was
//! computed wrong).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::history::Seen;
use crate::math;
use crate::track::Kind;

/// The largest Fermat number whose answer the check computes (O(√n)); the workshop's CRD
/// bounds it to 1000.
const LARGEST_FERMAT: i64 = 1_000_000;

/// How often one child may be created before it is a loop: once, once more after each delete
/// of the check (itself or its parent), and once by a reconcile that was in flight then, is at
/// most four in any stage; a controller that deletes what it applies creates it dozens of times
/// a second.
pub(crate) const LOOP_AFTER: usize = 5;

/// The right answer for an object of `kind` with `spec`: the status fields it must have, with
/// their values. `None` when the spec is not one the check can answer.
pub(crate) fn right_answer(kind: Kind, spec: &Value) -> Option<Value> {
    match kind {
        Kind::Number => {
            let value = spec["value"].as_i64()?;
            Some(json!({
                "fizzBuzz": math::fizzbuzz(value),
                "isSquare": math::is_square(value),
                "isPrime": math::is_prime(value),
            }))
        }
        Kind::Tuple => {
            let numbers: Option<Vec<i64>> = spec["numbers"]
                .as_array()?
                .iter()
                .map(Value::as_i64)
                .collect();
            Some(json!({ "allSquares": numbers?.into_iter().all(math::is_square) }))
        }
        Kind::Fermat => {
            let n = spec["number"]
                .as_i64()
                .filter(|n| (0..=LARGEST_FERMAT).contains(n))?;
            let found: Vec<String> = math::two_square_decompositions(n)
                .into_iter()
                .map(|(x, y)| math::format_decomposition(x, y))
                .collect();
            Some(json!({
                "decompositions": found,
                "twoSquaresFound": !found.is_empty(),
                "isPrime": math::is_prime(n),
                "oneModFour": math::is_one_mod_four(n),
            }))
        }
    }
}

/// What `status` says of the fields of `right`, or `None` when it has none of them (no answer
/// yet). A field it lacks reads as `null`.
fn given(status: &Value, right: &Value) -> Option<Value> {
    let fields = right.as_object()?;
    if fields.keys().all(|field| status[field].is_null()) {
        return None;
    }
    let said = fields
        .keys()
        .map(|field| (field.clone(), status[field].clone()))
        .collect();
    Some(Value::Object(said))
}

/// What a parent's wanted children were when it gave a wrong answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// This child did not exist, or had no answer yet.
    Unanswered { kind: Kind, name: String },
    /// This child's status answered an older spec.
    Stale {
        kind: Kind,
        name: String,
        observed: i64,
        generation: i64,
    },
    /// Every child had answered its current spec: the parent computed its answer wrong.
    Computed,
}

/// A status that answered its object's current generation wrong (the first such of each
/// object).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wrong {
    pub kind: Kind,
    pub name: String,
    pub spec: Value,
    pub generation: i64,
    /// What the status said, and what it should have said.
    pub given: Value,
    pub right: Value,
    /// For a parent: what its children were at the time.
    pub cause: Option<Cause>,
}

/// How many states of `seen` are answers: a status that claims to describe its object's
/// current spec (none before a controller wrote one: nothing to judge then).
pub(crate) fn answers(seen: &[Seen]) -> usize {
    seen.iter()
        .filter(|s| !s.deleted && s.current())
        .filter(|s| {
            right_answer(s.kind, &s.object["spec"])
                .is_some_and(|right| given(&s.object["status"], &right).is_some())
        })
        .count()
}

/// Every object's first wrong answer in `seen` (ordered as [`History::seen`](super::history)
/// orders it).
pub(crate) fn wrong_answers(seen: &[Seen]) -> Vec<Wrong> {
    let mut reported = BTreeSet::new();
    let mut wrong = Vec::new();
    for (at, state) in seen.iter().enumerate() {
        if state.deleted || !state.current() || reported.contains(&(state.kind, &state.name)) {
            continue;
        }
        let spec = &state.object["spec"];
        let Some(right) = right_answer(state.kind, spec) else {
            continue;
        };
        match given(&state.object["status"], &right) {
            Some(given) if given != right => {
                reported.insert((state.kind, &state.name));
                wrong.push(Wrong {
                    kind: state.kind,
                    name: state.name.clone(),
                    spec: spec.clone(),
                    generation: state.generation().unwrap_or_default(),
                    given,
                    right,
                    cause: wanted_children(state)
                        .map(|(kind, names)| cause(seen, at, kind, &names)),
                });
            }
            _ => {}
        }
    }
    wrong
}

/// The children a parent's spec wants: their kind and names, in the spec's order.
fn wanted_children(parent: &Seen) -> Option<(Kind, Vec<String>)> {
    let spec = &parent.object["spec"];
    match parent.kind {
        Kind::Number => None,
        Kind::Tuple => {
            let count = spec["numbers"].as_array()?.len();
            let names = (0..count).map(|i| format!("{}-{i}", parent.name)).collect();
            Some((Kind::Number, names))
        }
        Kind::Fermat => {
            let n = spec["number"]
                .as_i64()
                .filter(|n| (0..=LARGEST_FERMAT).contains(n))?;
            let names = math::fermat_splits(n)
                .into_iter()
                .map(|(a, b)| format!("{}-{a}-and-{b}", parent.name))
                .collect();
            Some((Kind::Tuple, names))
        }
    }
}

/// One child's state at some moment, as a parent could have read it.
enum Child {
    /// Not there, or without an answer.
    Unanswered,
    /// An answer for an older generation.
    Stale { observed: i64, generation: i64 },
    /// An answer for its current spec.
    Answered,
}

fn child_state(state: Option<&Seen>) -> Child {
    let Some(state) = state.filter(|s| !s.deleted) else {
        return Child::Unanswered;
    };
    let answer = match state.kind {
        Kind::Tuple => "allSquares",
        _ => "isSquare",
    };
    match (state.observed(), state.generation()) {
        _ if state.object["status"][answer].is_null() => Child::Unanswered,
        (Some(observed), Some(generation)) if observed != generation => Child::Stale {
            observed,
            generation,
        },
        (Some(_), Some(_)) => Child::Answered,
        _ => Child::Unanswered,
    }
}

/// What the wanted children were when the parent whose state is `seen[at]` computed it. First
/// as they were when it wrote (its reconcile read them a moment before); if every child had
/// answered by then, the last state without an answer since the parent's previous state (its
/// reconcile read its children after that, the later the likelier); else as they were at that
/// previous state. A child that had not answered is the cause first, then one whose answer was
/// for an older spec.
fn cause(seen: &[Seen], at: usize, kind: Kind, wanted: &[String]) -> Cause {
    let parent = &seen[at];
    let since = seen[..at]
        .iter()
        .rposition(|s| s.is(parent.kind, &parent.name))
        .unwrap_or(0);
    let state_at = |end: usize| -> Vec<(&String, Child)> {
        let last = |name: &String| seen[..end].iter().rfind(|s| s.is(kind, name));
        wanted
            .iter()
            .map(|name| (name, child_state(last(name))))
            .collect()
    };
    let latest = seen[since + 1..at].iter().rev().find_map(|s| {
        let name = wanted.iter().find(|name| s.is(kind, name))?;
        worst(kind, &[(name, child_state(Some(s)))])
    });
    worst(kind, &state_at(at))
        .or(latest)
        .or_else(|| worst(kind, &state_at(since + 1)))
        .unwrap_or(Cause::Computed)
}

/// Among children's states: the first that had not answered, else the first whose answer was
/// for an older spec.
fn worst(kind: Kind, states: &[(&String, Child)]) -> Option<Cause> {
    let unanswered = states
        .iter()
        .find(|(_, child)| matches!(child, Child::Unanswered));
    if let Some((name, _)) = unanswered {
        return Some(Cause::Unanswered {
            kind,
            name: (*name).clone(),
        });
    }
    states.iter().find_map(|(name, child)| match child {
        Child::Stale {
            observed,
            generation,
        } => Some(Cause::Stale {
            kind,
            name: (*name).clone(),
            observed: *observed,
            generation: *generation,
        }),
        _ => None,
    })
}

/// The objects of `kind` created more than [`LOOP_AFTER`] times (each creation a new uid), with
/// how often, by name.
pub(crate) fn loops(seen: &[Seen], kind: Kind) -> Vec<(String, usize)> {
    let mut uids: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for state in seen.iter().filter(|s| s.kind == kind) {
        uids.entry(&state.name).or_default().insert(&state.uid);
    }
    uids.into_iter()
        .filter(|(_, uids)| uids.len() > LOOP_AFTER)
        .map(|(name, uids)| (name.to_string(), uids.len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state of `kind` `name` (uid `uid`), with its spec, generation and status.
    fn state(
        kind: Kind,
        name: &str,
        uid: &str,
        spec: Value,
        generation: i64,
        status: Value,
    ) -> Seen {
        Seen {
            kind,
            name: name.to_string(),
            uid: uid.to_string(),
            version: None,
            deleted: false,
            object: json!({
                "metadata": { "name": name, "uid": uid, "generation": generation },
                "spec": spec,
                "status": status,
            }),
        }
    }

    fn number(name: &str, value: i64, generation: i64, answered: Option<(i64, i64)>) -> Seen {
        let status = match answered {
            Some((observed, of)) => json!({
                "observedGeneration": observed,
                "fizzBuzz": math::fizzbuzz(of),
                "isSquare": math::is_square(of),
                "isPrime": math::is_prime(of),
            }),
            None => Value::Null,
        };
        state(
            Kind::Number,
            name,
            name,
            json!({ "value": value }),
            generation,
            status,
        )
    }

    fn tuple(numbers: Value, generation: i64, all_squares: Option<(i64, bool)>) -> Seen {
        let status = match all_squares {
            Some((observed, all)) => json!({ "observedGeneration": observed, "allSquares": all }),
            None => Value::Null,
        };
        state(
            Kind::Tuple,
            "t",
            "t",
            json!({ "numbers": numbers }),
            generation,
            status,
        )
    }

    #[test]
    fn the_right_answers_are_computed_from_the_spec() {
        assert_eq!(
            right_answer(Kind::Number, &json!({ "value": 15 })),
            Some(json!({ "fizzBuzz": "FizzBuzz", "isSquare": false, "isPrime": false }))
        );
        assert_eq!(
            right_answer(Kind::Tuple, &json!({ "numbers": [] })),
            Some(json!({ "allSquares": true }))
        );
        assert_eq!(
            right_answer(Kind::Fermat, &json!({ "number": 5 }))
                .map(|a| a["decompositions"].clone()),
            Some(json!(["1²+2²"]))
        );
        assert_eq!(
            right_answer(Kind::Fermat, &json!({ "number": i64::MAX })),
            None
        );
    }

    #[test]
    fn a_tuple_that_answered_before_its_numbers_is_caught_with_the_one_that_had_not() {
        let seen = [
            number("t-0", 0, 1, Some((1, 0))),
            tuple(json!([0, 1, 2]), 1, None),
            number("t-1", 1, 1, None),
            // The Go original's answer: nothing computed yet, "all squares".
            tuple(json!([0, 1, 2]), 1, Some((1, true))),
            tuple(json!([0, 1, 2]), 1, Some((1, false))),
        ];
        let wrong = wrong_answers(&seen);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert_eq!(wrong[0].given, json!({ "allSquares": true }));
        assert_eq!(wrong[0].right, json!({ "allSquares": false }));
        assert_eq!(
            wrong[0].cause,
            Some(Cause::Unanswered {
                kind: Kind::Number,
                name: "t-1".to_string()
            })
        );
    }

    #[test]
    fn an_answer_from_a_childs_status_for_an_older_spec_names_that_child() {
        let seen = [
            number("t-0", 0, 1, Some((1, 0))),
            tuple(json!([0]), 1, Some((1, true))),
            // Shrunk and changed to [2]: the child's value changes, its answer is still 0's.
            tuple(json!([2]), 2, Some((1, true))),
            number("t-0", 2, 2, Some((1, 0))),
            tuple(json!([2]), 2, Some((2, true))),
        ];
        let wrong = wrong_answers(&seen);
        assert_eq!(
            wrong[0].cause,
            Some(Cause::Stale {
                kind: Kind::Number,
                name: "t-0".to_string(),
                observed: 1,
                generation: 2
            })
        );
    }

    #[test]
    fn what_the_children_were_when_the_parent_wrote_comes_before_what_they_were_earlier() {
        let seen = [
            tuple(json!([0, 2]), 1, Some((1, false))),
            // A child deleted and back (kubectl delete) since the parent's last state …
            number("t-0", 0, 1, None),
            number("t-0", 0, 1, Some((1, 0))),
            // … and one whose answer is for its older value when the parent writes.
            number("t-1", 2, 3, Some((2, 100))),
            tuple(json!([0, 2]), 1, Some((1, true))),
        ];
        assert_eq!(
            wrong_answers(&seen)[0].cause,
            Some(Cause::Stale {
                kind: Kind::Number,
                name: "t-1".to_string(),
                observed: 2,
                generation: 3
            })
        );
    }

    #[test]
    fn when_every_child_answered_by_then_the_latest_state_without_an_answer_is_the_cause() {
        // Seen on the test API server: a Number deleted and back long before, then a hand edit
        // whose answer (100, a square) the Tuple read just before the value 2 was answered.
        let seen = [
            tuple(json!([1, 2]), 1, Some((1, false))),
            number("t-0", 1, 1, None),
            number("t-0", 1, 1, Some((1, 1))),
            number("t-1", 2, 3, Some((2, 100))),
            number("t-1", 2, 3, Some((3, 2))),
            tuple(json!([1, 2]), 1, Some((1, true))),
        ];
        assert_eq!(
            wrong_answers(&seen)[0].cause,
            Some(Cause::Stale {
                kind: Kind::Number,
                name: "t-1".to_string(),
                observed: 2,
                generation: 3
            })
        );
    }

    #[test]
    fn a_status_for_an_older_generation_is_no_answer_and_never_wrong() {
        // The guide's surprising line: 7's answer written after the value was put back to 0.
        let seen = [
            number("n", 7, 2, Some((1, 0))),
            number("n", 0, 3, Some((2, 7))),
            number("n", 0, 3, Some((3, 0))),
        ];
        assert!(wrong_answers(&seen).is_empty());
        let wrong = wrong_answers(&[number("n", 4, 1, Some((1, 5)))]);
        assert_eq!(wrong.len(), 1);
        assert_eq!(wrong[0].cause, None);
    }

    #[test]
    fn a_wrong_answer_with_every_child_answered_is_computed_wrong() {
        let seen = [
            number("t-0", 4, 1, Some((1, 4))),
            tuple(json!([4]), 1, None),
            tuple(json!([4]), 1, Some((1, false))),
        ];
        assert_eq!(wrong_answers(&seen)[0].cause, Some(Cause::Computed));
    }

    #[test]
    fn a_child_created_over_and_over_is_a_loop() {
        let mut seen: Vec<Seen> = (0..3)
            .map(|i| {
                state(
                    Kind::Number,
                    "healed",
                    &format!("u{i}"),
                    json!({}),
                    1,
                    Value::Null,
                )
            })
            .collect();
        assert!(loops(&seen, Kind::Number).is_empty());
        seen.extend((0..LOOP_AFTER + 1).map(|i| {
            state(
                Kind::Number,
                "looped",
                &format!("v{i}"),
                json!({}),
                1,
                Value::Null,
            )
        }));
        assert_eq!(
            loops(&seen, Kind::Number),
            [("looped".to_string(), LOOP_AFTER + 1)]
        );
        assert!(loops(&seen, Kind::Tuple).is_empty());
    }
}
