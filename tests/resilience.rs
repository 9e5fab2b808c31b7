//! Never stuck: the manager against the test API server's fault injection (closed watches,
//! compactions, held-back reconnects, slow writes, injected conflicts). Each test reproduces
//! one way the manager could once stay wrong for good (issue 12), and shows it recovering.

mod common;

use std::time::Duration;

use common::*;
use kube::api::{DeleteParams, PostParams};
use math_controller::manager::Options;
use test_apiserver::{RequestFilter, Verb};

fn reconciles(metrics: &math_controller::metrics::Metrics, controller: &str, result: &str) -> f64 {
    let series = format!(
        r#"math_controller_reconcile_total{{controller="{controller}",result="{result}"}}"#
    );
    sample(&metrics.encode(), &series).unwrap_or(0.0)
}

/// Item 9: a reconcile that ends waiting for children is a `requeue`, as the README says,
/// not a `success`.
#[tokio::test]
async fn waiting_for_children_counts_as_a_requeue() {
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(Options::default());
    h.create_tuple("t", vec![4, 9]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    // The first reconcile created t-0 and t-1 and waited for them.
    assert!(
        reconciles(&metrics, "tuple", "requeue") >= 1.0,
        "{}",
        metrics.encode()
    );
    assert!(reconciles(&metrics, "tuple", "success") >= 1.0);
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
