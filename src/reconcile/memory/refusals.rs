//! What the manager remembers of the writes the API server refused: when a refused step may
//! be tried again, and which parents live in a namespace that is being deleted.
//!
//! A refusal (a ResourceQuota that is full, an admission policy, RBAC) lasts until somebody
//! acts, and every child that settles triggers its parent's reconcile: retried on each of
//! those, a Fermat whose Tuples do not fit its quota would send a create for every Tuple
//! that settles. So a refused step waits for a backoff of its own (1 s, doubling to 5 min,
//! as client-go's per-item rate limiter grows) while the parent's other steps and its status
//! go on; a change of the parent's spec (a new generation) retries at once.
//!
//! Refusals are remembered by the parent's UID (a parent deleted and made again starts
//! clean), each step on its own clock, and hold only while the current plan still has that
//! step: a refusal whose cause went away by other means blocks nothing.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use kube::{Resource, ResourceExt};
use tracing::info;

use crate::cluster::backoff::Exponential;
use crate::cluster::expiring::Expiring;
use crate::metrics::Metrics;

/// A step of carrying out a parent's plan ([`crate::reconcile::plan::Plan`]): what a refusal
/// is remembered for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    Create,
    Correct,
    Adopt,
    Delete,
}

/// A write to a child that the API server refused (a quota, an admission policy, RBAC):
/// what the parent's status says until a retry gets through.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub step: Step,
    /// The child the refused request was for (the first, when several were).
    pub name: String,
    /// The API server's words.
    pub message: String,
}

/// The first retry of a refused step comes after this long...
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// ...doubling up to this.
const LONGEST_RETRY: Duration = Duration::from_secs(300);
/// How long a refusal is remembered after its last attempt: longer than the longest retry.
const REMEMBER: Duration = Duration::from_secs(600);
/// How long a parent is known to be in a namespace being deleted (the namespace controller
/// empties a namespace within seconds to minutes); its UID dies with it.
const TERMINATING: Duration = Duration::from_secs(600);
/// A namespace being deleted is said in the log once per this period.
const SAY_TERMINATING_EVERY: Duration = Duration::from_secs(300);

/// The delay before the `attempt`-th retry of a refused step (1-based).
pub fn retry_delay(attempt: u32) -> Duration {
    Exponential::new(FIRST_RETRY, LONGEST_RETRY).nth(attempt, 0)
}

/// One refused step, on its own clock: a step's refusals back off by themselves, whatever
/// the parent's other steps get.
#[derive(Clone, Debug, PartialEq)]
struct Refused {
    refusal: Refusal,
    /// How many attempts of this step in a row were refused.
    attempt: u32,
    retry_at: Instant,
}

/// A parent's last refusals, for one generation of it.
#[derive(Clone, Debug)]
struct Remembered {
    /// The parent's generation they were refused for: a new spec starts clean.
    generation: Option<i64>,
    steps: Vec<Refused>,
}

/// The refused steps a parent must not retry yet.
#[derive(Debug, Default)]
pub struct Held {
    pub steps: HashSet<Step>,
    /// What was refused, for the status until the retry.
    pub refusals: Vec<Refusal>,
    /// When the first of their retries is due.
    pub retry_in: Option<Duration>,
    /// Every remembered refusal of a step the plan still has, waiting or due: what the next
    /// [`Refusals::record`] counts attempts from.
    remembered: Vec<Refused>,
}

/// Which of a parent's remembered refusals hold at `now`, for a plan of the steps `planned`.
/// A step the plan no longer has is not held (its cause is gone: the child a policy would
/// not let us delete was deleted by hand); a due one goes ahead.
fn hold(remembered: Vec<Refused>, planned: &HashSet<Step>, now: Instant) -> Held {
    let remembered: Vec<Refused> = remembered
        .into_iter()
        .filter(|r| planned.contains(&r.refusal.step))
        .collect();
    let waiting: Vec<&Refused> = remembered.iter().filter(|r| r.retry_at > now).collect();
    Held {
        steps: waiting.iter().map(|r| r.refusal.step).collect(),
        refusals: waiting.iter().map(|r| r.refusal.clone()).collect(),
        retry_in: waiting.iter().map(|r| r.retry_at - now).min(),
        remembered,
    }
}

/// What is remembered after a reconcile got `refused` at `now`: the steps still held, as
/// they were, and each step refused just now one attempt further than it was. A step that
/// was due and not refused again is forgotten (it went through, or failed otherwise).
fn after(held: &Held, refused: &[Refusal], now: Instant) -> Vec<Refused> {
    let mut steps: Vec<Refused> = (held.remembered.iter())
        .filter(|r| held.steps.contains(&r.refusal.step))
        .cloned()
        .collect();
    for refusal in refused {
        let before = (held.remembered.iter())
            .find(|r| r.refusal.step == refusal.step)
            .map_or(0, |r| r.attempt);
        let attempt = before.saturating_add(1);
        steps.push(Refused {
            refusal: refusal.clone(),
            attempt,
            retry_at: now + retry_delay(attempt),
        });
    }
    steps
}

pub struct Refusals {
    /// By the parent's UID: a parent deleted and made again is a new object, with nothing
    /// to inherit from the old one's refusals.
    remembered: Expiring<Remembered>,
    /// Parents (by UID) whose namespace is being deleted.
    terminating: Expiring<()>,
    /// Namespaces said to be terminating in the log lately.
    said: Expiring<()>,
}

impl Refusals {
    pub fn new(metrics: Metrics) -> Refusals {
        Refusals {
            remembered: Expiring::new("refusals", metrics.clone(), REMEMBER),
            terminating: Expiring::new("terminating_parents", metrics.clone(), TERMINATING),
            said: Expiring::new("terminating_namespaces", metrics, SAY_TERMINATING_EVERY),
        }
    }

    /// The refused steps of `parent` whose retry is not due at `now`, among the steps its
    /// current plan has (`planned`).
    pub fn held<P: Resource<DynamicType = ()>>(
        &self,
        parent: &P,
        planned: &HashSet<Step>,
        now: Instant,
    ) -> Held {
        let remembered = parent.uid().and_then(|uid| self.remembered.get(&uid));
        match remembered {
            Some((r, _)) if r.generation == parent.meta().generation => hold(r.steps, planned, now),
            // Nothing remembered, or for an older spec: what was refused may no longer be
            // wanted.
            _ => Held::default(),
        }
    }

    /// Remember what this reconcile's writes got at `now`: `refused` (the steps it tried
    /// that were refused), besides the steps still `held`. Answers when to retry, if a step
    /// was refused just now.
    pub fn record<P: Resource<DynamicType = ()>>(
        &self,
        parent: &P,
        held: &Held,
        refused: &[Refusal],
        now: Instant,
    ) -> Option<Duration> {
        let uid = parent.uid()?;
        let steps = after(held, refused, now);
        if steps.is_empty() {
            self.remembered.remove(&uid);
            return None;
        }
        let retry_in = (steps.iter())
            .filter(|r| refused.contains(&r.refusal))
            .map(|r| r.retry_at - now)
            .min();
        let generation = parent.meta().generation;
        self.remembered
            .insert(uid, Remembered { generation, steps });
        retry_in
    }

    /// A create for `parent` was refused because its namespace is being deleted: from now on
    /// it is left alone (no write, no retry); said once per namespace in the log.
    pub fn note_terminating<P: Resource<DynamicType = ()>>(&self, parent: &P) {
        if let Some(uid) = parent.uid() {
            self.terminating.insert(uid, ());
        }
        let namespace = parent.namespace().unwrap_or_default();
        if self.said.get(&namespace).is_none() {
            self.said.insert(namespace.clone(), ());
            info!(
                "namespace {namespace} is being deleted: no children are created there, the garbage collector takes what is in it"
            );
        }
    }

    /// Whether `parent`'s namespace is known to be being deleted.
    pub fn terminating<P: Resource<DynamicType = ()>>(&self, parent: &P) -> bool {
        parent
            .meta()
            .uid
            .as_deref()
            .is_some_and(|uid| self.terminating.get(uid).is_some())
    }

    /// Forget what outlived its time to live.
    pub fn expire(&self) {
        self.remembered.expire();
        self.terminating.expire();
        self.said.expire();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Fermat, FermatSpec};

    fn fermat(generation: i64) -> Fermat {
        let mut f = Fermat::new("f", FermatSpec { number: 10 });
        f.metadata.namespace = Some("default".into());
        f.metadata.uid = Some("uid-f".into());
        f.metadata.generation = Some(generation);
        f
    }

    fn refusal(step: Step) -> Refusal {
        Refusal {
            step,
            name: "f-1-and-9".into(),
            message: "exceeded quota: tq".into(),
        }
    }

    #[test]
    fn retries_start_at_a_second_and_double_to_five_minutes() {
        assert_eq!(retry_delay(1), Duration::from_secs(1));
        assert_eq!(retry_delay(2), Duration::from_secs(2));
        assert_eq!(retry_delay(4), Duration::from_secs(8));
        assert_eq!(retry_delay(20), LONGEST_RETRY);
        assert_eq!(retry_delay(u32::MAX), LONGEST_RETRY);
    }

    fn planned(steps: &[Step]) -> HashSet<Step> {
        steps.iter().copied().collect()
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_refused_step_is_held_until_its_retry_and_a_new_spec_retries_at_once() {
        let refusals = Refusals::new(Metrics::new());
        let f = fermat(1);
        let all = planned(&[Step::Create, Step::Delete]);
        let t0 = Instant::now();
        assert!(refusals.held(&f, &all, t0).steps.is_empty());
        let first = refusals.record(&f, &Held::default(), &[refusal(Step::Create)], t0);
        assert_eq!(first, Some(SECOND));
        let held = refusals.held(&f, &all, t0);
        assert_eq!(held.steps, planned(&[Step::Create]));
        assert_eq!(held.refusals, [refusal(Step::Create)]);
        assert_eq!(held.retry_in, Some(SECOND));
        // Due after its second: it goes ahead, and a second refusal waits 2 s.
        let due = refusals.held(&f, &all, t0 + SECOND);
        assert!(due.steps.is_empty());
        let second = refusals.record(&f, &due, &[refusal(Step::Create)], t0 + SECOND);
        assert_eq!(second, Some(2 * SECOND));
        // A new generation is not held.
        assert!(refusals.held(&fermat(2), &all, t0).steps.is_empty());
        // A reconcile whose due step went through forgets it.
        let due = refusals.held(&f, &all, t0 + 3 * SECOND);
        refusals.record(&f, &due, &[], t0 + 3 * SECOND);
        assert!(
            refusals
                .held(&f, &all, t0 + 3 * SECOND)
                .remembered
                .is_empty()
        );
    }

    #[test]
    fn each_step_backs_off_on_its_own_clock() {
        let refusals = Refusals::new(Metrics::new());
        let f = fermat(1);
        let all = planned(&[Step::Create, Step::Delete]);
        let t0 = Instant::now();
        refusals.record(&f, &Held::default(), &[refusal(Step::Create)], t0);
        // 1.5 s: the create is due; now both the create (its 2nd) and a delete (its 1st)
        // are refused.
        let at = t0 + SECOND * 3 / 2;
        let held = refusals.held(&f, &all, at);
        let both = [refusal(Step::Create), refusal(Step::Delete)];
        assert_eq!(refusals.record(&f, &held, &both, at), Some(SECOND));
        // 2.6 s: the delete is due, the create waits until 3.5 s.
        let at = t0 + SECOND * 26 / 10;
        let held = refusals.held(&f, &all, at);
        assert_eq!(held.steps, planned(&[Step::Create]));
        assert_eq!(held.retry_in, Some(SECOND * 9 / 10));
        // The delete refused again (its 2nd: 2 s) does not push the create further out.
        assert_eq!(
            refusals.record(&f, &held, &[refusal(Step::Delete)], at),
            Some(2 * SECOND)
        );
        let held = refusals.held(&f, &all, t0 + SECOND * 36 / 10);
        assert_eq!(held.steps, planned(&[Step::Delete]));
        assert_eq!(held.refusals, [refusal(Step::Delete)]);
    }

    #[test]
    fn a_step_the_plan_no_longer_has_is_dropped() {
        let refusals = Refusals::new(Metrics::new());
        let f = fermat(1);
        let t0 = Instant::now();
        refusals.record(&f, &Held::default(), &[refusal(Step::Delete)], t0);
        // The child to delete is gone: the plan only creates.
        let held = refusals.held(&f, &planned(&[Step::Create]), t0);
        assert!(held.steps.is_empty());
        assert!(held.refusals.is_empty());
        assert_eq!(held.retry_in, None);
        assert_eq!(refusals.record(&f, &held, &[], t0), None);
        // Forgotten: a delete planned again later starts from its first attempt.
        let again = refusals.held(&f, &planned(&[Step::Delete]), t0);
        assert!(again.steps.is_empty());
        assert_eq!(
            refusals.record(&f, &again, &[refusal(Step::Delete)], t0),
            Some(SECOND)
        );
    }

    #[test]
    fn a_parent_made_again_does_not_inherit_the_old_ones_refusals() {
        let refusals = Refusals::new(Metrics::new());
        let all = planned(&[Step::Create]);
        let t0 = Instant::now();
        let old = fermat(1);
        let mut held = Held::default();
        for attempt in 0..4 {
            let at = t0 + SECOND * 20 * attempt;
            refusals.record(&old, &held, &[refusal(Step::Create)], at);
            held = refusals.held(&old, &all, at + SECOND * 19);
        }
        assert!(refusals.held(&old, &all, t0 + SECOND * 61).retry_in > Some(4 * SECOND));
        let mut recreated = fermat(1);
        recreated.metadata.uid = Some("uid-new".into());
        let held = refusals.held(&recreated, &all, t0 + SECOND * 61);
        assert!(held.steps.is_empty());
        assert_eq!(
            refusals.record(&recreated, &held, &[refusal(Step::Create)], t0),
            Some(SECOND)
        );
    }

    #[test]
    fn parents_in_a_terminating_namespace_are_known_by_uid() {
        let refusals = Refusals::new(Metrics::new());
        let f = fermat(1);
        assert!(!refusals.terminating(&f));
        refusals.note_terminating(&f);
        assert!(refusals.terminating(&f));
        let mut recreated = fermat(1);
        recreated.metadata.uid = Some("uid-new".into());
        assert!(!refusals.terminating(&recreated));
    }
}
