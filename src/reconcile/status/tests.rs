//! The status decisions of `status.rs`: conditions, when a write is due, progress reports.

use super::*;

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH)
}

#[test]
fn a_whole_status_states_every_field() {
    let status = json!({"a": 1, "list": [1], "extra": true});
    assert_eq!(
        whole_status(&status, &["a", "gone", "list"]),
        json!({"status": {"a": 1, "gone": null, "list": [1], "extra": true}})
    );
    assert_eq!(
        whole_status(&Value::Null, &["a"]),
        json!({"status": {"a": null}})
    );
}

/// Every field of each kind's status is named in its [`WholeStatus::FIELDS`], as the CRD's
/// schema (generated from the same types) has them: a field added without it would outlive
/// the reconcile that wrote it.
#[test]
fn each_kind_names_every_field_of_its_status() {
    use crate::api::{FermatStatus, NumberStatus, TupleStatus};
    fn fields<S: WholeStatus + schemars::JsonSchema>() -> (Vec<String>, Vec<String>) {
        let schema = schemars::schema_for!(S);
        let mut in_schema: Vec<String> = schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let mut named: Vec<String> = S::FIELDS.iter().map(|f| f.to_string()).collect();
        in_schema.sort();
        named.sort();
        (named, in_schema)
    }
    for (named, in_schema) in [
        fields::<NumberStatus>(),
        fields::<TupleStatus>(),
        fields::<FermatStatus>(),
    ] {
        assert!(!in_schema.is_empty());
        assert_eq!(named, in_schema);
    }
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

/// Issue 48 item 6: when a progress report is due, row by row as
/// [`Pace::progress_report`]'s table says (5000 children: a step of 100 after the first
/// status, [`PROGRESS_EVERY`] 5 s).
#[test]
fn a_progress_report_is_due_as_its_table_says() {
    let secs = Duration::from_secs;
    // (age, children quiet, since the last report, ready, shown, first) and the report.
    let cases = [
        // Every ready child shown: nothing to report.
        ((60, 60, None, 100, 100, false), Report::Never),
        // No status yet, fewer than a step more: its status will be the answer, or a stall's.
        ((60, 60, None, 99, 0, true), Report::Never),
        // News: once 5 s have passed since the last report (or since the parent was made).
        ((60, 0, None, 200, 100, false), Report::Now),
        ((60, 0, Some(2), 200, 100, false), Report::After(secs(3))),
        ((3, 0, None, 100, 0, true), Report::After(secs(2))),
        ((5, 0, None, 100, 0, true), Report::Now),
        // Less than a step, after the first status: once 5 s have passed and the children
        // have rested 5 s.
        ((60, 5, None, 150, 100, false), Report::Now),
        ((60, 2, None, 150, 100, false), Report::After(secs(3))),
        ((60, 5, Some(1), 150, 100, false), Report::After(secs(4))),
    ];
    for (case, report) in cases {
        let (age, quiet, since, ready, shown, first) = case;
        let pace = pace(age, quiet, since, ready, shown);
        assert_eq!(pace.progress_report(first), report, "{case:?}");
    }
}

/// Issue 48 item 6: when a waiting or blocked status is written, row by row as
/// [`when_written`]'s table says.
#[test]
fn a_status_that_is_not_the_answer_is_written_as_its_table_says() {
    use Replaces::{Nothing, Other, SameWait};
    let (secs, ms, zero) = (Duration::from_secs, Duration::from_millis, Duration::ZERO);
    let soon = Report::After(secs(3));
    // (replaces, blocked, progress report, until the stall) and the decision.
    let cases = [
        ((Other, false, Report::Never, secs(5)), StatusWrite::Due),
        ((Other, true, soon, secs(5)), StatusWrite::Due),
        ((Nothing, true, Report::Never, secs(5)), StatusWrite::Due),
        ((Nothing, false, Report::Now, secs(5)), StatusWrite::Due),
        ((Nothing, false, soon, zero), StatusWrite::Due),
        ((Nothing, false, soon, secs(2)), StatusWrite::Hold(secs(2))),
        (
            (Nothing, false, Report::Never, ms(100)),
            StatusWrite::Hold(MIN_RECHECK),
        ),
        ((SameWait, true, Report::Now, secs(5)), StatusWrite::Due),
        ((SameWait, false, soon, secs(5)), StatusWrite::Hold(secs(3))),
        (
            (SameWait, false, Report::After(ms(100)), zero),
            StatusWrite::Hold(MIN_RECHECK),
        ),
        (
            (SameWait, true, Report::Never, zero),
            StatusWrite::Unchanged,
        ),
    ];
    for (case, written) in cases {
        let (replaces, blocked, report, until_stall) = case;
        assert_eq!(
            when_written(replaces, blocked, report, until_stall),
            written,
            "{case:?}"
        );
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
        Some(StatusWrite::Due)
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
        Some(StatusWrite::Due)
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
    let report = Some(StatusWrite::Due);
    let decide =
        |current: Option<&Value>, pace: &Pace| decide(current, &now, Standing::Waiting(pace)).ok();
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
        Some(StatusWrite::Due)
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
        Some(StatusWrite::Due)
    );
    let mut older = status(2, "Waiting");
    older["observedGeneration"] = json!(0);
    assert_eq!(
        decide(Some(&older), &waiting, Standing::Waiting(&young)).ok(),
        Some(StatusWrite::Due)
    );
    assert_eq!(
        decide(Some(&status(1, "Waiting")), &answered, Standing::Answer).ok(),
        Some(StatusWrite::Due)
    );
    assert_eq!(
        decide(None, &answered, Standing::Answer).ok(),
        Some(StatusWrite::Due)
    );
}

#[test]
fn a_blocked_status_is_written_at_once_and_then_only_when_the_block_changes() {
    let status = |n: i64, message: &str| json!({"observedGeneration": 1, "n": n, "conditions": [{"type": "Ready", "reason": "ChildConflict", "message": message}]});
    let young = pace(0, 0, None, 0, 0);
    let blocked = status(0, "t-1 is controlled by someone else");
    assert_eq!(
        decide(None, &blocked, Standing::Blocked(&young)).ok(),
        Some(StatusWrite::Due)
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
        Some(StatusWrite::Due)
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
        Ok(StatusWrite::Due)
    ));
}

#[test]
fn name_lists_are_cut_short() {
    assert_eq!(name_list(&["a", "b"]), "a, b");
    let many: Vec<String> = (0..8).map(|i| i.to_string()).collect();
    assert_eq!(name_list(&many), "0, 1, 2, 3, 4 and 3 more");
}

/// RFC 7386: what the API server does with a merge patch.
fn apply_merge_patch(target: &Value, patch: &Value) -> Value {
    let (Value::Object(patch), Value::Object(target)) = (patch, target) else {
        return match patch {
            Value::Object(_) => apply_merge_patch(&json!({}), patch),
            _ => patch.clone(),
        };
    };
    let mut merged = target.clone();
    for (key, value) in patch {
        match value {
            Value::Null => {
                merged.remove(key);
            }
            _ => {
                let old = merged.get(key).cloned().unwrap_or(Value::Null);
                merged.insert(key.clone(), apply_merge_patch(&old, value));
            }
        }
    }
    Value::Object(merged)
}

/// F1: a reconcile decides from a status older than the server's (S0, the wait, while the
/// answer S1 for generation 1 is on its way back), and the spec has changed since (S2, the
/// wait for generation 2). Whatever it sends, the server must not be left with generation
/// 1's answer under generation 2.
#[test]
fn no_answer_of_another_spec_survives_a_write_decided_on_an_older_status() {
    let waiting = |generation: i64| {
        json!({"observedGeneration": generation, "readyNumbers": 0, "desiredNumbers": 2,
        "conditions": [{"type": "Ready", "status": "False", "reason": "WaitingForNumbers"}]})
    };
    let s0 = waiting(1);
    let s1 = json!({"observedGeneration": 1, "allSquares": true, "readyNumbers": 2, "desiredNumbers": 2,
        "conditions": [{"type": "Ready", "status": "True", "reason": "AllNumbersReady"}]});
    let s2 = waiting(2);
    let stalled = pace(60, 6, None, 0, 0);
    assert_eq!(
        decide(Some(&s0), &s2, Standing::Waiting(&stalled)).ok(),
        Some(StatusWrite::Due),
        "a wait for a new generation is written"
    );
    let fields = [
        "observedGeneration",
        "conditions",
        "allSquares",
        "readyNumbers",
        "desiredNumbers",
    ];
    let patch = whole_status(&s2, &fields);
    let on_server = apply_merge_patch(&json!({ "status": s1 }), &patch);
    assert_eq!(
        on_server["status"], s2,
        "the server shows exactly what was decided"
    );
}
