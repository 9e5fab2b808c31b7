//! math-workshop: the learner track of the kubebuilder hands-on. You write the Number,
//! Tuple and Fermat controllers yourself (`exercises/`), stage by stage; `math-workshop check N`
//! tells you when a stage is done. `solutions/` holds short reference solutions with the same
//! shape. Everything else here is plumbing: the shared [`context`], the [`runner`] that starts
//! your controllers, the [`check`]er, CRD generation ([`crds`]), connecting to a cluster
//! ([`cluster`]) and what keeps a room safe on a shared one ([`room`]). Watching and catching
//! up (`make workshop-watch`, `make workshop-skip`) are a crate of their own
//! (`workshop/tools`): they must work while your code does not compile.

pub mod check;
pub mod cli;
pub mod cluster;
pub mod context;
pub mod crds;
pub mod exercises;
pub mod messages;
pub mod panics;
pub mod room;
pub mod runner;
pub mod solutions;
pub mod track;

/// Exact integer arithmetic (fizzbuzz, perfect squares, primes), shared with the finished
/// manager: the workshop is about controllers, not about square roots.
pub use math_controller::math;
