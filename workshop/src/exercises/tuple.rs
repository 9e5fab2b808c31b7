//! Stage 2: a Tuple owns one Number per item and reports whether all are perfect squares.
//!
//! The Tuple type is given; the controller is yours: create-or-update the child Numbers with a
//! controller ownerReference, delete the ones no longer wanted, report `allSquares`, and be
//! woken when a child changes. Check your work with `make workshop-check STAGE=2`.

use std::sync::Arc;

use futures::StreamExt;
use kube::CustomResource;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::number::Number;
use crate::context::{Context, Result, error_policy, log};

/// The desired state: the values of the child Numbers, in order.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "math.example.com",
    version = "v1beta1",
    kind = "Tuple",
    namespaced,
    status = "TupleStatus",
    shortname = "tup",
    category = "math",
    doc = "A Tuple (math-workshop) owns one Number per item, named <tuple>-<index>, and reports whether all are perfect squares.",
    printcolumn = r#"{"name": "Numbers", "type": "string", "jsonPath": ".spec.numbers"}"#,
    printcolumn = r#"{"name": "AllSquares", "type": "boolean", "jsonPath": ".status.allSquares"}"#
)]
pub struct TupleSpec {
    pub numbers: Vec<i64>,
}

/// Written once every child Number has computed its status for its current spec.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TupleStatus {
    pub observed_generation: i64,
    /// Every child Number is a perfect square (true for an empty Tuple).
    pub all_squares: bool,
}

/// The name of the child for `numbers[index]`: `<tuple>-<index>`.
pub fn child_name(tuple: &str, index: usize) -> String {
    format!("{tuple}-{index}")
}

/// Puts the children in line with the spec, then reports. Level-triggered: whatever
/// happened (a Tuple edited, a child deleted or changed), the same three steps close the gap.
pub async fn reconcile(tuple: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {
    let children = apply_children(&tuple, &ctx).await?;
    delete_extras(&tuple, &children, &ctx).await?;
    write_status(&tuple, &children, &ctx).await?;
    Ok(Action::await_change())
}

/// EXERCISE 2a: create or correct the Number `child_name(tuple, index)` for every item of
/// `tuple.spec.numbers`, owned by the Tuple, and return the children as the API server
/// answered (they carry their statuses), in order. With `numbers`, an `Api<Number>` in the
/// Tuple's namespace (as in stage 1), and `owner`, see below:
///
/// ```ignore
/// for (index, &value) in tuple.spec.numbers.iter().enumerate() {
///     let mut number = Number::new(&child_name(&tuple.name_any(), index), NumberSpec { value });
///     number.metadata.owner_references = Some(vec![owner.clone()]);
///     let applied = numbers.patch(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)).await?;
///     // ... collect `applied`
/// }
/// ```
///
/// `owner = tuple.controller_owner_ref(&())` (an `Option`: turn `None` into
/// `Error::Missing("uid")` with `ok_or`) is an ownerReference with `controller: true`: the
/// garbage collector deletes the Number with its Tuple. Server-side apply (`Patch::Apply` with
/// a field manager) creates the child if it is missing and corrects it if someone edited it,
/// and changes nothing when it is already right, so running it again and again is safe.
/// (`use kube::{Resource, ResourceExt};`, `use kube::api::{Patch, PatchParams};`,
/// `use super::number::NumberSpec;`, `use crate::context::{Error, MANAGER};`.)
pub async fn apply_children(_tuple: &Tuple, _ctx: &Context) -> Result<Vec<Number>> {
    todo!("EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs")
}

/// EXERCISE 2b: delete the Numbers this Tuple owns that are not among `children` (the Tuple
/// shrank). List the Numbers of the Tuple's namespace with `numbers.list(&ListParams::default())`,
/// keep those whose `owner_references()` contain one with `uid` equal to the Tuple's
/// (`tuple.uid()` is an `Option<String>`: compare it with `Some(o.uid.clone())`), and
/// `numbers.delete(name, &DeleteParams::default())` those whose name is not wanted.
pub async fn delete_extras(_tuple: &Tuple, _children: &[Number], _ctx: &Context) -> Result<()> {
    todo!("EXERCISE 2b: delete the Numbers no longer wanted, in workshop/src/exercises/tuple.rs")
}

/// EXERCISE 2c: once every child has a status for its current spec (`status.observed_generation`
/// equal to its `metadata.generation`), write `TupleStatus { observed_generation, all_squares }`
/// with `patch_status`, as in stage 1. If some child has not answered yet, write nothing and
/// return `Ok(())`: when its status changes, `owns` (EXERCISE 2d) wakes this Tuple again.
pub async fn write_status(_tuple: &Tuple, _children: &[Number], _ctx: &Context) -> Result<()> {
    todo!(
        "EXERCISE 2c: report allSquares in the Tuple's status, in workshop/src/exercises/tuple.rs"
    )
}

/// Runs the Tuple controller.
pub async fn run(ctx: Arc<Context>) {
    let client = ctx.client.clone();
    Controller::new(Api::<Tuple>::all(client), watcher::Config::default())
        // EXERCISE 2d: a Tuple must also be reconciled when one of its Numbers changes or is
        // deleted. Watch the Numbers and map each to its controller (the Tuple) with
        //     .owns(Api::<Number>::all(ctx.client.clone()), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
