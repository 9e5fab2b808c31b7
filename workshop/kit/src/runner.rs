//! Starts the controllers of stages 1..=N, each in a task of its own, so that one that
//! panics (a `todo!()`) stops alone and is reported, instead of taking the others down.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::FutureExt;
use tokio::task::JoinHandle;

use crate::context::Context;
use crate::messages as m;
use crate::panics;
use crate::t;
use crate::track::{Kind, Track};
use crate::undecodable;

/// The context the controllers of `track` run with, on `client` (see [`Context::new`]): their
/// lists and watches of the three kinds hold only the objects the track's types can decode,
/// so that one stored under another schema stops nothing else; each one left out is named
/// once in the log ([`crate::undecodable`]).
pub fn context(client: kube::Client, namespace: Option<String>, track: &Track) -> Arc<Context> {
    Context::new(undecodable::tolerant(client, track.decodes), namespace)
}

/// The running controllers of one track.
pub struct Controllers {
    running: Vec<(Kind, JoinHandle<()>)>,
    stopped: BTreeMap<Kind, String>,
}

impl Controllers {
    /// Spawns the controllers of every kind up to `stage`.
    pub fn start(track: &Track, stage: u8, ctx: &Arc<Context>) -> Controllers {
        let running = Kind::ALL
            .into_iter()
            .filter(|kind| kind.stage() <= stage)
            .map(|kind| (kind, tokio::spawn((track.controller(kind))(ctx.clone()))))
            .collect();
        Controllers {
            running,
            stopped: BTreeMap::new(),
        }
    }

    /// Why a kind's controller stopped (its panic message), if it did.
    pub fn stopped(&mut self, kind: Kind) -> Option<String> {
        self.collect();
        self.stopped.get(&kind).cloned()
    }

    /// Every controller that stopped, with why.
    pub fn all_stopped(&mut self) -> BTreeMap<Kind, String> {
        self.collect();
        self.stopped.clone()
    }

    /// Whether any controller is still running.
    pub fn any_running(&mut self) -> bool {
        self.collect();
        !self.running.is_empty()
    }

    /// Moves finished tasks to `stopped`.
    fn collect(&mut self) {
        let mut still = Vec::new();
        let mut stopped = Vec::new();
        for (kind, mut task) in self.running.drain(..) {
            if !task.is_finished() {
                still.push((kind, task));
                continue;
            }
            let why = match (&mut task).now_or_never() {
                Some(Err(e)) if e.is_panic() => panics::describe(e.into_panic().as_ref()),
                _ => m::STREAM_ENDED.text(),
            };
            stopped.push((kind, why));
        }
        self.running = still;
        for (kind, why) in stopped {
            let others = if self.running.is_empty() {
                String::new()
            } else {
                m::OTHERS_KEEP_RUNNING.text()
            };
            tracing::error!(target: "math_workshop::runner",
                "{}",
                t!(
                    m::CONTROLLER_STOPPED,
                    kind = kind.name(),
                    why = why,
                    others = others
                )
            );
            self.stopped.insert(kind, why);
        }
    }

    /// Stops every controller.
    pub fn stop(self) {
        for (_, task) in self.running {
            task.abort();
        }
    }
}
