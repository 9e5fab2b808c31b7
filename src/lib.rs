//! math-controller: a Kubernetes controller manager for the kubebuilder hands-on in which a
//! Fermat owns Tuples and a Tuple owns Numbers. See README.md for the tour and docs/ for each topic.
//!
//! # The map
//!
//! Each folder answers one question, and the arrows run one way: a module uses only what is
//! below it in this list (checked: no two modules import each other, and no chain of imports
//! comes back to where it started).
//!
//! ```text
//! main.rs, cli.rs     the manager binary: flags, client, signals, run
//! ops/                running in a cluster: run() and the controllers' wiring (why one watch per
//!                     kind, not `.owns()`), startup, shutdown, the client, logging, probes,
//!                     HTTP limits, secure metrics (TokenReview, TLS), leader election
//! controller/         what each kind wants and when it is ready: number.rs, tuple.rs, fermat.rs
//! reconcile/          how any parent gets there: mod.rs (the loop) and writes.rs (the only place
//!                     a reconcile writes to the API server) ...
//! runtime/            around kube-runtime: watches and their fan-out, each kind's cache and owner
//!                     index, the context (expectations, statuses in flight, pace), the retry
//!                     policy, outages, refusals, Events, expiring maps
//! reconcile/          ... plan.rs and status.rs, the pure decisions (no client, no context)
//! kind.rs             each kind's facts, as traits every kind implements (in controller/)
//! api.rs math.rs      the CRDs as Rust types; fizzbuzz, squares, primes, two-square sums
//! error.rs metrics.rs typed errors; what the manager counts (served by ops/)
//!
//! plugin/             `kubectl math` (bin/kubectl-math.rs), beside the manager: it uses only
//!                     api.rs, kind.rs and reconcile/plan.rs, so its tree marks exactly what the
//!                     controllers would act on
//! ```
//!
//! `reconcile/` appears twice on purpose: its pure half is below `runtime/` (the context
//! remembers refused plan steps and the pace statuses are decided by), its loop and writes
//! above (they use the context). Each folder's `mod.rs` says what its files do.

pub mod api;
pub mod cli;
pub mod controller;
pub mod error;
pub mod kind;
pub mod math;
pub mod metrics;
pub mod ops;
pub mod plugin;
pub mod reconcile;
pub mod runtime;
