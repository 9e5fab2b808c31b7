//! Stage 2: a Tuple owns its Numbers.

use serde_json::{Value, json};

use super::{Seen, TUPLE, children, converge, exist, foreground, generation_matches, gone, heal};
use crate::check::Session;
use crate::track::Kind;

/// Stage 2: a Tuple owns its Numbers, heals them, drops extras, and reports allSquares.
pub(crate) async fn tuple(s: &mut Session) {
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
        "set number.metadata.owner_references to the Tuple's controller_owner_ref(&()), with block_owner_deletion: \
         Some(true) (EXERCISE 2a in {file}): the garbage collector and .owns() follow it"
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
        "add .owns(ctx.watched::<Number>(), watcher::Config::default()) to the Tuple's Controller (EXERCISE 2d in \
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

    // Background deletion (kubectl's default): the Tuple goes at once, the garbage collector
    // deletes its Number after it.
    let cascade = ["delete", "tuple", "tuple-sample"];
    let names = ["tuple-sample-0"];
    if exist(
        s,
        TUPLE,
        "delete Tuple tuple-sample",
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
            "after deleting Tuple tuple-sample (garbage collection)",
            "Number",
            &names,
            &hint,
        )
        .await;
    }

    // Foreground deletion: the Tuple waits for its Numbers to go.
    let hint = format!(
        "a Tuple being deleted has a metadata.deletionTimestamp, and the given reconcile returns at once for it \
         (`if tuple.metadata.deletion_timestamp.is_some()` in {file}): applying its children again re-creates \
         each one the garbage collector deletes"
    );
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
