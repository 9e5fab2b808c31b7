//! Stage 1: the Number kind and its controller.
//!
//! A Number has a value (its spec, the desired state you declare) and a status the controller
//! computes from it: fizzbuzz, whether it is a perfect square, whether it is prime.
//! Check your work with `make workshop-check STAGE=1`.

use std::sync::Arc;

use futures::StreamExt;
use kube::CustomResource;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::{Context, Result, error_policy, log};

// EXERCISE 1a: define the API. `#[derive(CustomResource)]` turns `NumberSpec` into the kind
// `Number` (the struct `Number` with `metadata`, `spec` and `status` is generated for you), and
// `JsonSchema` gives the CRD its schema. Add the one field of the spec:
//
//     pub value: i64,
//
// then look at the CRD it generates: `cargo run --profile workshop -p math-workshop -- crds`.
//
// 演習 1a: API を定義します。`#[derive(CustomResource)]` が `NumberSpec` から Kind `Number` を
// 作り (`metadata`、`spec`、`status` を持つ構造体 `Number` は自動で生成されます)、`JsonSchema` が
// CRD のスキーマになります。spec にフィールドを 1 つ足してください:
//
//     pub value: i64,
//
// そのあと、生成される CRD を見てみましょう: `cargo run --profile workshop -p math-workshop -- crds`。
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
pub struct NumberSpec {}

// EXERCISE 1a (continued): the status, what the controller observed. Kubernetes fields are
// camelCase (`fizzBuzz`), so keep `#[serde(rename_all = "camelCase")]` and add:
//
//     pub observed_generation: i64, // the metadata.generation this status describes
//     pub fizz_buzz: String,        // "Fizz", "Buzz", "FizzBuzz" or the value, e.g. "7"
//     pub is_square: bool,
//     pub is_prime: bool,
//
// 演習 1a (続き): status はコントローラーが観測したものです。Kubernetes のフィールドは
// camelCase (`fizzBuzz`) なので、`#[serde(rename_all = "camelCase")]` は残したまま、上の 4 つの
// フィールドを足してください (`observed_generation` はこの status が表す metadata.generation、
// `fizz_buzz` は "Fizz"、"Buzz"、"FizzBuzz" か値そのもの、たとえば "7")。
/// What the controller observed: written to the status subresource only.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberStatus {}

/// Computes the status from the spec and writes it.
///
/// EXERCISE 1b: build a `NumberStatus` from `number.spec.value` with `crate::math::fizzbuzz`,
/// `crate::math::is_square` and `crate::math::is_prime`, and `observed_generation` from
/// `number.metadata.generation.unwrap_or_default()` (an `Option<i64>`, set on every stored
/// object). Then write it to the *status subresource* (a write to the object itself would
/// ignore `status`):
///
/// ```ignore
/// let numbers: Api<Number> = Api::namespaced(ctx.client.clone(), &number.namespace().unwrap_or_default());
/// let patch = serde_json::json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Number", "status": status });
/// numbers.patch_status(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(patch)).await?;
/// ```
///
/// (`use kube::ResourceExt;` for `namespace()` and `name_any()`, `use kube::api::{Patch, PatchParams};`,
/// `use crate::context::MANAGER;`). Return `Ok(Action::await_change())`: nothing to do until
/// the Number changes again. Rename `_number` and `_ctx` to use them.
///
/// 演習 1b: `number.spec.value` から `crate::math::fizzbuzz`、`crate::math::is_square`、
/// `crate::math::is_prime` で `NumberStatus` を作り、`observed_generation` には
/// `number.metadata.generation.unwrap_or_default()` (`Option<i64>`。保存されたオブジェクトには
/// 必ずあります) を入れます。それを上のコードのように *ステータスサブリソース* に書き込みます
/// (オブジェクト本体への書き込みでは `status` は無視されます)。使うもの: `use kube::ResourceExt;`
/// (`namespace()` と `name_any()`)、`use kube::api::{Patch, PatchParams};`、
/// `use crate::context::MANAGER;`。`Ok(Action::await_change())` を返します (Number がまた
/// 変わるまで、することはありません)。使うときは `_number` と `_ctx` の `_` を外してください。
pub async fn reconcile(_number: Arc<Number>, _ctx: Arc<Context>) -> Result<Action> {
    todo!(
        "EXERCISE 1b: compute the Number's status and patch it, in workshop/src/exercises/number.rs"
    )
}

/// Runs the Number controller: every change to a Number triggers a reconcile of it.
/// `ctx.watched()` is `Api::all(client)`, or `Api::namespaced(client, ns)` when the runner
/// looks after one namespace (its default: the current kubeconfig context's).
pub async fn run(ctx: Arc<Context>) {
    let numbers: Api<Number> = ctx.watched();
    Controller::new(numbers, watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
