//! Everything of the learner track but the learner's code: the shared [`context`], the
//! [`runner`] that starts a track's controllers, the [`check`]er, CRD generation ([`crds`]),
//! connecting to a cluster ([`cluster`]), what keeps a room safe on a shared one ([`room`]), the
//! messages in both languages ([`messages`]), the `math-workshop` command ([`app`]) and the
//! reference [`solutions`]. It is a crate of its own, built once, so that a save of an exercise
//! recompiles only the exercises (`math-workshop`, which re-exports all of this under its own
//! name: the exercises and the guides say `crate::context`, `math_workshop::check`).

pub mod app;
pub mod check;
pub mod cli;
pub mod cluster;
pub mod context;
pub mod crds;
pub mod messages;
pub mod organiser;
pub mod panics;
pub mod room;
pub mod room_status;
pub mod runner;
// The files stay beside the exercises (`workshop/src/solutions/`), where the guides and
// `make workshop-skip` find them; they are compiled here, once, not on every save.
#[path = "../../src/solutions/mod.rs"]
pub mod solutions;
pub mod track;
pub mod undecodable;

/// Exact integer arithmetic (fizzbuzz, perfect squares, primes), shared with the finished
/// manager: the workshop is about controllers, not about square roots.
pub use math_controller::math;
