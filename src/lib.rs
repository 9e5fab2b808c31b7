//! math-controller: a Kubernetes controller manager for the kubebuilder hands-on in which a
//! Fermat owns Tuples and a Tuple owns Numbers. See README.md for the tour.

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
