//! Stage 1, solved: the Number kind and its controller, which writes fizzbuzz, squareness and
//! primality of `spec.value` into the status.

use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::context::{Context, MANAGER, Result, error_policy, log};
use crate::math;

/// The desired state: one integer.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "math.example.com",
    version = "v1beta1",
    kind = "Number",
    namespaced,
    status = "NumberStatus",
    shortname = "num",
    category = "math",
    doc = "A Number (math-workshop): its controller writes fizzbuzz, squareness and primality of spec.value into the status.",
    printcolumn = r#"{"name": "Value", "type": "integer", "jsonPath": ".spec.value"}"#,
    printcolumn = r#"{"name": "FizzBuzz", "type": "string", "jsonPath": ".status.fizzBuzz"}"#,
    printcolumn = r#"{"name": "Square", "type": "boolean", "jsonPath": ".status.isSquare"}"#,
    printcolumn = r#"{"name": "Prime", "type": "boolean", "jsonPath": ".status.isPrime"}"#
)]
pub struct NumberSpec {
    pub value: i64,
}

/// What the controller observed: written to the status subresource only.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberStatus {
    /// The `metadata.generation` (spec version) this status describes.
    pub observed_generation: i64,
    pub fizz_buzz: String,
    pub is_square: bool,
    pub is_prime: bool,
}

/// Computes the status from the spec and writes it. Level-triggered: whatever happened, the
/// answer only depends on the Number as it is now.
pub async fn reconcile(number: Arc<Number>, ctx: Arc<Context>) -> Result<Action> {
    let value = number.spec.value;
    let status = NumberStatus {
        observed_generation: number.metadata.generation.unwrap_or_default(),
        fizz_buzz: math::fizzbuzz(value),
        is_square: math::is_square(value),
        is_prime: math::is_prime(value),
    };
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &number.namespace().unwrap_or_default());
    // The status subresource: a write to the object itself would ignore `status`.
    let patch =
        json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Number", "status": status });
    numbers
        .patch_status(
            &number.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(Action::await_change())
}

/// Runs the Number controller: every change to a Number triggers a reconcile of it.
pub async fn run(ctx: Arc<Context>) {
    let numbers: Api<Number> = ctx.watched();
    Controller::new(numbers, watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
