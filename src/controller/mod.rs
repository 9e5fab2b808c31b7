//! The controllers: what each kind wants and when it is ready (kubebuilder's
//! `internal/controller/`). Each file holds one kind's decisions as pure functions at the top,
//! its reconcile, and its [`crate::kind`] trait implementations:
//!
//! - `number.rs`: the Number controller: fizzbuzz, squareness and primality into the status;
//!   it owns nothing.
//! - `tuple.rs`: the Tuple controller: one Number `<tuple>-<index>` per item, and
//!   `allSquares` once every one of them has reported.
//! - `fermat.rs`: the Fermat controller: one Tuple `<fermat>-<a>-and-<n-a>` per split of n,
//!   and the sums of two squares those Tuples find.
//!
//! How any parent gets to what it wants (read the cache, plan, write the difference, write the
//! status) is not here but in [`crate::reconcile`], the same for every parent kind.

pub mod fermat;
pub mod number;
pub mod tuple;

/// `<rest>-<digits>` → `<rest>`: how the child names that Tuples and Fermats build end.
fn strip_number(name: &str) -> Option<&str> {
    let (rest, digits) = name.rsplit_once('-')?;
    (!rest.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some(rest)
}

#[cfg(test)]
mod tests {
    use kube::{Resource, ResourceExt};

    use crate::api::{Fermat, FermatSpec, Number, Tuple, TupleSpec};
    use crate::kind::{Child, Kind, Parent};
    use crate::metrics::CONTROLLERS;

    #[test]
    fn a_child_name_leads_to_the_parent_that_wants_it() {
        assert_eq!(Tuple::parent_of("t-0"), Some("t"));
        assert_eq!(Tuple::parent_of("f-1-and-49-1"), Some("f-1-and-49"));
        assert_eq!(Tuple::parent_of("number-sample"), None);
        assert_eq!(Fermat::parent_of("fermat-50-1-and-49"), Some("fermat-50"));
        assert_eq!(Fermat::parent_of("t-1"), None);
        assert_eq!(Fermat::parent_of("-1-and-2"), None);
    }

    /// Every child name a parent builds leads back to that parent: rename a child pattern
    /// on one side only and deletions stop waking the parent; this fails first.
    fn round_trips<P: Parent>(parents: impl IntoIterator<Item = P>) {
        for parent in parents {
            let name = parent.name_any();
            let desired = parent.desired_children();
            assert!(!desired.is_empty(), "{} {name} wants children", P::KIND);
            for child in desired {
                assert_eq!(
                    P::parent_of(&child.name),
                    Some(name.as_str()),
                    "{} {} is {}'s",
                    <P::Child as Kind>::KIND,
                    child.name,
                    name
                );
            }
        }
    }

    #[test]
    fn every_child_name_leads_back_to_its_parent() {
        let names = ["t", "t-0", "f-1-and-49", "a-b-12", "x-and-3"];
        round_trips(names.map(|name| {
            Tuple::new(
                name,
                TupleSpec {
                    numbers: (0..12).collect(),
                },
            )
        }));
        round_trips(names.map(|name| Fermat::new(name, FermatSpec { number: 25 })));
    }

    #[test]
    fn the_kind_tables_agree_with_the_api_and_the_metrics() {
        assert_eq!(Number::KIND, Number::kind(&()));
        assert_eq!(Tuple::KIND, Tuple::kind(&()));
        assert_eq!(Fermat::KIND, Fermat::kind(&()));
        assert_eq!(
            [Number::CONTROLLER, Tuple::CONTROLLER, Fermat::CONTROLLER],
            CONTROLLERS
        );
        assert_eq!(Number::WAITING_REASON, "WaitingForNumbers");
        assert_eq!(Tuple::WAITING_REASON, "WaitingForTuples");
        assert_eq!(<Tuple as Parent>::Child::KIND, Number::KIND);
        assert_eq!(<Fermat as Parent>::Child::KIND, Tuple::KIND);
    }
}
