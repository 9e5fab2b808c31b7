//! The scheduler: the one queue in front of every reconcile. Domain-free (it knows keys, flows
//! and priorities, never a kind, a client or a cache), so that its invariants are tested on
//! their own (`tests` here): no object lost, one reconcile of an object at a time, every flow
//! served.
//!
//! - `queue.rs`: fair queuing across flows (namespaces), as API Priority and Fairness does:
//!   who goes next; urgent work first, aged work a share of the turns so nothing waits forever.
//! - `permits.rs`: permits handed out in the queue's order (a scheduler's concurrency, the
//!   request slots), each flow held to its share while others are active.
//! - `book.rs`: where each key is between its news and the end of its reconcile (queued,
//!   delayed, running, running with news): the deduplication, the delays, one at a time.
//! - `runner.rs`: the loop that runs what the permits let in and books how each run ended
//!   (done, requeue after a delay, again at once for news that came while it ran); its hooks
//!   carry controller-runtime's workqueue series.
//! - `panics.rs`: a run that panics ends with what it said instead of unwinding through the
//!   task that runs every other one; the panic hook keeps it quiet, so it is told once.
//! - `request_slots.rs`: the request slots that writes and Events take (`--requests-in-flight`),
//!   handed out in each run's flow's turn by the same permits, lent by a request while the
//!   client waits to send it again (a 429).
//!
//! kube-runtime's `Controller` has a scheduler and a runner of its own; a fair queue in front
//! of them would be a second queue, whose hand-over loses wake-ups (an object let in by the
//! first queue, deleted and re-created before the second one ran it). Here one book holds
//! each key's stage from its news to the end of its reconcile, and only the runner that ran it
//! ends it.

pub mod book;
pub mod panics;
pub mod permits;
pub mod queue;
pub mod request_slots;
pub mod runner;

use std::time::Duration;

/// The log target of one line per watch event, reconcile turn and request, with the object's
/// namespace: `RUST_LOG=info,math_controller::timeline=debug` shows where an object's time
/// to Ready goes (the watch, the wait for its turn, the wait for a request slot, the API
/// server's answer), which metrics aggregated over every flow cannot.
pub const TIMELINE: &str = "math_controller::timeline";

/// Milliseconds, for the timeline's lines.
pub(crate) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

#[cfg(test)]
mod model;

pub use queue::{Flow, Priority};
