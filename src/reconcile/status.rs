//! Pure helpers shared by the three controllers for writing a status: the `Ready` condition,
//! the decision whether a status write is due at all, and the merge patch that carries it:
//! always the whole status ([`whole_status`]), so that no field outlives the reconcile that
//! wrote it, whatever the status the decision was made on.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::api::READY;
use crate::reconcile::memory::pace::{PROGRESS_EVERY, Pace};

/// How long a parent's children may go without progress before the parent says what it waits
/// for. Progress is a child of that kind settling (its own status final), anywhere in the
/// manager; a converging tree keeps making it at any speed of the API server, so a brand-new
/// parent gives one status, its answer, however long the tree takes. A real stall (the
/// children's status writes failing, their controller stopped) shows after this long. Time
/// the API server was unreachable does not count.
pub const STALL_AFTER: Duration = Duration::from_secs(5);

/// A progress report is rewritten at most every [`PROGRESS_EVERY`]...
///
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

/// A kind's status, written whole: the JSON names of all its fields, so that a write states
/// each one, with `null` for those it leaves out. A test checks them against the CRD schema.
pub trait WholeStatus: Serialize {
    const FIELDS: &'static [&'static str];
}

/// A status that exposes how many children it counts as ready (the Tuple's `readyNumbers`,
/// the Fermat's `readyTuples`), for progress reports.
pub trait ParentStatus: WholeStatus + serde::de::DeserializeOwned + Clone {
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
    /// Write it (the whole status: [`whole_status`]).
    Due,
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
///
/// `current` only decides whether a write is due: it may be older than the server's (a write
/// answered, its echo not seen yet, the spec changed meanwhile), so the write never depends
/// on it (issue 39's F1: a diff against an older status left another spec's answer behind).
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
    Ok(StatusWrite::Due)
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

/// The JSON merge patch (RFC 7386) for the status subresource that states the whole of
/// `status`: each of `fields` with its value, or `null` where `status` leaves it out, so that
/// whatever the server held before, it then holds exactly `status`. Keys of `status` that
/// `fields` does not name are sent as they are.
pub fn whole_status(status: &Value, fields: &[&str]) -> Value {
    let mut whole = match status {
        Value::Object(status) => status.clone(),
        _ => Map::new(),
    };
    for field in fields {
        whole.entry(*field).or_insert(Value::Null);
    }
    json!({ "status": whole })
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
mod tests;
