//! client-go's workqueue series as controller-runtime v0.24 registers them
//! (`pkg/metrics/workqueue.go` of kubernetes-sigs/controller-runtime: label `name` and, since
//! v0.20, `controller`, both the controller's name; `priority` on the depth, empty for a queue
//! without priorities), measured on the manager's queue: each controller's gate
//! (`crate::reconcile::controller_loop`), the fair queue in front of its reconciles.
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

type DepthReader = Box<dyn Fn() -> usize + Send + Sync>;

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

/// One queue's depth, unfinished work and longest running reconcile (seconds).
fn read(live: &Live, now: Instant) -> [f64; 3] {
    let depth = live.depth.get().map_or(0, |depth| depth()) as f64;
    let running: Vec<f64> = match live.processing.lock() {
        Ok(p) => p.values().map(|s| (now - *s).as_secs_f64()).collect(),
        Err(_) => Vec::new(),
    };
    let longest = running.iter().copied().fold(0.0, f64::max);
    [depth, running.iter().sum(), longest]
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
        let queues: Vec<(&'static str, [f64; 3])> = match self.0.lock() {
            Ok(queues) => queues.iter().map(|(c, l)| (*c, read(l, now))).collect(),
            Err(_) => Vec::new(),
        };
        for (i, (name, help)) in GAUGES.into_iter().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (controller, values) in &queues {
                let gauge = ConstGauge::new(values[i]);
                if i == 0 {
                    let labels = DepthLabels {
                        name: controller,
                        controller,
                        priority: "",
                    };
                    gauge.encode(family.encode_family(&labels)?)?;
                } else {
                    gauge.encode(family.encode_family(&QueueLabels::of(controller))?)?;
                }
            }
        }
        Ok(())
    }
}

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
        let help = "Total number of adds handled by workqueue";
        r.register("workqueue_adds", help, s.adds.clone());
        let help = "How long in seconds an item stays in workqueue before being requested";
        r.register("workqueue_queue_duration_seconds", help, s.waits.clone());
        let help = "How long in seconds processing an item from workqueue takes.";
        r.register("workqueue_work_duration_seconds", help, s.work.clone());
        let help = "Total number of retries handled by workqueue";
        r.register("workqueue_retries", help, s.retries.clone());
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
    /// turn. The first call counts.
    pub fn show_depth(&self, depth: impl Fn() -> usize + Send + Sync + 'static) {
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
