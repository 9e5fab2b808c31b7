//! What the live view remembers between watch events, so that a change can be seen: which
//! UID each name had (a deleted child that comes back has a new one), which objects were
//! Ready, and when each highlight started. Pure: events and instants come in as values.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::render::{Flash, Marks};
use super::{Kind, Object, is_ready};

/// How long a change stays highlighted.
pub const HIGHLIGHT: Duration = Duration::from_secs(5);

/// What a watch said about one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Listed when the watch (re)started.
    Listed,
    /// Created or changed.
    Applied,
    Deleted,
}

type Key = (Kind, String, String);

#[derive(Debug, Default)]
pub struct Tracker {
    /// The last UID seen under each name, kept after a deletion to recognise a comeback.
    uids: HashMap<Key, String>,
    /// Whether each UID was Ready when last seen.
    ready: HashMap<String, bool>,
    flashes: HashMap<String, Vec<(Flash, Instant)>>,
    gone: HashMap<Key, Instant>,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Take note of one watch event.
    pub fn observe(&mut self, seen: Seen, object: &Object, kind: Kind, now: Instant) {
        let meta = object.meta();
        let (Some(uid), Some(name)) = (meta.uid.clone(), meta.name.clone()) else {
            return;
        };
        let key = (kind, meta.namespace.clone().unwrap_or_default(), name);
        if seen == Seen::Deleted {
            self.ready.remove(&uid);
            self.flashes.remove(&uid);
            self.gone.insert(key, now);
            return;
        }
        self.gone.remove(&key);
        let ready = is_ready(object);
        if let Some(previous) = self.uids.insert(key, uid.clone())
            && previous != uid
        {
            self.ready.remove(&previous);
            self.flash(
                &uid,
                Flash::Back {
                    previous_uid: previous,
                },
                now,
            );
        }
        if let Some(false) = self.ready.insert(uid.clone(), ready)
            && ready
        {
            self.flash(&uid, Flash::NowReady, now);
        }
    }

    fn flash(&mut self, uid: &str, flash: Flash, now: Instant) {
        let list = self.flashes.entry(uid.to_string()).or_default();
        list.retain(|(f, _)| f != &flash);
        list.push((flash, now));
    }

    /// The highlights still in force at `now`; expired ones are forgotten.
    pub fn marks(&mut self, now: Instant) -> Marks {
        let fresh = |at: &Instant| now.saturating_duration_since(*at) < HIGHLIGHT;
        self.flashes.retain(|_, list| {
            list.retain(|(_, at)| fresh(at));
            !list.is_empty()
        });
        let by_uid = (self.flashes.iter())
            .map(|(uid, list)| (uid.clone(), list.iter().map(|(f, _)| f.clone()).collect()))
            .collect();
        // After the highlight, a gone child is still shown as missing (the tree says so).
        self.gone.retain(|_, at| fresh(at));
        let gone = self.gone.keys().cloned().collect();
        Marks { by_uid, gone }
    }

    /// When the next highlight fades, so the view can redraw then without polling.
    pub fn next_expiry(&self) -> Option<Instant> {
        let flashes = self.flashes.values().flatten().map(|(_, at)| *at);
        let gone = self.gone.values().copied();
        flashes.chain(gone).map(|at| at + HIGHLIGHT).min()
    }
}
