//! Stage 2: a Tuple owns its Numbers.

use serde_json::{Value, json};

use super::{
    By, Seen, TUPLE, children, children_answered, converge, exist, foreground, generation_matches,
    gone, heal, watched,
};
use crate::check::Session;
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// Stage 2: a Tuple owns its Numbers, heals them, drops extras, and reports allSquares.
pub(crate) async fn tuple(s: &mut Session) {
    let file = s.track.file(Kind::Tuple);
    owned(s, &file).await;
    healed(s, &file).await;
    shrunk(s, &file).await;
    collected(s, &file).await;
    watched(s, TUPLE);
    // Foreground deletion: the Tuple waits for its Numbers to go.
    let hint = t!(m::TUPLE_FOREGROUND_HINT, file = file);
    foreground(
        s,
        TUPLE,
        ("Tuple", "tuple-squares"),
        ("Number", "tuple-squares-0"),
        &hint,
    )
    .await;
}

/// The Numbers a Tuple named `tuple` wants: `<tuple>-<index>` with each value.
fn numbers(tuple: &str, values: &[i64]) -> Vec<(String, Value)> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("{tuple}-{i}"), json!({ "value": v })))
        .collect()
}

/// The samples applied: the Tuple owns its Numbers, and both Tuples say whether all are squares.
async fn owned(s: &mut Session, file: &str) {
    for sample in ["tuple.yaml", "tuple-squares.yaml"] {
        s.kubectl(
            TUPLE,
            &["apply", "-f", &format!("samples/{sample}")],
            &m::TUPLE_CRD_HINT.text(),
        )
        .await;
    }
    children(
        s,
        TUPLE,
        ("Tuple", "tuple-sample"),
        "Number",
        &numbers("tuple-sample", &[0, 1, 2]),
        &t!(m::TUPLE_CREATE_HINT, file = file),
        &t!(m::TUPLE_OWNER_HINT, file = file),
    )
    .await;
    let status_hint = t!(m::TUPLE_STATUS_HINT, file = file);
    tuple_status(s, "tuple-sample", false, &status_hint).await;
    tuple_status(s, "tuple-squares", true, &status_hint).await;
}

/// A deleted Number comes back; an edited one is put back.
async fn healed(s: &mut Session, file: &str) {
    let owns_hint = t!(m::TUPLE_OWNS_HINT, file = file);
    heal(s, TUPLE, "Number", "tuple-sample-1", &owns_hint).await;
    let edit = [
        "patch",
        "number",
        "tuple-sample-2",
        "--type=merge",
        "-p",
        r#"{"spec":{"value":100}}"#,
    ];
    if s.kubectl(TUPLE, &edit, "").await {
        let hint = t!(m::FORCE_HINT, hint = owns_hint, exercise = "2a");
        converge(
            s,
            TUPLE,
            &m::TUPLE_PUT_BACK.text(),
            "Number",
            "tuple-sample-2",
            json!({ "value": 2 }),
            &hint,
        )
        .await;
    }
}

/// The Tuple shrinks to one number, and its first Number's value changes from 0 (a square) to
/// 2 (not one): the extra Numbers go, the one left is owned, and the status follows. A Tuple
/// that took that Number's answer for 0 as the answer for 2 said `allSquares: true` on the way
/// (the watch lines catch it).
async fn shrunk(s: &mut Session, file: &str) {
    let create_hint = t!(m::TUPLE_CREATE_HINT, file = file);
    let shrink = [
        "patch",
        "tuple",
        "tuple-sample",
        "--type=merge",
        "-p",
        r#"{"spec":{"numbers":[2]}}"#,
    ];
    let extras = ["tuple-sample-1", "tuple-sample-2"];
    let step = m::STEP_SHRINK.text();
    if !(exist(s, TUPLE, &step, "Number", &extras, &create_hint).await
        && s.kubectl(TUPLE, &shrink, "").await)
    {
        return;
    }
    let hint = t!(m::TUPLE_EXTRAS_HINT, file = file);
    let when = m::WHEN_SHRUNK.text();
    gone(s, TUPLE, (&when, By::Controller), "Number", &extras, &hint).await;
    children(
        s,
        TUPLE,
        ("Tuple", "tuple-sample"),
        "Number",
        &numbers("tuple-sample", &[2]),
        &create_hint,
        &t!(m::TUPLE_OWNER_HINT, file = file),
    )
    .await;
    let status_hint = t!(m::TUPLE_STATUS_HINT, file = file);
    tuple_status(s, "tuple-sample", false, &status_hint).await;
}

/// Background deletion (kubectl's default): the Tuple goes at once, the garbage collector
/// deletes its Number after it.
async fn collected(s: &mut Session, file: &str) {
    let cascade = ["delete", "tuple", "tuple-sample"];
    let names = ["tuple-sample-0"];
    let create_hint = t!(m::TUPLE_CREATE_HINT, file = file);
    let step = m::STEP_DELETE_TUPLE.text();
    if exist(s, TUPLE, &step, "Number", &names, &create_hint).await
        && s.kubectl(TUPLE, &cascade, "").await
    {
        let hint = t!(m::TUPLE_GC_HINT, file = file);
        let when = m::WHEN_TUPLE_DELETED.text();
        gone(s, TUPLE, (&when, By::Collector), "Number", &names, &hint).await;
    }
}

async fn tuple_status(s: &mut Session, name: &str, all_squares: bool, hint: &str) {
    let r = s.reader.clone();
    if r.get("Tuple", name).await.is_none() {
        return s.fail(
            TUPLE,
            t!(m::NOT_EXIST, kind = "Tuple", name = name),
            m::APPLY_FAILED_ABOVE.text(),
        );
    }
    let seen = s
        .wait(TUPLE, async || {
            let tuple = r
                .get("Tuple", name)
                .await
                .ok_or_else(|| Seen::Missing(t!(m::NOT_EXIST, kind = "Tuple", name = name)))?;
            match &tuple["status"]["allSquares"] {
                Value::Null => Err(Seen::NoStatus),
                got if !generation_matches(&tuple) => Err(Seen::Behind(t!(
                    m::STATUS_BEHIND,
                    observed = tuple["status"]["observedGeneration"],
                    got = format!("allSquares {got}"),
                    generation = tuple["metadata"]["generation"]
                ))),
                got if got != &json!(all_squares) => Err(Seen::Wrong(t!(
                    m::TUPLE_SAYS,
                    got = got,
                    observed = tuple["status"]["observedGeneration"],
                    generation = tuple["metadata"]["generation"]
                ))),
                _ => Ok(()),
            }
        })
        .await;
    report(s, name, all_squares, seen, hint).await;
}

/// The line for one Tuple's status: ✓, or ✗ with what it says instead and the cause the
/// evidence shows.
async fn report(
    s: &mut Session,
    name: &str,
    all_squares: bool,
    seen: Result<(), Seen>,
    hint: &str,
) {
    let after = s.after();
    let not_woken =
        matches!(seen, Err(Seen::NoStatus)) && children_answered(s, ("Tuple", name)).await;
    let hint = if not_woken {
        t!(m::TUPLE_NOT_WOKEN_HINT, file = s.track.file(Kind::Tuple))
    } else {
        hint.to_string()
    };
    match seen {
        Ok(()) => s.pass(t!(
            m::TUPLE_ALL_SQUARES,
            name = name,
            all_squares = all_squares
        )),
        Err(Seen::Missing(what)) => s.fail(TUPLE, what, m::APPLY_FAILED_ABOVE.text()),
        Err(Seen::NoStatus) => s.fail(
            TUPLE,
            t!(m::TUPLE_NO_STATUS, name = name, after = after),
            hint,
        ),
        Err(Seen::Behind(what)) => s.fail(
            TUPLE,
            t!(
                m::SEEN,
                subject = format!("Tuple {name}"),
                what = what,
                after = after
            ),
            t!(
                m::BEHIND_HINT,
                kind = "Tuple",
                exercise = "2c",
                file = s.track.file(Kind::Tuple)
            ),
        ),
        Err(Seen::Wrong(what)) => s.fail(
            TUPLE,
            t!(
                m::SEEN_EXPECTED,
                subject = format!("Tuple {name}"),
                what = what,
                after = after,
                expected = t!(m::TUPLE_EXPECTED, all_squares = all_squares)
            ),
            t!(m::TUPLE_WRONG_HINT, hint = hint),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuples_numbers_are_named_by_their_index() {
        assert_eq!(
            numbers("t", &[4, 9]),
            [
                ("t-0".to_string(), json!({ "value": 4 })),
                ("t-1".to_string(), json!({ "value": 9 })),
            ]
        );
    }
}
