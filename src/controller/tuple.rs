//! The Tuple controller: one Number `<tuple>-<index>` per item of `spec.numbers`, and
//! `allSquares` once every one of them has reported.
//!
//! The decisions are the two pure functions at the top; [`reconcile::parent`] does the
//! rest for every parent kind: read the cache, plan, write the difference, write the status.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::{Resource, ResourceExt};

use crate::api::{MAX_TUPLE_LEN, Number, NumberSpec, Tuple, TupleSpec, TupleStatus};
use crate::error::Result;
use crate::kind::{Child, Desired, Kind, Parent};
use crate::reconcile;
use crate::reconcile::context::Context;
use crate::reconcile::plan::{self, Plan};
use crate::reconcile::status::{self, Readiness};
use crate::reconcile::{Outcome, Progress};

/// The Numbers a Tuple wants: `<tuple>-<index>` with `value = numbers[index]`; none for a
/// list longer than the schema allows ([`beyond_schema`] says why).
pub fn desired_numbers(tuple: &Tuple) -> Vec<Desired<NumberSpec>> {
    if beyond_schema(tuple).is_some() {
        return Vec::new();
    }
    let name = tuple.name_any();
    let numbers = tuple.spec.numbers.iter().enumerate();
    numbers
        .map(|(index, &value)| Desired {
            name: format!("{name}-{index}"),
            spec: NumberSpec { value },
        })
        .collect()
}

/// Why a Tuple's list is not one this controller expands, if it is not: the CRD allows at
/// most 1000 numbers, but an object stored under a looser schema may hold any number.
pub fn beyond_schema(tuple: &Tuple) -> Option<Readiness> {
    let len = tuple.spec.numbers.len();
    (len > MAX_TUPLE_LEN).then(|| Readiness {
        ready: false,
        reason: "TooManyNumbers",
        message: format!(
            "spec.numbers holds {len} numbers, more than {MAX_TUPLE_LEN}, the bound of this CRD (was it stored under another schema?); no Numbers are made for it"
        ),
    })
}

/// The status that describes what the plan found. `allSquares` is only given once every
/// desired Number is ours, right and computed: until then the Tuple says what it waits for.
pub fn desired_status(
    tuple: &Tuple,
    plan: &Plan<Number>,
    previous: Option<&TupleStatus>,
    now: Timestamp,
) -> (TupleStatus, Progress) {
    let beyond = beyond_schema(tuple);
    let counted = beyond.is_none();
    let unfinished = match beyond {
        Some(readiness) => Some((readiness, Progress::Blocked)),
        None => plan::unfinished(plan),
    };
    let (readiness, progress, all_squares) = match unfinished {
        Some((readiness, progress)) => (readiness, progress, None),
        None => {
            let square = |n: &Arc<Number>| n.status.as_ref().and_then(|s| s.is_square);
            let all = plan.ready.iter().all(|n| square(n) == Some(true));
            let answer = if all {
                "all are squares"
            } else {
                "not all are squares"
            };
            let message = format!(
                "{}/{} Numbers ready; {answer}",
                plan.ready.len(),
                plan.desired
            );
            let readiness = Readiness {
                ready: true,
                reason: "AllNumbersReady",
                message,
            };
            (readiness, Progress::Settled, Some(all))
        }
    };
    let generation = tuple.meta().generation;
    let previous = previous
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let status = TupleStatus {
        observed_generation: generation,
        conditions: vec![status::ready_condition(
            &readiness, generation, previous, now,
        )],
        all_squares,
        ready_numbers: counted.then_some(plan.ready.len() as i64),
        desired_numbers: counted.then_some(plan.desired as i64),
    };
    (status, progress)
}

/// Reconcile one Tuple against the Number cache.
pub async fn reconcile(tuple: Arc<Tuple>, ctx: Arc<Context>) -> Result<Outcome> {
    let status = |plan: &Plan<Number>, previous: Option<&TupleStatus>, now| {
        desired_status(&tuple, plan, previous, now)
    };
    let current = tuple.status.as_ref();
    reconcile::parent(&ctx, tuple.as_ref(), current, status).await
}

impl Kind for Tuple {
    const KIND: &'static str = "Tuple";
    const CONTROLLER: &'static str = "tuple";

    /// Its status gives its answer (`allSquares`) for its current generation.
    fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.all_squares.is_some()
                && status::is_ready_for(
                    &s.conditions,
                    s.observed_generation,
                    self.meta().generation,
                )
        })
    }

    fn has_status(&self) -> bool {
        self.status.is_some()
    }
}

/// A Fermat's child.
impl Child for Tuple {
    type Spec = TupleSpec;
    const WAITING_REASON: &'static str = "WaitingForTuples";

    fn build(name: &str, spec: TupleSpec) -> Self {
        Tuple::new(name, spec)
    }

    fn child_spec(&self) -> &TupleSpec {
        &self.spec
    }
}

/// One Number `<tuple>-<index>` per item of `spec.numbers`.
impl Parent for Tuple {
    type Child = Number;

    fn desired_children(&self) -> Vec<Desired<NumberSpec>> {
        desired_numbers(self)
    }

    /// `<tuple>-<index>` → `<tuple>`.
    fn parent_of(child: &str) -> Option<&str> {
        super::strip_number(child)
    }
}

impl status::WholeStatus for TupleStatus {
    const FIELDS: &'static [&'static str] = &[
        "observedGeneration",
        "conditions",
        "allSquares",
        "readyNumbers",
        "desiredNumbers",
    ];
}

impl status::ParentStatus for TupleStatus {
    fn ready_children(&self) -> Option<i64> {
        self.ready_numbers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::number;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use std::collections::HashMap;

    const UID: &str = "tuple-uid";

    fn tuple(numbers: Vec<i64>) -> Tuple {
        let mut t = Tuple::new("t", TupleSpec { numbers });
        t.metadata.namespace = Some("default".into());
        t.metadata.uid = Some(UID.into());
        t.metadata.generation = Some(1);
        t
    }

    fn controlled_by(uid: &str) -> Vec<OwnerReference> {
        vec![OwnerReference {
            api_version: "math.example.com/v1beta1".into(),
            kind: "Tuple".into(),
            name: "owner".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    }

    /// A Number as its controller would leave it: owned by `owner`, status computed.
    fn number(name: &str, value: i64, owner: Option<&str>, computed: bool) -> Arc<Number> {
        let mut n = Number::new(name, NumberSpec { value });
        n.metadata.namespace = Some("default".into());
        n.metadata.generation = Some(1);
        n.metadata.owner_references = owner.map(controlled_by);
        if computed {
            n.status = Some(number::desired_status(&n, None, Timestamp::UNIX_EPOCH));
        }
        Arc::new(n)
    }

    fn plan_for(t: &Tuple, cached: &[Arc<Number>]) -> Plan<Number> {
        let desired = desired_numbers(t);
        let found: HashMap<String, Arc<Number>> = cached
            .iter()
            .filter(|n| desired.iter().any(|d| d.name == n.name_any()))
            .map(|n| (n.name_any(), n.clone()))
            .collect();
        let owned: Vec<_> = cached
            .iter()
            .filter(|n| crate::kind::controller_uid(n.as_ref()) == Some(UID))
            .cloned()
            .collect();
        plan::plan(UID, desired, &found, &owned, &Default::default())
    }

    #[test]
    fn desired_numbers_are_named_by_index() {
        let d = desired_numbers(&tuple(vec![0, 1, 1]));
        let names: Vec<_> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["t-0", "t-1", "t-2"]);
        assert_eq!(d[2].spec, NumberSpec { value: 1 });
    }

    #[test]
    fn a_new_tuple_creates_its_numbers_and_waits() {
        let t = tuple(vec![0, 1, 1]);
        let plan = plan_for(&t, &[]);
        assert_eq!(plan.create.len(), 3);
        let (status, progress) = desired_status(&t, &plan, None, Timestamp::UNIX_EPOCH);
        assert_eq!(progress, Progress::Pending);
        assert_eq!(
            status.all_squares, None,
            "never a wrong answer while waiting"
        );
        assert_eq!(status.conditions[0].reason, "WaitingForNumbers");
        assert_eq!(
            status.conditions[0].message,
            "0/3 Numbers ready; waiting for t-0, t-1, t-2"
        );
    }

    #[test]
    fn the_diff_sorts_every_case() {
        let t = tuple(vec![4, 9, 16, 25, 36]);
        let cached = [
            number("t-0", 4, Some(UID), true),      // ready
            number("t-1", 10, Some(UID), true),     // drifted
            number("t-2", 16, None, true),          // adoptable
            number("t-3", 25, Some("other"), true), // foreign
            number("t-5", 7, Some(UID), true),      // unwanted
            number("t-4", 36, Some(UID), false),    // not computed yet
            number("u-0", 1, Some("other"), true),  // unrelated
        ];
        let plan = plan_for(&t, &cached);
        let names = |v: &[Arc<Number>]| v.iter().map(|n| n.name_any()).collect::<Vec<_>>();
        assert_eq!(names(&plan.ready), ["t-0"]);
        assert_eq!(plan.correct.len(), 1);
        assert_eq!(
            (plan.correct[0].0.name_any(), &plan.correct[0].1),
            ("t-1".to_string(), &NumberSpec { value: 9 })
        );
        assert_eq!(plan.adopt[0].0.name_any(), "t-2");
        assert_eq!(plan.conflicts[0].name, "t-3");
        assert!(plan.conflicts[0].owner.contains("other"));
        assert_eq!(names(&plan.delete), ["t-5"]);
        assert_eq!(plan.pending, ["t-4"]);
        assert!(plan.create.is_empty());
        let (status, progress) = desired_status(&t, &plan, None, Timestamp::UNIX_EPOCH);
        assert_eq!(
            (progress, status.conditions[0].reason.as_str()),
            (Progress::Blocked, "ChildConflict")
        );
    }

    #[test]
    fn all_squares_only_when_every_number_is_ready() {
        let t = tuple(vec![0, 1, 1]);
        let cached: Vec<_> = [0, 1, 1]
            .iter()
            .enumerate()
            .map(|(i, &v)| number(&format!("t-{i}"), v, Some(UID), true))
            .collect();
        let (status, progress) =
            desired_status(&t, &plan_for(&t, &cached), None, Timestamp::UNIX_EPOCH);
        assert_eq!(
            (status.all_squares, progress),
            (Some(true), Progress::Settled)
        );
        assert_eq!(
            (status.ready_numbers, status.desired_numbers),
            (Some(3), Some(3))
        );

        let t = tuple(vec![0, 1, 2]);
        let cached: Vec<_> = [0, 1, 2]
            .iter()
            .enumerate()
            .map(|(i, &v)| number(&format!("t-{i}"), v, Some(UID), true))
            .collect();
        let (status, _) = desired_status(&t, &plan_for(&t, &cached), None, Timestamp::UNIX_EPOCH);
        assert_eq!(status.all_squares, Some(false), "false is written too");
    }

    #[test]
    fn an_empty_tuple_is_all_squares() {
        let t = tuple(vec![]);
        let (status, progress) =
            desired_status(&t, &plan_for(&t, &[]), None, Timestamp::UNIX_EPOCH);
        assert_eq!(
            (status.all_squares, progress),
            (Some(true), Progress::Settled)
        );
    }

    #[test]
    fn a_stale_child_status_is_not_an_answer() {
        let t = tuple(vec![4]);
        let mut n = (*number("t-0", 4, Some(UID), true)).clone();
        n.metadata.generation = Some(2); // edited and corrected since it was computed
        let (status, progress) = desired_status(
            &t,
            &plan_for(&t, &[Arc::new(n)]),
            None,
            Timestamp::UNIX_EPOCH,
        );
        assert_eq!((status.all_squares, progress), (None, Progress::Pending));
    }

    #[test]
    fn names_longer_than_253_characters_are_reported() {
        let mut t = tuple(vec![1]);
        t.metadata.name = Some("a".repeat(252));
        let plan = plan_for(&t, &[]);
        assert_eq!(plan.invalid_names.len(), 1);
        assert!(plan.create.is_empty());
        let (status, progress) = desired_status(&t, &plan, None, Timestamp::UNIX_EPOCH);
        assert_eq!(
            (status.conditions[0].reason.as_str(), progress),
            ("ChildNameTooLong", Progress::Blocked)
        );
    }
}
