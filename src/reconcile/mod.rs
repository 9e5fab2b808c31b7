//! How any parent gets to what it wants, the same for Tuples and Fermats: the loop
//! ([`parent`]: look, plan, apply, write the status), what it answers ([`Outcome`]: when to
//! look again, whether the status is final, what the plan cost), and its parts.
//!
//! - `plan.rs`: the diff between the children a parent wants and the ones the cache holds,
//!   and why a parent is not Ready yet. Pure: no client, no `Context`.
//! - `status.rs`: the `Ready` condition, whether a status write is due at all (answers,
//!   waiting parents, progress reports), and the merge patch that carries it: the whole
//!   status, every field named. Pure.
//! - `writes.rs`: the creates, corrections, adoptions and deletions that carry a plan out,
//!   and the status patch; `events.rs`: the log lines and Events that tell of them, and how
//!   an Event is written within kube-apiserver's limits. The only place a reconcile writes to
//!   the API server.
//! - `context.rs`: what every reconcile shares (the client, every kind's cache found by type,
//!   the metrics, the request slots, the memories); it names no kind.
//! - `controller_loop.rs`: a kind's reconciles let in by the scheduler ([`crate::scheduler`]), each
//!   reading its object from the cache when it starts, within the retry policy.
//! - `retry_policy.rs`: the retry policy around every reconcile: a reconcile's outcome
//!   ([`Outcome`]) made the scheduler's action, exponential backoff per object (the failures
//!   it counts), quiet 409s, fast retries while the API server is away, a caught panic told
//!   once.
//! - `memory/`: what the reconciles remember between runs (expectations, statuses written,
//!   refusals, waiting parents, retries), each part of the context with its own tests.
//!
//! Below this folder are the kube glue ([`crate::cluster`]: watches, caches, outages),
//! which tells the memories what it sees through its `Witness` trait, and the scheduler.

pub mod context;
pub mod controller_loop;
pub mod events;
pub mod memory;
pub mod plan;
pub mod retry_policy;
pub mod status;
pub mod writes;

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tracing::{debug, info};

use crate::cluster::cache::Cache;
use crate::error::{Error, Result};
use crate::kind::{Child, Desired, Kind, Parent};
use crate::reconcile::context::Context;
use crate::reconcile::memory::expectations::CachedChildren;
use crate::reconcile::memory::pace::Pace;
use crate::reconcile::memory::refusals::Held;
use crate::reconcile::memory::replans::PlanClock;
use plan::Plan;
use status::{ParentStatus, Standing};

/// Whether a computed status is an answer, or only a progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The status is final for this generation: the answer.
    Settled,
    /// Final for now, but not an answer: blocked until someone (or something: a quota, an
    /// admission policy) acts. Written at once, then only when what blocks it changes.
    Blocked,
    /// Children are still being created or computed; a later trigger will bring news.
    Pending,
}

/// How a reconcile ended, before the retry policy ([`retry_policy`]) makes it the
/// scheduler's `Action`: when to look again (`None`: on the next watch event), and whether
/// the object's status is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub requeue_after: Option<Duration>,
    pub progress: Progress,
    /// The CPU the decision took (children read from the cache, plan, status), without the
    /// writes: what planning the object again would cost ([`memory::replans`]).
    pub planned_in: Duration,
}

impl Outcome {
    /// Final for now: nothing to do until a watch event brings news.
    pub const DONE: Outcome = Outcome {
        requeue_after: None,
        progress: Progress::Settled,
        planned_in: Duration::ZERO,
    };

    /// The earlier of this outcome's requeue and `after`.
    pub fn requeue_within(self, after: Option<Duration>) -> Outcome {
        let requeue_after = match (self.requeue_after, after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Outcome {
            requeue_after,
            ..self
        }
    }
}

/// Reconcile a parent against the cache of its children, in four steps: look (the children
/// the cache holds), plan (the difference), apply (its writes), write the status that
/// `status` computes from the plan, if it changed.
///
/// Each step of the plan goes ahead whatever another got: deleting unwanted children may be
/// what frees a quota that refused a create. A write the API server refuses (a quota, an
/// admission policy, RBAC) ends up in the status (Ready=False, its words) and in one Warning
/// Event, and is tried again after a backoff of its own ([`crate::reconcile::memory::refusals`]),
/// not on every reconcile. Another failure (a 409 on a correction, a 5xx) does not throw
/// that away: the refusals are recorded and the status written first, then the error goes
/// to the retry policy, with the status write's beside it if that failed too
/// ([`Error::AndStatus`]). In a namespace that is being deleted nothing is created and
/// nothing is retried: the parent goes with it.
pub async fn parent<P: Parent, S: ParentStatus>(
    ctx: &Context,
    parent: &P,
    current: Option<&S>,
    status: impl FnOnce(&Plan<P::Child>, Option<&S>, Timestamp) -> (S, Progress),
) -> Result<Outcome> {
    if parent.meta().deletion_timestamp.is_some() || ctx.refusals.terminating(parent) {
        // Being deleted (itself, or with its namespace): the garbage collector takes the
        // children; recreating them would fight it.
        return Ok(Outcome::DONE);
    }
    let planning = PlanClock::start();
    let children = ctx.caches.of::<P::Child>()?;
    let (desired, cached) = look(ctx, parent, children);
    let mut plan = plan_writes(parent, desired, &cached, children);
    let mut planned_in = planning.elapsed();
    let held = ctx.refusals.held(parent, &plan.steps(), Instant::now());
    let applied = writes::apply(ctx, parent, &plan, &held.steps).await;
    let Some(learned) = learn(ctx, parent, &mut plan, held, applied)? else {
        return Ok(Outcome::DONE);
    };
    let deciding = PlanClock::start();
    let decided = decide(ctx, parent, &plan, current, status);
    planned_in += deciding.elapsed();
    let (known, desired_status) = (decided.known.as_ref(), &decided.status);
    let written =
        writes::write_status(ctx, parent, known, desired_status, decided.standing()).await;
    if let Some(retry_in) = learned.retry_in {
        events::report_refusals(ctx, parent, &plan.refused, retry_in).await;
    }
    // Now the errors, for the retry policy: a child write's, and the status write's beside it
    // (neither hides the other); a held step still waits for its own time.
    let requeue_after = match (learned.error, written) {
        (Some(child), Err(status)) => return Err(Error::and_status(child, status)),
        (Some(child), Ok(_)) => return Err(child),
        (None, written) => written?,
    };
    let outcome = Outcome {
        requeue_after,
        progress: decided.progress,
        planned_in,
    };
    Ok(outcome
        .requeue_within(cached.recheck_in)
        .requeue_within(learned.held_retry_in)
        .requeue_within(learned.retry_in))
}

/// Look: the children `parent` wants, and what the cache holds of them (with the writes it
/// does not show yet). No API request.
fn look<P: Parent>(
    ctx: &Context,
    parent: &P,
    children: &Cache<P::Child>,
) -> (Vec<Desired<ChildSpec<P>>>, CachedChildren<P::Child>) {
    let desired = parent.desired_children();
    let cached = ctx.expectations.children(children, parent, &desired);
    (desired, cached)
}

/// The spec of a parent's children.
type ChildSpec<P> = <<P as Parent>::Child as Child>::Spec;

/// Plan: the writes that close the gap between `desired` and `cached`, said in the log. A
/// child that exists but cannot be decoded is not in the cache: `children` knows it.
fn plan_writes<P: Parent>(
    parent: &P,
    desired: Vec<Desired<ChildSpec<P>>>,
    cached: &CachedChildren<P::Child>,
    children: &Cache<P::Child>,
) -> Plan<P::Child> {
    let owner_uid = parent.meta().uid.clone().unwrap_or_default();
    let mut plan = plan::plan(
        &owner_uid,
        desired,
        &cached.found,
        &cached.owned,
        &cached.in_flight,
    );
    let namespace = parent.namespace().unwrap_or_default();
    plan.set_aside_undecodable(|name| children.undecodable.why(&namespace, name));
    narrate(parent, &plan);
    plan
}

/// What the writes taught, once they are done.
struct Learned {
    /// When a step refused just now is retried (`None`: none was).
    retry_in: Option<Duration>,
    /// When the first step held back by an earlier refusal is due.
    held_retry_in: Option<Duration>,
    /// A failure other than a refusal, for the retry policy once the status is written.
    error: Option<Error>,
}

/// Keep what the writes taught before any other error is returned: the refused steps wait
/// for their own backoff, not the error policy's, and the plan carries every refusal (those
/// of just now and those still held) into the status. `Ok(None)`: the namespace is going
/// away, and nothing is retried there, whatever else failed. `Err`: the API server is
/// unreachable, and no status write could get through either (the outage is reported once).
fn learn<P: Parent>(
    ctx: &Context,
    parent: &P,
    plan: &mut Plan<P::Child>,
    held: Held,
    applied: writes::Applied,
) -> Result<Option<Learned>> {
    let writes::Applied {
        refused,
        terminating,
        mut error,
    } = applied;
    if terminating {
        ctx.refusals.note_terminating(parent);
        return Ok(None);
    }
    let retry_in = ctx.refusals.record(parent, &held, &refused, Instant::now());
    if let Some(error) = error.take_if(|e| e.is_unreachable()) {
        return Err(error);
    }
    plan.refused = refused;
    plan.refused.extend(held.refusals);
    Ok(Some(Learned {
        retry_in,
        held_retry_in: held.retry_in,
        error,
    }))
}

/// The status a plan calls for, and how it stands.
struct Decided<S> {
    /// The status as far as we know (the one written last while its echo is on its way).
    known: Option<S>,
    status: S,
    progress: Progress,
    /// How the children come along: measured only for a status that is not the answer.
    pace: Option<Pace>,
}

impl<S> Decided<S> {
    fn standing(&self) -> Standing<'_> {
        match (self.progress, &self.pace) {
            (Progress::Blocked, Some(pace)) => Standing::Blocked(pace),
            (Progress::Pending, Some(pace)) => Standing::Waiting(pace),
            _ => Standing::Answer,
        }
    }
}

/// Decide the status: `status` computed from the plan on top of the status as far as we
/// know, and, for one that is not the answer, how the children come along.
fn decide<P: Parent, S: ParentStatus>(
    ctx: &Context,
    parent: &P,
    plan: &Plan<P::Child>,
    current: Option<&S>,
    status: impl FnOnce(&Plan<P::Child>, Option<&S>, Timestamp) -> (S, Progress),
) -> Decided<S> {
    let now = Timestamp::now();
    let known = ctx.statuses.known(parent, current);
    let (desired, progress) = status(plan, known.as_ref(), now);
    let pace = (progress != Progress::Settled).then(|| {
        let shown = known.as_ref().and_then(|s| s.ready_children()).unwrap_or(0);
        let shown = usize::try_from(shown).unwrap_or(0);
        ctx.pace
            .measure::<P, P::Child>(parent, plan.ready.len(), shown, plan.desired, now)
    });
    Decided {
        known,
        status: desired,
        progress,
        pace,
    }
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
        "wants {} {}s; {} ready, {} still computing, {} missing, {} edited by hand, {} to adopt, {} unwanted, {} owned by others{}",
        plan.desired,
        C::KIND,
        plan.ready.len(),
        plan.pending.len(),
        plan.create.len(),
        plan.correct.len(),
        plan.adopt.len(),
        plan.delete.len(),
        plan.conflicts.len(),
        match plan.undecodable.len() {
            0 => String::new(),
            n => format!(", {n} undecodable"),
        }
    );
    if plan.has_writes() || plan.blocked() {
        info!("{who} {found}");
    } else {
        debug!("{who} {found}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_requeues_at_the_earlier_of_two_times() {
        let secs = Duration::from_secs;
        let pending = |after| Outcome {
            requeue_after: after,
            progress: Progress::Pending,
            planned_in: Duration::ZERO,
        };
        assert_eq!(Outcome::DONE.requeue_within(None), Outcome::DONE);
        assert_eq!(
            Outcome::DONE.requeue_within(Some(secs(3))).requeue_after,
            Some(secs(3))
        );
        assert_eq!(
            pending(Some(secs(5))).requeue_within(Some(secs(3))),
            pending(Some(secs(3)))
        );
        assert_eq!(
            pending(Some(secs(2))).requeue_within(Some(secs(3))),
            pending(Some(secs(2)))
        );
    }
}
