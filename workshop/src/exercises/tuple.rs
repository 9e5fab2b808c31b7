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
    // Being deleted (`kubectl delete`, perhaps `--cascade=foreground`): the garbage collector
    // is removing the children. Applying them again would re-create each one it deletes.
    if tuple.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let children = apply_children(&tuple, &ctx).await?;
    delete_extras(&tuple, &children, &ctx).await?;
    write_status(&tuple, &children, &ctx).await?;
    Ok(Action::await_change())
}

/// EXERCISE 2a: create or correct the Number `child_name(&tuple.name_any(), index)` for every
/// item of `tuple.spec.numbers`, owned by the Tuple, and return the children as the API server
/// answered (they carry their statuses), in order:
///
/// ```ignore
/// let numbers: Api<Number> = Api::namespaced(ctx.client.clone(), &tuple.namespace().unwrap_or_default());
/// let owner = OwnerReference {
///     block_owner_deletion: Some(true),
///     ..tuple.controller_owner_ref(&()).ok_or(Error::Missing("uid"))?
/// };
/// let mut children = Vec::new();
/// for (index, &value) in tuple.spec.numbers.iter().enumerate() {
///     let mut number = Number::new(&child_name(&tuple.name_any(), index), NumberSpec { value });
///     number.metadata.owner_references = Some(vec![owner.clone()]);
///     let applied = numbers.patch(&number.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number)).await?;
///     children.push(applied);
/// }
/// Ok(children)
/// ```
///
/// `controller_owner_ref(&())` is an ownerReference with `controller: true` (`None` only for an
/// object without a uid): the garbage collector deletes the Number with its Tuple.
/// `block_owner_deletion: Some(true)` (what kubebuilder's `SetControllerReference` adds) makes
/// `kubectl delete --cascade=foreground` wait for the Number. Server-side apply (`Patch::Apply`
/// with a field manager) creates the child if it is missing, corrects it if someone edited it,
/// and changes nothing when it is already right: running it again and again is safe. Imports:
/// `use kube::{Resource, ResourceExt};`, `use kube::api::{Patch, PatchParams};`,
/// `use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;`,
/// `use super::number::NumberSpec;`, `use crate::context::{Error, MANAGER};`.
///
/// 演習 2a: `tuple.spec.numbers` の要素ごとに Number `child_name(&tuple.name_any(), index)` を
/// Tuple が所有する形で作成または修正し、API サーバーが返した子 (status 付き) を順番どおりに
/// 返します (上のコード)。`controller_owner_ref(&())` は `controller: true` のオーナーリファレンス
/// です (`None` になるのは uid のないオブジェクトだけ)。ガベージコレクターが Tuple と一緒に
/// Number を削除します。`block_owner_deletion: Some(true)` (kubebuilder の
/// `SetControllerReference` が付けるもの) があると、`kubectl delete --cascade=foreground` は
/// Number の削除を待ちます。Server-Side Apply (`Patch::Apply` とフィールドマネージャー) は、子が
/// なければ作り、誰かが書き換えていれば直し、正しければ何も変えません。何度実行しても安全です。
/// 必要な `use` は上の英語の最後にあるとおりです。
pub async fn apply_children(_tuple: &Tuple, _ctx: &Context) -> Result<Vec<Number>> {
    todo!("EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs")
}

/// EXERCISE 2b: delete the Numbers this Tuple controls that are not among `children` (the
/// Tuple shrank). List the Numbers of the Tuple's namespace, keep those with an ownerReference
/// that names the Tuple's uid (not its name: a new Tuple of the same name is another Tuple),
/// and delete those whose name is not wanted:
///
/// ```ignore
/// let wanted: Vec<String> = children.iter().map(|n| n.name_any()).collect();
/// for number in numbers.list(&ListParams::default()).await? {
///     let ours = number.owner_references().iter().any(|o| Some(&o.uid) == tuple.uid().as_ref());
///     if ours && !wanted.contains(&number.name_any()) {
///         numbers.delete(&number.name_any(), &DeleteParams::default()).await?;
///     }
/// }
/// ```
///
/// (`use kube::api::{DeleteParams, ListParams};`; `numbers` as in 2a.)
///
/// 演習 2b: この Tuple がコントローラーになっている Number のうち、`children` にないもの
/// (Tuple が短くなった) を削除します。Tuple の Namespace の Number を一覧し、オーナーリファレンスが
/// Tuple の uid を指すものだけを残し (名前ではありません。同じ名前で作り直した Tuple は別の
/// Tuple です)、望まれていない名前のものを削除します (上のコード。`numbers` は 2a と同じ)。
pub async fn delete_extras(_tuple: &Tuple, _children: &[Number], _ctx: &Context) -> Result<()> {
    todo!("EXERCISE 2b: delete the Numbers no longer wanted, in workshop/src/exercises/tuple.rs")
}

/// EXERCISE 2c: once every child has a status for its current spec, write
/// `TupleStatus { observed_generation, all_squares }` with `patch_status`, as in stage 1. A
/// child `n` has answered for its current spec when
/// `n.status.as_ref().is_some_and(|s| Some(s.observed_generation) == n.metadata.generation)`
/// (`metadata.generation` is an `Option<i64>`). If some child has not answered yet, write
/// nothing and return `Ok(())`: when its status changes, `owns` (EXERCISE 2d) wakes this Tuple
/// again. `all_squares` is true when every child's `status.is_square` is (true for none).
///
/// 演習 2c: すべての子が今の spec に対する status を持ったら、ステージ 1 と同じく
/// `patch_status` で `TupleStatus { observed_generation, all_squares }` を書き込みます。子 `n` が
/// 今の spec に答えたかどうかは
/// `n.status.as_ref().is_some_and(|s| Some(s.observed_generation) == n.metadata.generation)`
/// で分かります (`metadata.generation` は `Option<i64>`)。まだ答えていない子があれば何も書かずに
/// `Ok(())` を返します。その子の status が変わると、`owns` (演習 2d) がこの Tuple をまた起こします。
/// `all_squares` はすべての子の `status.is_square` が true のとき true です (子がなければ true)。
pub async fn write_status(_tuple: &Tuple, _children: &[Number], _ctx: &Context) -> Result<()> {
    todo!(
        "EXERCISE 2c: report allSquares in the Tuple's status, in workshop/src/exercises/tuple.rs"
    )
}

/// Runs the Tuple controller.
pub async fn run(ctx: Arc<Context>) {
    let tuples: Api<Tuple> = ctx.watched();
    Controller::new(tuples, watcher::Config::default())
        // EXERCISE 2d: a Tuple must also be reconciled when one of its Numbers changes or is
        // deleted. Watch the Numbers too, and map each change to the Tuple named in the
        // Number's ownerReferences, with
        //     .owns(ctx.watched::<Number>(), watcher::Config::default())
        // 演習 2d: Tuple は、自分の Number が変わったり削除されたりしたときにもリコンサイル
        // されなければなりません。Number もウォッチし、変更を Number のオーナーリファレンスが指す
        // Tuple に結び付けます。上の 1 行 (.owns(...)) のコメントを外してください。
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
