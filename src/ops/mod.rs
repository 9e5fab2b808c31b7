//! Running in a cluster: what people expect of a kubebuilder manager besides its controllers.
//!
//! - `manager.rs`: [`manager::run`]: the probes and metrics servers (the `serving` crate of
//!   this workspace: `/healthz`, `/readyz`, `/metrics` plain or `--metrics-secure` with
//!   TokenReview and SubjectAccessReview, the HTTP limits), leader election, the
//!   controllers and their wiring (one watch per kind shared by the controllers that need it;
//!   why not `.owns()` is said there), a graceful stop.
//! - `startup.rs`: before the controllers start: the API server answers and serves the CRDs
//!   (`--startup-timeout`); the learner's objects are taken over after the workshop.
//! - `workshop.rs`: the learner track in the cluster: its runners' heartbeats, a room's mark,
//!   the objects its controllers wrote (pure decisions).
//! - `shutdown.rs`: how the manager stops: a bounded drain, at once on a lost lease.
//! - `client.rs`: the client's read timeout, the watch timeout that stays below it,
//!   `Retry-After` capped at 1 s.
//! - `token_file.rs`: the bearer token of a `tokenFile` (or a pod's projected token), read
//!   again on a 401.
//! - `telemetry.rs`: logging (text or JSON, `RUST_LOG`), written by a thread of its own.
//! - `leader/`: Lease-based leader election (client-go's algorithm): `mod.rs` the loops,
//!   `lease.rs` the pure decisions, `elector.rs` the requests, `config.rs` and `error.rs`.

pub mod client;
pub mod leader;
pub mod manager;
pub mod shutdown;
pub mod startup;
pub mod telemetry;
pub mod token_file;
pub mod workshop;
