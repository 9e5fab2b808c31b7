//! math-workshop: the learner track of the kubebuilder hands-on. You write the Number,
//! Tuple and Fermat controllers yourself (`exercises/`), stage by stage; `math-workshop check N`
//! tells you when a stage is done. `solutions/` holds short reference solutions with the same
//! shape. Everything else is plumbing, in a crate of its own (`workshop/kit`, built once, so that
//! a save recompiles your exercises alone) and re-exported here: the shared [`context`], the
//! [`runner`] that starts your controllers, the [`check`]er, CRD generation ([`crds`]),
//! connecting to a cluster ([`cluster`]) and what keeps a room safe on a shared one ([`room`]).
//! Watching and catching up (`make workshop-watch`, `make workshop-skip`) are a crate of their
//! own too (`workshop/tools`): they must work while your code does not compile.

pub mod exercises;

pub use math_workshop_kit::{
    app, check, cli, cluster, context, crds, math, messages, organiser, panics, room, room_status,
    runner, solutions, t, track,
};
