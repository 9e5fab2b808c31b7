//! What every reconcile shares: the client, the three caches, the Event recorder, the
//! metrics, and the manager's memory of writes the caches do not show yet.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::{debug, info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::children::{self, Child, Desired, Plan};
use crate::error::{Error, Result};
use crate::metrics::{Metrics, WriteKind};
use crate::status::{self, Progress, StatusWrite};

/// The name Events are reported under (`kubectl describe` shows it as "From").
pub const REPORTER: &str = "math-controller";

/// What every reconcile gets: the client, the caches, the Event recorder and the metrics.
pub struct Context {
    pub client: Client,
    pub numbers: Store<Number>,
    pub tuples: Store<Tuple>,
    pub fermats: Store<Fermat>,
    pub recorder: Recorder,
    pub metrics: Metrics,
    /// The API server outage in progress, if any (shared with the watches).
    pub outage: Arc<crate::outage::Outage>,
    /// Consecutive failures per object, for the error policy's exponential backoff.
    failures: Mutex<HashMap<String, u32>>,
    /// Children written to whose change the cache has not shown yet (see [`Context::expect_change`]).
    in_flight: Mutex<HashMap<String, InFlight>>,
    /// Statuses written whose echo the cache has not shown yet (see [`Context::write_status`]).
    statuses: Mutex<HashMap<String, WrittenStatus>>,
}

/// A status write that the watch has not delivered yet.
struct WrittenStatus {
    /// The object's resourceVersion in the cache when we wrote.
    seen: String,
    status: serde_json::Value,
    since: std::time::Instant,
}

/// What the cache holds of a parent's children: the objects of the desired names, the
/// objects it controls, and the names whose last write the cache does not show yet.
pub type CachedChildren<C> = (HashMap<String, Arc<C>>, Vec<Arc<C>>, HashSet<String>);

/// A write to a child that the watch has not delivered yet.
struct InFlight {
    /// The child's resourceVersion in the cache when we wrote (`None`: it was absent).
    seen: Option<String>,
    since: std::time::Instant,
}

/// How long a write may go unseen before the cache is believed again regardless: a safety
/// net for a lost watch event; the watch normally delivers within milliseconds.
const IN_FLIGHT_TIMEOUT: Duration = Duration::from_secs(30);

impl Context {
    /// A context over the three caches, with its own Event recorder.
    pub fn new(
        client: Client,
        caches: (Store<Number>, Store<Tuple>, Store<Fermat>),
        metrics: Metrics,
    ) -> Self {
        let (numbers, tuples, fermats) = caches;
        let reporter = Reporter {
            controller: REPORTER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            outage: crate::outage::Outage::new(client.clone()),
            client,
            numbers,
            tuples,
            fermats,
            metrics,
            failures: Mutex::default(),
            in_flight: Mutex::default(),
            statuses: Mutex::default(),
        }
    }

    /// The `controller` label of metrics for a parent kind.
    pub fn controller_name<P: Resource<DynamicType = ()>>(&self) -> &'static str {
        match P::kind(&()).as_ref() {
            "Number" => "number",
            "Tuple" => "tuple",
            _ => "fermat",
        }
    }

    /// Whether every cache holds its first complete list. Awaited once, before the
    /// controllers start (see `run_controllers`), never from reconciles.
    pub(crate) async fn caches_ready(&self) {
        let _ = self.numbers.wait_until_ready().await;
        let _ = self.tuples.wait_until_ready().await;
        let _ = self.fermats.wait_until_ready().await;
    }

    /// Remember that we just wrote to a child that the cache showed at `seen` (its
    /// resourceVersion, `None` when absent). Until the cache moves past that, a reconcile
    /// that runs before the watch event arrives would see the old state and write again
    /// (a duplicate create answered 409, a second correction): it waits instead. This is
    /// what controller-runtime users know as "expectations".
    pub fn expect_change<C: Child>(&self, namespace: &str, name: &str, seen: Option<String>) {
        if let Ok(mut in_flight) = self.in_flight.lock() {
            let since = std::time::Instant::now();
            in_flight.insert(
                format!("{}/{namespace}/{name}", C::KIND),
                InFlight { seen, since },
            );
        }
    }

    /// Whether a write to this child is still on its way to the cache; forgets it once seen.
    fn is_in_flight<C: Child>(&self, namespace: &str, name: &str, cached: Option<&Arc<C>>) -> bool {
        let Ok(mut in_flight) = self.in_flight.lock() else {
            return false;
        };
        let key = format!("{}/{namespace}/{name}", C::KIND);
        let Some(write) = in_flight.get(&key) else {
            return false;
        };
        let cached_version = cached.and_then(|c| c.resource_version());
        if write.seen == cached_version && write.since.elapsed() < IN_FLIGHT_TIMEOUT {
            return true;
        }
        in_flight.remove(&key);
        false
    }

    /// From the cache, the objects of the desired names in the parent's namespace, the
    /// objects there whose controller is the parent (by UID), and the names of those whose
    /// last write has not reached the cache yet. No API request.
    pub fn children<P: Resource, C: Child>(
        &self,
        store: &Store<C>,
        parent: &P,
        desired: &[Desired<C::Spec>],
    ) -> CachedChildren<C> {
        let namespace = parent.meta().namespace.clone();
        let uid = parent.meta().uid.as_deref();
        let found: HashMap<String, Arc<C>> = desired
            .iter()
            .filter_map(|d| {
                let key = ObjectRef::new(&d.name).within(namespace.as_deref().unwrap_or_default());
                store.get(&key).map(|c| (d.name.clone(), c))
            })
            .collect();
        let owned = store
            .state()
            .into_iter()
            .filter(|c| {
                c.meta().namespace == namespace && children::controller_uid(c.as_ref()) == uid
            })
            .collect::<Vec<_>>();
        let ns = namespace.as_deref().unwrap_or_default();
        let in_flight = desired
            .iter()
            .map(|d| (d.name.as_str(), found.get(&d.name)))
            .chain(
                owned
                    .iter()
                    .map(|c| (c.meta().name.as_deref().unwrap_or_default(), Some(c))),
            )
            .filter(|(name, cached)| self.is_in_flight::<C>(ns, name, *cached))
            .map(|(name, _)| name.to_string())
            .collect();
        (found, owned, in_flight)
    }

    /// Log, in words, what a parent wants, what it found and what it is about to do.
    pub fn narrate<P: Resource<DynamicType = ()>, C: Child>(&self, parent: &P, plan: &Plan<C>) {
        let who = format!(
            "{} {}/{}",
            P::kind(&()),
            parent.namespace().unwrap_or_default(),
            parent.name_any()
        );
        let found = format!(
            "wants {} {}s; {} ready, {} still computing, {} missing, {} edited by hand, {} to adopt, {} unwanted, {} owned by others",
            plan.desired,
            C::KIND,
            plan.ready.len(),
            plan.pending.len(),
            plan.create.len(),
            plan.correct.len(),
            plan.adopt.len(),
            plan.delete.len(),
            plan.conflicts.len()
        );
        if plan.has_writes() || plan.blocked() {
            info!("{who} {found}");
        } else {
            debug!("{who} {found}");
        }
    }

    /// Publish an Event on `regarding`. An Event that cannot be written is logged, never a
    /// reason to fail the reconcile that did the work it reports.
    pub async fn publish<P: Resource<DynamicType = ()>>(
        &self,
        regarding: &P,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
        related: Option<k8s_openapi::api::core::v1::ObjectReference>,
    ) {
        let event = Event {
            type_,
            reason: reason.to_string(),
            note: Some(note),
            action: action.to_string(),
            secondary: related,
        };
        self.metrics
            .write(self.controller_name::<P>(), "Event", WriteKind::Event);
        // The Recorder folds Events of the same object, reason and action into one series
        // that keeps the *first* note ("created 3 Numbers: t-0, t-1, t-2" would then stand
        // for a later "created 1 Number: t-1"). Each report of what was done is news of its
        // own, so it gets an Event of its own; repeated warnings still become a series.
        let fresh;
        let recorder = match type_ {
            EventType::Normal => {
                fresh = Recorder::new(
                    self.client.clone(),
                    Reporter {
                        controller: REPORTER.into(),
                        instance: std::env::var("POD_NAME").ok(),
                    },
                );
                &fresh
            }
            EventType::Warning => &self.recorder,
        };
        if let Err(error) = recorder.publish(&event, &regarding.object_ref(&())).await {
            if crate::outage::is_unreachable(&error) {
                // Reported once, as an outage.
                self.outage.unreachable(None, &error);
                return;
            }
            warn!(%error, reason, "could not publish an Event on {} {}", P::kind(&()), regarding.name_any());
        }
    }

    /// Write an object's status if [`status::decide`] says it is due; answers when to look
    /// again (`None`: on the next watch event).
    ///
    /// The status we wrote last is remembered until the cache shows it: a reconcile that runs
    /// in between (a second child reported meanwhile) compares against what we wrote, not
    /// against the stale cache, and so does not write the same status twice.
    pub async fn write_status<P, S>(
        &self,
        obj: &P,
        current: Option<&S>,
        desired: &S,
        progress: Progress,
        now: Timestamp,
    ) -> Result<Option<Duration>>
    where
        P: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + Debug
            + DeserializeOwned,
        S: Serialize,
    {
        let namespace = obj.namespace().unwrap_or_default();
        let name = obj.name_any();
        let kind = P::kind(&()).to_string();
        let key = format!("{kind}/{namespace}/{name}");
        let cached_version = obj.resource_version();
        let written = self.written_status(&key, cached_version.as_deref());
        let current = match written {
            Some(written) => Some(written),
            None => current.map(serde_json::to_value).transpose()?,
        };
        let desired = serde_json::to_value(desired)?;
        let age = status::age(obj.meta().creation_timestamp.as_ref(), now);
        match status::decide(current.as_ref(), &desired, progress, age)? {
            StatusWrite::Unchanged => Ok(None),
            StatusWrite::Hold(wait) => Ok(Some(wait)),
            StatusWrite::Patch(patch) => {
                let api: Api<P> = Api::namespaced(self.client.clone(), &namespace);
                let static_kind = match kind.as_str() {
                    "Number" => "Number",
                    "Tuple" => "Tuple",
                    _ => "Fermat",
                };
                self.metrics.write(
                    self.controller_name::<P>(),
                    static_kind,
                    WriteKind::PatchStatus,
                );
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|source| Error::Kube {
                        action: "writing the status of",
                        kind: static_kind,
                        namespace: namespace.clone(),
                        name: name.clone(),
                        source: Box::new(source),
                    })?;
                if let (Ok(mut statuses), Some(seen)) = (self.statuses.lock(), cached_version) {
                    let since = std::time::Instant::now();
                    statuses.insert(
                        key,
                        WrittenStatus {
                            seen,
                            status: desired,
                            since,
                        },
                    );
                }
                let message = patch
                    .pointer("/status/conditions/0/message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("status updated");
                info!("{kind} {namespace}/{name}: {message}");
                Ok(None)
            }
        }
    }

    /// The status we last wrote for `key`, while the cache still shows the object as it was
    /// before that write (resourceVersion `cached`).
    fn written_status(&self, key: &str, cached: Option<&str>) -> Option<serde_json::Value> {
        let mut statuses = self.statuses.lock().ok()?;
        match statuses.get(key) {
            Some(w) if Some(w.seen.as_str()) == cached && w.since.elapsed() < IN_FLIGHT_TIMEOUT => {
                Some(w.status.clone())
            }
            Some(_) => {
                statuses.remove(key);
                None
            }
            None => None,
        }
    }

    pub(crate) fn note_success(&self, key: &str) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }

    pub(crate) fn note_failure(&self, key: &str) -> u32 {
        match self.failures.lock() {
            Ok(mut failures) => {
                let count = failures.entry(key.to_string()).or_default();
                *count = count.saturating_add(1);
                *count
            }
            Err(_) => 1,
        }
    }
}
