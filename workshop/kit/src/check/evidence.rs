//! Which cause a ✗ leads with. A step's own hint is a guess from what it expected (a Number
//! that did not come back: `.owns` is missing); the evidence the check holds may show another
//! cause, and then the hint leads with that one: a controller that stopped (its panic), children
//! that `kubectl get -w` saw created over and over (a loop of delete and apply), an apply the
//! API server refused with 409 Conflict (`.force()` missing).

use std::time::Duration;

use super::Session;
use super::answers;
use crate::messages as m;
use crate::t;
use crate::track::Kind;

/// The parent kinds and their children, with the exercise that deletes the unwanted ones.
const FAMILIES: [(Kind, Kind, &str); 2] = [
    (Kind::Tuple, Kind::Number, "2b"),
    (Kind::Fermat, Kind::Tuple, "3b"),
];

/// The exercise that applies a kind's children (or, for a Number, its status).
fn applying_exercise(kind: Kind) -> &'static str {
    match kind {
        Kind::Number => "1b",
        Kind::Tuple => "2a",
        Kind::Fermat => "3a",
    }
}

/// Whether a reconcile error is server-side apply's conflict: kube-apiserver (and the test API
/// server) answers 409 with "Apply failed with N conflict(s)" when another field manager owns
/// a field the apply sets and the apply does not force.
fn apply_conflict(error: &str) -> bool {
    error.contains("Apply failed with") && error.contains("409")
}

/// "tuple-sample-0 (57×), tuple-sample-1 (56×)": the first three of `looped`, with how often.
pub(super) fn looped_names(looped: &[(String, usize)]) -> String {
    let mut names: Vec<String> = looped
        .iter()
        .take(3)
        .map(|(name, n)| format!("{name} ({n}×)"))
        .collect();
    if looped.len() > 3 {
        names.push("…".to_string());
    }
    names.join(", ")
}

/// How long a wait took, as a ✗ line says it: the whole seconds of a wait that ran out, the
/// tenths of one that ended early (a controller stopped: nothing more would change).
pub(super) fn seconds(waited: Duration, ran_out: bool) -> String {
    if ran_out {
        waited.as_secs().to_string()
    } else {
        format!("{:.1}", waited.as_secs_f64())
    }
}

impl Session {
    /// The hint a ✗ of `kinds` leads with when the evidence shows its cause, else `None`.
    pub(super) fn evident(&mut self, kinds: &[Kind]) -> Option<String> {
        self.stopped(kinds)
            .or_else(|| self.looping(kinds))
            .or_else(|| self.refused_without_force(kinds))
    }

    /// Children of `kinds` that the stage's watches saw created over and over, as a hint.
    /// Only until the stage's own loop line is given: the foreground deletion that follows has
    /// a line and a hint of its own for re-created children.
    fn looping(&self, kinds: &[Kind]) -> Option<String> {
        let history = self.history.as_ref().filter(|_| !self.judged)?;
        let seen = history.seen();
        FAMILIES
            .iter()
            .filter(|(parent, _, _)| kinds.contains(parent))
            .find_map(|(parent, child, exercise)| {
                let looped = answers::loops(&seen, *child);
                (!looped.is_empty()).then(|| self.loop_hint(*parent, *child, exercise, &looped))
            })
    }

    /// What to do about `child`ren of `parent` created over and over.
    pub(super) fn loop_hint(
        &self,
        parent: Kind,
        child: Kind,
        exercise: &str,
        looped: &[(String, usize)],
    ) -> String {
        t!(
            m::LOOP_HINT,
            plural = format!("{}s", child.name().to_lowercase()),
            names = looped_names(looped),
            child_kind = child.name(),
            parent_kind = parent.name(),
            exercise = exercise,
            file = self.track.file(parent)
        )
    }

    /// An apply of `kinds` that the API server refused with 409 Conflict, as a hint that leads
    /// with `.force()`, and the error itself.
    fn refused_without_force(&self, kinds: &[Kind]) -> Option<String> {
        kinds.iter().find_map(|kind| {
            let error = self
                .ctx
                .last_error(kind.name())
                .filter(|e| apply_conflict(e))?;
            let force = t!(
                m::FORCE_FIRST_HINT,
                kind = kind.name(),
                exercise = applying_exercise(*kind),
                file = self.track.file(*kind)
            );
            Some(force + &t!(m::LAST_ERROR, kind = kind.name(), error = error))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_conflict_is_told_from_other_errors() {
        let conflict = "tuple-sample: the API server said: Apply failed with 1 conflict: conflict \
                        with \"kubectl-patch\": .spec.value (Conflict, 409)";
        assert!(apply_conflict(conflict));
        // An update's stale resourceVersion is a 409 too, but not apply's.
        let stale = "t: the API server said: the object has been modified (Conflict, 409)";
        assert!(!apply_conflict(stale));
    }

    #[test]
    fn a_wait_says_whole_seconds_when_it_ran_out_and_tenths_when_it_ended_early() {
        assert_eq!(seconds(Duration::from_millis(10_040), true), "10");
        assert_eq!(seconds(Duration::from_millis(340), false), "0.3");
    }

    #[test]
    fn looped_children_are_named_three_at_most() {
        let looped: Vec<(String, usize)> = (0..4).map(|i| (format!("t-{i}"), 9)).collect();
        assert_eq!(looped_names(&looped), "t-0 (9×), t-1 (9×), t-2 (9×), …");
    }
}
