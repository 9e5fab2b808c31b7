//! Prometheus metrics of the manager.
//!
//! The series mirror what a controller-runtime manager exports (reconciliations by result,
//! reconcile latency, work in progress) so that dashboards and alerts written for kubebuilder
//! projects translate directly, plus a counter of the write requests the manager issues: the
//! design promises "a converged cluster costs zero writes", and this counter is how an operator
//! checks that promise on a live cluster.
//!
//! Every series lives in a private [`Registry`] owned by [`Metrics`], never in a global one, so
//! tests can run several managers in one process and read each one's numbers separately.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, EncodeMetric,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

/// Every series name starts with this, as Prometheus' naming guide asks for one prefix per
/// application.
pub const PREFIX: &str = "math_controller";

/// The controllers the manager runs; their series are created at start-up with value zero so that
/// `rate()` and absence alerts work before the first reconciliation.
pub const CONTROLLERS: [&str; 3] = ["number", "tuple", "fermat"];

/// The content type of [`Metrics::encode`]'s output, for the `/metrics` response.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How a reconciliation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Converged, or nothing to do until the next watch event.
    Success,
    /// Not finished yet (waiting for children); asked to be run again.
    Requeue,
    /// Failed; the string is a short, fixed reason (the error's kind, e.g. `"api"`,
    /// `"conflict"`), used as a label, so it must not contain object names or messages.
    Error(&'static str),
}

/// The kind of a write request, the `operation` label of `math_controller_write_requests_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// POST of a new object (a child).
    Create,
    /// PATCH of an object's metadata or spec (correcting a drifted child, adopting one).
    Patch,
    /// PATCH of the `/status` subresource.
    PatchStatus,
    /// DELETE of an object (an unwanted child).
    Delete,
    /// An Event (events.k8s.io) recorded for `kubectl describe`.
    Event,
}

impl WriteKind {
    /// All kinds, to pre-create their series.
    pub const ALL: [WriteKind; 5] = [
        WriteKind::Create,
        WriteKind::Patch,
        WriteKind::PatchStatus,
        WriteKind::Delete,
        WriteKind::Event,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteKind::Create => "create",
            WriteKind::Patch => "patch",
            WriteKind::PatchStatus => "patch_status",
            WriteKind::Delete => "delete",
            WriteKind::Event => "event",
        }
    }
}

impl EncodeLabelValue for WriteKind {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelValueEncoder,
    ) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WriteLabels {
    controller: &'static str,
    kind: &'static str,
    operation: WriteKind,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemoryLabels {
    memory: &'static str,
}

/// What the manager remembers between reconciles, the `memory` label of
/// `math_controller_remembered_entries`: child writes and status writes whose watch echo has
/// not arrived yet, waiting statuses written lately (to space progress reports), and objects
/// whose reconciles failed (for their backoff).
pub const MEMORIES: [&str; 4] = [
    "child_writes",
    "status_writes",
    "progress_reports",
    "failures",
];

/// The fair queues ([`Metrics::show_fair_queue`]): `writes` (the request slots) and one per
/// controller's reconciles (`number`, `tuple`, `fermat`). A fixed set: flows (namespaces)
/// are never labels, so the series stay bounded however many users the cluster has.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
}

/// A fair queue as a scrape sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueNow {
    /// Waiters now.
    pub waiting: usize,
    /// Flows (namespaces) with waiters now.
    pub flows: usize,
    /// How long the longest waiter has waited so far, in seconds.
    pub longest_wait: f64,
}

type ReadQueue = Box<dyn Fn() -> QueueNow + Send + Sync>;

/// One gauge of the fair queues: its name, help, unit, and how it is read from a queue.
type QueueGauge = (
    &'static str,
    &'static str,
    Option<Unit>,
    fn(&QueueNow) -> f64,
);

/// The fair queues, read at each scrape (so that the longest wait is the one of the moment).
#[derive(Default)]
struct FairQueues(std::sync::Mutex<Vec<(&'static str, ReadQueue)>>);

impl std::fmt::Debug for FairQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FairQueues").finish_non_exhaustive()
    }
}

impl Collector for FairQueues {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now: Vec<(&'static str, QueueNow)> = match self.0.lock() {
            Ok(queues) => queues.iter().map(|(q, read)| (*q, read())).collect(),
            Err(_) => Vec::new(),
        };
        let gauges: [QueueGauge; 3] = [
            (
                "fair_queue_depth",
                "Requests (writes) or reconciles waiting for their turn now, by queue",
                None,
                |q| q.waiting as f64,
            ),
            (
                "fair_queue_flows",
                "Flows (namespaces) with something waiting now, by queue",
                None,
                |q| q.flows as f64,
            ),
            (
                "fair_queue_longest_wait",
                "How long the longest waiter of each queue has waited so far",
                Some(Unit::Seconds),
                |q| q.longest_wait,
            ),
        ];
        for (name, help, unit, value) in gauges {
            let mut family =
                encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
            for (queue, q) in &now {
                let labels = QueueLabels { queue };
                ConstGauge::new(value(q)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

/// Result label values; `cancelled` is a reconciliation whose future was dropped before it
/// finished (shutdown, or the controller stopped because leadership was lost).
const RESULTS: [&str; 4] = ["success", "requeue", "error", "cancelled"];

/// The writes each controller is designed to issue (a parent creates, corrects and deletes its
/// children, every controller patches its own kind's status and records Events), created at zero.
const EXPECTED_WRITES: [(&str, &str, WriteKind); 12] = [
    ("number", "Number", WriteKind::PatchStatus),
    ("number", "Event", WriteKind::Event),
    ("tuple", "Number", WriteKind::Create),
    ("tuple", "Number", WriteKind::Patch),
    ("tuple", "Number", WriteKind::Delete),
    ("tuple", "Tuple", WriteKind::PatchStatus),
    ("tuple", "Event", WriteKind::Event),
    ("fermat", "Tuple", WriteKind::Create),
    ("fermat", "Tuple", WriteKind::Patch),
    ("fermat", "Tuple", WriteKind::Delete),
    ("fermat", "Fermat", WriteKind::PatchStatus),
    ("fermat", "Event", WriteKind::Event),
];

fn histogram() -> Histogram {
    // 0.5 ms .. ~16 s: a Number reconcile takes well under a millisecond against a cache, a
    // Fermat with hundreds of children can take seconds when it has to create them all.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

struct Inner {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    in_flight: Family<ControllerLabels, Gauge>,
    writes: Family<WriteLabels, Counter>,
    leader: Gauge,
    remembered: Family<MemoryLabels, Gauge>,
    put_off: Family<ControllerLabels, Counter>,
    throttled: Counter,
    queue_waits: Family<QueueLabels, Histogram, fn() -> Histogram>,
    fair_queues: Arc<FairQueues>,
    write_total: AtomicU64,
    log_lines_dropped: Arc<LogLinesDropped>,
}

/// Read at each scrape from the log writer (`crate::ops::telemetry`), which counts the lines it
/// dropped; 0 until [`Metrics::count_dropped_log_lines`] is given that count.
#[derive(Default)]
struct LogLinesDropped(OnceLock<Box<dyn Fn() -> u64 + Send + Sync>>);

impl std::fmt::Debug for LogLinesDropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LogLinesDropped").finish_non_exhaustive()
    }
}

impl Collector for LogLinesDropped {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let dropped = ConstCounter::new(self.0.get().map_or(0, |count| count()));
        let metric = encoder.encode_descriptor(
            "log_lines_dropped",
            "Log lines dropped because stderr was not read fast enough (the log writer's queue \
             was full); the manager never waits for its log",
            None,
            dropped.metric_type(),
        )?;
        dropped.encode(metric)
    }
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
    /// Registers every series, with zero values for the known controllers so that dashboards
    /// show them from the first scrape.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);

        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "reconcile",
            "Reconciliations by controller and result (success, requeue, error, cancelled)",
            reconciles.clone(),
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Failed reconciliations by controller and error reason",
            errors.clone(),
        );
        let duration =
            Family::<ControllerLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                histogram,
            );
        registry.register_with_unit(
            "reconcile_duration",
            "Time spent in one reconciliation, by controller",
            Unit::Seconds,
            duration.clone(),
        );
        let in_flight = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "reconcile_in_flight",
            "Reconciliations running right now, by controller",
            in_flight.clone(),
        );
        let writes = Family::<WriteLabels, Counter>::default();
        registry.register(
            "write_requests",
            "Write requests issued to the API server, by controller, object kind and operation \
             (create, patch, patch_status, delete, event)",
            writes.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader-election lease (or runs without leader \
             election), 0 while it stands by",
            leader.clone(),
        );
        let remembered = Family::<MemoryLabels, Gauge>::default();
        registry.register(
            "remembered_entries",
            "Entries the manager keeps between reconciles (child_writes and status_writes not \
             echoed by the watch yet, recent progress_reports, failures for the backoff); they \
             expire, so this stays bounded",
            remembered.clone(),
        );
        for memory in MEMORIES {
            let _ = remembered.get_or_create(&MemoryLabels { memory });
        }
        let put_off = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "replans_put_off",
            "Triggers of a parent waiting for its children that were put off because it was \
             planned a moment ago (at most ten times what its plan cost, at most a second), by \
             controller",
            put_off.clone(),
        );
        let log_lines_dropped = Arc::new(LogLinesDropped::default());
        registry.register_collector(Box::new(log_lines_dropped.clone()));
        let throttled = Counter::default();
        registry.register(
            "api_throttled",
            "Requests the API server answered 429 Too Many Requests (API Priority and \
             Fairness over the manager's share), each then tried again by the client (at most \
             ten times, a second apart) or by the reconcile's backoff",
            throttled.clone(),
        );
        let queue_waits =
            Family::<QueueLabels, Histogram, fn() -> Histogram>::new_with_constructor(histogram);
        registry.register_with_unit(
            "fair_queue_wait",
            "How long each request (queue writes) or reconcile (queue number, tuple, fermat) \
             waited for its turn in the fair queue",
            Unit::Seconds,
            queue_waits.clone(),
        );
        let fair_queues = Arc::new(FairQueues::default());
        registry.register_collector(Box::new(fair_queues.clone()));
        registry.register(
            "build",
            "Version of the running manager",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );

        for controller in CONTROLLERS {
            for result in RESULTS {
                let _ = reconciles.get_or_create(&ResultLabels { controller, result });
            }
            let _ = duration.get_or_create(&ControllerLabels { controller });
            let _ = in_flight.get_or_create(&ControllerLabels { controller });
            let _ = put_off.get_or_create(&ControllerLabels { controller });
        }
        for (controller, kind, operation) in EXPECTED_WRITES {
            let _ = writes.get_or_create(&WriteLabels {
                controller,
                kind,
                operation,
            });
        }

        Metrics {
            inner: Arc::new(Inner {
                registry,
                reconciles,
                errors,
                duration,
                in_flight,
                writes,
                leader,
                remembered,
                put_off,
                throttled,
                queue_waits,
                fair_queues,
                write_total: AtomicU64::new(0),
                log_lines_dropped,
            }),
        }
    }

    /// Marks the start of a reconciliation; finish the returned timer with its result. Holding
    /// the timer across the reconcile future (rather than recording afterwards) is what makes a
    /// reconciliation that is dropped mid-way show up, as `cancelled`.
    pub fn reconcile_started(&self, controller: &'static str) -> ReconcileTimer {
        self.inner
            .in_flight
            .get_or_create(&ControllerLabels { controller })
            .inc();
        ReconcileTimer {
            metrics: self.clone(),
            controller,
            start: Instant::now(),
            finished: false,
        }
    }

    /// Counts one write request issued by `controller` on an object of `kind` (e.g. `"Number"`,
    /// `"Event"`).
    pub fn write(&self, controller: &'static str, kind: &'static str, write: WriteKind) {
        self.inner
            .writes
            .get_or_create(&WriteLabels {
                controller,
                kind,
                operation: write,
            })
            .inc();
        self.inner.write_total.fetch_add(1, Ordering::Relaxed);
    }

    /// Records whether this replica leads, for `math_controller_leader`.
    /// A trigger of a waiting parent was put off ([`crate::runtime::replan`]).
    pub fn replan_put_off(&self, controller: &'static str) {
        self.inner
            .put_off
            .get_or_create(&ControllerLabels { controller })
            .inc();
    }

    /// The API server answered a request 429 Too Many Requests.
    pub fn throttled(&self) {
        self.inner.throttled.inc();
    }

    /// What a fair queue calls with each waiter's wait when it gets its turn.
    pub fn fair_queue_waits(&self, queue: &'static str) -> Arc<dyn Fn(Duration) + Send + Sync> {
        let histogram = self
            .inner
            .queue_waits
            .get_or_create(&QueueLabels { queue })
            .clone();
        Arc::new(move |waited: Duration| histogram.observe(waited.as_secs_f64()))
    }

    /// Show a fair queue's depth, flows and longest wait, read by `now` at each scrape.
    pub fn show_fair_queue(
        &self,
        queue: &'static str,
        now: impl Fn() -> QueueNow + Send + Sync + 'static,
    ) {
        if let Ok(mut queues) = self.inner.fair_queues.0.lock() {
            queues.retain(|(q, _)| *q != queue);
            queues.push((queue, Box::new(now)));
        }
    }

    pub fn set_leader(&self, leader: bool) {
        self.inner.leader.set(i64::from(leader));
    }

    /// Records how many entries of one of [`MEMORIES`] the manager holds.
    pub fn set_remembered(&self, memory: &'static str, entries: usize) {
        let entries = i64::try_from(entries).unwrap_or(i64::MAX);
        self.inner
            .remembered
            .get_or_create(&MemoryLabels { memory })
            .set(entries);
    }

    /// Where `math_controller_log_lines_dropped_total` is read from; the first call counts,
    /// later ones are ignored (one log writer per process).
    pub fn count_dropped_log_lines(&self, dropped: impl Fn() -> u64 + Send + Sync + 'static) {
        let _ = self.inner.log_lines_dropped.0.set(Box::new(dropped));
    }

    /// The total of write requests counted so far, over all labels; tests use it to check that a
    /// converged cluster costs no writes.
    pub fn write_total(&self) -> u64 {
        self.inner.write_total.load(Ordering::Relaxed)
    }

    /// The OpenMetrics text exposition of every series (see [`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; the error type is fmt::Error only because the
        // encoder is generic over writers.
        if prometheus_client::encoding::text::encode(&mut out, &self.inner.registry).is_err() {
            out.clear();
        }
        out
    }

    fn finish(&self, controller: &'static str, elapsed: f64, result: &'static str) {
        let labels = ControllerLabels { controller };
        self.inner.in_flight.get_or_create(&labels).dec();
        self.inner.duration.get_or_create(&labels).observe(elapsed);
        self.inner
            .reconciles
            .get_or_create(&ResultLabels { controller, result })
            .inc();
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
    /// Records the duration and the result, and ends the in-flight count.
    pub fn finish(mut self, result: ReconcileResult) {
        self.finished = true;
        let elapsed = self.start.elapsed().as_secs_f64();
        let label = match result {
            ReconcileResult::Success => "success",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::Error(reason) => {
                self.metrics
                    .inner
                    .errors
                    .get_or_create(&ErrorLabels {
                        controller: self.controller,
                        reason,
                    })
                    .inc();
                "error"
            }
        };
        self.metrics.finish(self.controller, elapsed, label);
    }
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        if !self.finished {
            let elapsed = self.start.elapsed().as_secs_f64();
            self.metrics.finish(self.controller, elapsed, "cancelled");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_log_lines_are_read_from_the_log_writer_at_each_scrape() {
        let metrics = Metrics::new();
        assert!(
            metrics
                .encode()
                .contains("\nmath_controller_log_lines_dropped_total 0\n"),
            "{}",
            metrics.encode()
        );
        let dropped = Arc::new(AtomicU64::new(3));
        let source = dropped.clone();
        metrics.count_dropped_log_lines(move || source.load(Ordering::Relaxed));
        assert!(
            metrics
                .encode()
                .contains("\nmath_controller_log_lines_dropped_total 3\n")
        );
        dropped.store(8, Ordering::Relaxed);
        assert!(
            metrics
                .encode()
                .contains("\nmath_controller_log_lines_dropped_total 8\n")
        );
    }

    /// The value of the sample line that starts with `series` (name and labels), if any.
    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }

    #[test]
    fn every_documented_series_has_help_and_type() {
        let m = Metrics::new();
        // The errors family has no series until a first error names its reason.
        m.reconcile_started("number")
            .finish(ReconcileResult::Error("api"));
        let text = m.encode();
        for (name, kind) in [
            ("math_controller_reconcile", "counter"),
            ("math_controller_reconcile_errors", "counter"),
            ("math_controller_reconcile_duration_seconds", "histogram"),
            ("math_controller_reconcile_in_flight", "gauge"),
            ("math_controller_write_requests", "counter"),
            ("math_controller_leader", "gauge"),
            ("math_controller_replans_put_off", "counter"),
            ("math_controller_build", "info"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name} {kind} missing in\n{text}"
            );
            assert!(text.contains(&format!("# HELP {name} ")), "{name} help");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn known_controllers_start_at_zero() {
        let text = Metrics::new().encode();
        for c in CONTROLLERS {
            for r in RESULTS {
                let s =
                    format!("math_controller_reconcile_total{{controller=\"{c}\",result=\"{r}\"}}");
                assert_eq!(sample(&text, &s), Some(0.0), "{s}");
            }
            let s = format!("math_controller_reconcile_in_flight{{controller=\"{c}\"}}");
            assert_eq!(sample(&text, &s), Some(0.0));
            let s = format!("math_controller_replans_put_off_total{{controller=\"{c}\"}}");
            assert_eq!(sample(&text, &s), Some(0.0), "{text}");
            let s =
                format!("math_controller_reconcile_duration_seconds_count{{controller=\"{c}\"}}");
            assert_eq!(sample(&text, &s), Some(0.0));
        }
    }

    #[test]
    fn timer_records_result_duration_and_in_flight() {
        let m = Metrics::new();
        let a = m.reconcile_started("number");
        let b = m.reconcile_started("number");
        let text = m.encode();
        assert_eq!(
            sample(
                &text,
                "math_controller_reconcile_in_flight{controller=\"number\"}"
            ),
            Some(2.0)
        );
        a.finish(ReconcileResult::Success);
        b.finish(ReconcileResult::Error("api"));
        m.reconcile_started("tuple")
            .finish(ReconcileResult::Requeue);
        drop(m.reconcile_started("fermat"));

        let text = m.encode();
        let get = |s: &str| sample(&text, s);
        assert_eq!(
            get("math_controller_reconcile_in_flight{controller=\"number\"}"),
            Some(0.0)
        );
        assert_eq!(
            get("math_controller_reconcile_in_flight{controller=\"fermat\"}"),
            Some(0.0)
        );
        assert_eq!(
            get("math_controller_reconcile_total{controller=\"number\",result=\"success\"}"),
            Some(1.0)
        );
        assert_eq!(
            get("math_controller_reconcile_total{controller=\"number\",result=\"error\"}"),
            Some(1.0)
        );
        assert_eq!(
            get("math_controller_reconcile_errors_total{controller=\"number\",reason=\"api\"}"),
            Some(1.0)
        );
        assert_eq!(
            get("math_controller_reconcile_total{controller=\"tuple\",result=\"requeue\"}"),
            Some(1.0)
        );
        assert_eq!(
            get("math_controller_reconcile_total{controller=\"fermat\",result=\"cancelled\"}"),
            Some(1.0)
        );
        assert_eq!(
            get("math_controller_reconcile_duration_seconds_count{controller=\"number\"}"),
            Some(2.0)
        );
    }

    #[test]
    fn writes_are_counted_by_kind_and_operation() {
        let m = Metrics::new();
        m.write("tuple", "Number", WriteKind::Create);
        m.write("tuple", "Number", WriteKind::Create);
        m.write("number", "Number", WriteKind::PatchStatus);
        m.write("fermat", "Event", WriteKind::Event);
        let text = m.encode();
        assert_eq!(
            sample(
                &text,
                "math_controller_write_requests_total{controller=\"tuple\",kind=\"Number\",operation=\"create\"}"
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(
                &text,
                "math_controller_write_requests_total{controller=\"number\",kind=\"Number\",operation=\"patch_status\"}"
            ),
            Some(1.0)
        );
        assert_eq!(m.write_total(), 4);
    }

    #[test]
    fn leader_gauge_follows_set_leader() {
        let m = Metrics::new();
        assert_eq!(sample(&m.encode(), "math_controller_leader"), Some(0.0));
        m.set_leader(true);
        assert_eq!(sample(&m.encode(), "math_controller_leader"), Some(1.0));
    }

    #[test]
    fn separate_instances_do_not_share_values() {
        let a = Metrics::new();
        let b = Metrics::new();
        a.write("tuple", "Number", WriteKind::Delete);
        assert_eq!(a.write_total(), 1);
        assert_eq!(b.write_total(), 0);
    }
}
