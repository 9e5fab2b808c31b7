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
// 演習 1a: API を定義します。`#[derive(CustomResource)]` が `NumberSpec` から Kind `Number` を作り (`metadata`、`spec`、`status` を持つ構造体 `Number` は自動で生成されます)、`JsonSchema` から CRD のスキーマが生成されます。
// spec にフィールドを 1 つ足してください:
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
// 演習 1a (続き): status には、コントローラーが観測した結果を書きます。
// Kubernetes のフィールドは camelCase (`fizzBuzz`) なので、`#[serde(rename_all = "camelCase")]` は残したまま、次の 4 つのフィールドを足してください:
//
//     pub observed_generation: i64, // この status が表す metadata.generation
//     pub fizz_buzz: String,        // "Fizz"、"Buzz"、"FizzBuzz"、または値そのもの (たとえば "7")
//     pub is_square: bool,
//     pub is_prime: bool,
/// What the controller observed: written to the status subresource only.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberStatus {}

/// Computes the status from the spec and writes it.
///
/// EXERCISE 1b: compute a `NumberStatus` from `number.spec.value` (`crate::math::fizzbuzz`,
/// `is_square` and `is_prime` are exact for every `i64`; a floating-point square root is not),
/// with `observed_generation` from `number.metadata.generation` (an `Option<i64>`, set on every
/// stored object): anyone reading the status can then tell which spec it answers. Write it to
/// the Number's *status subresource* with `Api::patch_status`: the CRD declares one, so a write
/// to the object itself would ignore `status`. Write it with server-side apply
/// (`Patch::Apply` of a JSON object with `apiVersion`, `kind` and `status`, and
/// `PatchParams::apply(MANAGER).force()`): the API server records that `math-workshop` owns
/// these fields, and applying the same status again changes nothing. Return
/// `Ok(Action::await_change())`: nothing to do until the Number changes again. Rename `_number`
/// and `_ctx` to use them. You will need `use kube::ResourceExt;` (`namespace()`,
/// `name_any()`), `use kube::api::{Patch, PatchParams};`, `use serde_json::json;` (`json!`) and
/// `use crate::context::MANAGER;`.
/// Stuck? `make workshop-hint STAGE=1` shows the next hint, up to the complete code.
///
/// 演習 1b: `number.spec.value` から `NumberStatus` を作ります (`crate::math::fizzbuzz`、`is_square`、`is_prime` はどの `i64` でも正確です。浮動小数点の平方根ではそうはいきません)。
/// `observed_generation` は `number.metadata.generation` (`Option<i64>`。保存されたオブジェクトには必ずあります) から取ります。
/// こうしておけば、status を読む人は、それがどの spec に対する答えかが分かります。
/// それを `Api::patch_status` で Number の *ステータスサブリソース* に書き込みます。
/// CRD がステータスサブリソースを宣言しているので、オブジェクト本体への書き込みでは `status` は無視されます。
/// 書き込みは Server-Side Apply で行います (`apiVersion`、`kind`、`status` を持つ JSON の `Patch::Apply` と、`PatchParams::apply(MANAGER).force()`)。
/// API サーバーが、これらのフィールドは `math-workshop` のものだと記録し、同じ status をもう一度 apply しても何も変わりません。
/// `Ok(Action::await_change())` を返します (Number がまた変わるまで、することはありません)。
/// 使うときは `_number` と `_ctx` の `_` を外してください。
/// 必要な `use`: `use kube::ResourceExt;` (`namespace()` と `name_any()`)、`use kube::api::{Patch, PatchParams};`、`use serde_json::json;` (`json!`)、`use crate::context::MANAGER;`。
/// 行き詰まったら `make workshop-hint STAGE=1` で次のヒントが出ます (最後は完成したコードです)。
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
