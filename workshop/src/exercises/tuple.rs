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

/// EXERCISE 2a: make every child the spec wants exist, right, and owned by the Tuple: for each
/// item of `tuple.spec.numbers`, the Number `child_name(&tuple.name_any(), index)` with that
/// value. Return the children as the API server answered (they carry their statuses, which 2c
/// reads), in order. The API: an `Api<Number>` for the Tuple's namespace; an ownerReference from
/// `tuple.controller_owner_ref(&())` (`controller: true`; an `Option`, `None` only for an object
/// without a uid), with `block_owner_deletion: Some(true)` as kubebuilder's
/// `SetControllerReference` sets it, in each Number's `metadata.owner_references`; and
/// server-side apply, `numbers.patch(name, &PatchParams::apply(MANAGER).force(),
/// &Patch::Apply(&number))`. Why: the garbage collector deletes the Number with its Tuple
/// (and a foreground deletion waits for it); `.owns` (2d) finds the Tuple to wake by that
/// reference; and one apply creates the child when it is missing, corrects it when someone
/// edited it (`.force()` takes the field back from the editor) and changes nothing when it is
/// right, so running it on every reconcile is safe. You will need
/// `use kube::{Resource, ResourceExt};`, `use kube::api::{Patch, PatchParams};`,
/// `use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;`,
/// `use super::number::NumberSpec;` and `use crate::context::{Error, MANAGER};`. Stuck?
/// `make workshop-hint STAGE=2` shows the next hint, up to the complete code.
///
/// 演習 2a: spec が求める子をすべて、正しい内容で、Tuple が所有する形で用意します。
/// `tuple.spec.numbers` の要素ごとに、その値を持つ Number `child_name(&tuple.name_any(), index)` です。
/// API サーバーが返した子 (status 付きで、2c がそれを読みます) を順番どおりに返します。
/// 使う API: Tuple の Namespace の `Api<Number>`。`tuple.controller_owner_ref(&())` から作るオーナーリファレンス (`controller: true`。`Option` で、`None` になるのは uid のないオブジェクトだけ) に、kubebuilder の `SetControllerReference` と同じく `block_owner_deletion: Some(true)` を付けて、各 Number の `metadata.owner_references` に入れます。
/// そして Server-Side Apply: `numbers.patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&number))`。
/// 理由: ガベージコレクターが Tuple と一緒に Number を削除し (フォアグラウンド削除ではその Number を待ちます)、`.owns` (2d) はこのリファレンスをたどって起こす Tuple を見つけます。
/// また apply 1 回で、子がなければ作り、誰かが書き換えていれば直し (`.force()` で書き換えた人からフィールドを取り戻します)、正しければ何も変えません。
/// だからリコンサイルのたびに実行しても安全です。
/// 必要な `use`: `use kube::{Resource, ResourceExt};`、`use kube::api::{Patch, PatchParams};`、`use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;`、`use super::number::NumberSpec;`、`use crate::context::{Error, MANAGER};`。
/// 行き詰まったら `make workshop-hint STAGE=2` で次のヒントが出ます (最後は完成したコードです)。
pub async fn apply_children(_tuple: &Tuple, _ctx: &Context) -> Result<Vec<Number>> {
    todo!("EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs")
}

/// EXERCISE 2b: delete the Numbers this Tuple controls that are not among `children` (the
/// Tuple shrank): apply never deletes. The API: `numbers.list(&ListParams::default())` for the
/// Numbers of the Tuple's namespace, `number.owner_references()` to tell whether this Tuple
/// controls one, and `numbers.delete(name, &DeleteParams::default())`. Compare the owner's
/// **uid** with `tuple.uid()`, not its name: a Tuple deleted and created again under the same
/// name is another Tuple, and its predecessor's children are not its own. Delete only those
/// whose name is not among `children`: deleting a wanted child would wake the Tuple (2d), which
/// applies it again, which is deleted again, in a loop. You will need
/// `use kube::api::{DeleteParams, ListParams};` besides 2a's. Stuck? `make workshop-hint
/// STAGE=2`.
///
/// 演習 2b: この Tuple がコントローラーとして所有している Number のうち、`children` にないもの (Tuple が短くなった) を削除します。
/// apply は削除をしません。
/// 使う API: Tuple の Namespace の Number を一覧する `numbers.list(&ListParams::default())`、この Tuple が所有しているかを見る `number.owner_references()`、そして `numbers.delete(name, &DeleteParams::default())`。
/// オーナーは名前ではなく **uid** で `tuple.uid()` と比べます。
/// 削除して同じ名前で作り直した Tuple は別の Tuple で、前の Tuple の子はその子ではないからです。
/// 削除するのは、名前が `children` にないものだけです。
/// 必要な子を削除すると Tuple のリコンサイルが呼ばれ (2d)、また apply され、また削除され、と繰り返しになります。
/// 必要な `use`: 2a のものに加えて `use kube::api::{DeleteParams, ListParams};`。
/// 行き詰まったら `make workshop-hint STAGE=2`。
pub async fn delete_extras(_tuple: &Tuple, _children: &[Number], _ctx: &Context) -> Result<()> {
    todo!("EXERCISE 2b: delete the Numbers no longer wanted, in workshop/src/exercises/tuple.rs")
}

/// EXERCISE 2c: once every child has answered for its current spec, write
/// `TupleStatus { observed_generation, all_squares }` with `patch_status`, as in stage 1
/// (`"kind": "Tuple"`). A child `n` has answered when it has a status and
/// `Some(status.observed_generation) == n.metadata.generation` (`metadata.generation` is an
/// `Option<i64>`). If some child has not, write nothing and return `Ok(())`: when its status
/// changes, `owns` (2d) wakes this Tuple again. Why wait: a new child has no status, and one
/// whose value the Tuple just changed still has the status of its old value; `all_squares` of
/// no answers is `true` (the Go original's brief wrong answer). `all_squares` is true when
/// every child's `status.is_square` is (true for a Tuple without children). Stuck? `make
/// workshop-hint STAGE=2`.
///
/// 演習 2c: すべての子の status が今の spec に追いついたら、ステージ 1 と同じく `patch_status` で `TupleStatus { observed_generation, all_squares }` を書き込みます (`"kind": "Tuple"`)。
/// 子 `n` の status が今の spec に追いついているのは、status があり、`Some(status.observed_generation) == n.metadata.generation` のときです (`metadata.generation` は `Option<i64>`)。
/// 追いついていない子があれば何も書かずに `Ok(())` を返します。
/// その子の status が変わると、`owns` (2d) によってこの Tuple のリコンサイルがまた呼ばれます。
/// 待つ理由: 新しい子には status がなく、Tuple が値を変えたばかりの子には古い値に対する status が残っています。
/// 答えが 1 つもないときの `all_squares` は `true` になってしまいます (Go 版が一瞬出していた誤った答えです)。
/// `all_squares` は、すべての子の `status.is_square` が true のときに true です (子のない Tuple でも true)。
/// 行き詰まったら `make workshop-hint STAGE=2`。
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
        // deleted: nothing else tells it that a child was deleted or got its status. Watch the
        // Numbers too, and map each change to the Tuple named in the Number's ownerReferences,
        // with this line (take the `//` away):
        //     .owns(ctx.watched::<Number>(), watcher::Config::default())
        // 演習 2d: Tuple は、自分の Number が変わったり削除されたりしたときにもリコンサイルされなければなりません。
        // 子が削除されたことや子の status が書かれたことを Tuple に伝えるものは、ほかにないからです。
        // Number もウォッチし、変更を Number のオーナーリファレンスが指す Tuple に結び付けます。
        // 次の行の `//` を外してください:
        //     .owns(ctx.watched::<Number>(), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
