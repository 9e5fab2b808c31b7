//! Around kube-runtime.

pub mod context;
pub mod events;
pub mod expiring;
pub mod outage;
pub mod owner_index;
pub mod refusals;
pub mod watches;
