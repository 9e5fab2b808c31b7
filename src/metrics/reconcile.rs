//! controller-runtime's reconcile series (`pkg/internal/controller/metrics/metrics.go` of
//! kubernetes-sigs/controller-runtime v0.24) and its leader-election gauge
//! (`pkg/metrics/leaderelection.go`): the same names, types, label sets, buckets and help
//! texts, so that kubebuilder's dashboards and alerts read this manager unchanged.
//!
//! A controller's series appear when it starts ([`ReconcileSeries::start`], as
//! controller-runtime's `initMetrics` runs in `Controller.Start`), so a standby replica, whose
//! controllers wait for the Lease, exports none of them; `controller_runtime_reconcile_time_seconds`
//! appears with the first reconcile, as a client_golang histogram vector does.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::{Metrics, help};

/// `controller_runtime_reconcile_time_seconds`' buckets, controller-runtime's own.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// How a reconciliation ended, as controller-runtime's `reconcileHandler` labels it: by what
/// the reconcile asked of the queue, not by whether its object's status is final (that is
/// `math_controller_reconcile_progress_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done until the next watch event (controller-runtime: a zero `Result`, no error).
    Success,
    /// Asked to be run again after a delay it chose (`Result{RequeueAfter: d}`), e.g. a
    /// refused write's retry or a recheck.
    RequeueAfter,
    /// Asked to be run again through the rate limiter's per-object backoff
    /// (`Result{Requeue: true}`, `AddRateLimited`): a 409 Conflict retried quietly.
    Requeue,
    /// Failed; the string is a short, fixed reason (the error's kind, e.g. `"api"`), used as a
    /// label of our own series, so it must not contain object names.
    Error(&'static str),
}

impl ReconcileResult {
    /// The `result` label.
    pub fn label(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::Error(_) => "error",
        }
    }
}

/// The `result` values controller-runtime creates at zero when a controller starts, in its
/// order.
pub const RESULTS: [&str; 4] = ["error", "requeue_after", "requeue", "success"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ControllerLabels {
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

type PerController<M> = Family<ControllerLabels, M>;

fn reconcile_time() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// Each series' name (unprefixed) and help text, as controller-runtime registers them.
const TOTAL: (&str, &str) = (
    "controller_runtime_reconcile",
    "Total number of reconciliations per controller",
);
const ERRORS: (&str, &str) = (
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
);
const TERMINAL: (&str, &str) = (
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
);
const PANICS: (&str, &str) = (
    "controller_runtime_reconcile_panics",
    "Total number of reconciliation panics per controller",
);
const TIME: (&str, &str) = (
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
);
const MAX_CONCURRENT: (&str, &str) = (
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
);
const ACTIVE: (&str, &str) = (
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
);
const TIMEOUTS: (&str, &str) = (
    "controller_runtime_reconcile_timeouts",
    "Total number of reconciliation timeouts per controller",
);
const LEADER: (&str, &str) = (
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 \
     indicates master. 'name' is the string used to identify the lease. Please make sure to \
     group by name.",
);

/// The reconcile series of every controller, and the leader gauge.
pub(super) struct ReconcileSeries {
    total: Family<ResultLabels, Counter>,
    errors: PerController<Counter>,
    terminal: PerController<Counter>,
    panics: PerController<Counter>,
    timeouts: PerController<Counter>,
    time: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    max_concurrent: PerController<Gauge>,
    active: PerController<Gauge>,
    leader: Family<LeaseLabels, Gauge>,
}

impl ReconcileSeries {
    /// Registers the series (unprefixed, as controller-runtime names them, with its help
    /// texts); none has a sample until a controller starts ([`ReconcileSeries::start`]).
    pub fn register(registry: &mut Registry) -> Self {
        let s = ReconcileSeries {
            total: Family::default(),
            errors: Family::default(),
            terminal: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            time: Family::new_with_constructor(reconcile_time),
            max_concurrent: Family::default(),
            active: Family::default(),
            leader: Family::default(),
        };
        // The encoder appends `_total` to a counter's name.
        let r = registry;
        help::register(r, TOTAL, s.total.clone());
        help::register(r, ERRORS, s.errors.clone());
        help::register(r, TERMINAL, s.terminal.clone());
        help::register(r, PANICS, s.panics.clone());
        help::register(r, TIME, s.time.clone());
        help::register(r, MAX_CONCURRENT, s.max_concurrent.clone());
        help::register(r, ACTIVE, s.active.clone());
        help::register(r, TIMEOUTS, s.timeouts.clone());
        help::register(r, LEADER, s.leader.clone());
        s
    }

    /// `controller` starts with `max` reconciles at once: its series, at zero (what
    /// controller-runtime's `initMetrics` creates when a controller starts).
    pub fn start(&self, controller: &'static str, max: i64) {
        let labels = ControllerLabels { controller };
        for result in RESULTS {
            let _ = self
                .total
                .get_or_create(&ResultLabels { controller, result });
        }
        for family in [&self.errors, &self.terminal, &self.panics, &self.timeouts] {
            let _ = family.get_or_create(&labels);
        }
        self.max_concurrent.get_or_create(&labels).set(max);
        let _ = self.active.get_or_create(&labels);
    }

    pub fn set_leader(&self, lease: &str, leader: bool) {
        let labels = LeaseLabels {
            name: lease.to_string(),
        };
        self.leader.get_or_create(&labels).set(i64::from(leader));
    }

    fn started(&self, controller: &'static str) {
        self.active
            .get_or_create(&ControllerLabels { controller })
            .inc();
    }

    fn finished(&self, controller: &'static str, seconds: f64, result: &'static str) {
        let labels = ControllerLabels { controller };
        self.active.get_or_create(&labels).dec();
        self.time.get_or_create(&labels).observe(seconds);
        let result = ResultLabels { controller, result };
        self.total.get_or_create(&result).inc();
        if result.result == "error" {
            self.errors.get_or_create(&labels).inc();
        }
    }

    fn panicked(&self, controller: &'static str) {
        self.panics
            .get_or_create(&ControllerLabels { controller })
            .inc();
    }
}

impl Metrics {
    /// Marks the start of a reconciliation; finish the returned timer with its result. Holding
    /// the timer across the reconcile future (rather than recording afterwards) is what makes a
    /// reconciliation that is dropped mid-way show up (an `error`, reason `cancelled`), and one
    /// that panicked, in `controller_runtime_reconcile_panics_total`.
    pub fn reconcile_started(&self, controller: &'static str) -> ReconcileTimer {
        self.inner.reconcile.started(controller);
        ReconcileTimer {
            metrics: self.clone(),
            controller,
            start: Instant::now(),
            finished: false,
        }
    }

    /// Records whether this replica holds the Lease `lease`, for
    /// `leader_election_master_status{name}` (like controller-runtime, no series without leader
    /// election).
    pub fn set_leader(&self, lease: &str, leader: bool) {
        self.inner.reconcile.set_leader(lease, leader);
    }
}

/// A reconciliation in progress; see [`Metrics::reconcile_started`].
#[must_use = "finish the timer with the reconciliation's result"]
pub struct ReconcileTimer {
    metrics: Metrics,
    controller: &'static str,
    start: Instant,
    finished: bool,
}

impl ReconcileTimer {
    /// Records the duration and the result, and ends the active-worker count.
    pub fn finish(mut self, result: ReconcileResult) {
        self.finished = true;
        if let ReconcileResult::Error(reason) = result {
            self.metrics.reconcile_error(self.controller, reason);
        }
        self.record(result.label());
    }

    fn record(&self, result: &'static str) {
        let seconds = self.start.elapsed().as_secs_f64();
        (self.metrics.inner.reconcile).finished(self.controller, seconds, result);
    }
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if std::thread::panicking() {
            // Dropped while unwinding: the reconcile panicked. controller-runtime counts a
            // recovered panic as a panic and as an error.
            self.metrics.inner.reconcile.panicked(self.controller);
            self.metrics.reconcile_error(self.controller, "panic");
            self.record("error");
        } else {
            // Stopped half-way by a shutdown's deadline or a lost Lease. controller-runtime
            // has no such end (it waits for its workers, or exits): there the reconcile's
            // context is cancelled, its requests fail and it returns that error.
            self.metrics.reconcile_error(self.controller, "cancelled");
            self.record("error");
        }
    }
}
