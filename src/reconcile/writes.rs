//! The writes that close the gap between the children a parent wants and the ones it has:
//! the creates, corrections, adoptions and deletions that carry a [`Plan`] out, and the status
//! patch ([`write_status`]); the Events that tell of them are in [`super::events`]. These two
//! files are the only place a reconcile writes to the API server.
//!
//! This layer sits above [`crate::reconcile::plan`], which decides *what* to do without knowing the
//! [`Context`] that does it: the controllers call down into here, and this module calls down
//! into the pure diff, never the other way round.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde_json::json;
use tracing::info;

use crate::error::{Error, Result, is_unreachable};
use crate::kind::{Child, Kind};
use crate::metrics::WriteKind;
use crate::reconcile::context::Context;
use crate::reconcile::events;
use crate::reconcile::memory::refusals::{Refusal, Step};
use crate::reconcile::plan::Plan;
use crate::reconcile::status::{self, Standing, StatusWrite, WholeStatus};

/// How many create requests one reconcile keeps in flight, at most.
const WRITES_IN_FLIGHT: usize = 32;

/// The controller ownerReference a parent puts on its children. `blockOwnerDeletion` makes a
/// foreground deletion of the parent wait for them.
pub fn owner_reference<P: Resource<DynamicType = ()>>(parent: &P) -> Result<OwnerReference> {
    let mut reference = parent
        .controller_owner_ref(&())
        .ok_or(Error::MissingField {
            kind: "parent",
            field: "metadata.uid",
        })?;
    reference.block_owner_deletion = Some(true);
    Ok(reference)
}

/// The ownerReferences of an adopted child: its own non-controller references, plus ours.
fn adopted_references<C: Resource>(child: &C, ours: &OwnerReference) -> Vec<OwnerReference> {
    let mut references: Vec<OwnerReference> = child
        .meta()
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.uid != ours.uid)
        .cloned()
        .collect();
    references.push(ours.clone());
    references
}

/// What became of a plan's writes, besides the children written: everything the caller must
/// learn from, whatever else failed. A refusal next to a 409 is still a refusal, and the
/// status and the refusal backoff must hear of it (an error alone would throw it away).
#[derive(Debug, Default)]
pub struct Applied {
    /// Steps the API server refused, with its words (one per step: the first refusal stops
    /// that step, the next attempt comes after a backoff).
    pub refused: Vec<Refusal>,
    /// A create was refused because the namespace is being deleted.
    pub terminating: bool,
    /// The first failure that was neither (the server unreachable, a 5xx, a 409 on a
    /// conditional patch): for the error policy, once the rest is recorded.
    pub error: Option<Error>,
}

impl Applied {
    fn failed(error: Error) -> Applied {
        Applied {
            error: Some(error),
            ..Applied::default()
        }
    }
}

/// How a failed write is taken.
enum Failed {
    /// The API server answered no, and would again: a quota, an admission policy, RBAC, a
    /// value it rejects. Reported in the status and retried after a backoff.
    Refused(String),
    /// The namespace is being deleted (kube-apiserver's NamespaceLifecycle): nothing to
    /// create there, nothing to retry, as kube-controller-manager's controllers do
    /// (`HasStatusCause(err, NamespaceTerminatingCause)`).
    Terminating,
    /// Anything else (the server unreachable, a 5xx, a 409 on a conditional patch): the
    /// reconcile fails and the error policy retries it.
    Other(kube::Error),
}

/// The status cause kube-apiserver gives a create in a namespace being deleted.
const NAMESPACE_TERMINATING: &str = "NamespaceTerminating";

fn classify(error: kube::Error) -> Failed {
    match error {
        kube::Error::Api(status)
            if status
                .details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.reason == NAMESPACE_TERMINATING)) =>
        {
            Failed::Terminating
        }
        // 409 and 429 are a race and a pace, not a refusal; 401 is credentials that expired
        // or rotated (the client has read its token file again; the next try may pass), not
        // the API server's answer to this write; 404 is handled by each step.
        kube::Error::Api(status)
            if (400..500).contains(&status.code) && ![401, 409, 429].contains(&status.code) =>
        {
            Failed::Refused(status.message)
        }
        other => Failed::Other(other),
    }
}

/// Carry out a plan's writes against the API server: create, correct, adopt, delete, each
/// step whatever the others got, except the steps in `held` (refused recently: their retry
/// waits for its backoff). Each kind of action becomes one log line and one Event on the
/// parent (not the first children of a controller's object: [`events::announces_created`]).
/// What went wrong is in the answer with what went right ([`Applied`]), never instead of it.
/// An object that vanished meanwhile (404) or a create that lost a race (409) is not an error
/// worth reporting: the watch brings the news and the next reconcile starts from it.
///
/// Errors other than refusals (see [`Failed`]) are reported in [`Applied::error`] once every
/// step has had its turn; an unreachable server ends the steps at once.
pub async fn apply<P: Kind, C: Child>(
    ctx: &Context,
    parent: &P,
    plan: &Plan<C>,
    held: &HashSet<Step>,
) -> Applied {
    let mut writer = match Writer::<C>::new(ctx, parent) {
        Ok(writer) => writer,
        Err(error) => return Applied::failed(error),
    };
    let due = |writer: &Writer<C>, step| !writer.unreachable && !held.contains(&step);
    let mut done = Done::default();
    if due(&writer, Step::Create) {
        done.created = create(&mut writer, plan).await;
    }
    if due(&writer, Step::Correct) {
        done.corrected = correct(&mut writer, plan).await;
    }
    if due(&writer, Step::Adopt) {
        done.adopted = adopt(&mut writer, plan).await;
    }
    if due(&writer, Step::Delete) {
        done.deleted = delete(&mut writer, plan).await;
    }
    events::announce(ctx, parent, plan, done).await;
    writer.applied
}

/// One reconcile's writes to a parent's children: where they go, and what became of them
/// so far, shared by the steps so that a failure in one is seen by the next.
struct Writer<'a, C: Child> {
    ctx: &'a Context,
    api: Api<C>,
    namespace: String,
    /// The controller ownerReference every created or adopted child carries.
    owner: OwnerReference,
    /// The controller writing (its label in the write metrics).
    controller: &'static str,
    applied: Applied,
    /// The API server could not be reached: the steps still to come are skipped.
    unreachable: bool,
}

/// The names of the children each step wrote, for the log and the Events.
#[derive(Default)]
pub(crate) struct Done {
    pub(crate) created: Vec<String>,
    pub(crate) corrected: Vec<String>,
    pub(crate) adopted: Vec<String>,
    pub(crate) deleted: Vec<String>,
}

impl<'a, C: Child> Writer<'a, C> {
    /// The writes of `parent`'s reconcile, in its namespace; fails only for a parent without
    /// a UID (no ownerReference can name it).
    fn new<P: Kind>(ctx: &'a Context, parent: &P) -> Result<Self> {
        let namespace = parent.namespace().unwrap_or_default();
        Ok(Writer {
            ctx,
            api: Api::namespaced(ctx.client.clone(), &namespace),
            namespace,
            owner: owner_reference(parent)?,
            controller: P::CONTROLLER,
            applied: Applied::default(),
            unreachable: false,
        })
    }

    /// Sort one failed write of `step` into the answer: a refusal, the namespace going away,
    /// or the error for the retry policy (the first one is kept).
    fn failed(&mut self, step: Step, name: &str, e: kube::Error) {
        self.unreachable |= is_unreachable(&e);
        match classify(e) {
            Failed::Refused(message) => self.applied.refused.push(Refusal {
                step,
                name: name.to_string(),
                message,
            }),
            Failed::Terminating => self.applied.terminating = true,
            Failed::Other(source) => {
                self.applied.error.get_or_insert(Error::Kube {
                    action: step.verb(),
                    kind: C::KIND,
                    namespace: self.namespace.clone(),
                    name: name.to_string(),
                    source: Box::new(source),
                });
            }
        }
    }

    /// A conditional merge patch of `child` (a correction or an adoption): the
    /// resourceVersion in `patch` makes the server answer 409 if the child changed since we
    /// read it, and we look again rather than overwrite blindly. `Ok(false)`: it is gone.
    async fn patch(&self, child: &C, patch: serde_json::Value) -> Result<bool, kube::Error> {
        let (ctx, namespace, name) = (self.ctx, &self.namespace, child.name_any());
        ctx.metrics
            .write(self.controller, C::KIND, WriteKind::Patch);
        ctx.expectations
            .expect::<C>(namespace, &name, child.resource_version());
        let params = PatchParams::default();
        let result = ctx
            .requests
            .run(self.api.patch(&name, &params, &Patch::Merge(&patch)))
            .await;
        match result {
            Ok(_) => {
                ctx.expectations.sent::<C>(namespace, &name);
                Ok(true)
            }
            Err(e) => {
                ctx.expectations.forget::<C>(namespace, &name);
                match e {
                    kube::Error::Api(s) if s.code == 404 => Ok(false),
                    e => Err(e),
                }
            }
        }
    }
}

/// Create the missing children, concurrently (a Fermat of 1000 creates 500 Tuples in one
/// reconcile; one at a time that would be 500 round trips in a row), starting slowly as
/// kube-controller-manager's ReplicaSet controller does: one, then one more in flight for
/// every success, up to [`WRITES_IN_FLIGHT`]. The first failure stops the step, so a quota
/// that is full costs one request per attempt, not one per missing child. Answers the
/// names created, in the desired order.
async fn create<C: Child>(writer: &mut Writer<'_, C>, plan: &Plan<C>) -> Vec<String> {
    let ctx = writer.ctx;
    let mut created = Vec::new();
    let mut wanted = plan.create.iter();
    let mut in_flight = FuturesUnordered::new();
    let mut window = 1;
    let mut stop = false;
    loop {
        while !stop && in_flight.len() < window {
            let Some(want) = wanted.next() else { break };
            let child = new_child(writer, &want.name, want.spec.clone());
            ctx.metrics
                .write(writer.controller, C::KIND, WriteKind::Create);
            // Expected before the request: the watch may deliver the child (and even its
            // deletion by someone else) before the answer comes back.
            ctx.expectations
                .expect::<C>(&writer.namespace, &want.name, None);
            let api = writer.api.clone();
            let name = want.name.clone();
            in_flight.push(async move {
                let result = ctx
                    .requests
                    .run(api.create(&PostParams::default(), &child))
                    .await;
                (name, result)
            });
        }
        let Some((name, result)) = in_flight.next().await else {
            break;
        };
        match result {
            Ok(_) => {
                ctx.expectations.sent::<C>(&writer.namespace, &name);
                created.push(name);
                window = (window + 1).min(WRITES_IN_FLIGHT);
            }
            // The cache was behind, or the answer to an earlier create was lost: the object
            // exists, and the watch will show it.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                ctx.expectations.sent::<C>(&writer.namespace, &name)
            }
            Err(e) => {
                ctx.expectations.forget::<C>(&writer.namespace, &name);
                if !stop {
                    writer.failed(Step::Create, &name, e);
                }
                stop = true;
            }
        }
    }
    in_desired_order(&mut created, plan);
    created
}

/// A new child of the desired name and spec, in the parent's namespace, under its control.
fn new_child<C: Child>(writer: &Writer<'_, C>, name: &str, spec: C::Spec) -> C {
    let mut child = C::build(name, spec);
    child.meta_mut().namespace = Some(writer.namespace.clone());
    child.meta_mut().owner_references = Some(vec![writer.owner.clone()]);
    child
}

/// Sort `created` as the plan desired them, whatever order the answers came in.
fn in_desired_order<C: Child>(created: &mut [String], plan: &Plan<C>) {
    let order: HashMap<&str, usize> = (plan.create.iter().enumerate())
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    created.sort_by_key(|name| order.get(name.as_str()).copied());
}

/// Put the desired spec back on children whose spec was edited by hand, one at a time;
/// the first failure stops the step. Answers what was corrected, with the specs, for the
/// Event ("t-1 (spec {"value":7} back to {"value":2})").
async fn correct<C: Child>(writer: &mut Writer<'_, C>, plan: &Plan<C>) -> Vec<String> {
    let mut corrected = Vec::new();
    for (child, spec) in &plan.correct {
        let name = child.name_any();
        let patch = json!({
            "metadata": { "resourceVersion": child.resource_version() },
            "spec": spec,
        });
        match writer.patch(child, patch).await {
            Ok(true) => corrected.push(format!(
                "{name} (spec {} back to {})",
                spec_text(child.child_spec()),
                spec_text(spec)
            )),
            Ok(false) => {}
            Err(e) => {
                writer.failed(Step::Correct, &name, e);
                break;
            }
        }
    }
    corrected
}

/// Take the children of a desired name that have no controller: our ownerReference added
/// to theirs, and the desired spec; the first failure stops the step.
async fn adopt<C: Child>(writer: &mut Writer<'_, C>, plan: &Plan<C>) -> Vec<String> {
    let mut adopted = Vec::new();
    for (child, spec) in &plan.adopt {
        let name = child.name_any();
        let patch = json!({
            "metadata": {
                "resourceVersion": child.resource_version(),
                "ownerReferences": adopted_references(child.as_ref(), &writer.owner),
            },
            "spec": spec,
        });
        match writer.patch(child, patch).await {
            Ok(true) => adopted.push(name),
            Ok(false) => {}
            Err(e) => {
                writer.failed(Step::Adopt, &name, e);
                break;
            }
        }
    }
    adopted
}

/// Delete the children the parent controls and no longer wants, one at a time, each with
/// a UID precondition: the object we decided about, never a namesake created since. One
/// already gone (404) is no failure; the first other failure stops the step. Answers the
/// names deleted, sorted (the cache has no order; a sorted list reads better in
/// `kubectl describe`).
async fn delete<C: Child>(writer: &mut Writer<'_, C>, plan: &Plan<C>) -> Vec<String> {
    let ctx = writer.ctx;
    let mut deleted = Vec::new();
    for child in &plan.delete {
        let name = child.name_any();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: child.uid(),
                resource_version: None,
            }),
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        ctx.metrics
            .write(writer.controller, C::KIND, WriteKind::Delete);
        ctx.expectations
            .expect::<C>(&writer.namespace, &name, child.resource_version());
        let result = ctx.requests.run(writer.api.delete(&name, &params)).await;
        match result {
            Ok(_) => {
                ctx.expectations.sent::<C>(&writer.namespace, &name);
                deleted.push(name)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                ctx.expectations.forget::<C>(&writer.namespace, &name)
            }
            Err(e) => {
                ctx.expectations.forget::<C>(&writer.namespace, &name);
                writer.failed(Step::Delete, &name, e);
                break;
            }
        }
    }
    deleted.sort();
    deleted
}

/// A spec as JSON for an Event's note. Specs are integers and lists of them, so this does
/// not fail; if it ever did, the note says so rather than failing the reconcile that did
/// the correction.
fn spec_text<S: Serialize>(spec: &S) -> String {
    serde_json::to_string(spec).unwrap_or_else(|e| format!("(unprintable: {e})"))
}

/// Write an object's status if [`status::decide`] says it is due; answers when to look
/// again (`None`: on the next watch event). `current` is the status as far as we know
/// ([`WrittenStatuses::known`](crate::reconcile::memory::expectations::WrittenStatuses::known)): it only
/// decides whether a write is due, for the write states the whole status
/// ([`status::whole_status`]). What we write is remembered until the cache shows it.
/// `standing` says whether it is the answer, and if not, how the children come along.
pub async fn write_status<P: Kind, S: WholeStatus>(
    ctx: &Context,
    obj: &P,
    current: Option<&S>,
    desired: &S,
    standing: Standing<'_>,
) -> Result<Option<Duration>> {
    let namespace = obj.namespace().unwrap_or_default();
    let name = obj.name_any();
    let current = current.map(serde_json::to_value).transpose()?;
    let desired = serde_json::to_value(desired)?;
    match status::decide(current.as_ref(), &desired, standing)? {
        StatusWrite::Unchanged => Ok(None),
        StatusWrite::Hold(wait) => Ok(Some(wait)),
        StatusWrite::Due => {
            let patch = status::whole_status(&desired, S::FIELDS);
            let api: Api<P> = Api::namespaced(ctx.client.clone(), &namespace);
            ctx.metrics
                .write(P::CONTROLLER, P::KIND, WriteKind::PatchStatus);
            // Remembered before it is sent: its echo may come before its answer.
            ctx.statuses.written(obj, desired);
            ctx.requests
                .run(api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                .await
                .map_err(|source| {
                    ctx.statuses.forget(obj);
                    Error::Kube {
                        action: "writing the status of",
                        kind: P::KIND,
                        namespace: namespace.clone(),
                        name: name.clone(),
                        source: Box::new(source),
                    }
                })?;
            if !matches!(standing, Standing::Answer) {
                ctx.pace.reported(obj);
            }
            let message = patch
                .pointer("/status/conditions/0/message")
                .and_then(|m| m.as_str())
                .unwrap_or("status updated");
            info!("{} {namespace}/{name}: {message}", P::KIND);
            Ok(None)
        }
    }
}
