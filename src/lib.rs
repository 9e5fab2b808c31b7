//! math-controller: a Kubernetes controller manager for the kubebuilder hands-on in which a
//! Fermat owns Tuples and a Tuple owns Numbers. See README.md for the tour and docs/ for each topic.
//!
//! # The map
//!
//! Each folder answers one question, and the imports run one way: a module uses only what is
//! below it in this list, never what is above it or beside it (`tests/layers.rs` checks every
//! `crate::` path outside comments, and names the line that runs back up).
//!
//! ```text
//! main.rs, cli.rs     the manager binary: flags, client, signals, run
//! ops/                running in a cluster: run() and the controllers' wiring (why one watch per
//!                     kind, not `.owns()`), startup, shutdown, the client, logging, the
//!                     probe and metrics servers (from crates/serving), leader election
//! controller/         what each kind wants and when it is ready: number.rs, tuple.rs, fermat.rs
//! reconcile/          how any parent gets there: mod.rs (look, plan, apply, write the status),
//!                     plan.rs and status.rs (the pure decisions), writes.rs (the only place a
//!                     reconcile writes to the API server)
//! runtime/            around kube-runtime, and what the manager remembers between reconciles:
//!                     watches and their fan-out, each kind's cache and owner index, the
//!                     context and its parts (expectations, statuses in flight, the pace of
//!                     children, request slots), the retry policy and a reconcile's outcome
//!                     (and the failures it counts), outages, refusals, Events; each
//!                     controller's gate (its scheduler told of the kind's objects)
//! kind.rs scheduler/  each kind's facts, as traits every kind implements (in controller/), and
//!                     an object's controller; beside it the one queue every reconcile waits
//!                     in (domain-free: keys, flows, priorities): fair queue, permits, the
//!                     book of each key's stage, the runner
//! api.rs math.rs      the CRDs as Rust types; fizzbuzz, squares, primes, two-square sums
//! error.rs metrics.rs typed errors; what the manager counts (served by ops/)
//! ```
//!
//! What two layers share lives in the lower one: a refused step (`runtime::refusals`), a
//! reconcile's outcome (`runtime::retry`) and the pace of a parent's children
//! (`runtime::pace`) are remembered or acted on by the runtime and decided about in
//! `reconcile/`, so they are defined in the runtime. Each folder's `mod.rs` says what its
//! files do.
//!
//! Beside this crate, in the same workspace: `kubectl math` (`crates/kubectl-math/`), which asks
//! the same kinds and the same plan, so that its tree marks exactly what the controllers would
//! act on, and alone links the terminal code the manager never runs.

pub mod api;
pub mod cli;
pub mod controller;
pub mod error;
pub mod kind;
pub mod math;
pub mod metrics;
pub mod ops;
pub mod reconcile;
pub mod runtime;
pub mod scheduler;
