//! Pure helpers shared by the three controllers for writing a status: the `Ready` condition,
//! the decision whether a status write is due at all, and the merge patch that carries it.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::api::READY;

/// How long a brand-new parent whose children are simply still being computed keeps quiet
/// instead of publishing an intermediate "waiting" status. In a burst (a Fermat of 1000
/// creating 500 Tuples) nearly every parent finishes inside this window, which saves one
/// status write per parent; a parent that is stuck (a conflict, a name too long) says so at
/// once, whatever its age.
pub const WAITING_STATUS_GRACE: Duration = Duration::from_secs(5);

/// The `Ready` condition a controller wants to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub ready: bool,
    /// CamelCase, e.g. `WaitingForNumbers`.
    pub reason: &'static str,
    pub message: String,
}

/// Whether a computed status is an answer, or only a progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The status is final for this generation (Ready, or blocked until someone acts).
    Settled,
    /// Children are still being created or computed; a later trigger will bring news.
    Pending,
}

/// How a reconcile ended, before it becomes kube-runtime's `Action`: when to look again
/// (`None`: on the next watch event), and whether the object's status is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub requeue_after: Option<Duration>,
    pub progress: Progress,
}

impl Outcome {
    /// Final for now: nothing to do until a watch event brings news.
    pub const DONE: Outcome = Outcome {
        requeue_after: None,
        progress: Progress::Settled,
    };

    /// The earlier of this outcome's requeue and `after`.
    pub fn requeue_within(self, after: Option<Duration>) -> Outcome {
        let requeue_after = match (self.requeue_after, after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Outcome {
            requeue_after,
            ..self
        }
    }
}

/// The `Ready` condition for `generation`, keeping `lastTransitionTime` from `previous` when
/// the condition's status did not flip, as the API conventions ask. Keeping it also makes an
/// unchanged status compare equal, so nothing is written.
pub fn ready_condition(
    readiness: &Readiness,
    generation: Option<i64>,
    previous: &[Condition],
    now: Timestamp,
) -> Condition {
    let status = if readiness.ready { "True" } else { "False" };
    let last_transition_time = previous
        .iter()
        .find(|c| c.type_ == READY && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    Condition {
        type_: READY.to_string(),
        status: status.to_string(),
        reason: readiness.reason.to_string(),
        message: readiness.message.clone(),
        observed_generation: generation,
        last_transition_time,
    }
}

/// Whether a `Ready` condition is True and describes `generation`.
pub fn is_ready_for(
    conditions: &[Condition],
    observed: Option<i64>,
    generation: Option<i64>,
) -> bool {
    observed.is_some()
        && observed == generation
        && conditions
            .iter()
            .any(|c| c.type_ == READY && c.status == "True")
}

/// What to do about a status.
#[derive(Clone, Debug, PartialEq)]
pub enum StatusWrite {
    /// The stored status already says this: write nothing.
    Unchanged,
    /// Send this JSON merge patch to the status subresource.
    Patch(Value),
    /// Not yet: a brand-new object whose children are on their way; look again after this.
    Hold(Duration),
}

/// Decide whether to write `desired` over `current`.
///
/// `age` is how long ago the object was created. A pending status (children still being
/// computed) is not worth a write while the object is brand new and has no status at all:
/// nothing wrong is shown, and the final answer usually follows within the grace period.
/// A pending status *is* written when a previous one exists (it may hold an answer for an
/// older generation, which would now be wrong) but only when its reason changes, not for
/// every child that becomes ready on the way.
pub fn decide<S: Serialize + PartialEq>(
    current: Option<&S>,
    desired: &S,
    progress: Progress,
    age: Duration,
) -> Result<StatusWrite, serde_json::Error> {
    if current == Some(desired) {
        return Ok(StatusWrite::Unchanged);
    }
    let old = match current {
        Some(c) => serde_json::to_value(c)?,
        None => Value::Null,
    };
    let new = serde_json::to_value(desired)?;
    if progress == Progress::Pending {
        if current.is_none() && age < WAITING_STATUS_GRACE {
            return Ok(StatusWrite::Hold(WAITING_STATUS_GRACE - age));
        }
        if same_wait(&old, &new) {
            return Ok(StatusWrite::Unchanged);
        }
    }
    Ok(StatusWrite::Patch(
        json!({ "status": merge_patch(&old, &new) }),
    ))
}

/// Both statuses wait for the same reason at the same generation: only counts moved.
fn same_wait(old: &Value, new: &Value) -> bool {
    let reason = |v: &Value| {
        v.get("conditions")
            .and_then(|c| c.as_array())
            .and_then(|c| c.iter().find(|c| c.get("type") == Some(&json!(READY))))
            .and_then(|c| c.get("reason"))
            .cloned()
    };
    old.get("observedGeneration") == new.get("observedGeneration")
        && reason(old).is_some()
        && reason(old) == reason(new)
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: changed keys with their new
/// values, removed keys as `null`. Arrays are replaced whole, as merge patch requires.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        patch.insert(key.clone(), merge_patch(previous, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys().filter(|k| !new.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// How long ago `created` was, zero for timestamps in the future or missing.
pub fn age(created: Option<&Time>, now: Timestamp) -> Duration {
    created
        .and_then(|t| Duration::try_from(now.duration_since(t.0)).ok())
        .unwrap_or_default()
}

/// A list of names for a message, cut short so Events stay under their 1 kB limit.
pub fn name_list<S: AsRef<str>>(names: &[S]) -> String {
    const SHOWN: usize = 5;
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(|n| n.as_ref())
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn merge_patch_sets_changed_and_nulls_removed_keys() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "gone": true, "list": [1, 2]});
        let new = json!({"a": 1, "b": {"c": 5, "d": 3}, "list": [1]});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"b": {"c": 5}, "gone": null, "list": [1]})
        );
        assert_eq!(merge_patch(&Value::Null, &json!({"x": 1})), json!({"x": 1}));
    }

    #[test]
    fn ready_condition_keeps_transition_time_when_status_is_unchanged() {
        let ready = Readiness {
            ready: true,
            reason: "Computed",
            message: "m".into(),
        };
        let first = ready_condition(&ready, Some(1), &[], ts(100));
        let again = ready_condition(&ready, Some(2), std::slice::from_ref(&first), ts(200));
        assert_eq!(again.last_transition_time, Time(ts(100)));
        let not_ready = Readiness {
            ready: false,
            reason: "Waiting",
            message: "m".into(),
        };
        let flipped = ready_condition(&not_ready, Some(2), &[first], ts(300));
        assert_eq!(flipped.last_transition_time, Time(ts(300)));
        assert_eq!(flipped.status, "False");
    }

    #[test]
    fn readiness_needs_the_current_generation() {
        let ready = Readiness {
            ready: true,
            reason: "Computed",
            message: String::new(),
        };
        let conditions = vec![ready_condition(&ready, Some(2), &[], ts(0))];
        assert!(is_ready_for(&conditions, Some(2), Some(2)));
        assert!(!is_ready_for(&conditions, Some(1), Some(2)));
        assert!(!is_ready_for(&[], Some(2), Some(2)));
    }

    #[test]
    fn decide_skips_unchanged_and_holds_young_pending_statuses() {
        let waiting = |n: i64, reason: &str| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": reason}]});
        let young = Duration::from_secs(1);
        let old_age = Duration::from_secs(60);
        let now = waiting(2, "Waiting");
        assert_eq!(
            decide(Some(&now.clone()), &now, Progress::Settled, young).ok(),
            Some(StatusWrite::Unchanged)
        );
        assert_eq!(
            decide(None, &now, Progress::Pending, young).ok(),
            Some(StatusWrite::Hold(WAITING_STATUS_GRACE - young))
        );
        assert_eq!(
            decide(None, &now, Progress::Pending, old_age).ok(),
            Some(StatusWrite::Patch(json!({"status": now.clone()})))
        );
        // A previous answer exists: a pending status replaces it even when young...
        let answered = waiting(2, "AllNumbersReady");
        assert_eq!(
            decide(Some(&answered), &now, Progress::Pending, young).ok(),
            Some(StatusWrite::Patch(
                json!({"status": {"conditions": [{"type": "Ready", "reason": "Waiting"}]}})
            ))
        );
        // ...but not merely because a count moved.
        assert_eq!(
            decide(Some(&waiting(1, "Waiting")), &now, Progress::Pending, young).ok(),
            Some(StatusWrite::Unchanged)
        );
        // A final answer is always written.
        assert_eq!(
            decide(
                Some(&waiting(1, "Waiting")),
                &answered,
                Progress::Settled,
                young
            )
            .ok(),
            Some(StatusWrite::Patch(
                json!({"status": {"n": 2, "conditions": [{"type": "Ready", "reason": "AllNumbersReady"}]}})
            ))
        );
    }

    #[test]
    fn an_outcome_requeues_at_the_earlier_of_two_times() {
        let secs = Duration::from_secs;
        let pending = |after| Outcome {
            requeue_after: after,
            progress: Progress::Pending,
        };
        assert_eq!(Outcome::DONE.requeue_within(None), Outcome::DONE);
        assert_eq!(
            Outcome::DONE.requeue_within(Some(secs(3))).requeue_after,
            Some(secs(3))
        );
        assert_eq!(
            pending(Some(secs(5))).requeue_within(Some(secs(3))),
            pending(Some(secs(3)))
        );
        assert_eq!(
            pending(Some(secs(2))).requeue_within(Some(secs(3))),
            pending(Some(secs(2)))
        );
    }

    #[test]
    fn name_lists_are_cut_short() {
        assert_eq!(name_list(&["a", "b"]), "a, b");
        let many: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        assert_eq!(name_list(&many), "0, 1, 2, 3, 4 and 3 more");
    }
}
