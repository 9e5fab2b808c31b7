//! When the live view draws. A frame of a big tree can cost more than the time between two
//! frames; drawing back to back would then leave no time for the watch events and the keys,
//! and the view would fall further behind the more there is to show. Pure: instants come in
//! as values.

use std::time::{Duration, Instant};

/// The shortest time between the starts of two frames: a burst of watch events (a Fermat of
/// 20000 creating 30000 objects) becomes a few redraws a second, not one per event.
pub const FRAME: Duration = Duration::from_millis(100);

/// From the start of one frame to the start of the next: [`FRAME`], or three times what the
/// last frame cost, so that at most about a third of the time goes to drawing (the pause
/// after a frame is at least twice its cost).
pub fn spacing(cost: Duration) -> Duration {
    FRAME.max(cost.saturating_mul(3))
}

/// The last frame and whether something changed since.
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    started: Instant,
    cost: Duration,
    dirty: bool,
}

impl Pacer {
    /// Nothing drawn yet: the first frame is due at once.
    pub fn new(now: Instant) -> Pacer {
        Pacer {
            started: now.checked_sub(FRAME).unwrap_or(now),
            cost: Duration::ZERO,
            dirty: true,
        }
    }

    /// Something changed (a watch event, a key): the next frame is due as soon as allowed.
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    pub fn drawn(&mut self, started: Instant, cost: Duration) {
        self.started = started;
        self.cost = cost;
        self.dirty = false;
    }

    /// When the last frame started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// When to draw next: as soon as the spacing allows if something changed, else at `idle`
    /// (a highlight fading, the clock), but never closer than the spacing either.
    pub fn next(&self, idle: Instant) -> Instant {
        let earliest = self.started + spacing(self.cost);
        if self.dirty {
            earliest
        } else {
            earliest.max(idle)
        }
    }
}
