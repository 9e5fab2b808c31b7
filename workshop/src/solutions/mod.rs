//! The reference solutions: what `exercises/` looks like once every exercise is done.
//! Deliberately simpler than the finished manager in `src/` (see the guide's last chapter).

pub mod fermat;
pub mod number;
pub mod tuple;

use futures::FutureExt;
use kube::CustomResourceExt;

use crate::track::Track;

/// The solutions as a [`Track`] (`--solution`).
pub fn track() -> Track {
    Track {
        name: "the reference solutions",
        dir: "workshop/src/solutions",
        crds: || {
            vec![
                number::Number::crd(),
                tuple::Tuple::crd(),
                fermat::Fermat::crd(),
            ]
        },
        decodes: crate::track::decodes::<number::Number, tuple::Tuple, fermat::Fermat>,
        number: |ctx| number::run(ctx).boxed(),
        tuple: |ctx| tuple::run(ctx).boxed(),
        fermat: |ctx| fermat::run(ctx).boxed(),
    }
}
