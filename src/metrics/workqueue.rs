//! client-go's workqueue series as controller-runtime v0.24 registers them
//! (`pkg/internal/metrics/workqueue.go` of kubernetes-sigs/controller-runtime: label `name`
//! and, since v0.20, `controller`, both the controller's name; `priority` on the depth, as its
//! priority queue, the default since v0.24, labels it), measured on the manager's queue: each
//! controller's gate (`crate::reconcile::controller_loop`), the fair queue in front of its reconciles.
//!
//! The two priorities are controller-runtime's and mean the same: `0` for objects someone waits
//! for (news of a change), `-100` (`handler.LowPriority`) for settled ones (the list after a
//! start, a resync) that only wait their turn.
//!
//! The gate tells [`QueueMetrics`] what a client-go queue's `Add`, `Get`, `Done` and
//! `AddRateLimited` would: an object queued by news ([`QueueMetrics::add`]), its turn
//! ([`QueueMetrics::get`], with how long it waited), the end of its reconcile (the
//! [`Processing`] guard dropped), a requeue or a retry ([`QueueMetrics::retry`]). The depth,
//! the unfinished work and the longest running reconcile are read at each scrape.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::help;

/// The buckets of `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds`:
/// client-go's `ExponentialBuckets(10e-9, 10, 12)`, 10 ns to 1000 s.
pub fn duration_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(10e-9, 10.0, 12)
}

fn duration() -> Histogram {
    Histogram::new(duration_buckets())
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: &'static str,
    controller: &'static str,
}

impl QueueLabels {
    fn of(controller: &'static str) -> Self {
        QueueLabels {
            name: controller,
            controller,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    name: &'static str,
    controller: &'static str,
    priority: &'static str,
}

/// Reads the waiters now: urgent ones (priority `0`) and settled ones (`-100`).
type DepthReader = Box<dyn Fn() -> (usize, usize) + Send + Sync>;

/// controller-runtime's priority labels: the default priority, and `handler.LowPriority`.
const PRIORITIES: [&str; 2] = ["0", "-100"];

/// What a scrape reads of one queue now.
#[derive(Default)]
struct Live {
    depth: OnceLock<DepthReader>,
    next: AtomicU64,
    processing: Mutex<HashMap<u64, Instant>>,
}

/// The queues' gauges of the moment, read at each scrape.
#[derive(Default)]
pub(super) struct LiveQueues(Mutex<Vec<(&'static str, Arc<Live>)>>);

impl std::fmt::Debug for LiveQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LiveQueues").finish_non_exhaustive()
    }
}

/// One queue's gauges now.
struct Gauges {
    /// Waiters by priority: urgent (`0`), settled (`-100`).
    depth: [f64; 2],
    /// Seconds of the reconciles running now, summed.
    unfinished: f64,
    /// Seconds of the longest running reconcile.
    longest: f64,
}

/// One queue's gauges now.
fn read(live: &Live, now: Instant) -> Gauges {
    let (urgent, settled) = live.depth.get().map_or((0, 0), |depth| depth());
    let running: Vec<f64> = match live.processing.lock() {
        Ok(p) => p.values().map(|s| (now - *s).as_secs_f64()).collect(),
        Err(_) => Vec::new(),
    };
    let longest = running.iter().copied().fold(0.0, f64::max);
    // Folded from +0.0: `Sum` of no f64 is -0.0, which an idle queue showed as `-0.0`.
    let unfinished = running.iter().fold(0.0, |sum, s| sum + s);
    Gauges {
        depth: [urgent as f64, settled as f64],
        unfinished,
        longest,
    }
}

const GAUGES: [(&str, &str); 3] = [
    (
        "workqueue_depth",
        "Current depth of workqueue by workqueue and priority",
    ),
    (
        "workqueue_unfinished_work_seconds",
        "How many seconds of work has been done that is in progress and hasn't been observed \
         by work_duration. Large values indicate stuck threads. One can deduce the number of \
         stuck threads by observing the rate at which this increases.",
    ),
    (
        "workqueue_longest_running_processor_seconds",
        "How many seconds has the longest running processor for workqueue been running.",
    ),
];

impl Collector for LiveQueues {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let queues: Vec<(&'static str, Gauges)> = match self.0.lock() {
            Ok(queues) => queues.iter().map(|(c, l)| (*c, read(l, now))).collect(),
            Err(_) => Vec::new(),
        };
        let [(depth, depth_help), unfinished, longest] = GAUGES;
        let mut family = encoder.encode_descriptor(depth, depth_help, None, MetricType::Gauge)?;
        for (controller, gauges) in &queues {
            for (priority, value) in PRIORITIES.into_iter().zip(&gauges.depth) {
                let labels = DepthLabels {
                    name: controller,
                    controller,
                    priority,
                };
                ConstGauge::new(*value).encode(family.encode_family(&labels)?)?;
            }
        }
        for (i, (name, help)) in [unfinished, longest].into_iter().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (controller, gauges) in &queues {
                let value = if i == 0 {
                    gauges.unfinished
                } else {
                    gauges.longest
                };
                let labels = QueueLabels::of(controller);
                ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The counters' and histograms' names and help texts, as controller-runtime v0.24 registers
/// them (the encoder appends a counter's `_total`).
const ADDS: (&str, &str) = (
    "workqueue_adds",
    "Total number of adds handled by workqueue",
);
const QUEUE_DURATION: (&str, &str) = (
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
);
const WORK_DURATION: (&str, &str) = (
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
);
const RETRIES: (&str, &str) = (
    "workqueue_retries",
    "Total number of items added to the workqueue with a non-zero delay (rate-limited \
     requeues, explicit RequeueAfter or AddAfter calls)",
);

/// The workqueue families of every controller.
pub(super) struct WorkqueueSeries {
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    waits: Family<QueueLabels, Histogram, fn() -> Histogram>,
    work: Family<QueueLabels, Histogram, fn() -> Histogram>,
    live: Arc<LiveQueues>,
}

impl WorkqueueSeries {
    pub fn register(registry: &mut Registry) -> Self {
        let s = WorkqueueSeries {
            adds: Family::default(),
            retries: Family::default(),
            waits: Family::new_with_constructor(duration),
            work: Family::new_with_constructor(duration),
            live: Arc::default(),
        };
        let r = registry;
        help::register(r, ADDS, s.adds.clone());
        help::register(r, QUEUE_DURATION, s.waits.clone());
        help::register(r, WORK_DURATION, s.work.clone());
        help::register(r, RETRIES, s.retries.clone());
        r.register_collector(Box::new(s.live.clone()));
        s
    }

    /// The queue of `controller`, its series created at zero (a second call for the same
    /// controller, a manager's controllers started again, replaces the first one's gauges).
    pub fn queue(&self, controller: &'static str) -> QueueMetrics {
        let labels = QueueLabels::of(controller);
        let live = Arc::new(Live::default());
        if let Ok(mut queues) = self.live.0.lock() {
            queues.retain(|(c, _)| *c != controller);
            queues.push((controller, live.clone()));
        }
        QueueMetrics {
            adds: self.adds.get_or_create(&labels).clone(),
            retries: self.retries.get_or_create(&labels).clone(),
            waits: self.waits.get_or_create(&labels).clone(),
            work: self.work.get_or_create(&labels).clone(),
            live,
        }
    }
}

/// One controller's queue as the workqueue series see it; cheap to clone.
#[derive(Clone)]
pub struct QueueMetrics {
    adds: Counter,
    retries: Counter,
    waits: Histogram,
    work: Histogram,
    live: Arc<Live>,
}

impl std::fmt::Debug for QueueMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueMetrics").finish_non_exhaustive()
    }
}

impl QueueMetrics {
    /// An object was queued (client-go's `Add` of an item not queued yet).
    pub fn add(&self) {
        self.adds.inc();
    }

    /// An object is to come back after a delay, by a requeue or the error policy's retry
    /// (`AddRateLimited`): a retry; its add is counted when the delay is over and it is queued.
    pub fn retry(&self) {
        self.retries.inc();
    }

    /// An object's reconcile starts after `waited` in the queue (`Get`); its work lasts until
    /// the returned guard is dropped (`Done`).
    pub fn get(&self, waited: Duration) -> Processing {
        self.waits.observe(waited.as_secs_f64());
        let id = self.live.next.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        if let Ok(mut processing) = self.live.processing.lock() {
            processing.insert(id, start);
        }
        Processing {
            queue: self.clone(),
            id,
            start,
        }
    }

    /// Where `workqueue_depth` is read from at each scrape: the objects waiting for their
    /// turn, urgent ones and settled ones. The first call counts.
    pub fn show_depth(&self, depth: impl Fn() -> (usize, usize) + Send + Sync + 'static) {
        let _ = self.live.depth.set(Box::new(depth));
    }
}

/// A reconcile the queue handed out; dropping it is client-go's `Done`.
pub struct Processing {
    queue: QueueMetrics,
    id: u64,
    start: Instant,
}

impl Drop for Processing {
    fn drop(&mut self) {
        let work = &self.queue;
        work.work.observe(self.start.elapsed().as_secs_f64());
        if let Ok(mut processing) = work.live.processing.lock() {
            processing.remove(&self.id);
        }
    }
}
