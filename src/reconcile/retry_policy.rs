//! The retry policy around every reconcile: what kube-runtime's `Controller` does after one.
//! A success waits for the next watch event (or the requeue the reconcile asked for); a 409
//! Conflict is retried soon and quietly; any other error backs off exponentially per object,
//! and says so in words; an unreachable API server is retried fast instead, and reported
//! once, as an outage ([`crate::cluster::outage`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use tracing::{debug, error, info, warn};

use crate::cluster::backoff::{Exponential, random};
use crate::cluster::expiring::object_key;
use crate::cluster::outage;
use crate::error::{Error, Result};
use crate::metrics::{ReconcileResult, StatusProgress};
use crate::reconcile::context::Context;
use crate::reconcile::memory::failures::{Ended, RETELL};
use crate::reconcile::memory::memory_key;
use crate::reconcile::{Outcome, Progress};
use crate::scheduler::panics::Panic;
use crate::scheduler::runner::Action;

/// Exponential backoff of the error policy: 100 ms, 200 ms, ... capped at 5 minutes.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// A 409 is retried sooner (it usually only means the cache was a step behind), but through
/// the same per-object count: 50 ms, 100 ms, ... so that a child whose watch is down is not
/// hammered 20 times a second.
const CONFLICT_BACKOFF_BASE: Duration = Duration::from_millis(50);

/// The delay before the `attempt`-th retry (1-based): doubling from 100 ms, capped at 5 min,
/// each drawn between half its step and the step, so that objects that failed together (a
/// quota, a webhook that was down) do not all come back at the same instant.
pub fn backoff(attempt: u32) -> Duration {
    Exponential::new(BACKOFF_BASE, BACKOFF_MAX)
        .jittered()
        .nth(attempt, random())
}

/// The delay before the `attempt`-th retry after a 409 Conflict: doubling from 50 ms,
/// jittered the same way.
pub fn conflict_backoff(attempt: u32) -> Duration {
    Exponential::new(CONFLICT_BACKOFF_BASE, BACKOFF_MAX)
        .jittered()
        .nth(attempt, random())
}

/// Runs a reconcile with metrics, and turns a 409 Conflict into a quiet retry with its own
/// short backoff: it only means the cache was a step behind another writer.
///
/// Its `result` is controller-runtime's ([`result_of`]); where it left its object's status
/// (final, blocked, waiting for children) is counted apart, in
/// `math_controller_reconcile_progress_total`.
pub(crate) async fn with_retry_policy<K>(
    controller: &'static str,
    obj: Arc<K>,
    ctx: Arc<Context>,
    reconcile: impl Future<Output = Result<Outcome>>,
) -> Result<Action>
where
    K: Resource<DynamicType = ()>,
{
    let key = object_key(obj.as_ref());
    let memory = memory_key(obj.as_ref());
    let generation = obj.meta().generation;
    if let Some(later) = put_off(controller, &memory, generation, &ctx) {
        return Ok(later);
    }
    let timer = ctx.metrics.reconcile_started(controller);
    tracing::trace!("{key}: reconcile starts");
    let result = reconcile.await;
    tracing::trace!("{key}: reconcile ends");
    match &result {
        Ok(o) if o.progress == Progress::Pending => {
            ctx.replans.waiting(&memory, generation, o.planned_in)
        }
        _ => ctx.replans.answered(&memory),
    }
    match result {
        Ok(outcome) => {
            recovered(&key, ctx.failures.success(&memory));
            ctx.outage.reconciled(&memory);
            if outcome.progress != Progress::Pending {
                ctx.pace.settled(K::kind(&()));
            }
            ctx.metrics
                .reconciled(controller, status_progress(outcome.progress));
            timer.finish(result_of(outcome.requeue_after));
            Ok(match outcome.requeue_after {
                Some(after) => Action::requeue(after),
                None => Action::await_change(),
            })
        }
        Err(error) if error.is_conflict() => {
            let delay = conflict_backoff(ctx.failures.failure(&memory));
            debug!(%error, "{key}: conflict, looking again in {delay:?}");
            timer.finish(ReconcileResult::Requeue);
            Ok(Action::requeue(delay))
        }
        Err(error) => {
            timer.finish(ReconcileResult::Error(error.kind_label()));
            Err(error)
        }
    }
}

/// The `result` of a reconcile that ended without an error, as controller-runtime's
/// `reconcileHandler` labels it: `requeue_after` when it asked to be run again after a delay
/// of its choosing (a refused write's retry, a recheck), `requeue` when it asked to be run
/// again at once, else `success`, whether or not its status is final (a parent waiting for its
/// children asks for nothing: their watch events bring it back). A conflict's retry through
/// the per-object backoff is a `requeue` too (controller-runtime's `AddRateLimited`).
pub(crate) fn result_of(requeue_after: Option<Duration>) -> ReconcileResult {
    match requeue_after {
        Some(after) if after.is_zero() => ReconcileResult::Requeue,
        Some(_) => ReconcileResult::RequeueAfter,
        None => ReconcileResult::Success,
    }
}

fn status_progress(progress: Progress) -> StatusProgress {
    match progress {
        Progress::Settled => StatusProgress::Final,
        Progress::Blocked => StatusProgress::Blocked,
        Progress::Pending => StatusProgress::Waiting,
    }
}

/// When to run a reconcile instead of now, if not now: while the API server is away every
/// request would fail, and the outage's probe tells when to try again (wait without knocking,
/// or logging the plan again, and run within a second of its return); a parent waiting for
/// its children that was planned a moment ago waits its turn (see
/// `crate::reconcile::memory::replans`).
fn put_off(
    controller: &'static str,
    key: &str,
    generation: Option<i64>,
    ctx: &Context,
) -> Option<Action> {
    if ctx.outage.is_down() {
        let attempt = ctx.outage.waiting(key);
        let delay = outage::retry_delay(attempt, outage::random());
        return Some(Action::requeue(delay));
    }
    let wait = ctx.replans.wait(key, generation)?;
    ctx.metrics.replan_put_off(controller);
    Some(Action::requeue(wait))
}

/// The line that says an object reconciles again after a streak that was told.
fn recovered(key: &str, ended: Ended) {
    match ended {
        Ended::Panics(panics) => info!("{key}: reconciled again after {panics} panics in a row"),
        Ended::Failures(1) => info!("{key}: reconciled again after the failure"),
        Ended::Failures(failures) => {
            info!("{key}: reconciled again after {failures} failures in a row")
        }
        Ended::Nothing => {}
    }
}

/// Back off exponentially per object, and say so in words: once when the failure starts,
/// again with its count at most every [`RETELL`] while it lasts, and when the object
/// reconciles again (a WARN per retry was a line per attempt for as long as a failure
/// lasted); an unreachable API server is retried fast instead (see [`crate::cluster::outage`]).
pub(crate) fn error_policy<K: Resource<DynamicType = ()>>(
    obj: Arc<K>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = object_key(obj.as_ref());
    let memory = memory_key(obj.as_ref());
    if error.is_unreachable() {
        // An outage: retry within a second of the server's return, and let the outage
        // say it once instead of a line per object per attempt. Its retries are counted by
        // the outage, not as failures of the object.
        let attempt = ctx.outage.unreachable(Some(&memory), error);
        let delay = outage::retry_delay(attempt, outage::random());
        debug!(%error, attempt, "{key}: API server unreachable; retrying in {delay:?}");
        return Action::requeue(delay);
    }
    let (attempt, tell) = ctx.failures.failure_to_tell(&memory);
    let delay = backoff(attempt);
    let retell = RETELL.as_secs() / 60;
    match (tell, attempt) {
        (false, _) => {
            debug!(%error, attempt, "{key}: reconcile failed again; retrying in {delay:?}")
        }
        (true, 1) => warn!(
            %error,
            attempt,
            "{key}: reconcile failed; retrying in {delay:?} (said again at most every {retell} min while it keeps failing)"
        ),
        (true, _) => warn!(
            %error,
            attempt,
            "{key}: reconcile failed ({attempt} failures in a row); retrying in {delay:?}"
        ),
    }
    Action::requeue(delay)
}

/// A reconcile that panicked: counted already (its metrics' timer was dropped while the
/// panic unwound it: `controller_runtime_reconcile_panics_total` and an `error` result), backed
/// off as any failure, and told once with the object and what the panic said; again, with its
/// count, at most every [`RETELL`] while it lasts; and when the object reconciles again.
pub(crate) fn panic_policy<K: Resource<DynamicType = ()>>(
    obj: &K,
    panic: &Panic,
    ctx: &Context,
) -> Action {
    let key = object_key(obj);
    let (attempt, panics, tell) = ctx.failures.panic(&memory_key(obj));
    let delay = backoff(attempt);
    match (tell, panics) {
        (false, _) => {
            debug!(%panic, panics, "{key}: reconcile panicked again; retrying in {delay:?}")
        }
        (true, 1) => error!(
            "{key}: reconcile {panic}; retrying in {delay:?} (said again at most every {} min while it keeps panicking)",
            RETELL.as_secs() / 60
        ),
        (true, _) => {
            error!("{key}: reconcile {panic} ({panics} panics in a row); retrying in {delay:?}")
        }
    }
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// controller-runtime's `reconcileHandler`: a delay asked for is `requeue_after`, none is
    /// `success` (a parent waiting for its children included), an immediate one `requeue`.
    #[test]
    fn results_are_named_by_what_the_reconcile_asked_of_the_queue() {
        assert_eq!(result_of(None), ReconcileResult::Success);
        assert_eq!(
            result_of(Some(Duration::from_secs(3))),
            ReconcileResult::RequeueAfter
        );
        assert_eq!(result_of(Some(Duration::ZERO)), ReconcileResult::Requeue);
    }

    /// N10 (issue 48): a thousand objects that fail together (a quota, an admission webhook
    /// down) are not retried at the same instant: each delay is drawn between half its step
    /// and the step.
    #[test]
    fn backoffs_are_jittered_within_their_step() {
        let delays: std::collections::HashSet<Duration> = (0..100).map(|_| backoff(3)).collect();
        assert!(delays.len() > 10, "{delays:?}");
        let step = Duration::from_millis(400);
        assert!(
            delays.iter().all(|d| *d >= step / 2 && *d <= step),
            "{delays:?}"
        );
        let conflicts: std::collections::HashSet<Duration> =
            (0..100).map(|_| conflict_backoff(3)).collect();
        assert!(conflicts.len() > 10, "{conflicts:?}");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let within = |d: Duration, step: Duration| d >= step / 2 && d <= step;
        let ms = Duration::from_millis;
        assert!(within(backoff(1), ms(100)));
        assert!(within(backoff(2), ms(200)));
        assert!(within(backoff(5), ms(1600)));
        assert!(within(backoff(40), BACKOFF_MAX));
        assert!(within(conflict_backoff(1), ms(50)));
        assert!(within(conflict_backoff(3), ms(200)));
        assert!(within(conflict_backoff(u32::MAX), BACKOFF_MAX));
    }
}
