//! The scheduler's two halves: [`Scheduler`], which is told news (from watches, resyncs,
//! children) and queues each key once, fairly; and [`Runner`], the one loop that runs what
//! the permits let in, one run per key at a time, and books how each run ended (see
//! [`super::book`]). What kube-runtime's `Controller` does with its scheduler and runner, with
//! one queue instead of two.

use std::future::Future;
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio_util::time::DelayQueue;

use super::book::{AfterRun, Book};
use super::permits::{FairPermits, Permit, QueueStats};
use super::queue::{Flow, Priority};
use crate::metrics::QueueMetrics;

/// How a run ended: when to run the key again if no news comes first. (kube-runtime's
/// `Action` has the same two constructors, but keeps its delay to itself.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Run again after `after`, or sooner with news.
    pub const fn requeue(after: Duration) -> Action {
        Action {
            requeue_after: Some(after),
        }
    }

    /// Run again on news only.
    pub const fn await_change() -> Action {
        Action {
            requeue_after: None,
        }
    }

    pub const fn requeue_after(self) -> Option<Duration> {
        self.requeue_after
    }
}

/// Where the workqueue metrics attach (controller-runtime's `workqueue_*`): each method is
/// called at the moment its name says; the depth is [`Scheduler::depth`].
pub trait Hooks: Send + Sync {
    /// A key was queued (`workqueue_adds_total`).
    fn added(&self) {}
    /// A key was let in after waiting `waited` (`workqueue_queue_duration_seconds`); what
    /// this returns is held while the run lasts and dropped when it ends (client-go's
    /// `Done`), so that the work in progress can be measured (`workqueue_unfinished_work_seconds`).
    fn started(&self, _waited: Duration) -> Option<Box<dyn Send>> {
        None
    }
    /// A run ended after `ran` (`workqueue_work_duration_seconds`).
    fn done(&self, _ran: Duration) {}
    /// A run asked to be run again after `after`, whatever else queues it
    /// (`workqueue_retries_total`).
    fn retried(&self, _after: Duration) {}
}

/// The scheduler's moments, as client-go's workqueue counts them.
impl Hooks for QueueMetrics {
    fn added(&self) {
        self.add();
    }

    fn started(&self, waited: Duration) -> Option<Box<dyn Send>> {
        Some(Box::new(self.get(waited)))
    }

    fn retried(&self, _after: Duration) {
        self.retry();
    }
}

/// No metrics.
pub struct NoHooks;

impl Hooks for NoHooks {}

/// A key let in: its permit, and since when it waited.
type LetIn<K> = (K, Permit, Instant);

struct Shared<K> {
    book: Mutex<Book<K>>,
    permits: FairPermits,
    let_in: mpsc::UnboundedSender<LetIn<K>>,
    hooks: Arc<dyn Hooks>,
}

/// Told news of keys; queues each once in its flow (see [`super::book::Book::news`]).
pub struct Scheduler<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Scheduler<K> {
    fn clone(&self) -> Self {
        Scheduler {
            shared: self.shared.clone(),
        }
    }
}

/// Runs what its [`Scheduler`] lets in ([`Runner::run`]).
pub struct Runner<K> {
    scheduler: Scheduler<K>,
    let_in: mpsc::UnboundedReceiver<LetIn<K>>,
}

impl<K> Scheduler<K>
where
    K: Hash + Eq + Clone + Send + 'static,
{
    /// A scheduler whose runs take `permits` (its concurrency, fairly across flows). The
    /// channel to the runner is unbounded but holds at most one key per permit.
    pub fn new(permits: FairPermits, hooks: Arc<dyn Hooks>) -> (Scheduler<K>, Runner<K>) {
        let (let_in, to_runner) = mpsc::unbounded();
        let shared = Arc::new(Shared {
            book: Mutex::new(Book::default()),
            permits,
            let_in,
            hooks,
        });
        let scheduler = Scheduler { shared };
        let runner = Runner {
            scheduler: scheduler.clone(),
            let_in: to_runner,
        };
        (scheduler, runner)
    }

    fn book(&self) -> MutexGuard<'_, Book<K>> {
        // A panic while holding the lock leaves the stages as they were; go on with them.
        (self.shared.book.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// News of `key`: run it in its turn, once, however much news comes before it runs;
    /// once more after its run when it is running.
    pub fn news(&self, key: K, flow: Flow, priority: Priority) {
        let queue = self.book().news(key.clone(), flow.clone(), priority);
        if queue {
            self.queue(key, flow, priority);
        }
    }

    fn queue(&self, key: K, flow: Flow, priority: Priority) {
        self.shared.hooks.added();
        let scheduler = self.clone();
        let since = Instant::now();
        let grant = Box::new(move |permit| scheduler.let_in(key, permit, since));
        self.shared.permits.offer(flow, priority, grant);
    }

    /// `key`'s turn came: to the runner with its permit, unless an earlier place of it was
    /// taken already (the permit goes back).
    fn let_in(&self, key: K, permit: Permit, since: Instant) -> Result<(), Permit> {
        let mut book = self.book();
        if !book.let_in(&key) {
            return Err(permit);
        }
        match self.shared.let_in.unbounded_send((key, permit, since)) {
            Ok(()) => Ok(()),
            // The runner is gone (a shutdown).
            Err(unsent) => {
                let (key, permit, _) = unsent.into_inner();
                book.done(&key, None);
                Err(permit)
            }
        }
    }

    /// Keys with something pending (queued, delayed or running): `workqueue_depth` counts the
    /// queued ones, [`Scheduler::stats`]'s `waiting`.
    pub fn depth(&self) -> usize {
        self.book().len()
    }

    /// Reads how many keys wait for their turn only (`workqueue_depth`), urgent and settled
    /// apart, for as long as the scheduler lives (it holds no reference to it: 0 once it is
    /// gone).
    pub fn queued_reader(&self) -> impl Fn() -> (usize, usize) + Send + Sync + 'static
    where
        K: Sync,
    {
        let shared = Arc::downgrade(&self.shared);
        move || {
            shared.upgrade().map_or((0, 0), |shared| {
                let book = (shared.book.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
                book.queued()
            })
        }
    }

    /// The waiters of the permits, as the metrics show them.
    pub fn stats(&self) -> QueueStats {
        self.shared.permits.stats()
    }

    /// Every key waiting is dropped, and so is every later turn: a shutdown.
    pub fn close(&self) {
        self.shared.permits.close();
        self.book().clear();
    }

    /// A run of `key` ended: book it, and queue it again or wake it later as it says.
    fn ended(&self, key: K, requeue_after: Option<Duration>, delays: &mut DelayQueue<(K, u64)>) {
        // A run that asked for a delay is a retry, as client-go counts every `AddAfter` with
        // one: also when news that came during the run queues the key at once instead.
        if let Some(after) = requeue_after.filter(|after| !after.is_zero()) {
            self.shared.hooks.retried(after);
        }
        let after = self.book().done(&key, requeue_after);
        match after {
            AfterRun::Queue(flow) => self.queue(key, flow, Priority::Urgent),
            AfterRun::Delay(after, token) => {
                delays.insert((key, token), after);
            }
            AfterRun::Idle => {}
        }
    }

    /// `key`'s requeue time came: queue it with `priority`, unless news did first.
    fn due(&self, key: K, token: u64, priority: Priority) {
        let flow = self.book().due(&key, token, priority);
        if let Some(flow) = flow {
            self.queue(key, flow, priority);
        }
    }
}

impl<K> Runner<K>
where
    K: Hash + Eq + Clone + Send + 'static,
{
    /// Run each key let in with `run`, which answers when to run it again; a requeue's
    /// turn is queued with `priority`. Ends once `stop` resolved (the waiting keys dropped)
    /// and the runs in flight ended: the graceful shutdown; dropping this future stops them.
    pub async fn run<F, Fut>(
        mut self,
        mut run: F,
        priority: impl Fn(&K) -> Priority,
        stop: impl Future<Output = ()>,
    ) where
        F: FnMut(K) -> Fut,
        Fut: Future<Output = Option<Duration>>,
    {
        let scheduler = self.scheduler.clone();
        let hooks = scheduler.shared.hooks.clone();
        let mut running = FuturesUnordered::new();
        let mut delays = DelayQueue::<(K, u64)>::new();
        let mut stop = pin!(stop.fuse());
        let mut stopping = false;
        loop {
            tokio::select! {
                () = &mut stop, if !stopping => {
                    stopping = true;
                    scheduler.close();
                }
                Some((key, permit, since)) = self.let_in.next(), if !stopping => {
                    let working = hooks.started(since.elapsed());
                    let started = Instant::now();
                    let ran = run(key.clone());
                    running.push(async move { (key, permit, ran.await, started, working) });
                }
                Some((key, permit, after, started, working)) = running.next() => {
                    drop(working);
                    hooks.done(started.elapsed());
                    scheduler.ended(key, after, &mut delays);
                    // Given back after the booking: news that came during the run queues
                    // the key before the permit goes to the next waiter.
                    drop(permit);
                }
                Some(expired) = delays.next(), if !stopping => {
                    let (key, token) = expired.into_inner();
                    let priority = priority(&key);
                    scheduler.due(key, token, priority);
                }
                else => {}
            }
            if stopping && running.is_empty() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::sync::{mpsc as tokio_mpsc, oneshot};

    fn flow() -> Flow {
        Flow::from("ns")
    }

    /// Issue 39's F2: X let in, X deleted, X' re-created under the same name while the run
    /// that found no X is still ending. X' is reconciled at once, not at the next resync
    /// (the former gate absorbed X''s news while X was let in, then forgot both when the
    /// `Controller` reported X not found).
    #[tokio::test]
    async fn an_object_recreated_while_its_turn_ends_runs_again() {
        let (scheduler, runner) =
            Scheduler::<&'static str>::new(FairPermits::new(1, None), Arc::new(NoHooks));
        // The cache: the uid of the object named "x", 0 when there is none.
        let cached = Arc::new(AtomicU64::new(1));
        scheduler.news("x", flow(), Priority::Urgent);
        cached.store(0, Ordering::SeqCst); // deleted after it was let in
        scheduler.news("x", flow(), Priority::Urgent);
        let (seen_tx, mut seen) = tokio_mpsc::unbounded_channel();
        let (release_tx, release) = oneshot::channel::<()>();
        let mut release = Some(release);
        let run = {
            let cached = cached.clone();
            move |_key| {
                let uid = cached.load(Ordering::SeqCst);
                let _ = seen_tx.send(uid);
                let release = release.take();
                async move {
                    if let Some(release) = release {
                        let _ = release.await;
                    }
                    None
                }
            }
        };
        let (stop_tx, stop) = oneshot::channel::<()>();
        let running = tokio::spawn(runner.run(run, |_| Priority::Urgent, async {
            let _ = stop.await;
        }));
        assert_eq!(seen.recv().await, Some(0), "the first run finds no object");
        cached.store(2, Ordering::SeqCst);
        scheduler.news("x", flow(), Priority::Urgent); // re-created
        let _ = release_tx.send(());
        let next = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(next.ok().flatten(), Some(2), "the re-created object runs");
        let _ = stop_tx.send(());
        running.await.expect("no panic");
        assert_eq!(scheduler.depth(), 0);
    }

    /// A run that asks to be run again after a delay is, once, when no news comes first.
    #[tokio::test]
    async fn a_requeue_runs_the_key_again_after_its_delay() {
        let (scheduler, runner) =
            Scheduler::<&'static str>::new(FairPermits::new(2, None), Arc::new(NoHooks));
        let (seen_tx, mut seen) = tokio_mpsc::unbounded_channel();
        let mut runs = 0;
        let run = move |key| {
            runs += 1;
            let _ = seen_tx.send((key, tokio::time::Instant::now()));
            let again = (runs == 1).then_some(Duration::from_millis(50));
            async move { again }
        };
        let (stop_tx, stop) = oneshot::channel::<()>();
        let running = tokio::spawn(runner.run(run, |_| Priority::Later, async {
            let _ = stop.await;
        }));
        scheduler.news("x", flow(), Priority::Urgent);
        let (_, first) = seen.recv().await.expect("a first run");
        let (_, second) = seen.recv().await.expect("a second run");
        assert!(second - first >= Duration::from_millis(50));
        tokio::task::yield_now().await;
        assert_eq!(scheduler.depth(), 0, "done after the second run");
        let _ = stop_tx.send(());
        running.await.expect("no panic");
    }

    /// Counts the keys queued (`workqueue_adds_total`).
    #[derive(Default)]
    struct Adds(AtomicU64);

    impl Hooks for Adds {
        fn added(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A key whose requeue timer queued it as urgent, waiting for a permit, is not queued a
    /// second time by urgent news: one add each for x, the blocker and x's timer (issue 48's
    /// N4: the book recorded the timer's turn as settled, and the news added x again).
    #[tokio::test]
    async fn urgent_news_of_a_key_its_timer_queued_as_urgent_adds_nothing() {
        let adds = Arc::new(Adds::default());
        let (scheduler, runner) =
            Scheduler::<&'static str>::new(FairPermits::new(1, None), adds.clone());
        let (release_tx, release) = oneshot::channel::<()>();
        let mut release = Some(release);
        let (seen_tx, mut seen) = tokio_mpsc::unbounded_channel();
        let mut runs_of_x = 0;
        let run = move |key: &'static str| {
            let _ = seen_tx.send(key);
            let blocked = (key == "blocker").then(|| release.take()).flatten();
            runs_of_x += u32::from(key == "x");
            let again = (key == "x" && runs_of_x == 1).then_some(Duration::from_millis(20));
            async move {
                if let Some(blocked) = blocked {
                    let _ = blocked.await;
                }
                again
            }
        };
        let (stop_tx, stop) = oneshot::channel::<()>();
        let running = tokio::spawn(runner.run(run, |_| Priority::Urgent, async {
            let _ = stop.await;
        }));
        scheduler.news("x", flow(), Priority::Urgent);
        assert_eq!(seen.recv().await, Some("x"));
        scheduler.news("blocker", flow(), Priority::Urgent);
        assert_eq!(seen.recv().await, Some("blocker"));
        while scheduler.stats().waiting == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        scheduler.news("x", flow(), Priority::Urgent);
        assert_eq!(adds.0.load(Ordering::SeqCst), 3);
        let _ = release_tx.send(());
        let _ = stop_tx.send(());
        running.await.expect("no panic");
    }

    /// One run of a key at a time: news during its run waits for its end, and every key
    /// still gets its run with one permit.
    #[tokio::test]
    async fn news_during_a_run_waits_for_its_end() {
        let (scheduler, runner) =
            Scheduler::<u32>::new(FairPermits::new(1, None), Arc::new(NoHooks));
        let (seen_tx, mut seen) = tokio_mpsc::unbounded_channel();
        let busy = Arc::new(AtomicU64::new(0));
        let run = {
            let busy = busy.clone();
            move |key| {
                let seen_tx = seen_tx.clone();
                let busy = busy.clone();
                async move {
                    assert_eq!(busy.fetch_add(1, Ordering::SeqCst), 0, "one run at a time");
                    tokio::task::yield_now().await;
                    busy.fetch_sub(1, Ordering::SeqCst);
                    let _ = seen_tx.send(key);
                    None
                }
            }
        };
        let (stop_tx, stop) = oneshot::channel::<()>();
        let running = tokio::spawn(runner.run(run, |_| Priority::Urgent, async {
            let _ = stop.await;
        }));
        for key in [1, 2, 1, 1, 3] {
            scheduler.news(key, flow(), Priority::Urgent);
            tokio::task::yield_now().await;
        }
        let mut ran = Vec::new();
        while ran.len() < 3 || scheduler.depth() > 0 {
            match tokio::time::timeout(Duration::from_secs(5), seen.recv()).await {
                Ok(Some(key)) => ran.push(key),
                _ => break,
            }
        }
        ran.sort_unstable();
        ran.dedup();
        assert_eq!(ran, [1, 2, 3]);
        let _ = stop_tx.send(());
        running.await.expect("no panic");
    }
}
