//! What the reconciles remember between runs, each a part of [`Context`](super::context::Context)
//! with its own tests: the memories that let a parent write the minimum and wait well.
//!
//! - `expectations.rs`: the manager's writes whose echo the watch has not delivered yet
//!   (what controller-runtime users know as expectations): to children, and what a parent
//!   sees of its children through them; to statuses, the status as far as we know, and the
//!   echo recognised as our own.
//! - `failures.rs`: each object's failures in a row, what its backoff grows with, and its
//!   panics, told once.
//! - `refusals.rs`: writes the API server refused: their backoff, and parents in a namespace
//!   being deleted.
//! - `pace.rs`: how a waiting parent's children come along (when a child of each kind last
//!   settled, which caches relist, when it last reported its progress), for whether a
//!   progress report is worth a status write.
//! - `replans.rs`: how soon a waiting parent is planned again (no sooner than ten times what
//!   its last plan cost), and the CPU clock that measures that cost.
//!
//! Their maps expire ([`crate::cluster::expiring`]), so what a deleted object left behind
//! goes too.

pub mod expectations;
pub mod failures;
pub mod pace;
pub mod refusals;
pub mod replans;

use kube::Resource;

use crate::cluster::expiring::object_key;

/// What the memories file an object under: its kind, namespace, name and UID. An object
/// deleted and created again under its name is another object, and starts with nothing of
/// its predecessor's: no backoff, no waiting plan, no progress report, no status on its way
/// (issue 48's N7: by name, a Tuple made again inherited the old one's backoff of minutes).
/// Without a UID (an object built by a test, never one from the API server), its name.
pub(crate) fn memory_key<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    let key = object_key(obj);
    match obj.meta().uid.as_deref() {
        Some(uid) => format!("{key}/{uid}"),
        None => key,
    }
}
