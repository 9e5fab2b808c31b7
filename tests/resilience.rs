//! Never stuck: the manager against the test API server's fault injection (closed watches,
//! compactions, held-back reconnects, slow writes, injected conflicts). Each test reproduces
//! one way the manager could once stay wrong for good (issue 12), and shows it recovering.

mod common;

use std::time::Duration;

use common::*;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use math_controller::ops::manager::Options;
use serde_json::json;
use test_apiserver::{RequestFilter, Verb};

fn reconciles(metrics: &math_controller::metrics::Metrics, controller: &str, result: &str) -> f64 {
    let series = format!(
        r#"controller_runtime_reconcile_total{{controller="{controller}",result="{result}"}}"#
    );
    sample(&metrics.encode(), &series).unwrap_or(0.0)
}

/// Item 9: a reconcile that ends waiting for children says so, as docs/architecture.md says:
/// in `math_controller_reconcile_progress_total{progress="waiting"}`. Its `result` is
/// controller-runtime's: it asked the queue for nothing (its children's events bring it
/// back), so `success`, not `requeue` (issue 49).
#[tokio::test]
async fn waiting_for_children_is_counted_as_waiting() {
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(Options::default());
    h.create_tuple("t", vec![4, 9]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    // The first reconcile created t-0 and t-1 and waited for them.
    let waiting =
        r#"math_controller_reconcile_progress_total{controller="tuple",progress="waiting"}"#;
    assert!(
        sample(&metrics.encode(), waiting).is_some_and(|n| n >= 1.0),
        "{}",
        metrics.encode()
    );
    // `requeue` is a 409's retry, no more.
    let conflicts = (h.server.requests().iter())
        .filter(|r| r.status == 409)
        .count() as f64;
    assert!(reconciles(&metrics, "tuple", "requeue") <= conflicts);
    h.stop_manager().await;
}

/// Item 7: a child whose correction keeps answering 409 is retried with a growing backoff
/// starting at 50 ms, not every 50 ms, and is still corrected once the conflicts stop.
#[tokio::test]
async fn conflicts_back_off() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let corrections = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("numbers")
        .main_resource()
        .name("t-0");
    h.server.fail_next(corrections.clone(), 1_000_000, 409);
    // The hand edit is a PUT, which the injected fault (on PATCH) lets through.
    let mut edited = h.numbers().get("t-0").await.expect("t-0");
    edited.spec.value = 7;
    h.numbers()
        .replace("t-0", &PostParams::default(), &edited)
        .await
        .expect("edit t-0 by hand");
    h.server.reset_requests();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = h.server.count(&corrections);
    // 50 ms doubling: 50+100+200+400+800 ms fit in 2 s (plus the test's own edits); a retry
    // every 50 ms would be about 40.
    assert!(attempts <= 10, "{attempts} corrections in 2 s");
    h.server.clear_faults();
    wait_for(&h.numbers(), "t-0", |n| {
        n.spec.value == 4 && number_ready(n)
    })
    .await;
}

/// Issue 48 (N7): an object's backoff is its own, not its name's. A Tuple that failed for a
/// while (its status write answered 500 again and again, so its retries are seconds apart),
/// deleted and created again under its name, retries its first failures 100 ms, 200 ms, …
/// apart. Before, filed by name, it inherited the old one's count: its next retry after the
/// first was 6.4 s away.
#[tokio::test]
async fn a_recreated_object_starts_with_no_backoff() {
    let h = Harness::start().await;
    let status = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("tuples")
        .subresource("status")
        .name("t");
    h.server.fail_next(status.clone(), 1_000_000, 500);
    h.create_tuple("t", vec![]).await;
    eventually(
        "six failed status writes of t",
        || async { Some(h.server.count(&status)) },
        |n| *n >= 6,
    )
    .await;
    h.tuples()
        .delete("t", &DeleteParams::default())
        .await
        .expect("delete t");
    wait_gone(&h.tuples(), "t").await;
    h.server.reset_requests();
    h.create_tuple("t", vec![]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let attempts = h.server.count(&status);
    // Afresh: at 0, 0.1, 0.3, 0.7 and 1.5 s; inherited: at 0, then 6.4 s later.
    assert!(
        attempts >= 3,
        "{attempts} status writes of the new t in 3 s"
    );
}

/// Item 1: a child deleted while its watch was down and relisting (closed, compacted, the
/// reconnect held back) is noticed when the new list arrives, and put back.
#[tokio::test]
async fn a_child_deleted_during_a_relist_comes_back() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let old = h.numbers().get("t-0").await.expect("t-0");
    // The Numbers' watch and list are held back 3 s: the manager's Number cache is blind.
    let held = [Verb::Watch, Verb::List].map(|v| RequestFilter::new().verb(v).resource("numbers"));
    for filter in &held {
        h.server.set_latency(filter.clone(), Duration::from_secs(3));
    }
    let tuple_lists = RequestFilter::new().verb(Verb::List).resource("tuples");
    let listed = h.server.count(&tuple_lists);
    h.server.close_watches();
    h.server.compact();
    // The Tuples relist at once (t is reconciled then, t-0 still cached); only then t-0 goes.
    eventually(
        "the Tuples' relist",
        || async { Some(h.server.count(&tuple_lists)) },
        |n| *n > listed,
    )
    .await;
    h.numbers()
        .delete("t-0", &DeleteParams::default())
        .await
        .expect("delete t-0");
    for filter in held {
        h.server.set_latency(filter, Duration::ZERO);
    }
    let back = wait_for(&h.numbers(), "t-0", |n| {
        n.metadata.uid != old.metadata.uid && number_ready(n)
    })
    .await;
    assert_eq!(back.spec.value, 4);
    wait_for(&h.tuples(), "t", tuple_ready).await;
}

/// Item 1: every object is reconciled again every sync period (jittered), and on a converged
/// cluster that costs no write.
#[tokio::test]
async fn a_periodic_resync_writes_nothing_on_a_converged_cluster() {
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(Options {
        sync_period: Duration::from_secs(1),
        ..Options::default()
    });
    h.create_fermat("f", 10).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    let writes = h.object_writes();
    let before = reconciles(&metrics, "fermat", "success");
    eventually(
        "two resyncs of the Fermat",
        || async { Some(reconciles(&metrics, "fermat", "success")) },
        |n| *n >= before + 2.0,
    )
    .await;
    assert_eq!(h.object_writes(), writes, "a resync writes nothing");
    h.stop_manager().await;
}

/// Item 2: a child created and deleted before the parent's next reconcile (its ADDED and
/// DELETED both arrive while the parent is busy publishing an Event) looks exactly like the
/// remembered "absent"; the events that went by tell the parent its write was seen, well
/// before the write's 5-minute safety timeout.
#[tokio::test]
async fn a_child_deleted_before_its_echo_comes_back() {
    let mut h = Harness::without_manager().await;
    h.start_manager();
    let events = RequestFilter::new().resource("events");
    h.server.set_latency(events.clone(), Duration::from_secs(2));
    h.create_tuple("t", vec![4]).await;
    let first = eventually(
        "t-0 to be created",
        || async {
            Some(
                h.server
                    .object("math.example.com", "numbers", Some("default"), "t-0"),
            )
        },
        |n| n.is_some(),
    )
    .await;
    h.numbers()
        .delete("t-0", &DeleteParams::default())
        .await
        .expect("delete t-0 at once");
    h.server.set_latency(events, Duration::ZERO);
    let uid = |v: &serde_json::Value| v.pointer("/metadata/uid").cloned();
    let first_uid = first.as_ref().and_then(uid);
    let back = wait_for(&h.numbers(), "t-0", |n| {
        n.metadata.uid.as_ref().map(|u| serde_json::json!(u)) != first_uid && number_ready(n)
    })
    .await;
    assert_eq!(back.spec.value, 4);
    wait_for(&h.tuples(), "t", tuple_ready).await;
    h.stop_manager().await;
}

/// Item 5: a reconcile between a status write and its echo builds on the status it wrote,
/// so `lastTransitionTime` stays and the same answer is not written a second time.
#[tokio::test]
async fn a_status_is_written_once_even_when_its_echo_is_late() {
    let mut h = Harness::without_manager().await;
    // The Tuples' watch (not their list) is held back: t's own status write is not echoed.
    let tuple_watch = RequestFilter::new().verb(Verb::Watch).resource("tuples");
    h.server
        .set_latency(tuple_watch.clone(), Duration::from_secs(6));
    h.create_tuple("t", vec![4]).await;
    h.start_manager();
    let ready = |t: &Option<serde_json::Value>| {
        t.as_ref()
            .and_then(|t| t.pointer("/status/conditions/0/status"))
            .is_some_and(|s| s == "True")
    };
    eventually(
        "t's answer on the server",
        || async {
            Some(
                h.server
                    .object("math.example.com", "tuples", Some("default"), "t"),
            )
        },
        ready,
    )
    .await;
    // More than a second later, before the echo, a change of t-0 wakes t again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    h.numbers()
        .patch(
            "t-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .expect("label t-0");
    h.server.set_latency(tuple_watch.clone(), Duration::ZERO);
    eventually(
        "the Tuples' watch to be served",
        || async { Some(h.server.count(&tuple_watch)) },
        |n| *n >= 1,
    )
    .await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    h.stop_manager().await;
    let status_writes = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("tuples")
        .subresource("status");
    assert_eq!(h.server.count(&status_writes), 1, "t's status written once");
}

/// Item 6: what the manager remembers of its writes expires, also for children that are gone
/// (a Tuple shrunk from 20 Numbers to 2), so its memory stays bounded.
#[tokio::test]
async fn remembered_writes_expire() {
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(Options {
        in_flight_timeout: Duration::from_secs(1),
        ..Options::default()
    });
    h.create_tuple("t", (1..=20).collect()).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    h.tuples()
        .patch(
            "t",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"numbers": [1, 2]}})),
        )
        .await
        .expect("shrink t");
    wait_for(&h.tuples(), "t", |t| {
        tuple_ready(t) && t.metadata.generation == Some(2)
    })
    .await;
    wait_gone(&h.numbers(), "t-19").await;
    let remembered = |memory: &str| {
        let series = format!(r#"math_controller_remembered_entries{{memory="{memory}"}}"#);
        sample(&metrics.encode(), &series)
    };
    eventually(
        "every remembered entry to expire",
        || async {
            Some(
                ["child_writes", "status_writes", "failures"]
                    .map(|m| remembered(m).unwrap_or(f64::NAN)),
            )
        },
        |entries| entries.iter().all(|n| *n == 0.0),
    )
    .await;
    h.stop_manager().await;
}
