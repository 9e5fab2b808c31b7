//! Stage 3: a Fermat owns its Tuples.

use serde_json::{Value, json};

use super::{FERMAT, Seen, children, exist, foreground, generation_matches, gone, heal};
use crate::check::Session;
use crate::track::Kind;

/// Stage 3: a Fermat owns its Tuples, heals them, follows a new number, reports what it found.
pub(crate) async fn fermat(s: &mut Session) {
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
        "set tuple.metadata.owner_references to the Fermat's controller_owner_ref(&()), with block_owner_deletion: \
         Some(true) (EXERCISE 3a in {file})"
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
        "add .owns(ctx.watched::<Tuple>(), watcher::Config::default()) to the Fermat's Controller (EXERCISE 3d in {file})"
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
    let hint = format!(
        "a Fermat being deleted has a metadata.deletionTimestamp, and the given reconcile returns at once for it \
         (`if fermat.metadata.deletion_timestamp.is_some()` in {file}): applying its Tuples again re-creates \
         each one the garbage collector deletes"
    );
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
