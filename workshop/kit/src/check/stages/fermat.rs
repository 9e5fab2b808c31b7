//! Stage 3: a Fermat owns its Tuples.

use serde_json::{Value, json};

use super::{
    By, FERMAT, Seen, children, children_answered, exist, foreground, generation_matches, gone,
    heal, watched,
};
use crate::check::Session;
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// Stage 3: a Fermat owns its Tuples, heals them, follows a new number, reports what it found.
pub(crate) async fn fermat(s: &mut Session) {
    let file = s.track.file(Kind::Fermat);
    owned(s, &file).await;
    let owns_hint = t!(m::FERMAT_OWNS_HINT, file = file);
    heal(s, FERMAT, "Tuple", "fermat-sample-2-and-3", &owns_hint).await;
    changed(s, &file).await;
    collected(s, &file).await;
    watched(s, FERMAT);
    let hint = t!(m::FERMAT_FOREGROUND_HINT, file = file);
    foreground(
        s,
        FERMAT,
        ("Fermat", "fermat-sample"),
        ("Tuple", "fermat-sample-1-and-12"),
        &hint,
    )
    .await;
}

/// The Tuples a Fermat named `fermat` wants for `n`: `<fermat>-<a>-and-<n-a>`, a = 1 ..= n/2.
fn tuples(fermat: &str, n: i64) -> Vec<(String, Value)> {
    (1..=n / 2)
        .map(|a| {
            (
                format!("{fermat}-{a}-and-{}", n - a),
                json!({ "numbers": [a, n - a] }),
            )
        })
        .collect()
}

/// The samples applied: the Fermat owns its Tuples, and both Fermats report what they found.
async fn owned(s: &mut Session, file: &str) {
    for sample in ["fermat.yaml", "fermat-19.yaml"] {
        s.kubectl(
            FERMAT,
            &["apply", "-f", &format!("samples/{sample}")],
            &m::FERMAT_CRD_HINT.text(),
        )
        .await;
    }
    children(
        s,
        FERMAT,
        ("Fermat", "fermat-sample"),
        "Tuple",
        &tuples("fermat-sample", 5),
        &t!(m::FERMAT_CREATE_HINT, file = file),
        &t!(m::FERMAT_OWNER_HINT, file = file),
    )
    .await;
    let status_hint = t!(m::FERMAT_STATUS_HINT, file = file);
    fermat_status(s, "fermat-sample", 5, &status_hint).await;
    fermat_status(s, "fermat-19", 19, &status_hint).await;
}

/// The Fermat's number changes from 5 to 13: the new Tuples come, the old ones go, and the
/// status follows.
async fn changed(s: &mut Session, file: &str) {
    let change = [
        "patch",
        "fermat",
        "fermat-sample",
        "--type=merge",
        "-p",
        r#"{"spec":{"number":13}}"#,
    ];
    let extras = ["fermat-sample-1-and-4", "fermat-sample-2-and-3"];
    let create_hint = t!(m::FERMAT_CREATE_HINT, file = file);
    let step = m::STEP_CHANGE_FERMAT.text();
    if !(exist(s, FERMAT, &step, "Tuple", &extras, &create_hint).await
        && s.kubectl(FERMAT, &change, "").await)
    {
        return;
    }
    let hint = t!(m::FERMAT_EXTRAS_HINT, file = file);
    children(
        s,
        FERMAT,
        ("Fermat", "fermat-sample"),
        "Tuple",
        &tuples("fermat-sample", 13),
        &create_hint,
        &t!(m::FERMAT_OWNER_HINT, file = file),
    )
    .await;
    let when = m::WHEN_FERMAT_CHANGED.text();
    gone(s, FERMAT, (&when, By::Controller), "Tuple", &extras, &hint).await;
    let status_hint = t!(m::FERMAT_STATUS_HINT, file = file);
    fermat_status(s, "fermat-sample", 13, &status_hint).await;
}

/// `kubectl delete fermat fermat-19`: the garbage collector deletes its Tuples, then their
/// Numbers.
async fn collected(s: &mut Session, file: &str) {
    let tuples: Vec<String> = tuples("fermat-19", 19)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let tuples: Vec<&str> = tuples.iter().map(String::as_str).collect();
    let create_hint = t!(m::FERMAT_CREATE_HINT, file = file);
    let step = m::STEP_DELETE_FERMAT.text();
    if !(exist(s, FERMAT, &step, "Tuple", &tuples, &create_hint).await
        && s.kubectl(FERMAT, &["delete", "fermat", "fermat-19"], "")
            .await)
    {
        return;
    }
    let numbers: Vec<String> = (tuples.iter())
        .flat_map(|t| [format!("{t}-0"), format!("{t}-1")])
        .collect();
    let numbers: Vec<&str> = numbers.iter().map(String::as_str).collect();
    let hint = t!(m::FERMAT_GC_HINT, file = file);
    let when = m::WHEN_FERMAT_DELETED.text();
    gone(s, FERMAT, (&when, By::Collector), "Tuple", &tuples, &hint).await;
    gone(s, FERMAT, (&when, By::Collector), "Number", &numbers, &hint).await;
}

/// What a Fermat of `n` says when it is right. Computed directly (O(√n)): 5 → ["1²+2²"],
/// 13 → ["2²+3²"], 19 → [].
fn wanted_status(n: i64) -> Value {
    let found: Vec<String> = crate::math::two_square_decompositions(n)
        .into_iter()
        .map(|(x, y)| crate::math::format_decomposition(x, y))
        .collect();
    json!({
        "decompositions": found,
        "twoSquaresFound": !found.is_empty(),
        "isPrime": crate::math::is_prime(n),
        "oneModFour": crate::math::is_one_mod_four(n),
    })
}

/// Whether `fermat`'s status is `want` for its current generation; if not, what it says.
fn fermat_says(fermat: &Value, want: &Value) -> Result<(), Seen> {
    let status = &fermat["status"];
    if status["twoSquaresFound"].is_null() {
        return Err(Seen::NoStatus);
    }
    let got = json!({
        "decompositions": status["decompositions"],
        "twoSquaresFound": status["twoSquaresFound"],
        "isPrime": status["isPrime"],
        "oneModFour": status["oneModFour"],
    });
    if !generation_matches(fermat) {
        return Err(Seen::Behind(t!(
            m::STATUS_BEHIND,
            observed = status["observedGeneration"],
            got = got,
            generation = fermat["metadata"]["generation"]
        )));
    }
    if &got != want {
        return Err(Seen::Wrong(t!(
            m::FERMAT_SAYS,
            got = got,
            observed = status["observedGeneration"]
        )));
    }
    Ok(())
}

async fn fermat_status(s: &mut Session, name: &str, n: i64, hint: &str) {
    let want = wanted_status(n);
    let r = s.reader.clone();
    if r.get("Fermat", name).await.is_none() {
        return s.fail(
            FERMAT,
            t!(m::NOT_EXIST, kind = "Fermat", name = name),
            m::APPLY_FAILED_ABOVE.text(),
        );
    }
    let seen = s
        .wait(FERMAT, async || {
            let fermat = r
                .get("Fermat", name)
                .await
                .ok_or_else(|| Seen::Missing(t!(m::NOT_EXIST, kind = "Fermat", name = name)))?;
            fermat_says(&fermat, &want)
        })
        .await;
    report(s, name, n, seen, hint).await;
}

/// The line for one Fermat's status: ✓, or ✗ with what it says instead and the cause the
/// evidence shows.
async fn report(s: &mut Session, name: &str, n: i64, seen: Result<(), Seen>, hint: &str) {
    let want = wanted_status(n);
    let after = s.after();
    let not_woken =
        matches!(seen, Err(Seen::NoStatus)) && children_answered(s, ("Fermat", name)).await;
    let hint = if not_woken {
        t!(m::FERMAT_NOT_WOKEN_HINT, file = s.track.file(Kind::Fermat))
    } else {
        hint.to_string()
    };
    match seen {
        Ok(()) => s.pass(format!("Fermat {name} ({n}): {want}")),
        Err(Seen::Missing(what)) => s.fail(FERMAT, what, m::APPLY_FAILED_ABOVE.text()),
        Err(Seen::NoStatus) => s.fail(
            FERMAT,
            t!(m::FERMAT_NO_STATUS, name = name, n = n, after = after),
            hint,
        ),
        Err(Seen::Behind(what)) => s.fail(
            FERMAT,
            t!(
                m::SEEN,
                subject = format!("Fermat {name} ({n})"),
                what = what,
                after = after
            ),
            t!(
                m::BEHIND_HINT,
                kind = "Fermat",
                exercise = "3c",
                file = s.track.file(Kind::Fermat)
            ),
        ),
        Err(Seen::Wrong(what)) => s.fail(
            FERMAT,
            t!(
                m::SEEN_EXPECTED,
                subject = format!("Fermat {name} ({n})"),
                what = what,
                after = after,
                expected = t!(m::FERMAT_EXPECTED, want = want)
            ),
            t!(m::FERMAT_WRONG_HINT, hint = hint),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fermat_wants_a_tuple_per_split_of_its_number() {
        let names: Vec<String> = tuples("f", 5).into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["f-1-and-4", "f-2-and-3"]);
        assert_eq!(tuples("f", 5)[1].1, json!({ "numbers": [2, 3] }));
        assert!(tuples("f", 1).is_empty());
    }

    #[test]
    fn a_fermats_status_is_right_only_for_its_generation() {
        let want = wanted_status(13);
        assert_eq!(want["decompositions"], json!(["2²+3²"]));
        let fermat = |status: Value, generation: i64| json!({ "metadata": { "generation": generation }, "status": status });
        let mut status = want.clone();
        status["observedGeneration"] = json!(2);
        assert!(fermat_says(&fermat(status.clone(), 2), &want).is_ok());
        // Its answer for the last generation, left behind.
        assert!(matches!(
            fermat_says(&fermat(status, 3), &want),
            Err(Seen::Behind(_))
        ));
        assert!(matches!(
            fermat_says(&fermat(json!({}), 1), &want),
            Err(Seen::NoStatus)
        ));
    }
}
