//! Stage 3: a Fermat of n owns the Tuples [a, n-a], a = 1..=n/2, and reports which of them are
//! made of two squares: the ways to write n as a sum of two squares.
//!
//! The Fermat type is given; the controller is yours, the same three steps as the Tuple's.
//! Check your work with `make workshop-check STAGE=3`.

use std::sync::Arc;

use futures::StreamExt;
use kube::CustomResource;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::tuple::Tuple;
use crate::context::{Context, Result, error_policy, log};

/// The desired state: the number to write as a sum of two squares.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "math.example.com",
    version = "v1beta1",
    kind = "Fermat",
    namespaced,
    status = "FermatStatus",
    shortname = "fer",
    category = "math",
    doc = "A Fermat of n (math-workshop) owns the Tuples [a, n-a], named <fermat>-<a>-and-<n-a>, and finds the ways to write n as a sum of two squares.",
    printcolumn = r#"{"name": "Number", "type": "integer", "jsonPath": ".spec.number"}"#,
    printcolumn = r#"{"name": "Prime", "type": "boolean", "jsonPath": ".status.isPrime"}"#,
    printcolumn = r#"{"name": "OneModFour", "type": "boolean", "jsonPath": ".status.oneModFour"}"#,
    printcolumn = r#"{"name": "Found", "type": "string", "jsonPath": ".status.decompositions"}"#
)]
pub struct FermatSpec {
    /// 0 ≤ n ≤ 1000: n/2 Tuples and n Numbers are plenty for a workshop cluster.
    #[schemars(range(min = 0, max = 1000))]
    pub number: i64,
}

/// Written once every child Tuple has answered for its current spec.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FermatStatus {
    pub observed_generation: i64,
    pub is_prime: bool,
    /// n ≡ 1 (mod 4): for an odd prime, exactly when Fermat promises two squares.
    pub one_mod_four: bool,
    pub two_squares_found: bool,
    /// `x²+y²` for every child Tuple [x², y²], smallest first.
    pub decompositions: Vec<String>,
}

/// The name of the child Tuple [a, n-a]: `<fermat>-<a>-and-<n-a>`.
pub fn child_name(fermat: &str, a: i64, b: i64) -> String {
    format!("{fermat}-{a}-and-{b}")
}

/// Puts the child Tuples in line with the spec, then reports.
pub async fn reconcile(fermat: Arc<Fermat>, ctx: Arc<Context>) -> Result<Action> {
    // Being deleted (`kubectl delete`, perhaps `--cascade=foreground`): the garbage collector
    // is removing the children. Applying them again would re-create each one it deletes.
    if fermat.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = apply_children(&fermat, &ctx).await?;
    delete_extras(&fermat, &children, &ctx).await?;
    write_status(&fermat, &children, &ctx).await?;
    Ok(Action::await_change())
}

/// EXERCISE 3a: as in EXERCISE 2a, one child per pair: for each `(a, b)` in
/// `crate::math::fermat_splits(fermat.spec.number)` (the pairs `(a, n - a)`, a = 1 ..= n/2),
/// the Tuple `child_name(&fermat.name_any(), a, b)` with `TupleSpec { numbers: vec![a, b] }`
/// and a controller ownerReference to the Fermat (`fermat.controller_owner_ref(&())`, with
/// `block_owner_deletion: Some(true)`), applied with `Patch::Apply` and
/// `PatchParams::apply(MANAGER).force()`; return what the API server answered, in order. The
/// Tuple controller of stage 2 then makes each Tuple's Numbers: three controllers cooperate
/// without calling each other. You will need 2a's `use` lines (with `Tuple` in place of
/// `Number`) and `use super::tuple::TupleSpec;`. Stuck? `make workshop-hint STAGE=3`.
///
/// 演習 3a: 演習 2a と同じく、組ごとに子を 1 つ用意します。
/// `crate::math::fermat_splits(fermat.spec.number)` の各 `(a, b)` (組 `(a, n - a)`、a = 1 ..= n/2) について、`TupleSpec { numbers: vec![a, b] }` を持つ Tuple `child_name(&fermat.name_any(), a, b)` を、Fermat を指すコントローラーのオーナーリファレンス (`fermat.controller_owner_ref(&())` に `block_owner_deletion: Some(true)` を付けたもの) 付きで、`Patch::Apply` と `PatchParams::apply(MANAGER).force()` で apply します。
/// API サーバーが返したものを順番どおりに返します。
/// あとはステージ 2 の Tuple コントローラーが各 Tuple の Number を作ります。
/// 3 つのコントローラーが、互いを呼ぶことなく協力します。
/// 必要な `use`: `use kube::{Resource, ResourceExt};`、`use kube::api::{Patch, PatchParams};`、`use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;`、`use super::tuple::TupleSpec;`、`use crate::context::{Error, MANAGER};`。
/// 行き詰まったら `make workshop-hint STAGE=3`。
pub async fn apply_children(_fermat: &Fermat, _ctx: &Context) -> Result<Vec<Tuple>> {
    todo!("EXERCISE 3a: create or update the child Tuples, in workshop/src/exercises/fermat.rs")
}

/// EXERCISE 3b: as in EXERCISE 2b: delete the Tuples this Fermat controls (compare the owner's
/// uid) that are not among `children` (its number changed). With
/// `use kube::api::{DeleteParams, ListParams};`. Stuck? `make workshop-hint STAGE=3`.
///
/// 演習 3b: 演習 2b と同じく、この Fermat がコントローラーとして所有している Tuple (オーナーの uid で比べます) のうち、`children` にないもの (number が変わった) を削除します。
/// 必要な `use`: `use kube::api::{DeleteParams, ListParams};`。
/// 行き詰まったら `make workshop-hint STAGE=3`。
pub async fn delete_extras(_fermat: &Fermat, _children: &[Tuple], _ctx: &Context) -> Result<()> {
    todo!("EXERCISE 3b: delete the Tuples no longer wanted, in workshop/src/exercises/fermat.rs")
}

/// EXERCISE 3c: once every child Tuple has answered for its current spec (as in 2c, from
/// `status.all_squares`), write the `FermatStatus`. `decompositions` holds
/// `crate::math::format_decomposition(x, y)` ("1²+4²") for every child `[a, b]` whose
/// `all_squares` is true, in the order of the children, where `x` and `y` are the square roots
/// of `a` and `b`: `crate::math::exact_sqrt(a)` is `Some(x)` for a perfect square and `None`
/// otherwise (exact for every `i64`), and inside a closure that returns an `Option`, `?` takes
/// the `x` out. `two_squares_found` says whether there is one; `is_prime` and `one_mod_four`
/// come from `crate::math::is_prime` and `crate::math::is_one_mod_four` of n. Write it as in
/// stage 1, `patch_status` with `"kind": "Fermat"`. You will need `use serde_json::json;` and
/// `use crate::math;`. Stuck? `make workshop-hint STAGE=3`.
///
/// 演習 3c: すべての子 Tuple の status が今の spec に追いついたら (2c と同じく `status.all_squares` から)、`FermatStatus` を書き込みます。
/// `decompositions` には、`all_squares` が true の子 `[a, b]` ごとに、子の順番どおり `crate::math::format_decomposition(x, y)` ("1²+4²") を入れます。
/// `x` と `y` は `a` と `b` の平方根です。
/// `crate::math::exact_sqrt(a)` は平方数なら `Some(x)`、そうでなければ `None` を返し (どの `i64` でも正確です)、`Option` を返すクロージャーの中では `?` で `x` を取り出せます。
/// `two_squares_found` は分解が 1 つでもあるかどうか、`is_prime` と `one_mod_four` は n の `crate::math::is_prime` と `crate::math::is_one_mod_four` です。
/// ステージ 1 と同じく `patch_status` で書き込みます (`"kind": "Fermat"`)。
/// 必要な `use`: `use serde_json::json;`、`use crate::math;`。
/// 行き詰まったら `make workshop-hint STAGE=3`。
pub async fn write_status(_fermat: &Fermat, _children: &[Tuple], _ctx: &Context) -> Result<()> {
    todo!(
        "EXERCISE 3c: report the decompositions in the Fermat's status, in workshop/src/exercises/fermat.rs"
    )
}

/// Runs the Fermat controller.
pub async fn run(ctx: Arc<Context>) {
    let fermats: Api<Fermat> = ctx.watched();
    Controller::new(fermats, watcher::Config::default())
        // EXERCISE 3d: be woken when a child Tuple changes, as in EXERCISE 2d (take the `//`
        // away):
        //     .owns(ctx.watched::<Tuple>(), watcher::Config::default())
        // 演習 3d: 演習 2d と同じく、子の Tuple が変わったときにもリコンサイルが呼ばれるようにします。
        // 次の行の `//` を外してください:
        //     .owns(ctx.watched::<Tuple>(), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
