//! The Events and log lines that tell what a reconcile's writes did and what they could not:
//! one line and one Event per kind of write, a Warning per child somebody else controls, per
//! name Kubernetes would refuse, and per refusal of the API server (said once while it
//! lasts). Beside [`super::writes`], whose steps they tell of; an Event that cannot be
//! written never fails the reconcile.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::ResourceExt;
use kube::runtime::events::EventType;
use tracing::{info, warn};

use crate::cluster::events::{self, Note};
use crate::error::is_unreachable;
use crate::kind::{Child, Kind, controller_uid};
use crate::metrics::WriteKind;
use crate::reconcile::context::Context;
use crate::reconcile::memory::refusals::{Refusal, Step};
use crate::reconcile::plan::{MAX_NAME_LEN, Plan};
use crate::reconcile::status::name_list;
use crate::reconcile::writes::Done;

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

/// Tell what the steps did and what they could not: one log line and one Event per kind of
/// write (the first children of a controller's object are not announced:
/// [`events::announces_created`]), a Warning per child owned by somebody else, and one for
/// names Kubernetes would refuse.
pub(crate) async fn announce<P: Kind, C: Child>(
    ctx: &Context,
    parent: &P,
    plan: &Plan<C>,
    done: Done,
) {
    let has_controller = controller_uid(parent).is_some();
    let uid = parent.uid().unwrap_or_default();
    let created_before = ctx.events.created_children_of(&uid);
    let announce_created =
        events::announces_created(has_controller, parent.has_status(), created_before);
    if !done.created.is_empty() && !announce_created {
        ctx.events.note_children_created(uid);
    }
    let reports = [
        ("Created", "Create", &done.created, "created"),
        ("Corrected", "Correct", &done.corrected, "corrected"),
        ("Adopted", "Adopt", &done.adopted, "adopted"),
        ("Deleted", "Delete", &done.deleted, "deleted the unwanted"),
    ];
    for (reason, action, names, verb) in reports {
        if names.is_empty() {
            continue;
        }
        let note = format!(
            "{verb} {} {}: {}",
            names.len(),
            plural::<C>(names.len()),
            name_list(names)
        );
        info!(kind = %P::kind(&()), parent = %parent_name(parent), "{note}");
        if reason != "Created" || announce_created {
            publish(ctx, parent, EventType::Normal, reason, action, note, None).await;
        }
    }
    announce_conflicts(ctx, parent, plan).await;
    announce_invalid_names(ctx, parent, plan).await;
}

/// "Number" or "Numbers".
fn plural<C: Child>(n: usize) -> String {
    if n == 1 {
        C::KIND.to_string()
    } else {
        format!("{}s", C::KIND)
    }
}

/// "namespace/name", for the log.
fn parent_name<P: Kind>(parent: &P) -> String {
    format!(
        "{}/{}",
        parent.namespace().unwrap_or_default(),
        parent.name_any()
    )
}

/// A Warning for each child of a desired name that somebody else controls: left alone.
async fn announce_conflicts<P: Kind, C: Child>(ctx: &Context, parent: &P, plan: &Plan<C>) {
    let namespace = parent.namespace().unwrap_or_default();
    for conflict in &plan.conflicts {
        let note = format!(
            "{} {namespace}/{} exists and is controlled by {}; leaving it alone",
            C::KIND,
            conflict.name,
            conflict.owner
        );
        info!(kind = %P::kind(&()), parent = %parent_name(parent), "{note}");
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
}

/// A Warning when some desired children's names would be longer than Kubernetes accepts.
async fn announce_invalid_names<P: Kind, C: Child>(ctx: &Context, parent: &P, plan: &Plan<C>) {
    if plan.invalid_names.is_empty() {
        return;
    }
    let note = format!(
        "cannot create {} {}: the name would exceed {MAX_NAME_LEN} characters (shorten the parent's name)",
        plan.invalid_names.len(),
        plural::<C>(plan.invalid_names.len()),
    );
    info!(kind = %P::kind(&()), parent = %parent_name(parent), "{note}");
    let (warning, reason) = (EventType::Warning, "ChildNameTooLong");
    publish(ctx, parent, warning, reason, "Create", note, None).await;
}

/// Publish an Event on `regarding` (see [`crate::cluster::events`]: a Warning that stays the same is
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
