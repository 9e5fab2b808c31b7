//! Stage 3, solved: a Fermat of n owns the Tuples [a, n-a], a = 1..=n/2, and reports which of
//! them are made of two squares: the ways to write n as a sum of two squares.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::tuple::{Tuple, TupleSpec};
use crate::context::{Context, Error, MANAGER, Result, error_policy, log};
use crate::math;

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

/// Puts the child Tuples in line with the spec, then reports. Level-triggered, like Tuple.
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

/// Creates or corrects the Tuple `<fermat>-<a>-and-<n-a>` = [a, n-a] for a = 1..=n/2, with a
/// controller ownerReference to the Fermat. Returns the children as stored.
pub async fn apply_children(fermat: &Fermat, ctx: &Context) -> Result<Vec<Tuple>> {
    let tuples: Api<Tuple> =
        Api::namespaced(ctx.client.clone(), &fermat.namespace().unwrap_or_default());
    // controller: true (None only for an object without a uid), and blockOwnerDeletion: true
    // as kubebuilder's SetControllerReference sets it: a foreground deletion of the Fermat
    // then waits for its Tuples.
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..fermat
            .controller_owner_ref(&())
            .ok_or(Error::Missing("uid"))?
    };
    let apply = PatchParams::apply(MANAGER).force();
    let mut children = Vec::new();
    for (a, b) in math::fermat_splits(fermat.spec.number) {
        let mut tuple = Tuple::new(
            &child_name(&fermat.name_any(), a, b),
            TupleSpec {
                numbers: vec![a, b],
            },
        );
        tuple.metadata.owner_references = Some(vec![owner.clone()]);
        children.push(
            tuples
                .patch(&tuple.name_any(), &apply, &Patch::Apply(&tuple))
                .await?,
        );
    }
    Ok(children)
}

/// Deletes the Tuples this Fermat owns that are not among `children` (n changed).
pub async fn delete_extras(fermat: &Fermat, children: &[Tuple], ctx: &Context) -> Result<()> {
    let tuples: Api<Tuple> =
        Api::namespaced(ctx.client.clone(), &fermat.namespace().unwrap_or_default());
    let wanted: Vec<String> = children.iter().map(|t| t.name_any()).collect();
    for tuple in tuples.list(&ListParams::default()).await? {
        let ours = tuple
            .owner_references()
            .iter()
            .any(|o| Some(&o.uid) == fermat.uid().as_ref());
        if ours && !wanted.contains(&tuple.name_any()) {
            tuples
                .delete(&tuple.name_any(), &DeleteParams::default())
                .await?;
        }
    }
    Ok(())
}

/// Writes the decompositions once every child Tuple has answered for its current spec.
pub async fn write_status(fermat: &Fermat, children: &[Tuple], ctx: &Context) -> Result<()> {
    let answers: Option<Vec<bool>> = children
        .iter()
        .map(|t| match &t.status {
            Some(s) if Some(s.observed_generation) == t.metadata.generation => Some(s.all_squares),
            _ => None,
        })
        .collect();
    let Some(answers) = answers else {
        return Ok(());
    };
    // A Tuple [a, b] of two squares is the decomposition √a² + √b².
    let decompositions: Vec<String> = children
        .iter()
        .zip(answers)
        .filter(|(_, all_squares)| *all_squares)
        .filter_map(|(t, _)| match t.spec.numbers[..] {
            [a, b] => Some(math::format_decomposition(
                math::exact_sqrt(a)?,
                math::exact_sqrt(b)?,
            )),
            _ => None,
        })
        .collect();
    let n = fermat.spec.number;
    let status = FermatStatus {
        observed_generation: fermat.metadata.generation.unwrap_or_default(),
        is_prime: math::is_prime(n),
        one_mod_four: math::is_one_mod_four(n),
        two_squares_found: !decompositions.is_empty(),
        decompositions,
    };
    let patch =
        json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Fermat", "status": status });
    Api::<Fermat>::namespaced(ctx.client.clone(), &fermat.namespace().unwrap_or_default())
        .patch_status(
            &fermat.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(())
}

/// Runs the Fermat controller: a change to a Fermat, or to a Tuple it controls, triggers a
/// reconcile of the Fermat.
pub async fn run(ctx: Arc<Context>) {
    let fermats: Api<Fermat> = ctx.watched();
    Controller::new(fermats, watcher::Config::default())
        .owns(ctx.watched::<Tuple>(), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
