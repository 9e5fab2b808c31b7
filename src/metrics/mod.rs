//! Prometheus metrics of the manager, in the dialect kubebuilder users know.
//!
//! What a controller-runtime v0.24 manager exports under the same names, types, labels,
//! buckets and help texts ([`reconcile`]: `controller_runtime_reconcile_*`,
//! `controller_runtime_*_workers`, `leader_election_master_status`; [`workqueue`]:
//! `workqueue_*`, measured on each controller's gate; [`process`]: `process_*`;
//! [`rest_client`]: `rest_client_requests_total`, counted by a layer of the manager's client;
//! [`certwatcher`]: `certwatcher_*`, the metrics certificate's reads), so that kubebuilder's
//! dashboards and alerts work unchanged; and under `math_controller_*` what only this manager
//! has to say ([`ours`]): where each reconcile left its object's status, the write requests by
//! kind and operation (how an operator checks on a live cluster that a converged cluster costs
//! zero writes), throttled requests, errors by reason, what it remembers, the fair queues, log
//! lines dropped. docs/operations.md has the table.
//!
//! A controller's series appear when it starts ([`Metrics::queue`]), as controller-runtime
//! creates them in `Controller.Start`: a standby replica, waiting for the Lease, exports the
//! process's and the client's series and the leader gauge, and no controller's.
//!
//! Every series lives in a private [`Registry`] owned by [`Metrics`], never in a global one, so
//! tests can run several managers in one process and read each one's numbers separately.
//! `/metrics` serves [`Metrics::encode`] in either text format (the `serving` crate's
//! `exposition`).

pub mod certwatcher;
mod help;
mod ours;
pub mod process;
pub mod reconcile;
pub mod rest_client;
pub mod workqueue;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::registry::Registry;

pub use certwatcher::CertificateReads;
pub use ours::{MEMORIES, PREFIX, QueueNow, StatusProgress, WriteKind};
pub use reconcile::{ReconcileResult, ReconcileTimer};
pub use workqueue::{Processing, QueueMetrics};

use ours::{OurSeries, WriteLabels};
use reconcile::ReconcileSeries;
use rest_client::RestClientSeries;
use workqueue::WorkqueueSeries;

/// The controllers the manager runs; each one's series are created with value zero when it
/// starts, so that `rate()` and absence alerts work before its first reconciliation.
pub const CONTROLLERS: [&str; 3] = ["number", "tuple", "fermat"];

struct Inner {
    registry: Registry,
    reconcile: ReconcileSeries,
    workqueue: WorkqueueSeries,
    rest_client: RestClientSeries,
    certificates: CertificateReads,
    ours: OurSeries,
    write_total: AtomicU64,
}

/// The manager's metrics. Cheap to clone (an `Arc`); create one per process and hand clones to
/// the controllers and the `/metrics` server.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Registers every family; a controller's series are created when it starts
    /// ([`Metrics::queue`]).
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let reconcile = ReconcileSeries::register(&mut registry);
        let workqueue = WorkqueueSeries::register(&mut registry);
        let rest_client = RestClientSeries::register(&mut registry);
        let certificates = CertificateReads::register(&mut registry);
        registry.register_collector(Box::new(process::ProcessCollector));
        let ours = OurSeries::register(registry.sub_registry_with_prefix(PREFIX));
        Metrics {
            inner: Arc::new(Inner {
                registry,
                reconcile,
                workqueue,
                rest_client,
                certificates,
                ours,
                write_total: AtomicU64::new(0),
            }),
        }
    }

    /// `controller` starts: its series, at zero, and the workqueue series of its queue (its
    /// gate), which runs `concurrency` reconciles at once
    /// (`controller_runtime_max_concurrent_reconciles`; 0: no bound).
    pub fn queue(&self, controller: &'static str, concurrency: usize) -> QueueMetrics {
        let max = i64::try_from(concurrency).unwrap_or(i64::MAX);
        self.inner.reconcile.start(controller, max);
        self.inner.ours.start(controller);
        self.inner.workqueue.queue(controller)
    }

    /// A reconcile of `controller` ended without an error and left its object's status
    /// `progress` (`math_controller_reconcile_progress_total`).
    pub fn reconciled(&self, controller: &'static str, progress: StatusProgress) {
        self.inner.ours.progress(controller, progress);
    }

    /// Counts one request of the manager's client, as client-go's `rest_client_requests_total`
    /// does: each try, by status `code` (`<error>` when no answer came), `method` and `host`.
    pub fn rest_request(&self, code: &str, method: &str, host: &str) {
        self.inner.rest_client.request(code, method, host);
    }

    /// Where the metrics certificate's reads are counted (`certwatcher_*`).
    pub fn certificate_reads(&self) -> CertificateReads {
        self.inner.certificates.clone()
    }

    /// A reconcile of `controller` failed for `reason` (ours, by reason; controller-runtime's
    /// error counter is counted with the result).
    fn reconcile_error(&self, controller: &'static str, reason: &'static str) {
        self.inner.ours.error(controller, reason);
    }

    /// Counts one write request issued by `controller` on an object of `kind` (e.g. `"Number"`,
    /// `"Event"`).
    pub fn write(&self, controller: &'static str, kind: &'static str, write: WriteKind) {
        let labels = WriteLabels {
            controller,
            kind,
            operation: write,
        };
        self.inner.ours.writes.get_or_create(&labels).inc();
        self.inner.write_total.fetch_add(1, Ordering::Relaxed);
    }

    /// A trigger of a waiting parent was put off ([`crate::reconcile::memory::replans`]).
    pub fn replan_put_off(&self, controller: &'static str) {
        self.inner.ours.put_off(controller);
    }

    /// The API server answered a request 429 Too Many Requests.
    pub fn throttled(&self) {
        self.inner.ours.throttled.inc();
    }

    /// What a fair queue calls with each waiter's wait when it gets its turn.
    pub fn fair_queue_waits(&self, queue: &'static str) -> Arc<dyn Fn(Duration) + Send + Sync> {
        self.inner.ours.waits(queue)
    }

    /// Show a fair queue's depth, flows and longest wait, read by `now` at each scrape.
    pub fn show_fair_queue(
        &self,
        queue: &'static str,
        now: impl Fn() -> QueueNow + Send + Sync + 'static,
    ) {
        if let Ok(mut queues) = self.inner.ours.fair_queues.0.lock() {
            queues.retain(|(q, _)| *q != queue);
            queues.push((queue, Box::new(now)));
        }
    }

    /// Records how many entries of one of [`MEMORIES`] the manager holds.
    pub fn set_remembered(&self, memory: &'static str, entries: usize) {
        let entries = i64::try_from(entries).unwrap_or(i64::MAX);
        self.inner.ours.remembered(memory, entries);
    }

    /// How many stored objects of `kind` the manager cannot decode.
    pub fn set_undecodable(&self, kind: &'static str, objects: usize) {
        let objects = i64::try_from(objects).unwrap_or(i64::MAX);
        self.inner.ours.undecodable(kind, objects);
    }

    /// Where `math_controller_log_lines_dropped_total` is read from; the first call counts,
    /// later ones are ignored (one log writer per process).
    pub fn count_dropped_log_lines(&self, dropped: impl Fn() -> u64 + Send + Sync + 'static) {
        let _ = self.inner.ours.log_lines_dropped.0.set(Box::new(dropped));
    }

    /// The total of write requests counted so far, over all labels; tests use it to check that a
    /// converged cluster costs no writes.
    pub fn write_total(&self) -> u64 {
        self.inner.write_total.load(Ordering::Relaxed)
    }

    /// The OpenMetrics text exposition of every series.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; the error type is fmt::Error only because the
        // encoder is generic over writers.
        if prometheus_client::encoding::text::encode(&mut out, &self.inner.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests;
