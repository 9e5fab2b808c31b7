//! Stage 2: a Tuple owns its Numbers.

use serde_json::{Value, json};

use super::{
    By, Seen, TUPLE, children, converge, exist, foreground, generation_matches, gone, heal,
};
use crate::check::Session;
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// Stage 2: a Tuple owns its Numbers, heals them, drops extras, and reports allSquares.
pub(crate) async fn tuple(s: &mut Session) {
    let file = s.track.file(Kind::Tuple);
    for sample in ["tuple.yaml", "tuple-squares.yaml"] {
        s.kubectl(
            TUPLE,
            &["apply", "-f", &format!("samples/{sample}")],
            &m::TUPLE_CRD_HINT.text(),
        )
        .await;
    }
    let numbers = |tuple: &str, values: &[i64]| -> Vec<(String, Value)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{tuple}-{i}"), json!({ "value": v })))
            .collect()
    };
    let create_hint = t!(m::TUPLE_CREATE_HINT, file = file);
    let owner_hint = t!(m::TUPLE_OWNER_HINT, file = file);
    children(
        s,
        TUPLE,
        ("Tuple", "tuple-sample"),
        "Number",
        &numbers("tuple-sample", &[0, 1, 2]),
        &create_hint,
        &owner_hint,
    )
    .await;
    let status_hint = t!(m::TUPLE_STATUS_HINT, file = file);
    tuple_status(s, "tuple-sample", false, &status_hint).await;
    tuple_status(s, "tuple-squares", true, &status_hint).await;

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

    let shrink = [
        "patch",
        "tuple",
        "tuple-sample",
        "--type=merge",
        "-p",
        r#"{"spec":{"numbers":[4]}}"#,
    ];
    let extras = ["tuple-sample-1", "tuple-sample-2"];
    if exist(
        s,
        TUPLE,
        &m::STEP_SHRINK.text(),
        "Number",
        &extras,
        &create_hint,
    )
    .await
        && s.kubectl(TUPLE, &shrink, "").await
    {
        let hint = t!(m::TUPLE_EXTRAS_HINT, file = file);
        let when = m::WHEN_SHRUNK.text();
        gone(s, TUPLE, (&when, By::Controller), "Number", &extras, &hint).await;
        children(
            s,
            TUPLE,
            ("Tuple", "tuple-sample"),
            "Number",
            &numbers("tuple-sample", &[4]),
            &create_hint,
            &owner_hint,
        )
        .await;
        tuple_status(s, "tuple-sample", true, &status_hint).await;
    }

    // Background deletion (kubectl's default): the Tuple goes at once, the garbage collector
    // deletes its Number after it.
    let cascade = ["delete", "tuple", "tuple-sample"];
    let names = ["tuple-sample-0"];
    if exist(
        s,
        TUPLE,
        &m::STEP_DELETE_TUPLE.text(),
        "Number",
        &names,
        &create_hint,
    )
    .await
        && s.kubectl(TUPLE, &cascade, "").await
    {
        let hint = t!(m::TUPLE_GC_HINT, file = file);
        gone(
            s,
            TUPLE,
            (&m::WHEN_TUPLE_DELETED.text(), By::Collector),
            "Number",
            &names,
            &hint,
        )
        .await;
    }

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
                got if got != &json!(all_squares) || !generation_matches(&tuple) => {
                    Err(Seen::Wrong(t!(
                        m::TUPLE_SAYS,
                        got = got,
                        observed = tuple["status"]["observedGeneration"],
                        generation = tuple["metadata"]["generation"]
                    )))
                }
                _ => Ok(()),
            }
        })
        .await;
    let after = s.after();
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
