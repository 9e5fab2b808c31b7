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

/// When a progress report of a status that is not the answer is due, if nothing else happens
/// ([`Pace::progress_report`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Report {
    /// No report: the status shows every ready child, or a parent without a status yet has
    /// fewer than [`PROGRESS_STEP`] more (its one status will be its answer, or its stall's).
    Never,
    /// A report is due now.
    Now,
    /// A report will be due after this long (never zero).
    After(Duration),
}

impl Pace {
    /// How long the children have gone without progress, as far as this parent can tell.
    fn idle(&self) -> Duration {
        self.age.min(self.children_quiet)
    }

    /// How long until the children count as stalled ([`STALL_AFTER`]); zero once they are.
    fn until_stall(&self) -> Duration {
        STALL_AFTER.saturating_sub(self.idle())
    }

    /// When a progress report is due (`first`: the parent has no status yet). `since` is the
    /// time since the last report (or since the parent was made); `news`, that the status
    /// shows at least a step fewer ready children than there are ([`PROGRESS_STEP`] for a
    /// first status, [`progress_step`] after it); `at rest`, that no child settled for
    /// [`PROGRESS_EVERY`]:
    ///
    /// | ready children shown | first | news | a report is due                                   |
    /// |----------------------|-------|------|---------------------------------------------------|
    /// | all of them          | –     | –    | never: nothing to report                          |
    /// | fewer                | yes   | no   | never: the status will be the answer, or a stall's |
    /// | fewer                | –     | yes  | once `since` reaches [`PROGRESS_EVERY`]            |
    /// | fewer                | no    | no   | once `since` reaches it and the children are at rest |
    ///
    /// So a report is at most every [`PROGRESS_EVERY`], and a parent left waiting or blocked
    /// shows its exact count once its children rest, never counts from long ago.
    fn progress_report(&self, first: bool) -> Report {
        if self.ready == self.shown {
            return Report::Never;
        }
        let since = self.since_report.unwrap_or(self.age).min(self.age);
        let step = match first {
            true => PROGRESS_STEP,
            false => progress_step(self.desired),
        };
        let news = self.ready >= self.shown + step;
        let wait = PROGRESS_EVERY.saturating_sub(since);
        let wait = match (news, first) {
            (true, _) => wait,
            (false, true) => return Report::Never,
            (false, false) => wait.max(PROGRESS_EVERY.saturating_sub(self.children_quiet)),
        };
        match wait.is_zero() {
            true => Report::Now,
            false => Report::After(wait),
        }
    }
}

/// What a status that is not the answer would replace, for [`when_written`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replaces {
    /// No status: the parent is brand-new (or its status was never seen).
    Nothing,
    /// The same wait: not Ready for the same reason at the same generation (and, for a
    /// blocked parent, with the same message): only counts moved.
    SameWait,
    /// Anything else: an answer, another reason, another generation, another block.
    Other,
}

/// When a status that is not the answer is written: the decision of [`decide`] for a
/// waiting or blocked parent, from what it would replace, when a progress report is due
/// ([`Pace::progress_report`]) and how long until its children count as stalled.
///
/// | replaces    | standing | progress report | written                                   |
/// |-------------|----------|-----------------|-------------------------------------------|
/// | another     | –        | –               | now                                       |
/// | nothing     | blocked  | –               | now                                       |
/// | nothing     | waiting  | now             | now                                       |
/// | nothing     | waiting  | –, stalled      | now                                       |
/// | nothing     | waiting  | –               | held until the stall                      |
/// | the same    | –        | now             | now                                       |
/// | the same    | –        | after `t`       | held for `t` (at least [`MIN_RECHECK`])    |
/// | the same    | –        | never           | unchanged                                 |
fn when_written(
    replaces: Replaces,
    blocked: bool,
    report: Report,
    until_stall: Duration,
) -> StatusWrite {
    match (replaces, report) {
        (Replaces::Other, _) | (_, Report::Now) => StatusWrite::Due,
        (Replaces::Nothing, _) if blocked || until_stall.is_zero() => StatusWrite::Due,
        (Replaces::Nothing, _) => StatusWrite::Hold(until_stall.max(MIN_RECHECK)),
        (Replaces::SameWait, Report::After(t)) => StatusWrite::Hold(t.max(MIN_RECHECK)),
        (Replaces::SameWait, Report::Never) => StatusWrite::Unchanged,
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
/// Each case is a row of two tables: when a progress report is due
/// ([`Pace::progress_report`]), and when a waiting or blocked status is written
/// ([`when_written`]).
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
    let (pace, blocked) = match standing {
        Standing::Answer => return Ok(StatusWrite::Due),
        Standing::Blocked(pace) => (pace, true),
        Standing::Waiting(pace) => (pace, false),
    };
    let same_message = ready_field(&old, "message") == ready_field(&new, "message");
    let replaces = match current {
        None => Replaces::Nothing,
        Some(_) if same_wait(&old, &new) && (same_message || !blocked) => Replaces::SameWait,
        Some(_) => Replaces::Other,
    };
    let report = pace.progress_report(replaces == Replaces::Nothing);
    Ok(when_written(replaces, blocked, report, pace.until_stall()))
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
