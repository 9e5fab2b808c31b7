//! Pure helpers shared by the three controllers for writing a status: the `Ready` condition,
//! the decision whether a status write is due at all, and the merge patch that carries it.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::api::READY;

/// How long a parent's children may go without progress before the parent says what it waits
/// for. Progress is a child of that kind settling (its own status final), anywhere in the
/// manager; a converging tree keeps making it at any speed of the API server, so a brand-new
/// parent gives one status, its answer, however long the tree takes. A real stall (the
/// children's status writes failing, their controller stopped) shows after this long. Time
/// the API server was unreachable does not count.
pub const STALL_AFTER: Duration = Duration::from_secs(5);

/// A parent rewrites a progress report (its ready/desired counts while waiting) at most this
/// often...
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// ...and only once this many more children are ready than the status shows (or a tenth of
/// the children, for a parent of fewer than 1000: a Tuple's `0/3` after a stall becomes `2/3`
/// when two are ready, rather than staying `0/3` until the answer). Every child costs at
/// least one write of its own, so a big parent's reports stay under 1 % of its tree's writes
/// (a Fermat 10000, 5000 Tuples: at most 50, in practice one per [`PROGRESS_EVERY`]), and a
/// small one reports at most 10 times, only while it is slow enough to say it waits.
pub const PROGRESS_STEP: usize = 100;

/// The news a progress report needs for a parent of `desired` children: [`PROGRESS_STEP`],
/// or a tenth of the children, at least one.
fn progress_step(desired: usize) -> usize {
    PROGRESS_STEP.min(desired.div_ceil(10)).max(1)
}

/// How a waiting parent's children are coming along: what [`decide`] needs to tell a
/// progress report worth a write from one that is not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    /// Since the object was created.
    pub age: Duration,
    /// Since a child of this kind last settled anywhere (or the manager started, or the API
    /// server came back).
    pub children_quiet: Duration,
    /// Since this manager last wrote a waiting status for this object (`None`: not recently).
    pub since_report: Option<Duration>,
    /// Ready children now, and as the status shows them.
    pub ready: usize,
    pub shown: usize,
    /// How many children the parent wants.
    pub desired: usize,
}

impl Pace {
    /// How long the children have gone without progress, as far as this parent can tell.
    fn idle(&self) -> Duration {
        self.age.min(self.children_quiet)
    }

    fn stalled(&self) -> bool {
        self.idle() >= STALL_AFTER
    }

    /// How long until a progress report is due if nothing else happens (`None`: the status
    /// shows the count, nothing to report). A report needs [`PROGRESS_EVERY`] since the last
    /// one, and either enough news ([`progress_step`]) or children that have come to rest
    /// (quiet for [`PROGRESS_EVERY`]): then the exact count is shown, once, so that a parent
    /// left waiting or blocked never shows counts from long ago. A parent that has no status
    /// yet (`first`) only reports [`PROGRESS_STEP`] children: a Tuple whose Numbers are
    /// slow but coming gives one status, its answer.
    fn report_in(&self, first: bool) -> Option<Duration> {
        if self.ready == self.shown {
            return None;
        }
        let since = self.since_report.unwrap_or(self.age).min(self.age);
        let step = match first {
            true => PROGRESS_STEP,
            false => progress_step(self.desired),
        };
        let rest = match (self.ready >= self.shown + step, first) {
            (true, _) => Duration::ZERO,
            (false, true) => return None,
            (false, false) => PROGRESS_EVERY.saturating_sub(self.children_quiet),
        };
        Some(PROGRESS_EVERY.saturating_sub(since).max(rest))
    }

    fn report_due(&self, first: bool) -> bool {
        self.report_in(first) == Some(Duration::ZERO)
    }

    /// Not yet due, but a report will be by itself: what nothing else would wake the parent for.
    fn recheck(&self) -> StatusWrite {
        match self.report_in(false) {
            Some(after) if !after.is_zero() => StatusWrite::Hold(after.max(MIN_RECHECK)),
            _ => StatusWrite::Unchanged,
        }
    }
}

/// A status that exposes how many children it counts as ready (the Tuple's `readyNumbers`,
/// the Fermat's `readyTuples`), for progress reports.
pub trait ParentStatus: Serialize + serde::de::DeserializeOwned + Clone {
    fn ready_children(&self) -> Option<i64>;
}

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
    /// The status is final for this generation: the answer.
    Settled,
    /// Final for now, but not an answer: blocked until someone (or something: a quota, an
    /// admission policy) acts. Written at once, then only when what blocks it changes.
    Blocked,
    /// Children are still being created or computed; a later trigger will bring news.
    Pending,
}

/// How a reconcile ended, before it becomes kube-runtime's `Action`: when to look again
/// (`None`: on the next watch event), and whether the object's status is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub requeue_after: Option<Duration>,
    pub progress: Progress,
    /// The CPU the decision took (children read from the cache, plan, status), without the
    /// writes: what planning the object again would cost ([`crate::runtime::replan`]).
    pub planned_in: Duration,
}

impl Outcome {
    /// Final for now: nothing to do until a watch event brings news.
    pub const DONE: Outcome = Outcome {
        requeue_after: None,
        progress: Progress::Settled,
        planned_in: Duration::ZERO,
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
    /// The stored status already says this, or the difference is not worth a write.
    Unchanged,
    /// Send this JSON merge patch to the status subresource.
    Patch(Value),
    /// Not yet: a brand-new object whose children are on their way, or a progress report
    /// not due yet; look again after this (to notice a stall, or to report) unless a child's
    /// news comes first.
    Hold(Duration),
}

/// What a computed status is, for [`decide`].
#[derive(Clone, Copy, Debug)]
pub enum Standing<'a> {
    /// The answer for the current generation: written whenever it differs.
    Answer,
    /// Not Ready until somebody or something else acts (a refused write, a child controlled
    /// by another owner, a child name Kubernetes refuses): said at once, then rewritten only
    /// when what blocks it changes, its counts as progress reports. A Fermat 20000 with one
    /// foreign Tuple would otherwise rewrite its status for each of the 9999 others settling.
    Blocked(&'a Pace),
    /// Children on their way: held while they make progress, then reported.
    Waiting(&'a Pace),
}

/// Decide whether to write `desired` over `current`, given what kind of status it is.
///
/// A waiting status is written
/// - when it replaces a status of another reason or generation (an answer for an older
///   spec would now be wrong; a parent that *was* Ready says it no longer is);
/// - on a brand-new object only when its children stalled ([`STALL_AFTER`]), or as a
///   progress report;
/// - as a progress report at most every [`PROGRESS_EVERY`] and [`PROGRESS_STEP`] children.
///
/// A blocked status is written at once, and again when its reason or message changes (its
/// messages carry no counts for that reason); its counts only as progress reports.
///
/// So a tree that converges writes one status per object, whatever the API server's speed.
pub fn decide<S: Serialize + PartialEq>(
    current: Option<&S>,
    desired: &S,
    standing: Standing,
) -> Result<StatusWrite, serde_json::Error> {
    if current == Some(desired) {
        return Ok(StatusWrite::Unchanged);
    }
    let old = match current {
        Some(c) => serde_json::to_value(c)?,
        None => Value::Null,
    };
    let new = serde_json::to_value(desired)?;
    match standing {
        Standing::Answer => {}
        Standing::Blocked(pace) => {
            let same = ready_field(&old, "message") == ready_field(&new, "message");
            if same && same_wait(&old, &new) && !pace.report_due(false) {
                return Ok(pace.recheck());
            }
        }
        Standing::Waiting(pace) => {
            let news = pace.report_due(current.is_none());
            if current.is_none() && !news && !pace.stalled() {
                let recheck = STALL_AFTER.saturating_sub(pace.idle());
                return Ok(StatusWrite::Hold(recheck.max(MIN_RECHECK)));
            }
            if current.is_some() && same_wait(&old, &new) && !news {
                return Ok(pace.recheck());
            }
        }
    }
    Ok(StatusWrite::Patch(
        json!({ "status": merge_patch(&old, &new) }),
    ))
}

/// The shortest recheck of a held status: a child's news usually comes first anyway.
const MIN_RECHECK: Duration = Duration::from_millis(500);

/// A field of a status's `Ready` condition.
fn ready_field<'a>(status: &'a Value, field: &str) -> Option<&'a Value> {
    status
        .get("conditions")
        .and_then(|c| c.as_array())
        .and_then(|c| c.iter().find(|c| c.get("type") == Some(&json!(READY))))
        .and_then(|c| c.get(field))
}

/// Both statuses are not Ready for the same reason at the same generation: only counts (or
/// the children named as awaited) moved.
fn same_wait(old: &Value, new: &Value) -> bool {
    old.get("observedGeneration") == new.get("observedGeneration")
        && ready_field(old, "reason").is_some()
        && ready_field(old, "reason") == ready_field(new, "reason")
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

    fn pace(age: u64, quiet: u64, since_report: Option<u64>, ready: usize, shown: usize) -> Pace {
        let secs = Duration::from_secs;
        Pace {
            age: secs(age),
            children_quiet: secs(quiet),
            since_report: since_report.map(secs),
            ready,
            shown,
            desired: 5000,
        }
    }

    #[test]
    fn a_small_parent_reports_its_progress_too() {
        let status = |n: i64| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": "Waiting"}]});
        let (shown, now) = (status(0), status(2));
        let small = |ready, since_report| Pace {
            desired: 3,
            ..pace(60, 0, Some(since_report), ready, 0)
        };
        // A Tuple of 3 that said "0/3" after a stall says "2/3" once two are ready...
        assert_eq!(
            decide(Some(&shown), &now, Standing::Waiting(&small(2, 6))).ok(),
            Some(StatusWrite::Patch(json!({"status": {"n": 2}})))
        );
        // ...still at most every 5 s.
        assert_eq!(
            decide(Some(&shown), &now, Standing::Waiting(&small(2, 4))).ok(),
            Some(StatusWrite::Hold(Duration::from_secs(1)))
        );
        // A Tuple with no status yet whose Numbers are slow but coming: no report, its answer
        // will be its one status.
        assert_eq!(
            decide(None, &now, Standing::Waiting(&small(2, 60))).ok(),
            Some(StatusWrite::Hold(STALL_AFTER))
        );
        assert_eq!(progress_step(3), 1);
        assert_eq!(progress_step(250), 25);
        assert_eq!(progress_step(5000), PROGRESS_STEP);
        assert_eq!(progress_step(0), 1);
    }

    #[test]
    fn a_new_parent_holds_while_its_children_make_progress() {
        let status = |n: i64, reason: &str| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": reason}]});
        let waiting = status(0, "Waiting");
        let decide = |current: Option<&Value>, pace: &Pace| {
            decide(current, &waiting, Standing::Waiting(pace)).ok()
        };
        // However old the parent, as long as children keep settling it holds...
        assert_eq!(
            decide(None, &pace(60, 1, None, 0, 0)),
            Some(StatusWrite::Hold(STALL_AFTER - Duration::from_secs(1)))
        );
        assert_eq!(
            decide(None, &pace(1, 60, None, 0, 0)),
            Some(StatusWrite::Hold(STALL_AFTER - Duration::from_secs(1)))
        );
        // ...and says what it waits for once they stall.
        assert_eq!(
            decide(None, &pace(60, 6, None, 0, 0)),
            Some(StatusWrite::Patch(json!({"status": waiting.clone()})))
        );
        assert_eq!(
            decide(None, &pace(4, 4, None, 0, 0)),
            Some(StatusWrite::Hold(Duration::from_secs(1)))
        );
    }

    #[test]
    fn progress_is_reported_every_five_seconds_and_hundred_children_at_most() {
        let status = |n: i64| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": "Waiting"}]});
        let shown = status(100);
        let now = status(250);
        let report = Some(StatusWrite::Patch(json!({"status": {"n": 250}})));
        let decide = |current: Option<&Value>, pace: &Pace| {
            decide(current, &now, Standing::Waiting(pace)).ok()
        };
        assert_eq!(decide(Some(&shown), &pace(30, 0, None, 250, 100)), report);
        assert_eq!(
            decide(Some(&shown), &pace(30, 0, Some(5), 250, 100)),
            report
        );
        // Too soon after the last report: look again when it is due.
        assert_eq!(
            decide(Some(&shown), &pace(30, 0, Some(4), 250, 100)),
            Some(StatusWrite::Hold(Duration::from_secs(1)))
        );
        // Too little news while the children are busy: look again once they could rest.
        assert_eq!(
            decide(Some(&shown), &pace(30, 0, None, 199, 100)),
            Some(StatusWrite::Hold(PROGRESS_EVERY))
        );
        // Children at rest: the exact count, once (a stall does not repeat it).
        assert_eq!(decide(Some(&shown), &pace(30, 30, None, 150, 100)), report);
        assert_eq!(
            decide(Some(&shown), &pace(30, 30, Some(0), 150, 100)),
            Some(StatusWrite::Hold(PROGRESS_EVERY))
        );
        assert_eq!(
            decide(Some(&now), &pace(30, 30, None, 250, 250)),
            Some(StatusWrite::Unchanged)
        );
        // The first report of a big parent comes once it is 5 s old.
        assert_eq!(
            decide(None, &pace(5, 0, None, 100, 0)),
            Some(StatusWrite::Patch(json!({"status": now.clone()})))
        );
        // Younger: it holds, and looks again when a stall would be due.
        assert_eq!(
            decide(None, &pace(4, 0, None, 100, 0)),
            Some(StatusWrite::Hold(STALL_AFTER))
        );
    }

    #[test]
    fn a_waiting_status_replaces_another_reason_at_once_and_answers_are_always_written() {
        let status = |n: i64, reason: &str| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": reason}]});
        let young = pace(0, 0, None, 0, 0);
        let answered = status(2, "AllNumbersReady");
        let waiting = status(2, "Waiting");
        assert_eq!(
            decide(Some(&answered), &answered, Standing::Answer).ok(),
            Some(StatusWrite::Unchanged)
        );
        assert_eq!(
            decide(Some(&answered), &waiting, Standing::Waiting(&young)).ok(),
            Some(StatusWrite::Patch(
                json!({"status": {"conditions": [{"type": "Ready", "reason": "Waiting"}]}})
            ))
        );
        let mut older = status(2, "Waiting");
        older["observedGeneration"] = json!(0);
        assert_eq!(
            decide(Some(&older), &waiting, Standing::Waiting(&young)).ok(),
            Some(StatusWrite::Patch(
                json!({"status": {"observedGeneration": 1}})
            ))
        );
        assert_eq!(
            decide(Some(&status(1, "Waiting")), &answered, Standing::Answer).ok(),
            Some(StatusWrite::Patch(
                json!({"status": {"n": 2, "conditions": [{"type": "Ready", "reason": "AllNumbersReady"}]}})
            ))
        );
        assert_eq!(
            decide(None, &answered, Standing::Answer).ok(),
            Some(StatusWrite::Patch(json!({"status": answered.clone()})))
        );
    }

    #[test]
    fn a_blocked_status_is_written_at_once_and_then_only_when_the_block_changes() {
        let status = |n: i64, message: &str| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": "ChildConflict", "message": message}]});
        let young = pace(0, 0, None, 0, 0);
        let blocked = status(0, "t-1 is controlled by someone else");
        assert_eq!(
            decide(None, &blocked, Standing::Blocked(&young)).ok(),
            Some(StatusWrite::Patch(json!({"status": blocked.clone()})))
        );
        // Other children settling move only the counts: nothing, until a report is due.
        let moved = status(150, "t-1 is controlled by someone else");
        assert_eq!(
            decide(
                Some(&blocked),
                &moved,
                Standing::Blocked(&pace(60, 0, None, 150, 0))
            )
            .ok(),
            Some(StatusWrite::Patch(json!({"status": {"n": 150}})))
        );
        assert_eq!(
            decide(
                Some(&blocked),
                &moved,
                Standing::Blocked(&pace(60, 0, Some(1), 150, 0))
            )
            .ok(),
            Some(StatusWrite::Hold(Duration::from_secs(4)))
        );
        // Another child blocks it: said at once.
        let other = status(0, "t-2 is controlled by someone else");
        assert!(matches!(
            decide(Some(&blocked), &other, Standing::Blocked(&young)),
            Ok(StatusWrite::Patch(_))
        ));
    }

    #[test]
    fn an_outcome_requeues_at_the_earlier_of_two_times() {
        let secs = Duration::from_secs;
        let pending = |after| Outcome {
            requeue_after: after,
            progress: Progress::Pending,
            planned_in: Duration::ZERO,
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
