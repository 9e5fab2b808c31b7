//! The Number controller: computes fizzbuzz, squareness and primality into the status.
//! It owns nothing; its only write is the status, and only when it changed.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::Resource;

use crate::api::{Number, NumberSpec, NumberStatus};
use crate::error::Result;
use crate::kind::{Child, Kind};
use crate::math;
use crate::reconcile::context::Context;
use crate::reconcile::status::{self, Readiness, Standing};
use crate::reconcile::writes;
use crate::reconcile::{Outcome, Progress};

/// The status a Number should have: a pure function of its spec and previous status.
pub fn desired_status(
    number: &Number,
    previous: Option<&NumberStatus>,
    now: Timestamp,
) -> NumberStatus {
    let value = number.spec.value;
    let fizz_buzz = math::fizzbuzz(value);
    let is_square = math::is_square(value);
    let is_prime = math::is_prime(value);
    let generation = number.meta().generation;
    let previous = previous
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let readiness = Readiness {
        ready: true,
        reason: "Computed",
        message: format!(
            "fizzbuzz({value}) = {fizz_buzz}; {value} is {} and {}",
            match math::exact_sqrt(value) {
                Some(root) => format!("a perfect square ({root}²)"),
                None => "not a perfect square".to_string(),
            },
            if is_prime { "prime" } else { "not prime" },
        ),
    };
    NumberStatus {
        observed_generation: generation,
        conditions: vec![status::ready_condition(
            &readiness, generation, previous, now,
        )],
        fizz_buzz: Some(fizz_buzz),
        is_square: Some(is_square),
        is_prime: Some(is_prime),
    }
}

/// Reconcile one Number: compute, compare, write the status if it differs.
pub async fn reconcile(number: Arc<Number>, ctx: Arc<Context>) -> Result<Outcome> {
    if number.meta().deletion_timestamp.is_some() {
        return Ok(Outcome::DONE);
    }
    let now = Timestamp::now();
    let known = ctx.statuses.known(number.as_ref(), number.status.as_ref());
    let desired = desired_status(&number, known.as_ref(), now);
    let requeue_after = writes::write_status(
        &ctx,
        number.as_ref(),
        known.as_ref(),
        &desired,
        Standing::Answer,
    )
    .await?;
    Ok(Outcome {
        requeue_after,
        progress: Progress::Settled,
        planned_in: std::time::Duration::ZERO,
    })
}

impl status::WholeStatus for NumberStatus {
    const FIELDS: &'static [&'static str] = &[
        "observedGeneration",
        "conditions",
        "fizzBuzz",
        "isSquare",
        "isPrime",
    ];
}

impl Kind for Number {
    const KIND: &'static str = "Number";
    const CONTROLLER: &'static str = "number";

    /// Its status describes its current generation (a Number has no children to wait for).
    fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            status::is_ready_for(&s.conditions, s.observed_generation, self.meta().generation)
        })
    }

    fn has_status(&self) -> bool {
        self.status.is_some()
    }
}

/// A Tuple's child.
impl Child for Number {
    type Spec = NumberSpec;
    const WAITING_REASON: &'static str = "WaitingForNumbers";

    fn build(name: &str, spec: NumberSpec) -> Self {
        Number::new(name, spec)
    }

    fn child_spec(&self) -> &NumberSpec {
        &self.spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(value: i64, generation: i64) -> Number {
        let mut n = Number::new("n", NumberSpec { value });
        n.metadata.generation = Some(generation);
        n
    }

    #[test]
    fn status_describes_the_value_and_generation() {
        let status = desired_status(&number(15, 3), None, Timestamp::UNIX_EPOCH);
        assert_eq!(status.fizz_buzz.as_deref(), Some("FizzBuzz"));
        assert_eq!(status.is_square, Some(false));
        assert_eq!(status.is_prime, Some(false));
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.conditions[0].status, "True");
        assert_eq!(status.conditions[0].observed_generation, Some(3));

        let status = desired_status(&number(i64::MAX, 1), None, Timestamp::UNIX_EPOCH);
        assert_eq!(status.fizz_buzz.as_deref(), Some("9223372036854775807"));
        assert_eq!(status.is_square, Some(false));
        let status = desired_status(&number(-9, 1), None, Timestamp::UNIX_EPOCH);
        assert_eq!(
            (status.fizz_buzz.as_deref(), status.is_square),
            (Some("Fizz"), Some(false))
        );
    }

    #[test]
    fn an_unchanged_number_needs_no_write() {
        let mut n = number(16, 1);
        n.status = Some(desired_status(&n, None, Timestamp::UNIX_EPOCH));
        // Later, nothing changed: the condition keeps its transition time, so equal.
        let again = desired_status(&n, n.status.as_ref(), Timestamp::now());
        assert_eq!(n.status.as_ref(), Some(&again));
    }
}
