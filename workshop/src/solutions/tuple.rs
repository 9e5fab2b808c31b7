//! Stage 2, solved: a Tuple owns one Number per item and reports whether all are squares.

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

use super::number::{Number, NumberSpec};
use crate::context::{Context, Error, MANAGER, Result, error_policy, log};

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

/// Creates or corrects the Number `<tuple>-<index>` for every item: a server-side apply of
/// the whole desired child, idempotent, with a controller ownerReference to the Tuple.
/// Returns the children as the API server stored them (with their statuses).
pub async fn apply_children(tuple: &Tuple, ctx: &Context) -> Result<Vec<Number>> {
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &tuple.namespace().unwrap_or_default());
    // controller: true (None only for an object without a uid), and blockOwnerDeletion: true
    // as kubebuilder's SetControllerReference sets it: a foreground deletion of the Tuple
    // then waits for its Numbers.
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..tuple
            .controller_owner_ref(&())
            .ok_or(Error::Missing("uid"))?
    };
    let apply = PatchParams::apply(MANAGER).force();
    let mut children = Vec::new();
    for (index, value) in tuple.spec.numbers.iter().enumerate() {
        let mut number = Number::new(
            &child_name(&tuple.name_any(), index),
            NumberSpec { value: *value },
        );
        number.metadata.owner_references = Some(vec![owner.clone()]);
        children.push(
            numbers
                .patch(&number.name_any(), &apply, &Patch::Apply(&number))
                .await?,
        );
    }
    Ok(children)
}

/// Deletes the Numbers this Tuple owns that are not among `children` (the Tuple shrank).
pub async fn delete_extras(tuple: &Tuple, children: &[Number], ctx: &Context) -> Result<()> {
    let numbers: Api<Number> =
        Api::namespaced(ctx.client.clone(), &tuple.namespace().unwrap_or_default());
    let wanted: Vec<String> = children.iter().map(|n| n.name_any()).collect();
    for number in numbers.list(&ListParams::default()).await? {
        let ours = number
            .owner_references()
            .iter()
            .any(|o| Some(&o.uid) == tuple.uid().as_ref());
        if ours && !wanted.contains(&number.name_any()) {
            numbers
                .delete(&number.name_any(), &DeleteParams::default())
                .await?;
        }
    }
    Ok(())
}

/// Writes `allSquares` once every child's status describes its current spec; until then
/// writes nothing (`owns` wakes the Tuple again when a child's status changes).
pub async fn write_status(tuple: &Tuple, children: &[Number], ctx: &Context) -> Result<()> {
    let answers: Option<Vec<bool>> = children
        .iter()
        .map(|n| match &n.status {
            Some(s) if Some(s.observed_generation) == n.metadata.generation => Some(s.is_square),
            _ => None,
        })
        .collect();
    let Some(answers) = answers else {
        return Ok(());
    };
    let status = TupleStatus {
        observed_generation: tuple.metadata.generation.unwrap_or_default(),
        all_squares: answers.iter().all(|square| *square),
    };
    let patch =
        json!({ "apiVersion": "math.example.com/v1beta1", "kind": "Tuple", "status": status });
    Api::<Tuple>::namespaced(ctx.client.clone(), &tuple.namespace().unwrap_or_default())
        .patch_status(
            &tuple.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await?;
    Ok(())
}

/// Runs the Tuple controller: a change to a Tuple, or to a Number it controls, triggers a
/// reconcile of the Tuple.
pub async fn run(ctx: Arc<Context>) {
    let tuples: Api<Tuple> = ctx.watched();
    Controller::new(tuples, watcher::Config::default())
        .owns(ctx.watched::<Number>(), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(log)
        .await;
}
