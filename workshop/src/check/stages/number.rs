//! Stage 1: the Number CRD from the learner's types; statuses, kept current on an edit.

use serde_json::json;

use super::{NUMBER, Seen, generation_matches};
use crate::check::Session;
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
        "the Number CRD generated from NumberSpec has spec.value, an integer",
        format!("add `pub value: i64` to NumberSpec (EXERCISE 1a in {file})"),
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
        "the Number CRD generated from NumberStatus has status.observedGeneration, fizzBuzz, isSquare and isPrime",
        format!(
            "NumberStatus lacks {}: add `observed_generation: i64`, `fizz_buzz: String`, `is_square: bool`, \
             `is_prime: bool`, keeping #[serde(rename_all = \"camelCase\")] (EXERCISE 1a in {file})",
            missing.join(", ")
        ),
    );
}

/// Stage 1: Numbers get their status, and keep it current when the value changes.
pub(crate) async fn number(s: &mut Session) {
    let apply_hint =
        "does NumberSpec have `pub value: i64` (EXERCISE 1a)? The CRD is generated from it";
    for sample in [
        "number.yaml",
        "number-negative.yaml",
        "number-large-square.yaml",
    ] {
        s.kubectl(
            NUMBER,
            &["apply", "-f", &format!("samples/{sample}")],
            apply_hint,
        )
        .await;
    }
    let prime = s.file("number-prime.yaml", "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: number-prime\nspec:\n  value: 13\n");
    s.kubectl(NUMBER, &["apply", "-f", &prime], apply_hint)
        .await;
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
            format!("Number {name} does not exist"),
            "its kubectl apply failed above",
        );
    }
    let want = json!({ "fizzBuzz": fizz, "isSquare": square, "isPrime": prime });
    let expected = format!("fizzBuzz {fizz}, isSquare {square}, isPrime {prime}");
    let seen = s
        .wait(NUMBER, async || {
            let Some(number) = r.get("Number", name).await else {
                return Err(Seen::Missing(format!("Number {name} does not exist")));
            };
            let status = &number["status"];
            if status["fizzBuzz"].is_null() {
                return Err(Seen::NoStatus);
            }
            let got = json!({ "fizzBuzz": status["fizzBuzz"], "isSquare": status["isSquare"], "isPrime": status["isPrime"] });
            if got != want || number["spec"]["value"] != json!(value) {
                return Err(Seen::Wrong(format!("its status says {got} for value {}", number["spec"]["value"])));
            }
            if !generation_matches(&number) {
                return Err(Seen::Wrong(format!(
                    "status.observedGeneration is {}, not metadata.generation {}",
                    status["observedGeneration"], number["metadata"]["generation"]
                )));
            }
            Ok(())
        })
        .await;
    let file = s.track.file(Kind::Number);
    let subject = format!("Number {name} ({value})");
    let after = s.after();
    match seen {
        Ok(()) => s.pass(format!("{subject}: {expected}")),
        Err(Seen::Missing(what)) => s.fail(NUMBER, what, "its kubectl apply failed above"),
        Err(Seen::NoStatus) => s.fail(
            NUMBER,
            format!("{subject} has no status.fizzBuzz {after}"),
            format!("did you patch the status subresource (Api::patch_status), not the object? (EXERCISE 1b in {file})"),
        ),
        Err(Seen::Wrong(what)) => s.fail(
            NUMBER,
            format!("{subject}: {what} {after}, expected {expected}"),
            format!(
                "compute every field from the current spec.value on each reconcile (crate::math::fizzbuzz, is_square, \
                 is_prime) and set observed_generation from metadata.generation (EXERCISE 1b in {file})"
            ),
        ),
    }
}
