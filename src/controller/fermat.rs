//! The Fermat controller: one Tuple `<fermat>-<a>-and-<n-a>` with `numbers = [a, n-a]` for
//! each a in 1..=n/2, and the sums of two squares that those Tuples discover.
//!
//! Whether n is prime and whether n ≡ 1 (mod 4) are computed here directly; whether n is a
//! sum of two squares is *found by the cluster*, through the Tuples' `allSquares`.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::{Resource, ResourceExt};

use crate::api::{Fermat, FermatStatus, MAX_FERMAT_NUMBER, Tuple, TupleSpec};
use crate::error::Result;
use crate::kind::{Desired, Kind, Parent};
use crate::math;
use crate::reconcile;
use crate::reconcile::context::Context;
use crate::reconcile::plan::{self, Plan};
use crate::reconcile::status::{self, Readiness};
use crate::reconcile::{Outcome, Progress};

/// The Tuples a Fermat wants: `[a, n-a]` for a = 1..=n/2; none for a number beyond the
/// schema's bound ([`beyond_schema`] says why).
pub fn desired_tuples(fermat: &Fermat) -> Vec<Desired<TupleSpec>> {
    if beyond_schema(fermat).is_some() {
        return Vec::new();
    }
    let name = fermat.name_any();
    math::fermat_splits(fermat.spec.number)
        .into_iter()
        .map(|(a, b)| Desired {
            name: format!("{name}-{a}-and-{b}"),
            spec: TupleSpec {
                numbers: vec![a, b],
            },
        })
        .collect()
}

/// Why a Fermat's number is not one this controller expands, if it is not: the CRD bounds it
/// to 0..=20000, but an object stored under a looser schema (an older CRD, a workshop
/// participant's own) may carry any int64, and n/2 Tuples of it would exhaust the manager
/// and the cluster.
pub fn beyond_schema(fermat: &Fermat) -> Option<Readiness> {
    let n = fermat.spec.number;
    (!(0..=MAX_FERMAT_NUMBER).contains(&n)).then(|| Readiness {
        ready: false,
        reason: "NumberOutOfRange",
        message: format!(
            "spec.number {n} is outside 0..={MAX_FERMAT_NUMBER}, the bound of this CRD (was it stored under another schema?); no Tuples are made for it"
        ),
    })
}

/// `x²+y²` for every ready Tuple whose two numbers are both squares, smallest x first.
pub fn decompositions(ready: &[Arc<Tuple>]) -> Vec<String> {
    let mut found: Vec<(i64, i64)> = ready
        .iter()
        .filter(|t| t.status.as_ref().and_then(|s| s.all_squares) == Some(true))
        .filter_map(|t| match t.spec.numbers.as_slice() {
            [a, b] => Some((math::exact_sqrt(*a)?, math::exact_sqrt(*b)?)),
            _ => None,
        })
        .collect();
    found.sort_unstable();
    found
        .into_iter()
        .map(|(x, y)| math::format_decomposition(x, y))
        .collect()
}

/// The status that describes what the plan found; `twoSquaresFound` only once every Tuple
/// has answered for its current generation.
pub fn desired_status(
    fermat: &Fermat,
    plan: &Plan<Tuple>,
    previous: Option<&FermatStatus>,
    now: Timestamp,
) -> (FermatStatus, Progress) {
    let n = fermat.spec.number;
    let beyond = beyond_schema(fermat);
    let counted = beyond.is_none();
    let unfinished = match beyond {
        Some(readiness) => Some((readiness, Progress::Blocked)),
        None => plan::unfinished(plan),
    };
    let (readiness, progress, found) = match unfinished {
        Some((readiness, progress)) => (readiness, progress, None),
        None => {
            let found = decompositions(&plan.ready);
            let answer = match found.as_slice() {
                [] => format!("{n} is not a sum of two positive squares"),
                some => format!("{n} = {}", some.join(" = ")),
            };
            let message = format!(
                "{}/{} Tuples ready; {answer}",
                plan.ready.len(),
                plan.desired
            );
            let readiness = Readiness {
                ready: true,
                reason: "AllTuplesReady",
                message,
            };
            (readiness, Progress::Settled, Some(found))
        }
    };
    let generation = fermat.meta().generation;
    let previous = previous
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let status = FermatStatus {
        observed_generation: generation,
        conditions: vec![status::ready_condition(
            &readiness, generation, previous, now,
        )],
        two_squares_found: found.as_ref().map(|f| !f.is_empty()),
        decompositions: found,
        is_prime: Some(math::is_prime(n)),
        one_mod_four: Some(math::is_one_mod_four(n)),
        ready_tuples: counted.then_some(plan.ready.len() as i64),
        desired_tuples: counted.then_some(plan.desired as i64),
    };
    (status, progress)
}

/// Reconcile one Fermat against the Tuple cache.
pub async fn reconcile(fermat: Arc<Fermat>, ctx: Arc<Context>) -> Result<Outcome> {
    let status = |plan: &Plan<Tuple>, previous: Option<&FermatStatus>, now| {
        desired_status(&fermat, plan, previous, now)
    };
    let current = fermat.status.as_ref();
    reconcile::parent(&ctx, fermat.as_ref(), current, status).await
}

impl Kind for Fermat {
    const KIND: &'static str = "Fermat";
    const CONTROLLER: &'static str = "fermat";

    /// Its status describes its current generation (nobody waits for a Fermat: this is what
    /// the plugin shows).
    fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            status::is_ready_for(&s.conditions, s.observed_generation, self.meta().generation)
        })
    }

    fn has_status(&self) -> bool {
        self.status.is_some()
    }
}

/// One Tuple `<fermat>-<a>-and-<n-a>` for each a in 1..=n/2.
impl Parent for Fermat {
    type Child = Tuple;

    fn desired_children(&self) -> Vec<Desired<TupleSpec>> {
        desired_tuples(self)
    }

    /// `<fermat>-<a>-and-<b>` → `<fermat>`.
    fn parent_of(child: &str) -> Option<&str> {
        super::strip_number(child)
            .and_then(|rest| rest.strip_suffix("-and"))
            .and_then(super::strip_number)
    }
}

impl status::WholeStatus for FermatStatus {
    const FIELDS: &'static [&'static str] = &[
        "observedGeneration",
        "conditions",
        "twoSquaresFound",
        "decompositions",
        "isPrime",
        "oneModFour",
        "readyTuples",
        "desiredTuples",
    ];
}

impl status::ParentStatus for FermatStatus {
    fn ready_children(&self) -> Option<i64> {
        self.ready_tuples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{FermatSpec, TupleStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use std::collections::HashMap;

    const UID: &str = "fermat-uid";

    fn fermat(n: i64) -> Fermat {
        let mut f = Fermat::new("f", FermatSpec { number: n });
        f.metadata.namespace = Some("default".into());
        f.metadata.uid = Some(UID.into());
        f.metadata.generation = Some(1);
        f
    }

    /// A Tuple as its controller leaves it once its Numbers have answered.
    fn answered(d: &Desired<TupleSpec>) -> Arc<Tuple> {
        let mut t = Tuple::new(&d.name, d.spec.clone());
        t.metadata.generation = Some(1);
        t.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "math.example.com/v1beta1".into(),
            kind: "Fermat".into(),
            name: "f".into(),
            uid: UID.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        let all = d.spec.numbers.iter().all(|&v| math::is_square(v));
        let ready = Readiness {
            ready: true,
            reason: "AllNumbersReady",
            message: String::new(),
        };
        t.status = Some(TupleStatus {
            observed_generation: Some(1),
            conditions: vec![status::ready_condition(
                &ready,
                Some(1),
                &[],
                Timestamp::UNIX_EPOCH,
            )],
            all_squares: Some(all),
            ready_numbers: Some(2),
            desired_numbers: Some(2),
        });
        Arc::new(t)
    }

    fn converged(n: i64) -> (FermatStatus, Progress) {
        let f = fermat(n);
        let desired = desired_tuples(&f);
        let cached: Vec<_> = desired.iter().map(answered).collect();
        let found: HashMap<_, _> = cached.iter().map(|t| (t.name_any(), t.clone())).collect();
        let plan = plan::plan(UID, desired, &found, &cached, &Default::default());
        desired_status(&f, &plan, None, Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn desired_tuples_split_n() {
        let d = desired_tuples(&fermat(5));
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].name, "f-1-and-4");
        assert_eq!(
            d[1],
            Desired {
                name: "f-2-and-3".into(),
                spec: TupleSpec {
                    numbers: vec![2, 3]
                }
            }
        );
        assert!(desired_tuples(&fermat(0)).is_empty());
        assert!(desired_tuples(&fermat(1)).is_empty());
        assert_eq!(desired_tuples(&fermat(20000)).len(), 10000);
    }

    #[test]
    fn converged_status_matches_brute_force() {
        for n in 0..=100 {
            let (status, progress) = converged(n);
            let expected: Vec<String> = math::two_square_decompositions(n)
                .into_iter()
                .map(|(x, y)| math::format_decomposition(x, y))
                .collect();
            assert_eq!(progress, Progress::Settled);
            assert_eq!(status.two_squares_found, Some(!expected.is_empty()), "{n}");
            assert_eq!(status.decompositions, Some(expected), "{n}");
            assert_eq!(status.is_prime, Some(math::is_prime(n)));
            assert_eq!(status.conditions[0].status, "True");
        }
        assert_eq!(
            converged(50).0.decompositions,
            Some(vec!["1²+7²".to_string(), "5²+5²".to_string()])
        );
        assert_eq!(converged(13).0.one_mod_four, Some(true));
        assert_eq!(converged(19).0.two_squares_found, Some(false));
    }

    #[test]
    fn a_fermat_without_answers_says_it_waits() {
        let f = fermat(13);
        let plan = plan::plan(
            UID,
            desired_tuples(&f),
            &HashMap::new(),
            &[],
            &Default::default(),
        );
        let (status, progress) = desired_status(&f, &plan, None, Timestamp::UNIX_EPOCH);
        assert_eq!(progress, Progress::Pending);
        assert_eq!(status.two_squares_found, None);
        assert_eq!(
            status.is_prime,
            Some(true),
            "what needs no children is known at once"
        );
        assert_eq!(
            status.conditions[0].message,
            "0/6 Tuples ready; waiting for f-1-and-12, f-2-and-11, f-3-and-10, f-4-and-9, f-5-and-8 and 1 more"
        );
    }

    #[test]
    fn changing_n_deletes_the_tuples_no_longer_wanted() {
        let old: Vec<_> = desired_tuples(&fermat(10)).iter().map(answered).collect();
        let f = fermat(6);
        let desired = desired_tuples(&f);
        let found: HashMap<_, _> = old
            .iter()
            .filter(|t| desired.iter().any(|d| d.name == t.name_any()))
            .map(|t| (t.name_any(), t.clone()))
            .collect();
        let plan = plan::plan(UID, desired, &found, &old, &Default::default());
        assert_eq!(
            plan.delete.len(),
            5,
            "none of f-a-and-(10-a) is wanted for 6"
        );
        assert_eq!(plan.create.len(), 3);
    }
}
