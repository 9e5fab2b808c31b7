//! Write counts that do not depend on the API server's speed (issue 8): against a server
//! slowed like a loaded kube-apiserver (latency on every write, a cap on writes per second),
//! a converging tree writes one status per object, plus a few progress reports on the big
//! parent, and those reports show its ready count moving.

mod common;

use std::time::Duration;

use common::*;
use futures::StreamExt;
use kube::runtime::watcher::{self, Event};
use math_controller::ops::manager::Options;
use test_apiserver::{RequestFilter, Verb};

/// Successful status writes to one resource.
fn status_writes(h: &Harness, resource: &str) -> usize {
    h.server
        .requests()
        .iter()
        .filter(|r| {
            r.verb == Verb::Patch
                && r.resource == resource
                && r.subresource.as_deref() == Some("status")
                && r.status == 200
        })
        .count()
}

/// A Fermat 1000 (500 Tuples, 1000 Numbers) against a server that takes 10 ms per write and
/// at most 250 writes a second: converging takes well over the 5 s that a waiting parent
/// used to wait before writing "waiting", so every Tuple used to write twice. Now: 1500
/// creates and 1500 statuses (the minimum, 3001 with the Fermat's answer), and the Fermat's
/// progress reports on top, at most one per 100 Tuples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fermat_1000_on_a_slow_server_writes_the_minimum_plus_bounded_progress() {
    let mut h = Harness::without_manager().await;
    h.server.set_latency(
        RequestFilter::new().verb(Verb::Create),
        Duration::from_millis(10),
    );
    h.server.set_latency(
        RequestFilter::new().verb(Verb::Patch),
        Duration::from_millis(10),
    );
    h.server.set_write_rate(250);
    h.start_manager();

    // What a person watching the Fermat sees: every status it goes through.
    let seen = tokio::spawn({
        let fermats = h.fermats();
        async move {
            let mut shown = Vec::new();
            let mut events = watcher::watcher(fermats, watcher::Config::default()).boxed();
            while let Some(Ok(event)) = events.next().await {
                if let Event::Apply(f) | Event::InitApply(f) = event
                    && let Some(s) = f.status
                {
                    let ready = s.conditions.first().map(|c| c.status == "True");
                    shown.push((s.ready_tuples, ready));
                    if ready == Some(true) {
                        break;
                    }
                }
            }
            shown
        }
    });
    h.create_fermat("f", 1000).await;
    let f = wait_for(&h.fermats(), "f", fermat_ready).await;
    let shown = tokio::time::timeout(Duration::from_secs(10), seen)
        .await
        .expect("the watcher saw the Fermat become ready")
        .expect("the watcher did not panic");

    assert_eq!(h.writes(Verb::Create, "tuples"), 500);
    assert_eq!(h.writes(Verb::Create, "numbers"), 1000);
    assert_eq!(status_writes(&h, "numbers"), 1000, "one status per Number");
    assert_eq!(status_writes(&h, "tuples"), 500, "one status per Tuple");
    let fermat_statuses = status_writes(&h, "fermats");
    let reports = fermat_statuses - 1;
    assert!(
        reports <= 500 / 100,
        "{reports} progress reports for 500 Tuples: {shown:?}"
    );
    let writes: Vec<String> = (h.server.requests().iter())
        .filter(|r| r.verb.is_write() && r.resource == "fermats")
        .map(|r| format!("{:?} {:?} {}", r.verb, r.subresource, r.status))
        .collect();
    // The test's own create of the Fermat aside, the manager's writes.
    assert_eq!(h.object_writes() - 1, 3001 + reports, "{writes:?}");

    // The reports are progress a person can see: the ready count only goes up, and the
    // last status is the answer.
    let counts: Vec<i64> = shown.iter().filter_map(|(n, _)| *n).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{shown:?}");
    assert_eq!(shown.last(), Some(&(Some(500), Some(true))), "{shown:?}");
    assert!(
        shown.len() >= 2,
        "a Fermat that took seconds to build showed no progress: {shown:?}"
    );
    // 1000 = 10² + 30² = 18² + 26²: both found by the cluster.
    let status = f.status.expect("a status");
    assert_eq!(status.decompositions.map(|d| d.len()), Some(2));
    h.stop_manager().await;
}

/// A parent that only waits for its children is not planned again for every child that
/// settles (issue 21): a Fermat 4000 has 2000 Tuples, each of which triggers it, and every
/// plan looks at all 2000. It is planned again no sooner than ten times what its last plan
/// cost (`src/reconcile/memory/pace.rs`), so its plans are a small fraction of the triggers. Before: planned
/// back to back for the whole build (on the real control plane a Fermat 10000 was planned
/// 1362 times, two thirds of the manager's CPU).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_parent_is_not_planned_for_every_child_that_settles() {
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(math_controller::ops::manager::Options::default());
    h.create_fermat("f", 4000).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    let plans: f64 = ["success", "requeue", "requeue_after"]
        .iter()
        .map(|result| {
            let series = format!(
                r#"controller_runtime_reconcile_total{{controller="fermat",result="{result}"}}"#
            );
            sample(&metrics.encode(), &series).unwrap_or(0.0)
        })
        .sum();
    let tuple_plans: f64 = ["success", "requeue", "requeue_after"]
        .iter()
        .filter_map(|result| {
            let series = format!(
                r#"controller_runtime_reconcile_total{{controller="tuple",result="{result}"}}"#
            );
            sample(&metrics.encode(), &series)
        })
        .sum();
    // Each of the 2000 Tuples settles once (and is created once): thousands of triggers.
    assert!(tuple_plans >= 2000.0, "{tuple_plans}");
    assert!(plans <= 200.0, "the Fermat was planned {plans} times");
    h.stop_manager().await;
}

/// A Tuple whose Numbers were slow to create is not held back once they settle: what a
/// waiting parent is held for is what its *plan* cost (microseconds for a Tuple), not what
/// its writes waited for the API server. Before: the whole reconcile was timed, so a Tuple
/// that spent 0.2 s creating its Numbers on the real control plane was put off for a second
/// when they settled (a Fermat 1000 spent its last second with hundreds of finished Tuples
/// waiting to say so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tuple_is_not_held_for_the_time_its_writes_took() {
    let mut h = Harness::without_manager().await;
    h.server.set_latency(
        RequestFilter::new().verb(Verb::Create).resource("numbers"),
        Duration::from_millis(300),
    );
    let metrics = h.start_manager_observed(math_controller::ops::manager::Options::default());
    h.create_tuple("t", vec![3, 4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let text = metrics.encode();
    let put_off = sample(
        &text,
        r#"math_controller_replans_put_off_total{controller="tuple"}"#,
    );
    assert_eq!(
        put_off,
        Some(0.0),
        "the Tuple's answer was put off: {:?}",
        text.lines()
            .filter(|l| l.contains("put_off"))
            .collect::<Vec<_>>()
    );
    h.stop_manager().await;
}

/// The most requests other than watches that were open at the server at one moment.
fn most_open_at_once(h: &Harness) -> usize {
    let mut edges: Vec<(std::time::SystemTime, i32)> = Vec::new();
    for r in h.server.requests().iter().filter(|r| r.verb.is_write()) {
        edges.push((r.time, 1));
        edges.push((r.time + r.duration, -1));
    }
    // An answer and an arrival at the same instant: the answer first.
    edges.sort();
    let (mut open, mut most) = (0, 0);
    for (_, step) in edges {
        open += step;
        most = most.max(open);
    }
    most as usize
}

/// Write and Event requests open at once are bounded by `--requests-in-flight`: kube-rs
/// speaks HTTP/1.1, so each one open is a connection of its own. Unbounded, 64 reconciles and
/// their create fan-out had 176 connections open to a real kube-apiserver (v1.24) for a
/// Fermat 1000; here, with 20 ms per write, a Fermat 200 had 90 writes open at once without
/// the bound, and never more than 8 with `--requests-in-flight 8`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_open_at_once_stay_within_the_bound() {
    let mut h = Harness::without_manager().await;
    h.server
        .set_latency(RequestFilter::new(), Duration::from_millis(20));
    h.start_manager_with(Options {
        requests_in_flight: 8,
        ..Options::default()
    });
    h.create_fermat("f", 200).await;
    let f = wait_for(&h.fermats(), "f", fermat_ready).await;
    assert_eq!(f.status.and_then(|s| s.desired_tuples), Some(100));
    let most = most_open_at_once(&h);
    assert!(most <= 8, "{most} writes open at once");
    assert!(
        most >= 4,
        "the bound is used, not a trickle: {most} at most"
    );
}
