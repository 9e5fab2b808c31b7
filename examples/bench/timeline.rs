//! Where a small Fermat's time to Ready goes, seen from outside the manager: a watch of the
//! bench's own on the small one's namespace records when each Tuple and Number first appeared
//! and first showed Ready (the API server's order of events, as any client sees it), so the
//! chain Fermat → Tuples → Numbers → their statuses → back up can be read step by step.
//! The manager's own side (its watch events, gate turns, slot waits and answers) is its
//! `math_controller::timeline` log target.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use math_controller::api::{Number, Tuple};
use math_controller::kind::Kind;

/// When an object was first seen, and first seen Ready, after the start.
#[derive(Clone, Copy, Default)]
struct Seen {
    created: Option<Duration>,
    ready: Option<Duration>,
}

/// The watches of one namespace's Tuples and Numbers, recording until dropped.
pub struct Timeline {
    start: Instant,
    seen: Arc<Mutex<BTreeMap<(&'static str, String), Seen>>>,
    watches: tokio::task::JoinHandle<()>,
}

impl Timeline {
    /// Start watching `namespace`; times count from [`Timeline::restart`] (or now).
    pub fn watch(client: &Client, namespace: &str) -> Timeline {
        let start = Instant::now();
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let tuples = changes::<Tuple>(Api::namespaced(client.clone(), namespace));
        let numbers = changes::<Number>(Api::namespaced(client.clone(), namespace));
        let sink = seen.clone();
        let watches = tokio::spawn(async move {
            let mut both = futures::stream::select(tuples, numbers);
            while let Some((kind, name, ready)) = both.next().await {
                let at = start.elapsed();
                if let Ok(mut seen) = sink.lock() {
                    let entry: &mut Seen = seen.entry((kind, name)).or_default();
                    entry.created.get_or_insert(at);
                    if ready {
                        entry.ready.get_or_insert(at);
                    }
                }
            }
        });
        Timeline {
            start,
            seen,
            watches,
        }
    }

    /// What was seen of Fermat `fermat`'s children, as lines: per kind, the first and last
    /// object created and Ready, relative to `from` (when the Fermat was applied), and then
    /// every object in the order it became Ready.
    pub fn report(&self, fermat: &str, from: Instant) -> Vec<String> {
        let offset = from.saturating_duration_since(self.start);
        let mut seen = self.seen.lock().map(|s| s.clone()).unwrap_or_default();
        let prefix = format!("{fermat}-");
        seen.retain(|(_, name), _| name.starts_with(&prefix));
        let at = |d: Option<Duration>| {
            d.map_or("never".to_string(), |d| {
                format!("{:+.2}", d.as_secs_f64() - offset.as_secs_f64())
            })
        };
        let mut lines = Vec::new();
        for kind in ["Tuple", "Number"] {
            let of_kind: Vec<Seen> = (seen.iter())
                .filter(|((k, _), _)| *k == kind)
                .map(|(_, s)| *s)
                .collect();
            let span = |pick: fn(&Seen) -> Option<Duration>| {
                let times: Vec<Duration> = of_kind.iter().filter_map(pick).collect();
                match (times.iter().min(), times.iter().max()) {
                    (Some(first), Some(last)) => {
                        format!("{}..{} s", at(Some(*first)), at(Some(*last)))
                    }
                    _ => "never".to_string(),
                }
            };
            lines.push(format!(
                "    {} {kind}s: created {}, Ready {}",
                of_kind.len(),
                span(|s| s.created),
                span(|s| s.ready)
            ));
        }
        let mut by_ready: Vec<_> = seen.iter().collect();
        by_ready.sort_by_key(|(_, s)| (s.ready.is_none(), s.ready, s.created));
        let each: Vec<String> = (by_ready.iter())
            .map(|((kind, name), s)| format!("{kind} {name} {}/{}", at(s.created), at(s.ready)))
            .collect();
        lines.push(format!("    each (created/Ready, s): {}", each.join(", ")));
        lines
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        self.watches.abort();
    }
}

/// A kind's changes in one namespace: its name, and whether it is Ready.
fn changes<K>(
    api: Api<K>,
) -> impl futures::Stream<Item = (&'static str, String, bool)> + Send + 'static
where
    K: Kind + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let kind: &'static str = if K::CONTROLLER == Tuple::CONTROLLER {
        "Tuple"
    } else {
        "Number"
    };
    watcher(api, watcher::Config::default())
        .applied_objects()
        .filter_map(move |change| async move {
            change
                .ok()
                .map(|obj: K| (kind, obj.name_any(), obj.is_ready()))
        })
        .boxed()
}
