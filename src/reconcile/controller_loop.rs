//! Each controller's loop: its scheduler ([`crate::scheduler`]) told of its kind's objects,
//! and its runner reconciling them: which object is reconciled next, fairly across namespaces, `--concurrency` at a time, one reconcile of
//! an object at a time, requeues and the error policy's backoff included.
//!
//! kube-runtime's `Controller` has no priority queue: it starts the objects it was told about
//! in the order they became due, up to its concurrency, so a small object's reconcile waits
//! behind the thousands of Tuples a big Fermat just created (or behind the whole initial list
//! after a restart). So the controllers have no `Controller`: the watches tell the loop their
//! news ([`ControllerLoop::news`]), the scheduler queues each object once, in its namespace's flow (new,
//! changed and waiting objects before settled ones, aged ones taking turns with them), and its
//! runner reconciles an object when its turn comes ([`ControllerLoop::run`]).
//!
//! An object's reconcile acts on the object as the cache holds it when it runs, not when its
//! news came: a Tuple whose spec changed while it waited creates the Numbers of its new spec,
//! never the old one's. So news of an object that waits already adds nothing; news of an
//! object whose reconcile runs queues it again once that reconcile ends (it may have read the
//! cache before the news), and so does news of an object deleted and re-created under its name
//! meanwhile. An object no longer cached when its turn comes was deleted: nothing is left to
//! reconcile, and its children go with it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use tracing::debug;

use crate::cluster::store::Store;
use crate::cluster::watches::Cause;
use crate::kind::Kind;
use crate::metrics::Metrics;
use crate::reconcile::Outcome;
use crate::reconcile::context::Context;
use crate::reconcile::retry_policy::{error_policy, panic_policy, with_retry_policy};
use crate::scheduler::panics;
use crate::scheduler::permits::FairPermits;
use crate::scheduler::request_slots::in_flow;
use crate::scheduler::runner::{Runner, Scheduler};
use crate::scheduler::{Flow, Priority, TIMELINE, ms};

/// Whose an object's reconcile is: its namespace.
pub fn flow_of<K: Kind>(obj: &K) -> Flow {
    Flow::from(obj.namespace().unwrap_or_default())
}

/// A change (to the object or to a child of it: a deleted child to put back, a spec edited)
/// is someone's answer in the making, and so is an object whose status does not answer its
/// generation yet (new, changed, waiting for its children, failed). Only a settled object
/// that a list, a resync or a timer brings again, with nothing known to have changed, goes
/// after them: what a restart's initial list brings in thousands.
pub fn priority_of<K: Kind>(obj: &K, cause: Cause) -> Priority {
    match cause {
        Cause::Recheck if obj.is_ready() => Priority::Later,
        _ => Priority::Urgent,
    }
}

/// An object of the loop's kind: its namespace (its flow) and name. Every copy of a key (the
/// book's, the queue's, a requeue's timer) shares the same two strings: a restart queues every
/// object, and copies of `String`s were about 100 B per object of a Fermat 10000's peak.
pub type Key = (Flow, Arc<str>);

fn key_of<K: Kind>(obj: &K) -> Key {
    (flow_of(obj), Arc::from(obj.name_any()))
}

/// The cache's key of an object the loop let in.
pub fn object_ref<K: Kind>((namespace, name): &Key) -> ObjectRef<K> {
    ObjectRef::new(name).within(namespace)
}

/// Called at the start of every reconcile, inside it, with the controller's name and the
/// object's namespace and name: the seam through which the in-process tests make one object's
/// reconcile panic (`tests/panics.rs`). The manager binary installs none
/// ([`crate::ops::manager::Options::reconcile_hook`]).
#[derive(Clone)]
pub struct ReconcileHook(pub Arc<HookFn>);

/// What a [`ReconcileHook`] calls: the controller's name, the object's namespace and name.
pub type HookFn = dyn Fn(&'static str, &str, &str) + Send + Sync;

impl std::fmt::Debug for ReconcileHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReconcileHook")
    }
}

/// One controller's loop: its scheduler, told of objects of its kind (its runner runs apart:
/// [`ControllerLoop::run`]).
#[derive(Clone)]
pub struct ControllerLoop {
    controller: &'static str,
    scheduler: Scheduler<Key>,
    hook: Option<ReconcileHook>,
}

impl ControllerLoop {
    /// `concurrency` reconciles at once (0: no bound), shared by the busy namespaces if
    /// `shares`, their waits shown in `metrics` under the controller's name; and the runner
    /// that reconciles what the loop lets in ([`ControllerLoop::run`]).
    pub fn new(
        controller: &'static str,
        concurrency: u16,
        shares: bool,
        metrics: &Metrics,
    ) -> (ControllerLoop, Runner<Key>) {
        // Shared by the busy namespaces too: a big object's reconciles spend most of their
        // time waiting for request slots, and holding every turn of the loop meanwhile they
        // would keep a small object's reconcile waiting for one of them to end.
        let waits = Some(metrics.fair_queue_waits(controller));
        let permits = match shares {
            true => FairPermits::shared(concurrency.into(), waits),
            false => FairPermits::new(concurrency.into(), waits),
        };
        metrics.show_fair_queue(controller, permits.reader());
        let queue = metrics.queue(controller, concurrency.into());
        let (scheduler, runner) = Scheduler::new(permits, Arc::new(queue.clone()));
        queue.show_depth(scheduler.queued_reader());
        (
            ControllerLoop {
                controller,
                scheduler,
                hook: None,
            },
            runner,
        )
    }

    /// The same loop, calling `hook` at the start of every reconcile (tests only).
    pub fn with_hook(self, hook: Option<ReconcileHook>) -> ControllerLoop {
        ControllerLoop { hook, ..self }
    }

    /// `obj` changed, or something it looks at did, or it is to be looked at again (`cause`):
    /// reconcile it, in its turn (see the module's documentation and [`priority_of`]).
    pub fn news<K: Kind>(&self, obj: &K, cause: Cause) {
        let key = key_of(obj);
        let flow = key.0.clone();
        (self.scheduler).news(key, flow, priority_of(obj, cause));
    }

    /// Objects with something pending (waiting, running, or waiting for a requeue).
    pub fn depth(&self) -> usize {
        self.scheduler.depth()
    }

    /// Every object waiting here is dropped, and so is every later turn: for a shutdown.
    pub fn close(&self) {
        self.scheduler.close();
    }

    /// Reconcile what this loop lets in with `reconcile` (within the retry policy), each
    /// object as `store` holds it when its turn comes, until `stop` and the reconciles in
    /// flight end (the graceful shutdown).
    pub async fn run<K, Fut>(
        &self,
        runner: Runner<Key>,
        store: Store<K>,
        reconcile: fn(Arc<K>, Arc<Context>) -> Fut,
        ctx: Arc<Context>,
        stop: impl Future<Output = ()>,
    ) where
        K: Kind,
        Fut: Future<Output = crate::error::Result<Outcome>>,
    {
        let controller = self.controller;
        let run = |key: Key| {
            let cached = cached_when_run(&store, key);
            let (ctx, hook) = (ctx.clone(), self.hook.clone());
            async move { reconcile_one(controller, cached.await?, reconcile, ctx, hook).await }
        };
        let priority = |key: &Key| {
            let recheck = |obj: Arc<K>| priority_of(obj.as_ref(), Cause::Recheck);
            (store.get(&object_ref::<K>(key))).map_or(Priority::Urgent, recheck)
        };
        runner.run(run, priority, stop).await;
    }
}

/// The object of `key` as the cache holds it when its run starts (the future's first poll),
/// not when the runner let it in: a run may wait between the two (the runner's task not
/// scheduled yet), and a status echo that came meanwhile has already been recognised as our
/// own, so a run on the older copy would find neither the memory of that write nor the
/// status it wrote, and write the same status again.
fn cached_when_run<K: Kind>(store: &Store<K>, key: Key) -> impl Future<Output = Option<Arc<K>>> {
    let store = store.clone();
    async move { store.get(&object_ref::<K>(&key)) }
}

/// One reconcile of `obj` in its namespace's flow, within the retry policy: when to run it
/// again if no news comes first. A panic in it ends this reconcile only: it is caught,
/// counted, told and backed off ([`panic_policy`]), and every other object goes on.
async fn reconcile_one<K, Fut>(
    controller: &'static str,
    obj: Arc<K>,
    reconcile: fn(Arc<K>, Arc<Context>) -> Fut,
    ctx: Arc<Context>,
    hook: Option<ReconcileHook>,
) -> Option<Duration>
where
    K: Kind,
    Fut: Future<Output = crate::error::Result<Outcome>>,
{
    let flow = flow_of(obj.as_ref());
    let started = Instant::now();
    debug!(target: TIMELINE, controller, ns = %flow, name = %obj.name_any(), "let in at the gate");
    let reconciled = {
        let (obj, ctx) = (obj.clone(), ctx.clone());
        async move {
            if let Some(ReconcileHook(hook)) = hook {
                hook(controller, &flow_of(obj.as_ref()), &obj.name_any());
            }
            reconcile(obj, ctx).await
        }
    };
    let outcome = with_retry_policy(K::CONTROLLER, obj.clone(), ctx.clone(), reconciled);
    // Boxed inside `catch`: the runner's futures stay small, whatever the reconcile's size.
    let result = panics::catch(in_flow(flow.clone(), outcome)).await;
    debug!(target: TIMELINE, controller, ns = %flow, name = %obj.name_any(), ran_ms = ms(started.elapsed()), "reconciled");
    let action = match result {
        Ok(Ok(action)) => action,
        Ok(Err(error)) => error_policy(obj, &error, ctx),
        Err(panic) => panic_policy(obj.as_ref(), &panic, &ctx),
    };
    action.requeue_after()
}

#[cfg(test)]
mod tests {
    use crate::cluster::store::Writer;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::api::{Number, NumberSpec, NumberStatus};
    use crate::reconcile::status::{Readiness, ready_condition};
    use k8s_openapi::jiff::Timestamp;

    fn number(resource_version: &str) -> Number {
        let mut n = Number::new("n", NumberSpec { value: 4 });
        n.metadata.namespace = Some("default".into());
        n.metadata.resource_version = Some(resource_version.into());
        n
    }

    fn settled(name: &str) -> Number {
        let mut n = Number::new(name, NumberSpec { value: 4 });
        n.metadata.namespace = Some("default".into());
        n.metadata.generation = Some(1);
        let readiness = Readiness {
            ready: true,
            reason: "Computed",
            message: String::new(),
        };
        let ready = ready_condition(&readiness, Some(1), &[], Timestamp::now());
        n.status = Some(NumberStatus {
            observed_generation: Some(1),
            conditions: vec![ready],
            ..NumberStatus::default()
        });
        n
    }

    /// Issue 48's N3: after a restart the initial list brings thousands of settled objects of
    /// one namespace at once; one of them whose child was just deleted is reconciled next
    /// (after the one let in already), not after the whole list: it was queued as settled as
    /// they were, and its child's news left it there, behind them all.
    #[tokio::test]
    async fn a_settled_parent_told_by_its_child_goes_before_the_initial_list() {
        let (control, runner) = ControllerLoop::new("tuple", 1, true, &Metrics::new());
        let listed: Vec<Number> = (0..3000).map(|i| settled(&format!("t-{i}"))).collect();
        for obj in &listed {
            control.news(obj, Cause::Recheck);
        }
        control.news(&listed[2999], Cause::Change); // its child was deleted
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let run = {
            let order = order.clone();
            move |(_, name): Key| {
                order.lock().map(|mut o| o.push(name)).ok();
                async { None }
            }
        };
        let ran = || order.lock().map(|o| o.clone()).unwrap_or_default();
        let (stop_tx, stop) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(runner.run(run, |_| Priority::Later, async {
            let _ = stop.await;
        }));
        while ran().len() < 3 {
            tokio::task::yield_now().await;
        }
        let _ = stop_tx.send(());
        running.await.expect("no panic");
        let at = ran().iter().position(|name| &**name == "t-2999");
        assert_eq!(at, Some(1), "{:?}", &ran()[..3]);
    }

    /// A run reads the object when it starts: the echo of its last status write, applied
    /// to the cache between the let-in and the run's start, is what the run sees (issue 39:
    /// a Tuple wrote its answer twice when it ran on the copy from before the echo).
    #[tokio::test]
    async fn a_run_reads_the_cache_when_it_starts_not_when_it_was_let_in() {
        let mut writer: Writer<Number> = Writer::default();
        let store = writer.as_reader();
        writer.apply_watcher_event(&Event::Apply(number("25")));
        let run = cached_when_run(&store, ("default".into(), "n".into()));
        writer.apply_watcher_event(&Event::Apply(number("59")));
        let seen = run.await.and_then(|n| n.metadata.resource_version.clone());
        assert_eq!(seen.as_deref(), Some("59"));
    }
}
