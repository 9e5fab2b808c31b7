//! Around kube-runtime.

pub mod cache;
pub mod context;
pub mod events;
pub mod expiring;
pub mod outage;
pub mod owner_index;
pub mod refusals;
pub mod retry;
pub mod watches;
