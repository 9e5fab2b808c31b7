//! Your exercises: one file per kind, each holding the kind's type and its controller.
//! Look for `EXERCISE` and `todo!()`; `math-workshop check N` tells you how far you are.

pub mod fermat;
pub mod number;
pub mod tuple;

use futures::FutureExt;
use kube::CustomResourceExt;

use crate::track::Track;

/// Your exercises as a [`Track`] (the default; `--solution` selects the reference solutions).
pub fn track() -> Track {
    Track {
        name: "your exercises",
        dir: "workshop/src/exercises",
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
