//! math-controller: a Kubernetes controller manager for the kubebuilder hands-on in which a
//! Fermat owns Tuples and a Tuple owns Numbers. See README.md for the tour.

pub mod api;
pub mod children;
pub mod cli;
pub mod client;
pub mod context;
pub mod error;
pub mod events;
pub mod fermat;
pub mod health;
pub mod leader;
pub mod manager;
pub mod math;
pub mod memory;
pub mod metrics;
pub mod metrics_auth;
pub mod number;
pub mod outage;
pub mod owners;
pub mod refusals;
pub mod replan;
pub mod serving;
pub mod shutdown;
pub mod startup;
pub mod status;
pub mod telemetry;
pub mod tls;
pub mod tree;
pub mod tuple;
pub mod watches;
pub mod writes;
