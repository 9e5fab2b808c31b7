//! What `kubectl get <kinds> -w` shows a learner during a check: every state the check's
//! objects pass through, not only the last one. A status that is right in the end may have
//! been wrong on the way (a Tuple that says `allSquares: true` before its Numbers answered, then
//! `false`), and a child may have been deleted and created a hundred times between two looks
//! of a probe; a watch sees both.
//!
//! One watch per kind of the stage, started before the stage's first `kubectl apply` and
//! recording until the check ends. The events are ordered by their resourceVersion: on
//! kube-apiserver it is etcd's revision, one counter for every kind, and the test API server
//! keeps one global counter the same way, so the order says which Number had answered when a
//! Tuple wrote its status. (A resourceVersion that is not a number keeps the order the events
//! arrived in.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::Reader;
use crate::track::Kind;

/// One state of one object, as a watch event carried it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub kind: Kind,
    pub name: String,
    pub uid: String,
    /// `None` when the resourceVersion is not a number.
    pub version: Option<u64>,
    /// A DELETED event: the object is gone from here on.
    pub deleted: bool,
    /// The object as the event carried it (metadata, spec, status).
    pub object: Value,
}

impl Seen {
    /// A state of `kind` from a watched object.
    pub(crate) fn of(kind: Kind, object: &DynamicObject, deleted: bool) -> Seen {
        let meta = &object.metadata;
        Seen {
            kind,
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            version: meta
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok()),
            deleted,
            object: serde_json::to_value(object).unwrap_or_default(),
        }
    }

    /// Whether this is a state of `kind` `name`.
    pub(crate) fn is(&self, kind: Kind, name: &str) -> bool {
        self.kind == kind && self.name == name
    }

    /// `metadata.generation`.
    pub(crate) fn generation(&self) -> Option<i64> {
        self.object["metadata"]["generation"].as_i64()
    }

    /// `status.observedGeneration`.
    pub(crate) fn observed(&self) -> Option<i64> {
        self.object["status"]["observedGeneration"].as_i64()
    }

    /// Whether its status says it describes the spec it carries.
    pub(crate) fn current(&self) -> bool {
        self.observed().is_some() && self.observed() == self.generation()
    }
}

/// The recording: the watches' tasks and what they saw.
pub(crate) struct History {
    seen: Arc<Mutex<Vec<Seen>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl History {
    /// Starts a watch on each of `kinds` in the check's namespace, and returns once each has
    /// listed what is there (or after `timeout`): from then on no change is missed.
    pub(crate) async fn start(reader: &Reader, kinds: &[Kind], timeout: Duration) -> History {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for kind in kinds {
            let (listed, ready) = tokio::sync::oneshot::channel();
            let api = reader.api(kind.name());
            tasks.push(tokio::spawn(record(*kind, api, seen.clone(), listed)));
            let _ = tokio::time::timeout(timeout, ready).await;
        }
        History { seen, tasks }
    }

    /// Every state seen so far, in the order of their resourceVersions.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if seen.iter().all(|s| s.version.is_some()) {
            seen.sort_by_key(|s| s.version);
        }
        seen
    }

    /// Ends the watches.
    pub(crate) fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
    }
}

/// One kind's watch: every event into `seen`; `listed` once the initial list is in.
async fn record(
    kind: Kind,
    api: kube::Api<DynamicObject>,
    seen: Arc<Mutex<Vec<Seen>>>,
    listed: tokio::sync::oneshot::Sender<()>,
) {
    let mut listed = Some(listed);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let state = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                Seen::of(kind, &object, false)
            }
            Ok(watcher::Event::Delete(object)) => Seen::of(kind, &object, true),
            Ok(watcher::Event::InitDone) => {
                if let Some(listed) = listed.take() {
                    let _ = listed.send(());
                }
                continue;
            }
            // The watcher retries on its own (with its backoff); a relist repeats states.
            _ => continue,
        };
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(state);
    }
}
