//! The writes that close the gap between the children a parent wants and the ones it has:
//! the creates, corrections, adoptions and deletions that carry a [`Plan`] out, the status
//! patch ([`write_status`]) and the Events that tell of them ([`publish`]). This is the only
//! place a reconcile writes to the API server.
//!
//! This layer sits above [`crate::reconcile::plan`], which decides *what* to do without knowing the
//! [`Context`] that does it: the controllers call down into here, and this module calls down
//! into the pure diff, never the other way round.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde_json::json;
use tracing::{info, warn};

use crate::error::{Error, Result, is_unreachable};
use crate::kind::controller_uid;
use crate::kind::{Child, Kind};
use crate::metrics::WriteKind;
use crate::reconcile::plan::{MAX_NAME_LEN, Plan};
use crate::reconcile::status::{self, Standing, StatusWrite, name_list};
use crate::runtime::context::Context;
use crate::runtime::events::{self, Note};
use crate::runtime::refusals::{Refusal, Step};

/// How many create requests one reconcile keeps in flight, at most.
const WRITES_IN_FLIGHT: usize = 32;

/// Say once, in the log and as a Warning Event on the parent, what the API server refused
/// and when it is tried again. The Event is the same while the refusal is: it is published
/// once (see [`publish`]).
pub(crate) async fn report_refusals<P: Kind>(
    ctx: &Context,
    parent: &P,
    refused: &[Refusal],
    retry_in: Duration,
) {
    let Some(first) = refused.first() else { return };
    let who = format!(
        "{} {}/{}",
        P::kind(&()),
        parent.namespace().unwrap_or_default(),
        parent.name_any()
    );
    for r in refused {
        warn!(
            "{who}: {} {} was refused; trying again in {retry_in:.0?}: {}",
            r.step.verb(),
            r.name,
            r.message
        );
    }
    let note = refused
        .iter()
        .map(|r| format!("{} {} was refused: {}", r.step.verb(), r.name, r.message))
        .collect::<Vec<_>>()
        .join("; ");
    let reason = first.step.refused_reason();
    let action = match first.step {
        Step::Create => "Create",
        Step::Correct | Step::Adopt => "Update",
        Step::Delete => "Delete",
    };
    publish(ctx, parent, EventType::Warning, reason, action, note, None).await;
}

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
    let namespace = parent.namespace().unwrap_or_default();
    let api: Api<C> = Api::namespaced(ctx.client.clone(), &namespace);
    let owner = match owner_reference(parent) {
        Ok(owner) => owner,
        Err(error) => return Applied::failed(error),
    };
    let controller = P::CONTROLLER;
    let mut applied = Applied::default();
    // Sorts one failed write: true when its step should stop here.
    let failed = |step: Step, name: &str, e: kube::Error, applied: &mut Applied| {
        let unreachable = is_unreachable(&e);
        match classify(e) {
            Failed::Refused(message) => applied.refused.push(Refusal {
                step,
                name: name.to_string(),
                message,
            }),
            Failed::Terminating => applied.terminating = true,
            Failed::Other(source) => {
                applied.error.get_or_insert(Error::Kube {
                    action: step.verb(),
                    kind: C::KIND,
                    namespace: namespace.clone(),
                    name: name.to_string(),
                    source: Box::new(source),
                });
            }
        }
        unreachable
    };

    // Creates go out concurrently (a Fermat of 1000 creates 500 Tuples in one reconcile, and
    // one at a time that would be 500 round trips in a row), but start slowly, as
    // kube-controller-manager's ReplicaSet controller does: one, then one more in flight for
    // every success, up to WRITES_IN_FLIGHT. The first refusal stops the step, so a quota
    // that is full costs one request per attempt, not one per missing child.
    let mut created = Vec::new();
    let mut unreachable = false;
    if !held.contains(&Step::Create) {
        let mut wanted = plan.create.iter();
        let mut in_flight = FuturesUnordered::new();
        let mut window = 1;
        let mut stop = false;
        loop {
            while !stop && in_flight.len() < window {
                let Some(want) = wanted.next() else { break };
                let mut child = C::build(&want.name, want.spec.clone());
                child.meta_mut().namespace = Some(namespace.clone());
                child.meta_mut().owner_references = Some(vec![owner.clone()]);
                ctx.metrics.write(controller, C::KIND, WriteKind::Create);
                // Expected before the request: the watch may deliver the child (and even
                // its deletion by someone else) before the answer comes back.
                ctx.expect_change::<C>(&namespace, &want.name, None);
                let api = api.clone();
                let name = want.name.clone();
                in_flight.push(async move {
                    let result = ctx
                        .in_slot(api.create(&PostParams::default(), &child))
                        .await;
                    (name, result)
                });
            }
            let Some((name, result)) = in_flight.next().await else {
                break;
            };
            match result {
                Ok(_) => {
                    ctx.change_sent::<C>(&namespace, &name);
                    created.push(name);
                    window = (window + 1).min(WRITES_IN_FLIGHT);
                }
                // The cache was behind, or the answer to an earlier create was lost: the
                // object exists, and the watch will show it.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    ctx.change_sent::<C>(&namespace, &name)
                }
                Err(e) => {
                    ctx.forget_change::<C>(&namespace, &name);
                    if !stop {
                        unreachable |= failed(Step::Create, &name, e, &mut applied);
                    }
                    stop = true;
                }
            }
        }
        // Created follows the desired order, whatever order the answers came in.
        let order: HashMap<&str, usize> = plan
            .create
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.as_str(), i))
            .collect();
        created.sort_by_key(|name| order.get(name.as_str()).copied());
    }

    // Corrections and adoptions are conditional merge patches: the resourceVersion we read
    // makes the server answer 409 if the child changed since, and we look again rather than
    // overwrite blindly.
    let patch_child = |child: &Arc<C>, patch: serde_json::Value| {
        let api = api.clone();
        let name = child.name_any();
        ctx.metrics.write(controller, C::KIND, WriteKind::Patch);
        ctx.expect_change::<C>(&namespace, &name, child.resource_version());
        let namespace = namespace.clone();
        async move {
            let result = ctx
                .in_slot(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                .await;
            match result {
                Ok(_) => {
                    ctx.change_sent::<C>(&namespace, &name);
                    Ok(true)
                }
                Err(e) => {
                    ctx.forget_change::<C>(&namespace, &name);
                    match e {
                        kube::Error::Api(s) if s.code == 404 => Ok(false),
                        e => Err(e),
                    }
                }
            }
        }
    };

    let mut corrected = Vec::new();
    if !unreachable && !held.contains(&Step::Correct) {
        for (child, spec) in &plan.correct {
            let name = child.name_any();
            let patch = json!({
                "metadata": { "resourceVersion": child.resource_version() },
                "spec": spec,
            });
            match patch_child(child, patch).await {
                Ok(true) => corrected.push(format!(
                    "{name} (spec {} back to {})",
                    spec_text(child.child_spec()),
                    spec_text(spec)
                )),
                Ok(false) => {}
                Err(e) => {
                    unreachable |= failed(Step::Correct, &name, e, &mut applied);
                    break;
                }
            }
        }
    }

    let mut adopted = Vec::new();
    if !unreachable && !held.contains(&Step::Adopt) {
        for (child, spec) in &plan.adopt {
            let name = child.name_any();
            let patch = json!({
                "metadata": {
                    "resourceVersion": child.resource_version(),
                    "ownerReferences": adopted_references(child.as_ref(), &owner),
                },
                "spec": spec,
            });
            match patch_child(child, patch).await {
                Ok(true) => adopted.push(name),
                Ok(false) => {}
                Err(e) => {
                    unreachable |= failed(Step::Adopt, &name, e, &mut applied);
                    break;
                }
            }
        }
    }

    let mut deleted = Vec::new();
    if !unreachable && !held.contains(&Step::Delete) {
        for child in &plan.delete {
            let name = child.name_any();
            // The uid precondition guarantees we delete the object we decided about, not a
            // namesake created since.
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: child.uid(),
                    resource_version: None,
                }),
                propagation_policy: Some(PropagationPolicy::Background),
                ..DeleteParams::default()
            };
            ctx.metrics.write(controller, C::KIND, WriteKind::Delete);
            ctx.expect_change::<C>(&namespace, &name, child.resource_version());
            let result = ctx.in_slot(api.delete(&name, &params)).await;
            match result {
                Ok(_) => {
                    ctx.change_sent::<C>(&namespace, &name);
                    deleted.push(name)
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    ctx.forget_change::<C>(&namespace, &name)
                }
                Err(e) => {
                    ctx.forget_change::<C>(&namespace, &name);
                    failed(Step::Delete, &name, e, &mut applied);
                    break;
                }
            }
        }
    }

    // The cache has no order; a sorted list reads better in `kubectl describe`.
    deleted.sort();
    let parent_name = format!("{namespace}/{}", parent.name_any());
    let kind = P::kind(&());
    let plural = |n: usize| {
        if n == 1 {
            C::KIND.to_string()
        } else {
            format!("{}s", C::KIND)
        }
    };
    let reports = [
        ("Created", "Create", &created, "created"),
        ("Corrected", "Correct", &corrected, "corrected"),
        ("Adopted", "Adopt", &adopted, "adopted"),
        ("Deleted", "Delete", &deleted, "deleted the unwanted"),
    ];
    let has_controller = controller_uid(parent).is_some();
    let uid = parent.uid().unwrap_or_default();
    let created_before = ctx.events.created_children_of(&uid);
    let announce_created =
        events::announces_created(has_controller, parent.has_status(), created_before);
    if !created.is_empty() && !announce_created {
        ctx.events.note_children_created(uid);
    }
    for (reason, action, names, verb) in reports {
        if names.is_empty() {
            continue;
        }
        let note = format!(
            "{verb} {} {}: {}",
            names.len(),
            plural(names.len()),
            name_list(names)
        );
        info!(%kind, parent = %parent_name, "{note}");
        if reason != "Created" || announce_created {
            publish(ctx, parent, EventType::Normal, reason, action, note, None).await;
        }
    }
    for conflict in &plan.conflicts {
        let note = format!(
            "{} {namespace}/{} exists and is controlled by {}; leaving it alone",
            C::KIND,
            conflict.name,
            conflict.owner
        );
        info!(%kind, parent = %parent_name, "{note}");
        // The child as the Event's related object: each conflicting child is a series of its
        // own, so a second conflict is not folded into the first one's message.
        let related = ObjectReference {
            api_version: Some(C::api_version(&()).to_string()),
            kind: Some(C::KIND.to_string()),
            name: Some(conflict.name.clone()),
            namespace: Some(namespace.clone()),
            ..Default::default()
        };
        let (warning, reason) = (EventType::Warning, "ChildConflict");
        publish(ctx, parent, warning, reason, "Adopt", note, Some(related)).await;
    }
    if !plan.invalid_names.is_empty() {
        let note = format!(
            "cannot create {} {}: the name would exceed {MAX_NAME_LEN} characters (shorten the parent's name)",
            plan.invalid_names.len(),
            plural(plan.invalid_names.len()),
        );
        info!(%kind, parent = %parent_name, "{note}");
        publish(
            ctx,
            parent,
            EventType::Warning,
            "ChildNameTooLong",
            "Create",
            note,
            None,
        )
        .await;
    }
    applied
}

/// A spec as JSON for an Event's note. Specs are integers and lists of them, so this does
/// not fail; if it ever did, the note says so rather than failing the reconcile that did
/// the correction.
fn spec_text<S: Serialize>(spec: &S) -> String {
    serde_json::to_string(spec).unwrap_or_else(|e| format!("(unprintable: {e})"))
}

/// Write an object's status if [`status::decide`] says it is due; answers when to look
/// again (`None`: on the next watch event). `current` is the status as far as we know
/// ([`Context::known_status`]); what we write is remembered until the cache shows it.
/// `standing` says whether it is the answer, and if not, how the children come along.
pub async fn write_status<P: Kind, S: Serialize>(
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
        StatusWrite::Patch(patch) => {
            let api: Api<P> = Api::namespaced(ctx.client.clone(), &namespace);
            ctx.metrics
                .write(P::CONTROLLER, P::KIND, WriteKind::PatchStatus);
            ctx.in_slot(api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                .await
                .map_err(|source| Error::Kube {
                    action: "writing the status of",
                    kind: P::KIND,
                    namespace: namespace.clone(),
                    name: name.clone(),
                    source: Box::new(source),
                })?;
            ctx.status_written(obj, desired, !matches!(standing, Standing::Answer));
            let message = patch
                .pointer("/status/conditions/0/message")
                .and_then(|m| m.as_str())
                .unwrap_or("status updated");
            info!("{} {namespace}/{name}: {message}", P::KIND);
            Ok(None)
        }
    }
}

/// Publish an Event on `regarding` (see [`crate::runtime::events`]: a Warning that stays the same is
/// published once). An Event that cannot be written is logged, never a reason to fail the
/// reconcile that did the work it reports.
pub async fn publish<P: Kind>(
    ctx: &Context,
    regarding: &P,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
    related: Option<ObjectReference>,
) {
    let note = Note {
        type_,
        reason: reason.to_string(),
        action: action.to_string(),
        text: note,
        related,
    };
    let published = ctx
        .in_slot(ctx.events.publish(&regarding.object_ref(&()), note))
        .await;
    match published {
        Ok(true) => ctx.metrics.write(P::CONTROLLER, "Event", WriteKind::Event),
        Ok(false) => {}
        Err(error) if is_unreachable(&error) => {
            // Reported once, as an outage.
            ctx.outage.unreachable(None, &error);
        }
        Err(error) => {
            ctx.metrics.write(P::CONTROLLER, "Event", WriteKind::Event);
            warn!(%error, reason, "could not publish an Event on {} {}", P::kind(&()), regarding.name_any())
        }
    }
}
