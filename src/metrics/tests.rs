use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::*;

#[test]
fn dropped_log_lines_are_read_from_the_log_writer_at_each_scrape() {
    let metrics = Metrics::new();
    let line = |n: u64| format!("\nmath_controller_log_lines_dropped_total {n}\n");
    assert!(metrics.encode().contains(&line(0)), "{}", metrics.encode());
    let dropped = Arc::new(AtomicU64::new(3));
    let source = dropped.clone();
    metrics.count_dropped_log_lines(move || source.load(Ordering::Relaxed));
    assert!(metrics.encode().contains(&line(3)));
    dropped.store(8, Ordering::Relaxed);
    assert!(metrics.encode().contains(&line(8)));
}

/// The value of the sample line that starts with `series` (name and labels), if any.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[test]
fn every_documented_series_has_help_and_type() {
    let m = Metrics::new();
    let _ = m.queue("number", 1);
    m.reconcile_started("number")
        .finish(ReconcileResult::Error("api"));
    let text = m.encode();
    for (name, kind) in [
        ("controller_runtime_reconcile", "counter"),
        ("controller_runtime_reconcile_errors", "counter"),
        ("controller_runtime_reconcile_time_seconds", "histogram"),
        ("controller_runtime_active_workers", "gauge"),
        ("math_controller_reconcile_errors", "counter"),
        ("math_controller_write_requests", "counter"),
        ("math_controller_replans_put_off", "counter"),
        ("math_controller_build", "info"),
    ] {
        assert!(
            text.contains(&format!("# TYPE {name} {kind}\n")),
            "{name} {kind} missing in\n{text}"
        );
        assert!(text.contains(&format!("# HELP {name} ")), "{name} help");
    }
    assert!(text.ends_with("# EOF\n"));
}

/// As controller-runtime's `initMetrics` in `Controller.Start`: a controller's series at zero
/// once it starts, none before (a standby's controllers never start); the reconcile time's
/// histogram with its first reconcile.
#[test]
fn controllers_series_start_at_zero_when_they_start() {
    let m = Metrics::new();
    let before = m.encode();
    assert!(!before.contains("controller=\""), "{before}");
    for c in CONTROLLERS {
        let _ = m.queue(c, 8);
    }
    let text = m.encode();
    for c in CONTROLLERS {
        for r in reconcile::RESULTS {
            let s =
                format!("controller_runtime_reconcile_total{{controller=\"{c}\",result=\"{r}\"}}");
            assert_eq!(sample(&text, &s), Some(0.0), "{s}");
        }
        for s in [
            "controller_runtime_active_workers",
            "controller_runtime_reconcile_errors_total",
            "controller_runtime_terminal_reconcile_errors_total",
            "controller_runtime_reconcile_panics_total",
            "controller_runtime_reconcile_timeouts_total",
            "math_controller_replans_put_off_total",
        ] {
            let s = format!("{s}{{controller=\"{c}\"}}");
            assert_eq!(sample(&text, &s), Some(0.0), "{s} in {text}");
        }
        let s = format!("controller_runtime_max_concurrent_reconciles{{controller=\"{c}\"}}");
        assert_eq!(sample(&text, &s), Some(8.0), "{s}");
        for p in StatusProgress::ALL {
            let s = format!(
                "math_controller_reconcile_progress_total{{controller=\"{c}\",progress=\"{}\"}}",
                p.as_str()
            );
            assert_eq!(sample(&text, &s), Some(0.0), "{s}");
        }
    }
    assert!(!text.contains("controller_runtime_reconcile_time_seconds_count"));
}

#[test]
fn timer_records_result_duration_and_active_workers() {
    let m = Metrics::new();
    for c in CONTROLLERS {
        let _ = m.queue(c, 1);
    }
    let a = m.reconcile_started("number");
    let b = m.reconcile_started("number");
    let active = "controller_runtime_active_workers{controller=\"number\"}";
    assert_eq!(sample(&m.encode(), active), Some(2.0));
    a.finish(ReconcileResult::Success);
    b.finish(ReconcileResult::Error("api"));
    m.reconcile_started("tuple")
        .finish(ReconcileResult::Requeue);
    m.reconcile_started("tuple")
        .finish(ReconcileResult::RequeueAfter);
    // Stopped half-way (a shutdown's deadline): an error, reason `cancelled`.
    drop(m.reconcile_started("fermat"));

    let text = m.encode();
    let get = |s: &str| sample(&text, s);
    assert_eq!(get(active), Some(0.0));
    let total = |c: &str, r: &str| {
        get(&format!(
            "controller_runtime_reconcile_total{{controller=\"{c}\",result=\"{r}\"}}"
        ))
    };
    assert_eq!(total("number", "success"), Some(1.0));
    assert_eq!(total("number", "error"), Some(1.0));
    assert_eq!(total("tuple", "requeue"), Some(1.0));
    assert_eq!(total("tuple", "requeue_after"), Some(1.0));
    assert_eq!(total("fermat", "error"), Some(1.0));
    assert_eq!(
        get("math_controller_reconcile_errors_total{controller=\"fermat\",reason=\"cancelled\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("controller_runtime_reconcile_errors_total{controller=\"number\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("math_controller_reconcile_errors_total{controller=\"number\",reason=\"api\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("controller_runtime_reconcile_time_seconds_count{controller=\"number\"}"),
        Some(2.0)
    );
}

#[test]
fn a_reconcile_that_panics_is_counted_as_a_panic_and_an_error() {
    let m = Metrics::new();
    let inside = m.clone();
    let panicked = std::thread::spawn(move || {
        let _timer = inside.reconcile_started("tuple");
        panic!("a reconcile panics");
    })
    .join();
    assert!(panicked.is_err());
    let text = m.encode();
    let get = |s: &str| sample(&text, s);
    assert_eq!(
        get("controller_runtime_reconcile_panics_total{controller=\"tuple\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("controller_runtime_reconcile_errors_total{controller=\"tuple\"}"),
        Some(1.0)
    );
    assert_eq!(
        get("controller_runtime_active_workers{controller=\"tuple\"}"),
        Some(0.0)
    );
}

#[test]
fn the_queue_counts_adds_retries_waits_and_work_in_progress() {
    let m = Metrics::new();
    let q = m.queue("tuple", 4);
    let depth = Arc::new(AtomicUsize::new(0));
    let source = depth.clone();
    q.show_depth(move || (source.load(Ordering::Relaxed), 1));
    q.add();
    q.add();
    // A retry is counted when it is decided; its add when the delay is over and the object
    // is queued again (client-go's AddRateLimited, then Add).
    q.retry();
    q.add();
    depth.store(2, Ordering::Relaxed);
    let running = q.get(Duration::from_millis(30));
    std::thread::sleep(Duration::from_millis(20));
    let labels = "{name=\"tuple\",controller=\"tuple\"}";
    let text = m.encode();
    let get = |s: &str| sample(&text, &format!("{s}{labels}"));
    assert_eq!(get("workqueue_adds_total"), Some(3.0));
    assert_eq!(get("workqueue_retries_total"), Some(1.0));
    assert_eq!(get("workqueue_queue_duration_seconds_count"), Some(1.0));
    assert_eq!(get("workqueue_queue_duration_seconds_sum"), Some(0.03));
    assert_eq!(get("workqueue_work_duration_seconds_count"), Some(0.0));
    assert!(get("workqueue_unfinished_work_seconds").is_some_and(|s| s >= 0.02));
    assert!(get("workqueue_longest_running_processor_seconds").is_some_and(|s| s >= 0.02));
    // By controller-runtime's priorities: 0 for urgent objects, -100 for settled ones.
    let depth_series = "workqueue_depth{name=\"tuple\",controller=\"tuple\",priority=\"0\"}";
    assert_eq!(sample(&text, depth_series), Some(2.0));
    let depth_series = "workqueue_depth{name=\"tuple\",controller=\"tuple\",priority=\"-100\"}";
    assert_eq!(sample(&text, depth_series), Some(1.0));
    assert_eq!(
        sample(
            &text,
            "controller_runtime_max_concurrent_reconciles{controller=\"tuple\"}"
        ),
        Some(4.0)
    );
    drop(running);
    let text = m.encode();
    let get = |s: &str| sample(&text, &format!("{s}{labels}"));
    assert_eq!(get("workqueue_work_duration_seconds_count"), Some(1.0));
    assert_eq!(get("workqueue_unfinished_work_seconds"), Some(0.0));
    assert_eq!(
        get("workqueue_longest_running_processor_seconds"),
        Some(0.0)
    );
}

/// controller-runtime's help texts, as written: prometheus-client's registry appends a full
/// stop, which gave "…per controller." and "…workqueue takes..".
#[test]
fn help_texts_are_controller_runtimes_as_written() {
    let m = Metrics::new();
    let _ = m.queue("tuple", 1);
    let text = m.encode();
    for help in [
        "# HELP controller_runtime_reconcile Total number of reconciliations per controller\n",
        "# HELP workqueue_work_duration_seconds How long in seconds processing an item from workqueue takes.\n",
        "# HELP rest_client_requests Number of HTTP requests, partitioned by status code, method, and host.\n",
    ] {
        assert!(text.contains(help), "{help} in\n{text}");
    }
    assert!(!text.contains("..\n"), "{text}");
}

/// An idle queue's unfinished work: 0, not the -0 that a sum of no f64 is.
#[test]
fn an_idle_queue_has_no_negative_zero() {
    let m = Metrics::new();
    let _ = m.queue("tuple", 1);
    let text = m.encode();
    let line = "workqueue_unfinished_work_seconds{name=\"tuple\",controller=\"tuple\"} 0.0\n";
    assert!(text.contains(line), "{text}");
}

#[test]
fn writes_are_counted_by_kind_and_operation() {
    let m = Metrics::new();
    m.write("tuple", "Number", WriteKind::Create);
    m.write("tuple", "Number", WriteKind::Create);
    m.write("number", "Number", WriteKind::PatchStatus);
    m.write("fermat", "Event", WriteKind::Event);
    let text = m.encode();
    let writes = |c: &str, k: &str, o: &str| {
        sample(
            &text,
            &format!(
                "math_controller_write_requests_total{{controller=\"{c}\",kind=\"{k}\",operation=\"{o}\"}}"
            ),
        )
    };
    assert_eq!(writes("tuple", "Number", "create"), Some(2.0));
    assert_eq!(writes("number", "Number", "patch_status"), Some(1.0));
    assert_eq!(m.write_total(), 4);
}

#[test]
fn the_leader_gauge_names_the_lease_and_is_absent_without_election() {
    let m = Metrics::new();
    let series = "leader_election_master_status{name=\"math-controller\"}";
    assert_eq!(sample(&m.encode(), series), None);
    m.set_leader("math-controller", false);
    assert_eq!(sample(&m.encode(), series), Some(0.0));
    m.set_leader("math-controller", true);
    assert_eq!(sample(&m.encode(), series), Some(1.0));
}

#[test]
fn the_prometheus_text_format_names_counters_by_their_samples() {
    let m = Metrics::new();
    let text = serving::exposition::to_prometheus_text(&m.encode());
    assert!(text.contains("# TYPE controller_runtime_reconcile_total counter\n"));
    assert!(text.contains("# TYPE math_controller_build_info gauge\n"));
    assert!(!text.contains("# EOF"));
    assert!(!text.contains("# UNIT"));
}

#[test]
fn separate_instances_do_not_share_values() {
    let a = Metrics::new();
    let b = Metrics::new();
    a.write("tuple", "Number", WriteKind::Delete);
    assert_eq!(a.write_total(), 1);
    assert_eq!(b.write_total(), 0);
}
