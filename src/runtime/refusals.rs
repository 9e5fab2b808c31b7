//! What the manager remembers of the writes the API server refused: when a refused step may
//! be tried again, and which parents live in a namespace that is being deleted.
//!
//! A refusal (a ResourceQuota that is full, an admission policy, RBAC) lasts until somebody
//! acts, and every child that settles triggers its parent's reconcile: retried on each of
//! those, a Fermat whose Tuples do not fit its quota would send a create for every Tuple
//! that settles. So a refused step waits for a backoff of its own (1 s, doubling to 5 min,
//! as client-go's per-item rate limiter grows) while the parent's other steps and its status
//! go on; a change of the parent's spec (a new generation) retries at once.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use kube::{Resource, ResourceExt};
use tracing::info;

use crate::metrics::Metrics;
use crate::runtime::expiring::Expiring;
use crate::runtime::expiring::object_key;

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
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    FIRST_RETRY.saturating_mul(factor).min(LONGEST_RETRY)
}

/// A parent's last refusals.
#[derive(Clone, Debug)]
struct Remembered {
    refusals: Vec<Refusal>,
    /// The parent's generation they were refused for.
    generation: Option<i64>,
    /// How many attempts in a row were refused.
    attempt: u32,
    retry_at: Instant,
}

/// The refused steps a parent must not retry yet.
#[derive(Debug, Default)]
pub struct Held {
    pub steps: HashSet<Step>,
    /// What was refused, for the status until the retry.
    pub refusals: Vec<Refusal>,
    /// When the retry is due.
    pub retry_in: Option<Duration>,
    /// Refused attempts in a row so far (0: none remembered).
    attempt: u32,
}

pub struct Refusals {
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

    /// The refused steps of `parent` whose retry is not due yet.
    pub fn held<P: Resource<DynamicType = ()>>(&self, parent: &P) -> Held {
        let Some((r, _)) = self.remembered.get(&object_key(parent)) else {
            return Held::default();
        };
        if r.generation != parent.meta().generation {
            // A new spec: what was refused may no longer be wanted.
            return Held::default();
        }
        let now = Instant::now();
        if r.retry_at <= now {
            return Held {
                attempt: r.attempt,
                ..Held::default()
            };
        }
        Held {
            steps: r.refusals.iter().map(|r| r.step).collect(),
            refusals: r.refusals,
            retry_in: Some(r.retry_at - now),
            attempt: r.attempt,
        }
    }

    /// Remember what this reconcile's writes got: `refused` (the steps it tried that were
    /// refused) on top of the steps still `held`. Answers when to retry, if a step was
    /// refused just now.
    pub fn record<P: Resource<DynamicType = ()>>(
        &self,
        parent: &P,
        held: &Held,
        refused: &[Refusal],
    ) -> Option<Duration> {
        let key = object_key(parent);
        if refused.is_empty() {
            if held.steps.is_empty() {
                self.remembered.remove(&key);
            }
            return None;
        }
        let attempt = held.attempt.saturating_add(1);
        let delay = retry_delay(attempt);
        let mut refusals = refused.to_vec();
        refusals.extend(held.refusals.iter().cloned());
        self.remembered.insert(
            key,
            Remembered {
                refusals,
                generation: parent.meta().generation,
                attempt,
                retry_at: Instant::now() + delay,
            },
        );
        Some(delay)
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

    #[test]
    fn a_refused_step_is_held_until_its_retry_and_a_new_spec_retries_at_once() {
        let refusals = Refusals::new(Metrics::new());
        let f = fermat(1);
        assert!(refusals.held(&f).steps.is_empty());
        let first = refusals.record(&f, &Held::default(), &[refusal(Step::Create)]);
        assert_eq!(first, Some(Duration::from_secs(1)));
        let held = refusals.held(&f);
        assert!(held.steps.contains(&Step::Create));
        assert_eq!(held.refusals, [refusal(Step::Create)]);
        // The next refusal backs off further.
        assert_eq!(
            refusals.record(&f, &held, &[refusal(Step::Delete)]),
            Some(Duration::from_secs(2))
        );
        let both = refusals.held(&f);
        assert_eq!(both.steps.len(), 2);
        // A new generation is not held.
        assert!(refusals.held(&fermat(2)).steps.is_empty());
        // A reconcile with nothing refused and nothing held forgets it all.
        refusals.record(&f, &Held::default(), &[]);
        assert!(refusals.held(&f).steps.is_empty());
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
