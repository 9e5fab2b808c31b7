//! The HTTP endpoints a Kubernetes controller manager serves beside its controllers, as a
//! kubebuilder project has them: `/healthz` and `/readyz` for the kubelet, `/metrics` for
//! Prometheus (plain, or `--metrics-secure`: HTTPS with every scrape's bearer token checked by
//! the API server), each behind the limits a server reachable from the pod network needs.
//!
//! Generic: the manager hands in what is served (an [`exposition::Encoder`] of its registry, a
//! [`health::ReadyFlag`] it sets once its caches have synced, a `kube::Client` for the reviews)
//! and this crate names no resource kind and keeps no series of its own. A crate of its own so
//! that the manager's crate holds what its controllers run, and these servers are tested alone.
//!
//! - `server.rs`: the accept loop behind every endpoint: header-read, idle and total
//!   deadlines, head size, connection bound with slots kept free (`server/slots.rs`: who
//!   gives way to a newcomer), TLS handshake, shutdown.
//! - `health.rs`: the `/healthz`, `/readyz` and plain `/metrics` routes and their servers,
//!   the `--*-bind-address` values.
//! - `exposition.rs`: the two text formats of `/metrics`, chosen from the `Accept` header.
//! - `secure_metrics/`: TokenReview and SubjectAccessReview, their caches, single flight and
//!   bounds; `tls.rs` the certificate (a directory, reloaded on change, or self-signed).

pub mod exposition;
pub mod health;
pub mod secure_metrics;
pub mod server;

pub use server::{HttpLimits, Transport, serve};
