//! The gate in front of each controller: which object is reconciled next, fairly across
//! namespaces, `--concurrency` at a time.
//!
//! kube-runtime's `Controller` has no priority queue: it starts the objects it was told about
//! in the order they became due, up to its concurrency, so a small object's reconcile waits
//! behind the thousands of Tuples a big Fermat just created (or behind the whole initial list
//! after a restart). Nor can a reconcile wait inside it cheaply: the `Controller` keeps the
//! reconciles it started in a map that it polls whole on every wake-up, and scans the news it
//! holds for them one by one, so thousands of reconciles waiting there made a big Fermat cost
//! the manager half as much CPU again. So the objects wait here, *before* the `Controller`:
//! the watches tell the gate their news ([`Gate::news`]), the gate queues each object once,
//! in its namespace's flow ([`crate::runtime::fair`]: namespaces in turn; new, changed and
//! waiting objects before settled ones; aging), and hands the `Controller` an object only with
//! a turn of the controller's concurrency in hand. The `Controller` runs it at once
//! ([`Gate::pass`]): it keeps what it does well (one reconcile of an object at a time, the
//! requeues and the error policy's backoff), never more than `--concurrency` reconciles.
//!
//! An object's reconcile acts on the object as the cache holds it when it runs, not when its
//! news came: a Tuple whose spec changed while it waited creates the Numbers of its new spec,
//! never the old one's. So news of an object that waits already adds nothing; news of an
//! object whose reconcile runs queues it again once that reconcile ends (it may have read the
//! cache before the news). A reconcile the `Controller` starts by itself (a requeue, the
//! error policy's retry) takes its turn at the gate like any other, waiting in the queue.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures::channel::mpsc;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::debug;

use crate::kind::Kind;
use crate::metrics::{Metrics, QueueMetrics};
use crate::runtime::TIMELINE;
use crate::runtime::fair::{FairSlots, Flow, Permit, Priority};
use crate::runtime::slots::in_flow;

/// Whose an object's reconcile is: its namespace.
pub fn flow_of<K: Kind>(obj: &K) -> Flow {
    Flow::from(obj.namespace().unwrap_or_default())
}

/// An object whose status already answers its generation is most likely here for a resync or
/// an initial list: nobody waits for it. Anything else (new, changed, waiting for its
/// children, failed) is someone's answer in the making.
pub fn priority_of<K: Kind>(obj: &K) -> Priority {
    if obj.is_ready() {
        Priority::Later
    } else {
        Priority::Urgent
    }
}

/// Milliseconds, for the timeline's lines.
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

/// An object of the gate's kind: its namespace and name.
pub type Key = (String, String);

fn key_of<K: Kind>(obj: &K) -> Key {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

/// The `Controller`'s trigger for an object the gate let in.
pub fn object_ref<K: Kind>((namespace, name): Key) -> ObjectRef<K> {
    ObjectRef::new(&name).within(&namespace)
}

/// Where an object is between its news and the end of its reconcile.
enum Stage {
    /// Queued at the gate; `urgent` once it was queued as urgent.
    Queued { urgent: bool, since: Instant },
    /// Its turn came: handed to the `Controller`, which has not started it yet.
    LetIn(Permit, Instant),
    /// Started by the `Controller` without news of ours (a requeue, a retry): waits for its
    /// turn inside the reconcile.
    Waiting,
    /// Reconciling; `news` came meanwhile (it may have read the cache before it).
    Running { news: bool },
}

struct Shared {
    controller: &'static str,
    slots: FairSlots,
    objects: Mutex<HashMap<Key, Stage>>,
    /// To the `Controller`: the objects let in.
    let_in: mpsc::UnboundedSender<Key>,
    /// The workqueue series (`crate::metrics::workqueue`).
    queue: QueueMetrics,
}

/// One controller's gate.
#[derive(Clone)]
pub struct Gate {
    shared: Arc<Shared>,
}

impl Gate {
    /// `concurrency` reconciles at once (0: no bound), their waits shown in `metrics` under
    /// the controller's name, and the stream of the objects let in, for the `Controller`.
    pub fn new(
        controller: &'static str,
        concurrency: u16,
        shares: bool,
        metrics: &Metrics,
    ) -> (Gate, mpsc::UnboundedReceiver<Key>) {
        let slots = FairSlots::gathering(
            concurrency.into(),
            shares,
            Some(metrics.fair_queue_waits(controller)),
        );
        metrics.show_fair_queue(controller, slots.reader());
        let (let_in, to_controller) = mpsc::unbounded();
        let queue = metrics.queue(controller, concurrency.into());
        let shared = Arc::new(Shared {
            controller,
            slots,
            objects: Mutex::default(),
            let_in,
            queue,
        });
        let gate = Arc::downgrade(&shared);
        shared
            .queue
            .show_depth(move || gate.upgrade().map_or(0, |s| waiting(&s)));
        (Gate { shared }, to_controller)
    }

    fn objects(&self) -> MutexGuard<'_, HashMap<Key, Stage>> {
        // A panic while holding the lock leaves the stages as they were; go on with them.
        (self.shared.objects.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `obj` changed, or something it looks at did: reconcile it, in its turn. Nothing more
    /// when it waits already (its reconcile will read the cache, which has the news); once
    /// more after its reconcile when it is running. A settled object that waits and now has
    /// something to do is queued again as urgent (its older place is given up when its turn
    /// comes).
    pub fn news<K: Kind>(&self, obj: &K) {
        let key = key_of(obj);
        let priority = priority_of(obj);
        {
            let mut objects = self.objects();
            match objects.get_mut(&key) {
                None => {
                    let urgent = priority == Priority::Urgent;
                    let since = Instant::now();
                    objects.insert(key.clone(), Stage::Queued { urgent, since });
                    self.shared.queue.add();
                }
                Some(Stage::Queued { urgent, .. }) if !*urgent && priority == Priority::Urgent => {
                    *urgent = true
                }
                Some(Stage::Running { news }) => {
                    *news = true;
                    return;
                }
                Some(_) => return,
            }
        }
        self.queue(key, flow_of(obj), priority);
    }

    /// Queue `key` for a turn (its stage says `Queued` already).
    fn queue(&self, key: Key, flow: Flow, priority: Priority) {
        let gate = self.clone();
        let grant = Box::new(move |permit| gate.let_in(key, permit));
        self.shared.slots.offer(flow, priority, grant);
    }

    /// `key`'s turn came: to the `Controller`, with its permit. Called under the slots' lock;
    /// the permit goes back (`Err`) when `key` no longer waits here (let in through an
    /// earlier place in the queue, or started by the `Controller` itself).
    fn let_in(&self, key: Key, permit: Permit) -> Result<(), Permit> {
        let mut objects = self.objects();
        let Some(stage) = objects.get_mut(&key) else {
            return Err(permit);
        };
        let Stage::Queued { since, .. } = *stage else {
            return Err(permit);
        };
        if self.shared.let_in.unbounded_send(key).is_err() {
            // The `Controller` is gone (a shutdown).
            return Err(permit);
        }
        *stage = Stage::LetIn(permit, since);
        Ok(())
    }

    /// The `Controller` found no such object in its cache (deleted since its news): a permit
    /// it was handed goes back.
    pub fn not_found(&self, namespace: Option<&str>, name: &str) {
        let key = (namespace.unwrap_or_default().to_string(), name.to_string());
        let permit = match self.objects().entry(key) {
            Entry::Occupied(stage) if matches!(stage.get(), Stage::LetIn(..)) => {
                Some(stage.remove())
            }
            _ => None,
        };
        // Given back outside the lock: the next object's turn takes it.
        drop(permit);
    }

    /// `reconcile(obj)` with `obj` as `store` holds it now, its writes queued in `obj`'s
    /// flow: at once when the gate let it in, else once its turn comes. `None` when the gate
    /// closed first (a shutdown: queued reconciles are dropped, not run), or the object is no
    /// longer cached (deleted meanwhile: nothing is left to reconcile, and its children go
    /// with it).
    pub async fn pass<K, F, Fut>(
        &self,
        obj: &K,
        store: &Store<K>,
        reconcile: F,
    ) -> Option<Fut::Output>
    where
        K: Kind,
        F: FnOnce(Arc<K>) -> Fut,
        Fut: Future,
    {
        let key = key_of(obj);
        let flow = flow_of(obj);
        let arrived = Instant::now();
        let let_in = {
            let mut objects = self.objects();
            let stage = objects.insert(key.clone(), Stage::Waiting);
            match stage {
                Some(Stage::LetIn(permit, since)) => {
                    objects.insert(key.clone(), Stage::Running { news: false });
                    Some((permit, since))
                }
                // An object queued at the gate too gives up its place (its turn, when it
                // comes, goes to the next).
                _ => None,
            }
        };
        // From here on the object's stage is ours: whatever ends this future ends it too.
        let turn = Turn { gate: self, key };
        let (permit, waited_since) = match let_in {
            Some(let_in) => let_in,
            None => {
                self.shared.queue.retry();
                let permit = (self.shared.slots)
                    .acquire(flow.clone(), priority_of(obj))
                    .await?;
                (self.objects()).insert(turn.key.clone(), Stage::Running { news: false });
                (permit, arrived)
            }
        };
        let latest = store.get(&ObjectRef::from_obj(obj))?;
        let started = Instant::now();
        let processing = self.shared.queue.get(started - waited_since);
        debug!(target: TIMELINE, controller = self.shared.controller, ns = %flow, name = %obj.name_any(), waited_ms = ms(started - waited_since), "let in at the gate");
        // Boxed: the future the `Controller` holds stays small, whatever the reconcile's size.
        let output = Box::pin(in_flow(flow.clone(), reconcile(latest))).await;
        drop(permit);
        drop(processing);
        drop(turn);
        debug!(target: TIMELINE, controller = self.shared.controller, ns = %flow, name = %obj.name_any(), ran_ms = ms(started.elapsed()), "reconciled");
        Some(output)
    }

    /// Every object waiting here is dropped, and so is every later turn: for a shutdown.
    pub fn close(&self) {
        self.shared.slots.close();
        let objects = std::mem::take(&mut *self.objects());
        // The permits of objects let in go back outside the lock.
        drop(objects);
    }
}

/// `workqueue_depth`: the objects waiting for their turn (queued, let in and not started yet,
/// or started by the `Controller` and waiting inside).
fn waiting(shared: &Shared) -> usize {
    let objects = (shared.objects.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
    let running = |s: &&Stage| matches!(s, Stage::Running { .. });
    objects.values().filter(|s| !running(s)).count()
}

/// An object's reconcile at the gate, from the moment the `Controller` started it: when it
/// ends (or is dropped, by a shutdown) the object leaves the gate, or is queued again if news
/// came while it ran.
struct Turn<'a> {
    gate: &'a Gate,
    key: Key,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let again = match self.gate.objects().entry(self.key.clone()) {
            Entry::Occupied(mut stage) => match stage.get() {
                Stage::Running { news: true } => {
                    let since = Instant::now();
                    stage.insert(Stage::Queued {
                        urgent: true,
                        since,
                    });
                    true
                }
                // Let in again by news after it was started: the `Controller` runs it next.
                Stage::LetIn(..) => false,
                _ => {
                    stage.remove();
                    false
                }
            },
            Entry::Vacant(_) => false,
        };
        if again {
            self.gate.shared.queue.add();
            let flow = Flow::from(self.key.0.as_str());
            self.gate.queue(self.key.clone(), flow, Priority::Urgent);
        }
    }
}
