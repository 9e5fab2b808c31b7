//! Never stuck: the manager against the test API server's fault injection (closed watches,
//! compactions, held-back reconnects, slow writes, injected conflicts). Each test reproduces
//! one way the manager could once stay wrong for good (issue 12), and shows it recovering.

mod common;

use std::time::Duration;

use common::*;
use kube::api::PostParams;
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
