//! How any parent gets to what it wants, the same for Tuples and Fermats: the loop
//! ([`parent`]: read the cache, plan, write the difference, write the status) and its parts.
//!
//! - `plan.rs`: the diff between the children a parent wants and the ones the cache holds,
//!   and why a parent is not Ready yet. Pure: no client, no `Context`.
//! - `status.rs`: the `Ready` condition, whether a status write is due at all (answers,
//!   waiting parents, progress reports), and the merge patch that carries it. Pure.
//! - `writes.rs`: the creates, corrections, adoptions and deletions that carry a plan out,
//!   the status patch, and the Events that tell of them: the only place a reconcile writes
//!   to the API server.
//!
//! What these decisions share with the runtime (a refused [`Step`](crate::runtime::refusals::Step),
//! a reconcile's [`Outcome`], the [`Pace`](crate::runtime::context::Pace) of the children) is
//! defined there, one layer down; nothing below this folder uses it.

pub mod plan;
pub mod status;
pub mod writes;

use std::time::Instant;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tracing::{debug, info};

use crate::error::Result;
use crate::kind::{Child, Kind, Parent};
use crate::runtime::cache::Cache;
use crate::runtime::context::Context;
use crate::runtime::retry::{Outcome, Progress};
use plan::Plan;
use status::{ParentStatus, Standing};

/// Reconcile a parent against the cache of its children: compute the plan, carry out its
/// writes, then write the status that `status` computes from the plan, if it changed.
///
/// Each step of the plan goes ahead whatever another got: deleting unwanted children may be
/// what frees a quota that refused a create. A write the API server refuses (a quota, an
/// admission policy, RBAC) ends up in the status (Ready=False, its words) and in one Warning
/// Event, and is tried again after a backoff of its own ([`crate::runtime::refusals`]),
/// not on every reconcile. Another failure (a 409 on a correction, a 5xx) does not throw
/// that away: the refusals are recorded and the status written first, then the error goes
/// to the retry policy. In a namespace that is being deleted nothing is created and
/// nothing is retried: the parent goes with it.
pub async fn parent<P: Parent, S: ParentStatus>(
    ctx: &Context,
    parent: &P,
    children: &Cache<P::Child>,
    current: Option<&S>,
    status: impl FnOnce(&Plan<P::Child>, Option<&S>, Timestamp) -> (S, Progress),
) -> Result<Outcome> {
    if parent.meta().deletion_timestamp.is_some() || ctx.refusals.terminating(parent) {
        // Being deleted (itself, or with its namespace): the garbage collector takes the
        // children; recreating them would fight it.
        return Ok(Outcome::DONE);
    }
    let planning = Instant::now();
    let desired = parent.desired_children();
    let cached = ctx.children(children, parent, &desired);
    let owner_uid = parent.meta().uid.clone().unwrap_or_default();
    let mut plan = plan::plan(
        &owner_uid,
        desired,
        &cached.found,
        &cached.owned,
        &cached.in_flight,
    );
    let mut planned_in = planning.elapsed();
    narrate(parent, &plan);
    let held = ctx.refusals.held(parent, &plan.steps(), Instant::now());
    let writes::Applied {
        refused,
        terminating,
        mut error,
    } = writes::apply(ctx, parent, &plan, &held.steps).await;
    if terminating {
        // Whatever else failed: nothing is retried in a namespace that is going away.
        ctx.refusals.note_terminating(parent);
        return Ok(Outcome::DONE);
    }
    // What the refusals taught is kept before any other error is returned: the refused
    // steps wait for their own backoff, not the error policy's.
    let retry_in = ctx.refusals.record(parent, &held, &refused, Instant::now());
    if let Some(error) = error.take_if(|e| e.is_unreachable()) {
        // No status write could get through either; the outage is reported once.
        return Err(error);
    }
    plan.refused = refused;
    plan.refused.extend(held.refusals);
    let now = Timestamp::now();
    let deciding = Instant::now();
    let known = ctx.known_status(parent, current);
    let (desired_status, progress) = status(&plan, known.as_ref(), now);
    planned_in += deciding.elapsed();
    // How the children come along matters only to a status that is not the answer.
    let pace = (progress != Progress::Settled).then(|| {
        let shown = known.as_ref().and_then(|s| s.ready_children()).unwrap_or(0);
        let shown = usize::try_from(shown).unwrap_or(0);
        ctx.pace::<P, P::Child>(parent, plan.ready.len(), shown, plan.desired, now)
    });
    let standing = match (progress, &pace) {
        (Progress::Blocked, Some(pace)) => Standing::Blocked(pace),
        (Progress::Pending, Some(pace)) => Standing::Waiting(pace),
        _ => Standing::Answer,
    };
    let written =
        writes::write_status(ctx, parent, known.as_ref(), &desired_status, standing).await;
    if let Some(retry_in) = retry_in {
        writes::report_refusals(ctx, parent, &plan.refused, retry_in).await;
    }
    // Now the error, for the retry policy; a held step still waits for its own time.
    if let Some(error) = error {
        return Err(error);
    }
    let outcome = Outcome {
        requeue_after: written?,
        progress,
        planned_in,
    };
    Ok(outcome
        .requeue_within(cached.recheck_in)
        .requeue_within(held.retry_in)
        .requeue_within(retry_in))
}

/// Log, in words, what a parent wants, what it found and what it is about to do.
fn narrate<P: Kind, C: Child>(parent: &P, plan: &Plan<C>) {
    let who = format!(
        "{} {}/{}",
        P::kind(&()),
        parent.namespace().unwrap_or_default(),
        parent.name_any()
    );
    let found = format!(
        "wants {} {}s; {} ready, {} still computing, {} missing, {} edited by hand, {} to adopt, {} unwanted, {} owned by others",
        plan.desired,
        C::KIND,
        plan.ready.len(),
        plan.pending.len(),
        plan.create.len(),
        plan.correct.len(),
        plan.adopt.len(),
        plan.delete.len(),
        plan.conflicts.len()
    );
    if plan.has_writes() || plan.blocked() {
        info!("{who} {found}");
    } else {
        debug!("{who} {found}");
    }
}
