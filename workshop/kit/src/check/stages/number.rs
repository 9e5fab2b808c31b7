//! Stage 1: the Number CRD from the learner's types; statuses, kept current on an edit.

use serde_json::{Value, json};

use super::{NUMBER, Seen, generation_matches, watched};
use crate::check::Session;
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// Stage 1, before anything runs: the CRD generated from the learner's Number type.
pub(crate) fn number_crd(s: &mut Session) {
    let file = s.track.file(Kind::Number);
    let crd = (s.track.crds)()
        .into_iter()
        .find(|c| c.spec.names.kind == "Number")
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_default();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    s.verdict(
        schema["spec"]["properties"]["value"]["type"] == json!("integer"),
        &[],
        m::NUMBER_CRD_VALUE.text(),
        t!(m::NUMBER_CRD_VALUE_HINT, file = file),
    );
    let fields = [
        ("observedGeneration", "integer"),
        ("fizzBuzz", "string"),
        ("isSquare", "boolean"),
        ("isPrime", "boolean"),
    ];
    let missing: Vec<&str> = fields
        .iter()
        .filter(|(field, kind)| schema["status"]["properties"][field]["type"] != json!(kind))
        .map(|(field, _)| *field)
        .collect();
    s.verdict(
        missing.is_empty(),
        &[],
        m::NUMBER_CRD_STATUS.text(),
        t!(
            m::NUMBER_CRD_STATUS_HINT,
            missing = missing.join(&m::LIST_SEPARATOR.text()),
            file = file
        ),
    );
}

/// Stage 1: Numbers get their status, and keep it current when the value changes.
pub(crate) async fn number(s: &mut Session) {
    let apply_hint = m::NUMBER_APPLY_HINT.text();
    let apply_hint = apply_hint.as_str();
    for sample in [
        "number.yaml",
        "number-negative.yaml",
        "number-large-square.yaml",
        "number-prime.yaml",
    ] {
        s.kubectl(
            NUMBER,
            &["apply", "-f", &format!("samples/{sample}")],
            apply_hint,
        )
        .await;
    }
    number_status(s, "number-sample", 15, "FizzBuzz", false, false).await;
    number_status(s, "number-negative", -9, "Fizz", false, false).await;
    let big = 9_223_372_030_926_249_001;
    number_status(s, "number-large-square", big, &big.to_string(), true, false).await;
    number_status(s, "number-prime", 13, "13", false, true).await;

    let edit = [
        "patch",
        "number",
        "number-sample",
        "--type=merge",
        "-p",
        r#"{"spec":{"value":16}}"#,
    ];
    if s.kubectl(NUMBER, &edit, apply_hint).await {
        number_status(s, "number-sample", 16, "16", true, false).await;
    }
    watched(s, NUMBER);
}

async fn number_status(
    s: &mut Session,
    name: &str,
    value: i64,
    fizz: &str,
    square: bool,
    prime: bool,
) {
    let r = s.reader.clone();
    if r.get("Number", name).await.is_none() {
        return s.fail(
            NUMBER,
            t!(m::NOT_EXIST, kind = "Number", name = name),
            m::APPLY_FAILED_ABOVE.text(),
        );
    }
    let want = json!({ "fizzBuzz": fizz, "isSquare": square, "isPrime": prime });
    let expected = t!(
        m::NUMBER_EXPECTED,
        fizz = fizz,
        square = square,
        prime = prime
    );
    let seen = s
        .wait(NUMBER, async || {
            let Some(number) = r.get("Number", name).await else {
                return Err(Seen::Missing(t!(
                    m::NOT_EXIST,
                    kind = "Number",
                    name = name
                )));
            };
            number_says(&number, value, &want)
        })
        .await;
    let subject = format!("Number {name} ({value})");
    report(s, &subject, &expected, seen);
}

/// The line for one Number's status: ✓ with what it says, or ✗ with what it says instead and
/// where to look.
fn report(s: &mut Session, subject: &str, expected: &str, seen: Result<(), Seen>) {
    let file = s.track.file(Kind::Number);
    let after = s.after();
    match seen {
        Ok(()) => s.pass(format!("{subject}: {expected}")),
        Err(Seen::Missing(what)) => s.fail(NUMBER, what, m::APPLY_FAILED_ABOVE.text()),
        Err(Seen::NoStatus) => s.fail(
            NUMBER,
            t!(m::NUMBER_NO_STATUS, subject = subject, after = after),
            t!(m::NUMBER_NO_STATUS_HINT, file = file),
        ),
        Err(Seen::Wrong(what) | Seen::Behind(what)) => s.fail(
            NUMBER,
            t!(
                m::SEEN_EXPECTED,
                subject = subject,
                what = what,
                after = after,
                expected = expected
            ),
            t!(m::NUMBER_WRONG_HINT, file = file),
        ),
    }
}

/// Whether `number` has the value `value` and the status `want` for its current generation;
/// if not, what it says.
fn number_says(number: &Value, value: i64, want: &Value) -> Result<(), Seen> {
    let status = &number["status"];
    if status["fizzBuzz"].is_null() {
        return Err(Seen::NoStatus);
    }
    let got = json!({
        "fizzBuzz": status["fizzBuzz"],
        "isSquare": status["isSquare"],
        "isPrime": status["isPrime"],
    });
    if &got != want || number["spec"]["value"] != json!(value) {
        return Err(Seen::Wrong(t!(
            m::NUMBER_SAYS,
            got = got,
            value = number["spec"]["value"]
        )));
    }
    if !generation_matches(number) {
        return Err(Seen::Wrong(t!(
            m::GENERATION_BEHIND,
            observed = status["observedGeneration"],
            generation = number["metadata"]["generation"]
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numbers_status_is_right_for_its_value_and_generation() {
        let want = json!({ "fizzBuzz": "16", "isSquare": true, "isPrime": false });
        let number = |value: i64, observed: i64| {
            let mut status = want.clone();
            status["observedGeneration"] = json!(observed);
            json!({ "metadata": { "generation": 2 }, "spec": { "value": value }, "status": status })
        };
        assert!(number_says(&number(16, 2), 16, &want).is_ok());
        // The status of the old value, or of the last generation.
        let said = |result: Result<(), Seen>| match result {
            Err(Seen::Wrong(what)) => what,
            _ => String::new(),
        };
        assert!(said(number_says(&number(15, 2), 16, &want)).contains("15"));
        assert!(!said(number_says(&number(16, 1), 16, &want)).is_empty());
        let bare = json!({ "metadata": { "generation": 1 }, "spec": { "value": 16 } });
        assert!(matches!(number_says(&bare, 16, &want), Err(Seen::NoStatus)));
    }
}
