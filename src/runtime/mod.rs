//! Around kube-runtime: what the controllers stand on. kube-runtime brings the watcher, the
//! reflector stores and the `Controller` loop; this folder adds what a manager that writes
//! the minimum needs around them:
//!
//! - `watches.rs`: one watch per kind, its fan-out to the kind's own controller and to the
//!   parents' (also after a relist: what vanished while the watch was down), the resync.
//! - `cache.rs`: one kind's cache: its reflector store and its owner index, kept together.
//! - `owner_index.rs`: which cached children each parent controls, kept from the watch events
//!   (what a controller-runtime field indexer on the owner does: no cache scans).
//! - `context.rs`: what every reconcile shares: the client, the caches, the metrics, the
//!   request slots, and the manager's memories below, each a part of its own.
//! - `expectations.rs`: children written whose echo the watch has not delivered yet, and
//!   what a parent sees of its children through them (what controller-runtime users know as
//!   expectations).
//! - `statuses.rs`: statuses written whose echo has not come yet: the status as far as we know.
//! - `pace.rs`: how a waiting parent's children come along (when a child of each kind last
//!   settled, which caches relist, when a parent last reported its progress).
//! - `retry.rs`: the retry policy around every reconcile: exponential backoff per object
//!   (the failures it counts), quiet 409s, fast retries while the API server is away.
//! - `outage.rs`: API server outages: reported in a few log lines, fast jittered retries, a
//!   single probe that says when it is back.
//! - `refusals.rs`: writes the API server refused: their backoff, and parents in a namespace
//!   being deleted.
//! - `replan.rs`: how soon a parent that waits for its children is planned again (no
//!   sooner than ten times what its last plan cost).
//! - `fair`: the scheduler's fair queue and permits (`crate::scheduler`), which the request
//!   slots use too.
//! - `slots.rs`: the slots writes and Events take (`--requests-in-flight`), handed out in
//!   each reconcile's flow's turn, lent by a request while the client waits to send it again
//!   (a 429).
//! - `gate.rs`: each controller's scheduler (`crate::scheduler`) told of its kind's objects:
//!   their news, their flow (namespace) and priority, and each run reading the object from
//!   the cache when its turn comes.
//! - `events.rs`: Events within kube-apiserver's limits (names, notes), a Warning said once.
//! - `backoff.rs`: the one exponential backoff every retry uses (first delay, cap, jitter),
//!   and the random numbers for jitter.
//! - `expiring.rs`: remembered writes and failures in maps whose entries expire (bounded
//!   memory), and how those maps name an object.

/// The log target of one line per watch event, reconcile turn and request, with the object's
/// namespace: `RUST_LOG=info,math_controller::timeline=debug` shows where an object's time
/// to Ready goes (the watch, the wait at its controller's gate, the wait for a request slot,
/// the API server's answer), which metrics aggregated over every flow cannot.
pub const TIMELINE: &str = "math_controller::timeline";

pub mod backoff;
pub mod cache;
pub mod context;
pub mod events;
pub mod expectations;
pub mod expiring;
/// The fair queue and its permits, now the scheduler's ([`crate::scheduler`]); named here too
/// for the request slots and the metrics.
pub mod fair {
    pub use crate::scheduler::permits::*;
    pub use crate::scheduler::queue::*;
}
pub mod gate;
pub mod outage;
pub mod owner_index;
pub mod pace;
pub mod refusals;
pub mod replan;
pub mod retry;
pub mod slots;
pub mod statuses;
pub mod watches;
