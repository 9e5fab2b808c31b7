//! Stage 3: a Fermat owns its Tuples.

use serde_json::{Value, json};

use super::{By, FERMAT, Seen, children, exist, foreground, generation_matches, gone, heal};
use crate::check::Session;
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// Stage 3: a Fermat owns its Tuples, heals them, follows a new number, reports what it found.
pub(crate) async fn fermat(s: &mut Session) {
    let file = s.track.file(Kind::Fermat);
    for sample in ["fermat.yaml", "fermat-19.yaml"] {
        s.kubectl(
            FERMAT,
            &["apply", "-f", &format!("samples/{sample}")],
            &m::FERMAT_CRD_HINT.text(),
        )
        .await;
    }
    let tuples = |fermat: &str, n: i64| -> Vec<(String, Value)> {
        (1..=n / 2)
            .map(|a| {
                (
                    format!("{fermat}-{a}-and-{}", n - a),
                    json!({ "numbers": [a, n - a] }),
                )
            })
            .collect()
    };
    let create_hint = t!(m::FERMAT_CREATE_HINT, file = file);
    let owner_hint = t!(m::FERMAT_OWNER_HINT, file = file);
    children(
        s,
        FERMAT,
        ("Fermat", "fermat-sample"),
        "Tuple",
        &tuples("fermat-sample", 5),
        &create_hint,
        &owner_hint,
    )
    .await;
    let status_hint = t!(m::FERMAT_STATUS_HINT, file = file);
    fermat_status(s, "fermat-sample", 5, &status_hint).await;
    fermat_status(s, "fermat-19", 19, &status_hint).await;

    let owns_hint = t!(m::FERMAT_OWNS_HINT, file = file);
    heal(s, FERMAT, "Tuple", "fermat-sample-2-and-3", &owns_hint).await;

    let change = [
        "patch",
        "fermat",
        "fermat-sample",
        "--type=merge",
        "-p",
        r#"{"spec":{"number":13}}"#,
    ];
    let extras = ["fermat-sample-1-and-4", "fermat-sample-2-and-3"];
    if exist(
        s,
        FERMAT,
        &m::STEP_CHANGE_FERMAT.text(),
        "Tuple",
        &extras,
        &create_hint,
    )
    .await
        && s.kubectl(FERMAT, &change, "").await
    {
        let hint = t!(m::FERMAT_EXTRAS_HINT, file = file);
        children(
            s,
            FERMAT,
            ("Fermat", "fermat-sample"),
            "Tuple",
            &tuples("fermat-sample", 13),
            &create_hint,
            &owner_hint,
        )
        .await;
        gone(
            s,
            FERMAT,
            (&m::WHEN_FERMAT_CHANGED.text(), By::Controller),
            "Tuple",
            &extras,
            &hint,
        )
        .await;
        fermat_status(s, "fermat-sample", 13, &status_hint).await;
    }

    let doomed: Vec<String> = tuples("fermat-19", 19)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let doomed: Vec<&str> = doomed.iter().map(String::as_str).collect();
    if exist(
        s,
        FERMAT,
        &m::STEP_DELETE_FERMAT.text(),
        "Tuple",
        &doomed,
        &create_hint,
    )
    .await
        && s.kubectl(FERMAT, &["delete", "fermat", "fermat-19"], "")
            .await
    {
        let tuples: Vec<String> = tuples("fermat-19", 19)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        let numbers: Vec<String> = tuples
            .iter()
            .flat_map(|t| [format!("{t}-0"), format!("{t}-1")])
            .collect();
        let hint = t!(m::FERMAT_GC_HINT, file = file);
        let when = m::WHEN_FERMAT_DELETED.text();
        let tuples: Vec<&str> = tuples.iter().map(String::as_str).collect();
        gone(s, FERMAT, (&when, By::Collector), "Tuple", &tuples, &hint).await;
        let numbers: Vec<&str> = numbers.iter().map(String::as_str).collect();
        gone(s, FERMAT, (&when, By::Collector), "Number", &numbers, &hint).await;
    }
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

async fn fermat_status(s: &mut Session, name: &str, n: i64, hint: &str) {
    // Computed directly (O(√n)): 5 → ["1²+2²"], 13 → ["2²+3²"], 19 → [].
    let found: Vec<String> = crate::math::two_square_decompositions(n)
        .into_iter()
        .map(|(x, y)| crate::math::format_decomposition(x, y))
        .collect();
    let want = json!({
        "decompositions": found,
        "twoSquaresFound": !found.is_empty(),
        "isPrime": crate::math::is_prime(n),
        "oneModFour": crate::math::is_one_mod_four(n),
    });
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
            if got != want || !generation_matches(&fermat) {
                return Err(Seen::Wrong(t!(
                    m::FERMAT_SAYS,
                    got = got,
                    observed = status["observedGeneration"]
                )));
            }
            Ok(())
        })
        .await;
    let after = s.after();
    match seen {
        Ok(()) => s.pass(format!("Fermat {name} ({n}): {want}")),
        Err(Seen::Missing(what)) => s.fail(FERMAT, what, m::APPLY_FAILED_ABOVE.text()),
        Err(Seen::NoStatus) => s.fail(
            FERMAT,
            t!(m::FERMAT_NO_STATUS, name = name, n = n, after = after),
            hint,
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
