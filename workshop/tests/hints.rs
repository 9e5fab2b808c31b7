//! The hints are tested: deliberately broken variants of the reference solutions, each the
//! mistake a newcomer makes, run through the real checker (kubectl against the test API
//! server), must produce the hint documented for that mistake. The variants live here, not in
//! the solutions the learners read; they reuse the solutions' pieces and change one thing.

use std::sync::{Arc, Once};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use math_workshop::check::{self, Outcome, Target};
use math_workshop::context::{Context, Error, MANAGER, Result, error_policy, log};
use math_workshop::solutions::number::{Number, NumberSpec, NumberStatus};
use math_workshop::solutions::tuple::{self, Tuple};
use math_workshop::solutions::{self, fermat};
use math_workshop::track::Track;
use math_workshop::{math, panics};
use serde_json::json;

/// Runs stage `stage`'s check on a track; every expectation gets a few seconds.
async fn check(stage: u8, track: Track) -> Outcome {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| panics::install_hook(false));
    let mut opts = check::Options::new(stage, Target::TestServer);
    opts.timeout = Duration::from_secs(5);
    check::check(&track, &opts).await.expect("the check runs")
}

fn assert_hint(outcome: &Outcome, hint: &str) {
    assert!(
        outcome.has_failure(hint),
        "expected a ✗ with {hint:?}; the check said:\n{}",
        outcome
            .lines
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
}

/// Mistake: the status written with a patch of the object, which the API server ignores for
/// `status` (the CRD has a status subresource).
async fn number_patching_the_object(number: Arc<Number>, ctx: Arc<Context>) -> Result<Action> {
    let value = number.spec.value;
    let status = NumberStatus {
        observed_generation: number.metadata.generation.unwrap_or_default(),
        fizz_buzz: math::fizzbuzz(value),
        is_square: math::is_square(value),
        is_prime: math::is_prime(value),
    };
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &number.namespace().unwrap_or_default());
    let patch =
        json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Number", "status": status });
    numbers
        .patch(
            &number.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(Action::await_change())
}

fn run_number_patching_the_object(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Controller::new(ctx.watched::<Number>(), watcher::Config::default())
        .run(number_patching_the_object, error_policy, ctx)
        .for_each(log)
        .boxed()
}

#[tokio::test]
async fn patching_the_object_instead_of_the_status() {
    let track = Track {
        number: run_number_patching_the_object,
        ..solutions::track()
    };
    let outcome = check(1, track).await;
    assert_first(
        &outcome,
        "Number number-sample (15) has no status.fizzBuzz after 5 s",
        "did you patch the status subresource (Api::patch_status), not the object?",
    );
}

/// Mistake: none yet, the exercise is still a `todo!()` (after EXERCISE 1a is done).
async fn number_unfinished(_number: Arc<Number>, _ctx: Arc<Context>) -> Result<Action> {
    todo!("EXERCISE 1b: compute the Number's status and patch it")
}

fn run_number_unfinished(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Controller::new(ctx.watched::<Number>(), watcher::Config::default())
        .run(number_unfinished, error_policy, ctx)
        .for_each(log)
        .boxed()
}

#[tokio::test]
async fn a_todo_is_reported_with_where_it_is() {
    let track = Track {
        number: run_number_unfinished,
        ..solutions::track()
    };
    let outcome = check(1, track).await;
    // The ✗ says the time the wait really took: it ended when the controller stopped, not
    // after the 5 s it could have lasted.
    assert_first(
        &outcome,
        "Number number-sample (15) has no status.fizzBuzz after 0.",
        "the Number controller panicked: not yet implemented: EXERCISE 1b: compute the Number's status and patch it (at workshop/tests/hints.rs:",
    );
    assert_hint(
        &outcome,
        "fill in the exercise in workshop/src/solutions/number.rs",
    );
}

/// Mistake: the children are created without an ownerReference.
async fn apply_children_without_owner(t: &Tuple, ctx: &Context) -> Result<Vec<Number>> {
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &t.namespace().unwrap_or_default());
    let mut children = Vec::new();
    for (index, value) in t.spec.numbers.iter().enumerate() {
        let number = Number::new(
            &tuple::child_name(&t.name_any(), index),
            NumberSpec { value: *value },
        );
        let apply = PatchParams::apply(MANAGER).force();
        children.push(
            numbers
                .patch(&number.name_any(), &apply, &Patch::Apply(&number))
                .await?,
        );
    }
    Ok(children)
}

async fn tuple_without_owner(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    let children = apply_children_without_owner(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    tuple::write_status(&t, &children, &ctx).await?;
    Ok(Action::await_change())
}

/// Mistake: the Numbers the Tuple no longer wants are left behind.
async fn tuple_keeping_extras(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    let children = tuple::apply_children(&t, &ctx).await?;
    tuple::write_status(&t, &children, &ctx).await?;
    Ok(Action::await_change())
}

fn run_tuple(
    ctx: Arc<Context>,
    reconcile: fn(Arc<Tuple>, Arc<Context>) -> BoxFuture<'static, Result<Action>>,
) -> BoxFuture<'static, ()> {
    Controller::new(ctx.watched::<Tuple>(), watcher::Config::default())
        .owns(ctx.watched::<Number>(), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .boxed()
}

#[tokio::test]
async fn children_without_an_owner_reference() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_without_owner(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "each of them has a controller ownerReference to Tuple tuple-sample",
        "set number.metadata.owner_references to the Tuple's controller_owner_ref(&())",
    );
    assert_hint(
        &outcome,
        "the garbage collector deletes a Number whose controller ownerReference names the deleted Tuple's uid",
    );
}

#[tokio::test]
async fn extras_not_deleted() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_keeping_extras(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "after shrinking tuple-sample to [2]: Numbers tuple-sample-1, tuple-sample-2 still exist after 5 s",
        "delete the Numbers the Tuple owns that its spec no longer lists (EXERCISE 2b",
    );
}

/// Mistake: the Tuple controller does not watch its Numbers (no `.owns()`).
fn run_tuple_without_owns(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Controller::new(ctx.watched::<Tuple>(), watcher::Config::default())
        .run(tuple::reconcile, error_policy, ctx)
        .for_each(log)
        .boxed()
}

#[tokio::test]
async fn no_owns_so_no_healing() {
    let track = Track {
        tuple: run_tuple_without_owns,
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    // Its Numbers answered, the Tuple never wrote: the first ✗ leads with .owns (2d).
    assert_first(
        &outcome,
        "Tuple tuple-sample has no status.allSquares after 5 s",
        "every Number of the Tuple has answered, yet the Tuple wrote no status: is it woken when a Number's status changes? Add .owns(ctx.watched::<Number>()",
    );
    assert_hint(
        &outcome,
        "Number tuple-sample-1 did not come back after 5 s",
    );
    assert_hint(
        &outcome,
        "add .owns(ctx.watched::<Number>(), watcher::Config::default()) to the Tuple's Controller (EXERCISE 2d",
    );
    // The shrink step needs tuple-sample-1, which the healing step deleted: the cause named is
    // the missing .owns (2d), not the creation of the children (2a): they did appear.
    let shrink = failure(&outcome, "cannot shrink tuple-sample to [2]");
    assert!(
        shrink
            .text
            .contains("tuple-sample-1 did not come back after the kubectl delete above")
            && !shrink.text.contains("never appeared"),
        "{shrink}"
    );
    let hint = shrink.hint.as_deref().unwrap_or_default();
    assert!(
        hint.contains("EXERCISE 2d") && !hint.contains("EXERCISE 2a"),
        "{shrink}"
    );
}

/// The ✗ line whose description contains `text`.
fn failure<'a>(outcome: &'a Outcome, text: &str) -> &'a check::Line {
    outcome
        .lines
        .iter()
        .find(|l| !l.ok && l.text.contains(text))
        .unwrap_or_else(|| {
            panic!(
                "expected a ✗ {text:?}; the check said:\n{}",
                outcome
                    .lines
                    .iter()
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
            )
        })
}

/// Mistake: the Fermat controller does not watch its Tuples.
fn run_fermat_without_owns(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Controller::new(ctx.watched::<fermat::Fermat>(), watcher::Config::default())
        .run(fermat::reconcile, error_policy, ctx)
        .for_each(log)
        .boxed()
}

#[tokio::test]
async fn fermat_without_owns_never_reports() {
    let track = Track {
        fermat: run_fermat_without_owns,
        ..solutions::track()
    };
    let outcome = check(3, track).await;
    assert_first(
        &outcome,
        "Fermat fermat-sample (5) has no status.twoSquaresFound after 5 s",
        "every Tuple of the Fermat has answered, yet the Fermat wrote no status: is it woken when a Tuple's status changes? Add .owns(ctx.watched::<Tuple>()",
    );
    let change = failure(&outcome, "cannot change fermat-sample to 13");
    assert!(
        change
            .text
            .contains("fermat-sample-2-and-3 did not come back after the kubectl delete above"),
        "{change}"
    );
    let hint = change.hint.as_deref().unwrap_or_default();
    assert!(
        hint.contains("EXERCISE 3d") && !hint.contains("EXERCISE 3a"),
        "{change}"
    );
}

/// A reconcile that always fails: the error it returns is named in the hints.
async fn tuple_failing(_tuple: Arc<Tuple>, _ctx: Arc<Context>) -> Result<Action> {
    Err(Error::Missing("uid"))
}

#[tokio::test]
async fn the_last_reconcile_error_is_named() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_failing(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "Tuple tuple-sample has its 3 Numbers",
        "(last Tuple reconcile error: tuple-s",
    );
    assert_hint(&outcome, "the object has no uid)");
}

/// Mistake (the given code before the guard): a Tuple being deleted is reconciled like any
/// other, so its children are applied again while the garbage collector deletes them.
async fn tuple_without_deletion_guard(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    let children = tuple::apply_children(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    tuple::write_status(&t, &children, &ctx).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_parent_being_deleted_in_the_foreground_is_left_to_the_garbage_collector() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_without_deletion_guard(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "while Tuple tuple-squares waited for its Numbers (foreground deletion), the Tuple controller re-created tuple-squares-1",
        "the given reconcile returns at once for it (`if tuple.metadata.deletion_timestamp.is_some()`",
    );
}

/// Mistake: kube's `controller_owner_ref` as it is, without the `blockOwnerDeletion` that
/// kubebuilder's `SetControllerReference` adds.
async fn apply_children_not_blocking(t: &Tuple, ctx: &Context) -> Result<Vec<Number>> {
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &t.namespace().unwrap_or_default());
    let owner = t.controller_owner_ref(&()).ok_or(Error::Missing("uid"))?;
    let mut children = Vec::new();
    for (index, value) in t.spec.numbers.iter().enumerate() {
        let mut number = Number::new(
            &tuple::child_name(&t.name_any(), index),
            NumberSpec { value: *value },
        );
        number.metadata.owner_references = Some(vec![owner.clone()]);
        let apply = PatchParams::apply(MANAGER).force();
        children.push(
            numbers
                .patch(&number.name_any(), &apply, &Patch::Apply(&number))
                .await?,
        );
    }
    Ok(children)
}

async fn tuple_not_blocking(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    if t.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = apply_children_not_blocking(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    tuple::write_status(&t, &children, &ctx).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn children_whose_owner_reference_does_not_block_deletion() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_not_blocking(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "each of them has a controller ownerReference to Tuple tuple-sample",
        "tuple-sample-0, tuple-sample-1, tuple-sample-2: the ownerReference lacks blockOwnerDeletion: true",
    );
    assert_hint(
        &outcome,
        "with block_owner_deletion: Some(true) (EXERCISE 2a",
    );
}

/// The first ✗ line: what a learner reads first must name the cause (its text, or its hint).
fn first_failure(outcome: &Outcome) -> &check::Line {
    outcome.lines.iter().find(|l| !l.ok).unwrap_or_else(|| {
        panic!(
            "expected a ✗; the check said:\n{}",
            outcome
                .lines
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        )
    })
}

/// The first ✗ line contains `text` in its description and `hint` in its hint.
fn assert_first(outcome: &Outcome, text: &str, hint: &str) {
    let first = first_failure(outcome);
    assert!(
        first.text.contains(text) && first.hint.as_deref().unwrap_or_default().contains(hint),
        "expected the first ✗ to say {text:?} with the hint {hint:?}; it is:\n{first}\nthe check said:\n{}",
        outcome
            .lines
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
}

/// Writes a Tuple's status as the reference's `write_status` does, whatever it says.
async fn write_tuple_status(t: &Tuple, all_squares: bool, ctx: &Context) -> Result<()> {
    let status = tuple::TupleStatus {
        observed_generation: t.metadata.generation.unwrap_or_default(),
        all_squares,
    };
    let patch =
        json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Tuple", "status": status });
    Api::<Tuple>::namespaced(ctx.client.clone(), &t.namespace().unwrap_or_default())
        .patch_status(
            &t.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(())
}

/// Mistake (2c without its guard): the children that have not answered yet are left out, so
/// a new Tuple reports `allSquares: true` at once: an empty list of answers is "all squares",
/// the Go original's brief wrong answer. Its last status is right.
async fn tuple_answering_early(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    if t.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = tuple::apply_children(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    let answers: Vec<bool> = children
        .iter()
        .filter_map(|n| match &n.status {
            Some(s) if Some(s.observed_generation) == n.metadata.generation => Some(s.is_square),
            _ => None,
        })
        .collect();
    write_tuple_status(&t, answers.iter().all(|square| *square), &ctx).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_tuple_that_answers_before_its_numbers_did() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_answering_early(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "kubectl get tuples -w showed Tuple tuple-sample [0,1,2] with allSquares true for its current generation 1 before Number tuple-sample-",
        "write the status only once every child Number has answered for its current spec",
    );
}

/// Mistake (2c trusting any status): a child's status counts whatever generation it answers,
/// so when the Tuple changes a child's value, the child's answer for its old value is taken
/// for the new one.
async fn tuple_trusting_stale_answers(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    if t.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = tuple::apply_children(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    let answers: Option<Vec<bool>> = children
        .iter()
        .map(|n| n.status.as_ref().map(|s| s.is_square))
        .collect();
    if let Some(answers) = answers {
        write_tuple_status(&t, answers.iter().all(|square| *square), &ctx).await?;
    }
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_tuple_that_takes_a_numbers_answer_for_an_older_spec() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_trusting_stale_answers(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    // Which Number depends on the moment: tuple-sample-0 after the shrink changes its value,
    // or tuple-sample-2 when its answer for the hand edit's 100 came after the Tuple put 2 back.
    assert_first(
        &outcome,
        "'s status for an older spec",
        "a Number's status counts only when its observedGeneration is its metadata.generation",
    );
    assert!(
        first_failure(&outcome)
            .text
            .contains(", from Number tuple-sample-")
    );
}

/// Mistake: the status is written once and never again, so after a shrink it still answers
/// the Tuple's first spec.
async fn tuple_answering_once(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    if t.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = tuple::apply_children(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    if t.status.is_none() {
        tuple::write_status(&t, &children, &ctx).await?;
    }
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_tuple_status_left_behind_after_a_shrink() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_answering_once(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    assert_first(
        &outcome,
        "Tuple tuple-sample: its status still answers generation 1 (allSquares false); the spec is at generation 2",
        "write the status for the current spec on every reconcile",
    );
}

/// Mistake (2b without `!wanted.contains`): every child the Tuple controls is deleted, the
/// wanted ones too; each deletion wakes the Tuple, which applies them again: a loop.
async fn delete_every_child(t: &Tuple, ctx: &Context) -> Result<()> {
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &t.namespace().unwrap_or_default());
    for number in numbers.list(&kube::api::ListParams::default()).await? {
        let ours = number
            .owner_references()
            .iter()
            .any(|o| Some(&o.uid) == t.uid().as_ref());
        if ours {
            numbers
                .delete(&number.name_any(), &kube::api::DeleteParams::default())
                .await?;
        }
    }
    Ok(())
}

async fn tuple_deleting_every_child(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    if t.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = tuple::apply_children(&t, &ctx).await?;
    delete_every_child(&t, &ctx).await?;
    tuple::write_status(&t, &children, &ctx).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn children_re_created_in_a_loop() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_deleting_every_child(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    let first = first_failure(&outcome);
    let hint = first.hint.as_deref().unwrap_or_default();
    assert!(
        hint.starts_with("kubectl get numbers -w showed tuple-sample-")
            && hint.contains("delete only the Numbers the Tuple's spec no longer lists"),
        "{first}"
    );
    assert_hint(
        &outcome,
        "Numbers created over and over: kubectl get numbers -w showed tuple-sample-",
    );
}

/// Mistake (2a without `.force()`): after a hand edit, `kubectl-patch` owns `spec.value`, and
/// the Tuple's apply is refused with 409 Conflict.
async fn apply_children_without_force(t: &Tuple, ctx: &Context) -> Result<Vec<Number>> {
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &t.namespace().unwrap_or_default());
    let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        block_owner_deletion: Some(true),
        ..t.controller_owner_ref(&()).ok_or(Error::Missing("uid"))?
    };
    let mut children = Vec::new();
    for (index, value) in t.spec.numbers.iter().enumerate() {
        let mut number = Number::new(
            &tuple::child_name(&t.name_any(), index),
            NumberSpec { value: *value },
        );
        number.metadata.owner_references = Some(vec![owner.clone()]);
        let apply = PatchParams::apply(MANAGER);
        children.push(
            numbers
                .patch(&number.name_any(), &apply, &Patch::Apply(&number))
                .await?,
        );
    }
    Ok(children)
}

async fn tuple_without_force(t: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    if t.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = apply_children_without_force(&t, &ctx).await?;
    tuple::delete_extras(&t, &children, &ctx).await?;
    tuple::write_status(&t, &children, &ctx).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_conflict_leads_with_force() {
    let track = Track {
        tuple: |ctx| run_tuple(ctx, |t, ctx| tuple_without_force(t, ctx).boxed()),
        ..solutions::track()
    };
    let outcome = check(2, track).await;
    let first = first_failure(&outcome);
    assert!(
        first
            .text
            .contains("Number tuple-sample-2 is put back to value 2 after the hand edit")
            && first.hint.as_deref().unwrap_or_default().starts_with(
                "the API server refused the Tuple's apply with 409 Conflict: since the hand edit, another field manager owns the field; apply with .force()"
            ),
        "{first}"
    );
}

/// Writes a Fermat's status as the reference does, from the decompositions given.
async fn write_fermat_status(f: &fermat::Fermat, found: Vec<String>, ctx: &Context) -> Result<()> {
    let n = f.spec.number;
    let status = fermat::FermatStatus {
        observed_generation: f.metadata.generation.unwrap_or_default(),
        is_prime: math::is_prime(n),
        one_mod_four: math::is_one_mod_four(n),
        two_squares_found: !found.is_empty(),
        decompositions: found,
    };
    let patch =
        json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Fermat", "status": status });
    Api::<fermat::Fermat>::namespaced(ctx.client.clone(), &f.namespace().unwrap_or_default())
        .patch_status(
            &f.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(())
}

/// Mistake (3c without its guard): the Tuples that have not answered are left out, so a new
/// Fermat reports that it found nothing.
async fn fermat_answering_early(f: Arc<fermat::Fermat>, ctx: Arc<Context>) -> Result<Action> {
    if f.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = fermat::apply_children(&f, &ctx).await?;
    fermat::delete_extras(&f, &children, &ctx).await?;
    let found: Vec<String> = children
        .iter()
        .filter(|t| {
            t.status.as_ref().is_some_and(|s| {
                Some(s.observed_generation) == t.metadata.generation && s.all_squares
            })
        })
        .filter_map(|t| match t.spec.numbers[..] {
            [a, b] => Some(math::format_decomposition(
                math::exact_sqrt(a)?,
                math::exact_sqrt(b)?,
            )),
            _ => None,
        })
        .collect();
    write_fermat_status(&f, found, &ctx).await?;
    Ok(Action::await_change())
}

fn run_fermat_answering_early(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Controller::new(ctx.watched::<fermat::Fermat>(), watcher::Config::default())
        .owns(ctx.watched::<Tuple>(), watcher::Config::default())
        .run(fermat_answering_early, error_policy, ctx)
        .for_each(log)
        .boxed()
}

#[tokio::test]
async fn a_fermat_that_answers_before_its_tuples_did() {
    let track = Track {
        fermat: run_fermat_answering_early,
        ..solutions::track()
    };
    let outcome = check(3, track).await;
    assert_first(
        &outcome,
        "kubectl get fermats -w showed Fermat fermat-sample (5) with {\"decompositions\":[],\"isPrime\":true,\"oneModFour\":true,\"twoSquaresFound\":false} for its current generation 1 before Tuple fermat-sample-",
        "write the status only once every child Tuple has answered for its current spec",
    );
}
