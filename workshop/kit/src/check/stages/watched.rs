//! A stage's watch lines: what `kubectl get <kinds> -w` showed from the stage's first apply
//! on. Every status an object passed through that claimed to describe its current spec was
//! right (a Tuple that said `allSquares: true` before its Numbers answered was not, even if it
//! said `false` a moment later), and no child was created over and over. Given before the
//! foreground deletion, which counts its own re-creations.

use serde_json::Value;

use crate::check::Session;
use crate::check::answers::{self, Cause, Wrong};
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// The parents, their children, and the exercises of their status and their deletions.
const FAMILIES: [(Kind, Kind, &str, &str); 2] = [
    (Kind::Fermat, Kind::Tuple, "3c", "3b"),
    (Kind::Tuple, Kind::Number, "2c", "2b"),
];

/// How many wrong answers a stage names (one line each); the rest are like them.
const SHOWN: usize = 3;

/// The watch lines of a stage whose kinds are `kinds` (the stage's and those below it).
pub(in crate::check) fn watched(s: &mut Session, kinds: &[Kind]) {
    let Some(seen) = s.history.as_ref().map(|h| h.seen()) else {
        return;
    };
    s.judged = true;
    let wrong: Vec<Wrong> = answers::wrong_answers(&seen)
        .into_iter()
        .filter(|w| kinds.contains(&w.kind))
        .collect();
    // No status at all (a starter's todo!()) is nothing to judge: the stage's other lines say why.
    if wrong.is_empty() && answers::answers(&seen) > 0 {
        s.pass(t!(m::WATCH_RIGHT, plurals = plurals(kinds)));
    }
    for w in wrong.iter().take(SHOWN) {
        let hint = hint(s, w);
        s.fail(&[w.kind], text(w), hint);
    }
    for (parent, child, _, exercise) in FAMILIES.iter().filter(|f| kinds.contains(&f.0)) {
        let looped = answers::loops(&seen, *child);
        let plural = plural(*child);
        if looped.is_empty() {
            s.pass(t!(m::LOOP_NONE, child_kind = child.name(), plural = plural));
        } else {
            let text = t!(
                m::LOOP,
                child_kind = child.name(),
                plural = plural,
                names = crate::check::evidence::looped_names(&looped)
            );
            let hint = s.loop_hint(*parent, *child, exercise, &looped);
            s.fail(&[*parent], text, hint);
        }
    }
}

/// `numbers`, as kubectl names a kind.
fn plural(kind: Kind) -> String {
    format!("{}s", kind.name().to_lowercase())
}

/// `fermats,tuples,numbers`: the kinds (parents first) as one `kubectl get` names them.
fn plurals(kinds: &[Kind]) -> String {
    let names: Vec<String> = kinds.iter().map(|k| plural(*k)).collect();
    names.join(",")
}

/// An object's spec as the lines say it: `(15)`, `[0,1,2]`, `(5)`.
fn spec(kind: Kind, spec: &Value) -> String {
    match kind {
        Kind::Number => format!("({})", spec["value"]),
        Kind::Tuple => spec["numbers"].to_string(),
        Kind::Fermat => format!("({})", spec["number"]),
    }
}

/// An answer as the lines say it: `allSquares true` for one field, the JSON of several.
fn answer(fields: &Value) -> String {
    match fields.as_object() {
        Some(one) if one.len() == 1 => one
            .iter()
            .map(|(field, value)| format!("{field} {value}"))
            .collect(),
        _ => fields.to_string(),
    }
}

/// The ✗ line of a wrong answer: what the watch showed, when, and the right answer.
fn text(w: &Wrong) -> String {
    let cause = match &w.cause {
        None => String::new(),
        Some(Cause::Unanswered { kind, name }) => {
            t!(m::CAUSE_UNANSWERED, kind = kind.name(), name = name)
        }
        Some(Cause::Stale {
            kind,
            name,
            observed,
            generation,
        }) => t!(
            m::CAUSE_STALE,
            kind = kind.name(),
            name = name,
            observed = observed,
            generation = generation
        ),
        Some(Cause::Computed) => m::CAUSE_COMPUTED.text(),
    };
    t!(
        m::WATCH_WRONG,
        plural = plural(w.kind),
        kind = w.kind.name(),
        name = w.name,
        spec = spec(w.kind, &w.spec),
        given = answer(&w.given),
        generation = w.generation,
        cause = cause,
        right = answer(&w.right)
    )
}

/// What to do about a wrong answer: the cause its children show.
fn hint(s: &Session, w: &Wrong) -> String {
    let file = s.track.file(w.kind);
    let family = FAMILIES.iter().find(|f| f.0 == w.kind);
    match (&w.cause, family) {
        (Some(Cause::Unanswered { kind, .. }), Some((_, _, exercise, _))) => t!(
            m::EARLY_HINT,
            child_kind = kind.name(),
            exercise = exercise,
            file = file
        ),
        (Some(Cause::Stale { kind, .. }), Some((_, _, exercise, _))) => t!(
            m::STALE_HINT,
            child_kind = kind.name(),
            exercise = exercise,
            file = file
        ),
        _ => match w.kind {
            Kind::Number => t!(m::NUMBER_WRONG_HINT, file = file),
            Kind::Tuple => t!(
                m::TUPLE_WRONG_HINT,
                hint = t!(m::TUPLE_STATUS_HINT, file = file)
            ),
            Kind::Fermat => t!(
                m::FERMAT_WRONG_HINT,
                hint = t!(m::FERMAT_STATUS_HINT, file = file)
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_and_answers_are_said_as_the_other_lines_say_them() {
        assert_eq!(
            spec(Kind::Tuple, &json!({ "numbers": [0, 1, 2] })),
            "[0,1,2]"
        );
        assert_eq!(spec(Kind::Fermat, &json!({ "number": 5 })), "(5)");
        assert_eq!(answer(&json!({ "allSquares": true })), "allSquares true");
        assert_eq!(
            answer(&json!({ "isPrime": true, "oneModFour": false })),
            r#"{"isPrime":true,"oneModFour":false}"#
        );
        assert_eq!(plurals(&[Kind::Tuple, Kind::Number]), "tuples,numbers");
    }
}
