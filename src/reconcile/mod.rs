//! How any parent reconciles.

pub mod plan;
pub mod status;
pub mod writes;
