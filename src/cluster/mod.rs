//! The kube glue: what the manager knows of the cluster and how it speaks to it, for any kind
//! (it names none). kube-runtime brings the watcher; this folder adds
//! what a manager that writes the minimum needs around them:
//!
//! - `watches.rs`: one watch per kind, its fan-out to the kind's own controller and to the
//!   parents' (also after a relist: what vanished while the watch was down), the resync; what
//!   it sees is told to the reconcile's memories through [`watches::Witness`].
//! - `store.rs`: one kind's objects as its watch last saw them, by name and by controller
//!   UID (kube-runtime's reflector store and an owner index, without a key beside each
//!   object: the memory a manager grows with).
//! - `cache.rs`: one kind's cache (its store and its owner index, one type), and
//!   every kind's caches found by type ([`cache::Caches`]).
//! - `undecodable.rs`: objects the manager's types cannot decode: each object of a list or
//!   watch decoded on its own (and lean: what no controller reads is never kept), one that
//!   does not decode set aside and named once, for its parents to find.
//! - `watch_retry.rs`: a failing list or watch, paused for by why it failed (410, 429,
//!   unreachable, anything else) and told once, with a count while it lasts.
//! - `outage.rs`: API server outages: reported in a few log lines, fast jittered retries of
//!   the reconciles, a single probe that says when it is back (and wakes the watches).
//! - `backoff.rs`: the one exponential backoff every retry uses (first delay, cap, jitter),
//!   and the random numbers for jitter.
//! - `expiring.rs`: remembered writes and failures in maps whose entries expire (bounded
//!   memory), and how those maps name an object.
//!
//! What the reconciles remember (expectations, statuses, refusals, ...) is not here but beside
//! them, in [`crate::reconcile::memory`], and the Events they write are theirs too
//! ([`crate::reconcile::events`]); the scheduler every reconcile waits in is
//! [`crate::scheduler`].

pub mod backoff;
pub mod cache;
pub mod expiring;
pub mod outage;
pub mod store;
pub mod undecodable;
pub mod watch_retry;
pub mod watches;
