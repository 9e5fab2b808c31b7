//! The `math_controller_*` series: what this manager has to say beyond controller-runtime's
//! series (where each reconcile left its object's status; writes by kind and operation, the
//! answer to "a converged cluster costs zero writes"; throttled requests; errors by reason;
//! what it remembers between reconciles; the fair queues per flow; log lines dropped).
//! Registered under the prefix [`PREFIX`]; a controller's series appear when it starts
//! ([`OurSeries::start`]).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

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

use super::reconcile::ControllerLabels;

/// Every series of ours starts with this, as Prometheus' naming guide asks for one prefix per
/// application.
pub const PREFIX: &str = "math_controller";

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

/// Where a reconcile that ended without an error left its object's status, the `progress`
/// label of `math_controller_reconcile_progress_total`: what controller-runtime's `result`
/// cannot say, since a parent waiting for its children asks for no requeue (its children's
/// watch events bring it back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusProgress {
    /// The status is the answer for the current generation of everything below it.
    Final,
    /// Final for now, but not an answer: blocked until someone acts (a quota, a name owned by
    /// someone else, a child name too long).
    Blocked,
    /// Not final yet: waiting for children to be created or to compute.
    Waiting,
}

impl StatusProgress {
    pub const ALL: [StatusProgress; 3] = [
        StatusProgress::Final,
        StatusProgress::Blocked,
        StatusProgress::Waiting,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StatusProgress::Final => "final",
            StatusProgress::Blocked => "blocked",
            StatusProgress::Waiting => "waiting",
        }
    }
}

impl EncodeLabelValue for StatusProgress {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelValueEncoder,
    ) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProgressLabels {
    controller: &'static str,
    progress: StatusProgress,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct WriteLabels {
    pub controller: &'static str,
    pub kind: &'static str,
    pub operation: WriteKind,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemoryLabels {
    memory: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// The kinds of `math_controller_undecodable_objects`, created at zero.
const KINDS: [&str; 3] = ["Number", "Tuple", "Fermat"];

/// The reasons of `math_controller_reconcile_errors_total`, created at zero so that a
/// dashboard's or an alert's `rate()` has a series before the first error: the error kinds of
/// `crate::error::Error::kind_label` that end a reconcile as an error (a conflict is a requeue),
/// `panic`, and `cancelled` (stopped half-way by a shutdown's deadline or a lost Lease).
pub const ERROR_REASONS: [&str; 7] = [
    "api",
    "transport",
    "invalid_object",
    "not_wired",
    "serialize",
    "panic",
    "cancelled",
];

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

/// The fair queues ([`super::Metrics::show_fair_queue`]): `writes` (the request slots) and one
/// per controller's reconciles (`number`, `tuple`, `fermat`). A fixed set: flows (namespaces)
/// are never labels, so the series stay bounded however many users the cluster has.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FairQueueLabels {
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

const FAIR_GAUGES: [QueueGauge; 3] = [
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

/// The fair queues, read at each scrape (so that the longest wait is the one of the moment).
#[derive(Default)]
pub(super) struct FairQueues(pub Mutex<Vec<(&'static str, ReadQueue)>>);

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
        for (name, help, unit, value) in FAIR_GAUGES {
            let mut family =
                encoder.encode_descriptor(name, help, unit.as_ref(), MetricType::Gauge)?;
            for (queue, q) in &now {
                let labels = FairQueueLabels { queue };
                ConstGauge::new(value(q)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// Read at each scrape from the log writer (`crate::ops::telemetry`), which counts the lines it
/// dropped; 0 until [`super::Metrics::count_dropped_log_lines`] is given that count.
#[derive(Default)]
pub(super) struct LogLinesDropped(pub OnceLock<Box<dyn Fn() -> u64 + Send + Sync>>);

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

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

/// `math_controller_undecodable_objects{kind}`, registered in `r` with each kind at zero.
fn undecodable_objects(r: &mut Registry) -> Family<KindLabels, Gauge> {
    let family = Family::<KindLabels, Gauge>::default();
    let help = "Stored objects the manager's types cannot decode (stored under an older or \
                looser schema), by kind: each is named once in the log and in a Warning Event, \
                left alone, and read again when it changes";
    r.register("undecodable_objects", help, family.clone());
    for kind in KINDS {
        let _ = family.get_or_create(&KindLabels { kind });
    }
    family
}

fn wait_histogram() -> Histogram {
    // 0.5 ms .. ~16 s: a request waits for a slot for well under a millisecond when the
    // manager is idle, seconds behind a big Fermat's backlog.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Our families.
pub(super) struct OurSeries {
    progress: Family<ProgressLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    pub writes: Family<WriteLabels, Counter>,
    remembered: Family<MemoryLabels, Gauge>,
    undecodable: Family<KindLabels, Gauge>,
    put_off: Family<ControllerLabels, Counter>,
    pub throttled: Counter,
    waits: Family<FairQueueLabels, Histogram, fn() -> Histogram>,
    pub fair_queues: Arc<FairQueues>,
    pub log_lines_dropped: Arc<LogLinesDropped>,
}

impl OurSeries {
    /// Registers our families in `registry` (already prefixed with [`PREFIX`]).
    pub fn register(r: &mut Registry) -> Self {
        let s = OurSeries {
            progress: Family::default(),
            errors: Family::default(),
            writes: Family::default(),
            remembered: Family::default(),
            undecodable: undecodable_objects(r),
            put_off: Family::default(),
            throttled: Counter::default(),
            waits: Family::new_with_constructor(wait_histogram),
            fair_queues: Arc::default(),
            log_lines_dropped: Arc::default(),
        };
        let help = "Reconciliations that ended without an error, by controller and where they \
                    left the object's status: final (the answer), blocked (until someone acts), \
                    waiting (for its children)";
        r.register("reconcile_progress", help, s.progress.clone());
        let help = "Failed reconciliations by controller and error reason (api, transport, \
                    panic, cancelled, ...); controller_runtime_reconcile_errors_total has their sum";
        r.register("reconcile_errors", help, s.errors.clone());
        let help = "Write requests issued to the API server, by controller, object kind and \
                    operation (create, patch, patch_status, delete, event)";
        r.register("write_requests", help, s.writes.clone());
        let help = "Entries the manager keeps between reconciles (child_writes and \
                    status_writes not echoed by the watch yet, recent progress_reports, failures \
                    for the backoff); they expire, so this stays bounded";
        r.register("remembered_entries", help, s.remembered.clone());
        let help = "Triggers of a parent waiting for its children that were put off because it \
                    was planned a moment ago (at most ten times what its plan cost, at most a \
                    second), by controller";
        r.register("replans_put_off", help, s.put_off.clone());
        r.register_collector(Box::new(s.log_lines_dropped.clone()));
        let help = "Requests the API server answered 429 Too Many Requests (API Priority and \
                    Fairness over the manager's share), each then tried again by the client (at \
                    most ten times, a second apart) or by the reconcile's backoff";
        r.register("api_throttled", help, s.throttled.clone());
        let help = "How long each request (queue writes) or reconcile (queue number, tuple, \
                    fermat) waited for its turn in the fair queue";
        r.register_with_unit("fair_queue_wait", help, Unit::Seconds, s.waits.clone());
        r.register_collector(Box::new(s.fair_queues.clone()));
        let version = env!("CARGO_PKG_VERSION");
        let build = Info::new(BuildLabels { version });
        r.register("build", "Version of the running manager", build);
        for memory in MEMORIES {
            let _ = s.remembered.get_or_create(&MemoryLabels { memory });
        }
        s
    }

    /// `controller` starts: its series, at zero.
    pub fn start(&self, controller: &'static str) {
        let _ = self.put_off.get_or_create(&ControllerLabels { controller });
        for progress in StatusProgress::ALL {
            let labels = ProgressLabels {
                controller,
                progress,
            };
            let _ = self.progress.get_or_create(&labels);
        }
        for reason in ERROR_REASONS {
            let _ = self
                .errors
                .get_or_create(&ErrorLabels { controller, reason });
        }
        let expected = EXPECTED_WRITES.iter().filter(|(c, ..)| *c == controller);
        for &(controller, kind, operation) in expected {
            let labels = WriteLabels {
                controller,
                kind,
                operation,
            };
            let _ = self.writes.get_or_create(&labels);
        }
    }

    pub fn progress(&self, controller: &'static str, progress: StatusProgress) {
        let labels = ProgressLabels {
            controller,
            progress,
        };
        self.progress.get_or_create(&labels).inc();
    }

    pub fn error(&self, controller: &'static str, reason: &'static str) {
        let labels = ErrorLabels { controller, reason };
        self.errors.get_or_create(&labels).inc();
    }

    pub fn put_off(&self, controller: &'static str) {
        self.put_off
            .get_or_create(&ControllerLabels { controller })
            .inc();
    }

    pub fn remembered(&self, memory: &'static str, entries: i64) {
        let labels = MemoryLabels { memory };
        self.remembered.get_or_create(&labels).set(entries);
    }

    pub fn undecodable(&self, kind: &'static str, objects: i64) {
        self.undecodable
            .get_or_create(&KindLabels { kind })
            .set(objects);
    }

    pub fn waits(&self, queue: &'static str) -> Arc<dyn Fn(Duration) + Send + Sync> {
        let histogram = self.waits.get_or_create(&FairQueueLabels { queue }).clone();
        Arc::new(move |waited: Duration| histogram.observe(waited.as_secs_f64()))
    }
}
