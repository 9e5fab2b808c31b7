//! What each stage is judged by: the behaviour the original Go hands-on is judged by too
//! (statuses, children with controller ownerReferences, healing after `kubectl delete`,
//! extras removed, cascade on parent deletion), each with the hint a beginner can act on.

use serde_json::{Value, json};

use super::Session;
use crate::track::Kind;

const NUMBER: &[Kind] = &[Kind::Number];
const TUPLE: &[Kind] = &[Kind::Tuple, Kind::Number];
const FERMAT: &[Kind] = &[Kind::Fermat, Kind::Tuple, Kind::Number];

/// What a probe saw instead of what it expected.
enum Seen {
    /// The object does not exist.
    Missing(String),
    /// It exists without (that part of) a status.
    NoStatus,
    /// It is there, but wrong: what it says.
    Wrong(String),
}

fn generation_matches(object: &Value) -> bool {
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

/// Stage 1, before anything runs: the CRD generated from the learner's Number type.
pub(super) fn number_crd(s: &mut Session) {
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
pub(super) async fn number(s: &mut Session) {
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

/// Stage 2: a Tuple owns its Numbers, heals them, drops extras, and reports allSquares.
pub(super) async fn tuple(s: &mut Session) {
    let file = s.track.file(Kind::Tuple);
    for sample in ["tuple.yaml", "tuple-squares.yaml"] {
        s.kubectl(
            TUPLE,
            &["apply", "-f", &format!("samples/{sample}")],
            "is the Tuple CRD installed?",
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
    let create_hint = format!(
        "create one Number per item, named <tuple>-<index>, with Api::patch(.., &PatchParams::apply(MANAGER).force(), \
         &Patch::Apply(&number)) (EXERCISE 2a in {file})"
    );
    let owner_hint = format!(
        "set number.metadata.owner_references to the Tuple's controller_owner_ref(&()) (EXERCISE 2a in {file}): \
         the garbage collector and .owns() both follow it"
    );
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
    let status_hint = format!(
        "once every child Number's status describes its current spec (status.observedGeneration = \
         metadata.generation), write TupleStatus with patch_status (EXERCISE 2c in {file}); are you woken when a \
         Number's status changes (.owns, EXERCISE 2d)? Do the Numbers get a status (stage 1)?"
    );
    tuple_status(s, "tuple-sample", false, &status_hint).await;
    tuple_status(s, "tuple-squares", true, &status_hint).await;

    let owns_hint = format!(
        "add .owns(Api::<Number>::all(..), watcher::Config::default()) to the Tuple's Controller (EXERCISE 2d in \
         {file}): without it, nothing tells the Tuple that its Number changed"
    );
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
        let hint = format!(
            "{owns_hint}; and apply the whole desired child with .force() on every reconcile (EXERCISE 2a)"
        );
        converge(
            s,
            TUPLE,
            "Number tuple-sample-2 is put back to value 2 after the hand edit",
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
        "shrink tuple-sample to [4]",
        "Number",
        &extras,
        &create_hint,
    )
    .await
        && s.kubectl(TUPLE, &shrink, "").await
    {
        let hint = format!(
            "delete the Numbers the Tuple owns that its spec no longer lists (EXERCISE 2b in {file})"
        );
        gone(
            s,
            TUPLE,
            "after shrinking tuple-sample to [4]",
            "Number",
            &extras,
            &hint,
        )
        .await;
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

    let cascade = ["delete", "tuple", "tuple-squares"];
    let names: Vec<String> = (0..5).map(|i| format!("tuple-squares-{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    if exist(
        s,
        TUPLE,
        "delete Tuple tuple-squares",
        "Number",
        &names,
        &create_hint,
    )
    .await
        && s.kubectl(TUPLE, &cascade, "").await
    {
        let hint = format!(
            "the garbage collector deletes a Number whose controller ownerReference names the deleted Tuple's uid: \
             set it with controller_owner_ref (EXERCISE 2a in {file})"
        );
        gone(
            s,
            TUPLE,
            "after deleting Tuple tuple-squares (garbage collection)",
            "Number",
            &names,
            &hint,
        )
        .await;
    }
}

async fn tuple_status(s: &mut Session, name: &str, all_squares: bool, hint: &str) {
    let r = s.reader.clone();
    if r.get("Tuple", name).await.is_none() {
        return s.fail(
            TUPLE,
            format!("Tuple {name} does not exist"),
            "its kubectl apply failed above",
        );
    }
    let seen = s
        .wait(TUPLE, async || {
            let tuple = r
                .get("Tuple", name)
                .await
                .ok_or_else(|| Seen::Missing(format!("Tuple {name} does not exist")))?;
            match &tuple["status"]["allSquares"] {
                Value::Null => Err(Seen::NoStatus),
                got if got != &json!(all_squares) || !generation_matches(&tuple) => {
                    Err(Seen::Wrong(format!(
                        "status.allSquares is {got} for observedGeneration {} (generation {})",
                        tuple["status"]["observedGeneration"], tuple["metadata"]["generation"]
                    )))
                }
                _ => Ok(()),
            }
        })
        .await;
    let after = s.after();
    match seen {
        Ok(()) => s.pass(format!(
            "Tuple {name}: allSquares {all_squares}, for its current generation"
        )),
        Err(Seen::Missing(what)) => s.fail(TUPLE, what, "its kubectl apply failed above"),
        Err(Seen::NoStatus) => s.fail(
            TUPLE,
            format!("Tuple {name} has no status.allSquares {after}"),
            hint,
        ),
        Err(Seen::Wrong(what)) => s.fail(
            TUPLE,
            format!("Tuple {name}: {what} {after}, expected allSquares {all_squares}"),
            format!(
                "allSquares is true exactly when every child Number's status.isSquare is; {hint}"
            ),
        ),
    }
}

/// Stage 3: a Fermat owns its Tuples, heals them, follows a new number, reports what it found.
pub(super) async fn fermat(s: &mut Session) {
    let file = s.track.file(Kind::Fermat);
    for sample in ["fermat.yaml", "fermat-19.yaml"] {
        s.kubectl(
            FERMAT,
            &["apply", "-f", &format!("samples/{sample}")],
            "is the Fermat CRD installed?",
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
    let create_hint = format!(
        "create one Tuple [a, n-a] per a in 1..=n/2, named <fermat>-<a>-and-<n-a>, with Api::patch and \
         Patch::Apply (EXERCISE 3a in {file})"
    );
    let owner_hint = format!(
        "set tuple.metadata.owner_references to the Fermat's controller_owner_ref(&()) (EXERCISE 3a in {file})"
    );
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
    let status_hint = format!(
        "once every child Tuple's status describes its current spec, write FermatStatus with patch_status \
         (EXERCISE 3c in {file}); are you woken when a Tuple changes (.owns, EXERCISE 3d)? Do the Tuples get \
         allSquares (stage 2)?"
    );
    fermat_status(s, "fermat-sample", 5, &status_hint).await;
    fermat_status(s, "fermat-19", 19, &status_hint).await;

    let owns_hint = format!(
        "add .owns(Api::<Tuple>::all(..), watcher::Config::default()) to the Fermat's Controller (EXERCISE 3d in {file})"
    );
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
        "change fermat-sample to 13",
        "Tuple",
        &extras,
        &create_hint,
    )
    .await
        && s.kubectl(FERMAT, &change, "").await
    {
        let hint = format!(
            "delete the Tuples the Fermat owns that its spec no longer asks for (EXERCISE 3b in {file})"
        );
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
            "after changing fermat-sample to 13",
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
        "delete Fermat fermat-19",
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
        let hint = format!(
            "the garbage collector deletes a Tuple whose controller ownerReference names the deleted Fermat's uid \
             (EXERCISE 3a in {file}), then the Tuple's Numbers the same way (stage 2)"
        );
        let tuples: Vec<&str> = tuples.iter().map(String::as_str).collect();
        gone(
            s,
            FERMAT,
            "after deleting Fermat fermat-19 (garbage collection)",
            "Tuple",
            &tuples,
            &hint,
        )
        .await;
        let numbers: Vec<&str> = numbers.iter().map(String::as_str).collect();
        gone(
            s,
            FERMAT,
            "after deleting Fermat fermat-19 (garbage collection)",
            "Number",
            &numbers,
            &hint,
        )
        .await;
    }
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
            format!("Fermat {name} does not exist"),
            "its kubectl apply failed above",
        );
    }
    let seen = s
        .wait(FERMAT, async || {
            let fermat = r
                .get("Fermat", name)
                .await
                .ok_or_else(|| Seen::Missing(format!("Fermat {name} does not exist")))?;
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
                return Err(Seen::Wrong(format!(
                    "its status says {got} for observedGeneration {}",
                    status["observedGeneration"]
                )));
            }
            Ok(())
        })
        .await;
    let after = s.after();
    match seen {
        Ok(()) => s.pass(format!("Fermat {name} ({n}): {want}")),
        Err(Seen::Missing(what)) => s.fail(FERMAT, what, "its kubectl apply failed above"),
        Err(Seen::NoStatus) => s.fail(FERMAT, format!("Fermat {name} ({n}) has no status.twoSquaresFound {after}"), hint),
        Err(Seen::Wrong(what)) => s.fail(
            FERMAT,
            format!("Fermat {name} ({n}): {what} {after}, expected {want} for generation of the current spec"),
            format!("decompositions lists x²+y² for each child Tuple [x², y²] with allSquares, smallest first; {hint}"),
        ),
    }
}

/// The parent's children exist with the desired specs, and the parent controls each.
async fn children(
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
async fn heal(s: &mut Session, kinds: &[Kind], kind: &str, name: &str, hint: &str) {
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
        Err(()) => s.fail(
            kinds,
            format!("{kind} {name} did not come back {after}"),
            hint,
        ),
    }
}

/// An edited child converges back to `spec`.
async fn converge(
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
/// and is reported as a ✗ with how to create them).
async fn exist(
    s: &mut Session,
    kinds: &[Kind],
    step: &str,
    kind: &str,
    names: &[&str],
    hint: &str,
) -> bool {
    let r = s.reader.clone();
    let mut missing = Vec::new();
    for name in names {
        if r.get(kind, name).await.is_none() {
            missing.push(*name);
        }
    }
    if !missing.is_empty() {
        s.fail(
            kinds,
            format!(
                "cannot {step}: {kind}s {} never appeared",
                missing.join(", ")
            ),
            hint,
        );
    }
    missing.is_empty()
}

/// Objects that must disappear.
async fn gone(s: &mut Session, kinds: &[Kind], when: &str, kind: &str, names: &[&str], hint: &str) {
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
