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
//!                     plan.rs and status.rs (the pure decisions), writes.rs and events.rs
//!                     (the writes and their Events: the only place a reconcile writes to
//!                     the API server), context.rs
//!                     (what every reconcile shares; it names no kind), controller_loop.rs (a kind's
//!                     reconciles let in by the scheduler, within the retry policy), memory/
//!                     (what the reconciles remember: expectations of children and
//!                     statuses, refusals, waiting parents, retries)
//! cluster/            the kube glue, for any kind: watches and their fan-out, each kind's
//!                     cache (its store, by name and by controller UID) found by type,
//!                     outages, the one backoff, maps whose entries expire
//! kind.rs scheduler/  each kind's facts, as traits every kind implements (in controller/), and
//!                     an object's controller; beside it the one queue every reconcile waits
//!                     in (domain-free: keys, flows, priorities): fair queue, permits, the
//!                     book of each key's stage, the runner, the request slots
//! api.rs math.rs      the CRDs as Rust types; fizzbuzz, squares, primes, two-square sums
//! error.rs metrics.rs typed errors; what the manager counts (served by ops/)
//! ```
//!
//! What two layers share lives in the lower one: the watches tell the reconcile's memories
//! what they see through a trait of the glue (`cluster::watches::Witness`) that the
//! reconcile's context implements, so the glue needs nothing of the reconcile. The three kinds
//! are named in api.rs, controller/, the wiring (ops/), the plugin and the metrics' series
//! created at zero, never in the generic rooms: `tests/layers.rs` checks that the scheduler,
//! the glue and the reconcile name none. Each folder's `mod.rs` says what its
//! files do.
//!
//! Beside this crate, in the same workspace: `kubectl math` (`crates/kubectl-math/`), which asks
//! the same kinds and the same plan, so that its tree marks exactly what the controllers would
//! act on, and alone links the terminal code the manager never runs.

pub mod api;
pub mod cli;
pub mod cluster;
pub mod controller;
pub mod error;
pub mod kind;
pub mod math;
pub mod metrics;
pub mod ops;
pub mod reconcile;
pub mod scheduler;
