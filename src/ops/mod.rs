//! Running in a cluster.

pub mod client;
pub mod health;
pub mod leader;
pub mod manager;
pub mod secure_metrics;
pub mod serving;
pub mod shutdown;
pub mod startup;
pub mod telemetry;
