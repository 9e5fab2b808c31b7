//! Fair to every user (issue 28): a small object is answered while a big one is being built,
//! on the test API server with every write slowed, so that the big one's fan-out takes many
//! rounds of the manager's request slots and reconciles. The ordering is read from the
//! server's request log (which writes came first), never from a clock.

mod common;

use std::time::Duration;

use common::flows::{create_fermat, create_namespace, ours_in};
use common::{Harness, eventually, fermat_ready, sample, wait_for};
use kube::api::Api;
use math_controller::api::Fermat;
use math_controller::ops::manager::Options;
use test_apiserver::{RequestFilter, RequestRecord, Verb};

/// A Fermat 13 applied in another namespace shortly after a Fermat 300 (150 Tuples, 300
/// Numbers, about 900 writes) gets all its writes in while a third or more of the big one's
/// children are still to be created: its flow's requests go ahead of the big one's backlog, in the
/// write slots and in the reconciles. In one FIFO (before issue 28) it waited behind the
/// big one's Tuples and Numbers and was the last to finish.
#[tokio::test]
async fn a_small_fermat_is_answered_while_a_big_one_is_built() {
    let mut h = Harness::without_manager().await;
    create_namespace(&h, "big").await;
    create_namespace(&h, "small").await;
    // Every write takes 5 ms at the server; two slots and four reconciles per kind make the
    // big one's fan-out take hundreds of rounds.
    let writes = [Verb::Create, Verb::Patch, Verb::Delete];
    for verb in writes {
        h.server
            .set_latency(RequestFilter::new().verb(verb), Duration::from_millis(5));
    }
    let metrics = h.start_manager_observed(Options {
        concurrency: 4,
        requests_in_flight: 2,
        ..Options::default()
    });
    create_fermat(&h, "big", 300).await;
    let tuple_creates = RequestFilter::new()
        .verb(Verb::Create)
        .resource("tuples")
        .namespace("big");
    eventually(
        "the big Fermat's fan-out has begun",
        || async { Some(h.server.count(&tuple_creates)) },
        |n| *n >= 10,
    )
    .await;
    create_fermat(&h, "small", 13).await;
    wait_for(
        &Api::<Fermat>::namespaced(h.client.clone(), "small"),
        "f",
        fermat_ready,
    )
    .await;
    wait_for(
        &Api::<Fermat>::namespaced(h.client.clone(), "big"),
        "f",
        fermat_ready,
    )
    .await;

    let log = h.server.requests();
    let small_done = log
        .iter()
        .rposition(|r| ours_in(r, "small"))
        .expect("the small Fermat's writes are in the log");
    // The children's creates: the test created the Fermat itself.
    let big_creates =
        |r: &&RequestRecord| ours_in(r, "big") && r.verb == Verb::Create && r.resource != "fermats";
    let total = log.iter().filter(big_creates).count();
    let after = log[small_done..].iter().filter(big_creates).count();
    eprintln!("{after} of the big Fermat's {total} creates came after the small one's last write");
    assert_eq!(total, 450, "the big Fermat's 150 Tuples and 300 Numbers");
    assert!(
        after * 3 >= total,
        "the small Fermat's last write came after two thirds of the big one's children were \
         created: only {after} of {total} creates came after it"
    );

    // The queues show in /metrics, by queue only: the writes waited for their slots and the
    // Tuples for their turns, nothing waits once everything converged, and no series names a
    // namespace. What the last Tuples' news queued (their own status echoes, as settled objects) is
    // reconciled right after.
    let depth = |queue: &str| {
        let series = format!("math_controller_fair_queue_depth{{queue=\"{queue}\"}}");
        sample(&metrics.encode(), &series)
    };
    for queue in ["writes", "number", "tuple", "fermat"] {
        eventually(
            &format!("the {queue} queue empties"),
            || async { depth(queue) },
            |n| *n == 0.0,
        )
        .await;
    }
    let text = metrics.encode();
    let series = |name: &str, queue: &str| {
        sample(
            &text,
            &format!("math_controller_{name}{{queue=\"{queue}\"}}"),
        )
    };
    for queue in ["writes", "tuple"] {
        let waits = series("fair_queue_wait_seconds_count", queue);
        assert!(waits.is_some_and(|n| n > 0.0), "{queue}: {waits:?} waits");
        let sum = series("fair_queue_wait_seconds_sum", queue);
        assert!(sum.is_some_and(|s| s > 0.0), "{queue} waited: {sum:?} s");
    }
    for queue in ["writes", "number", "tuple", "fermat"] {
        assert_eq!(series("fair_queue_depth", queue), Some(0.0), "{queue}");
        assert_eq!(series("fair_queue_flows", queue), Some(0.0), "{queue}");
        assert_eq!(
            series("fair_queue_longest_wait_seconds", queue),
            Some(0.0),
            "{queue}"
        );
    }
    let queue_lines = text.lines().filter(|l| l.contains("fair_queue"));
    assert!(
        queue_lines
            .clone()
            .all(|l| !l.contains("big") && !l.contains("small")),
        "no namespace in a label: {:?}",
        queue_lines.collect::<Vec<_>>()
    );
}

/// A manager with one reconcile of each kind at a time, a Tuple `busy` of `busy` Numbers
/// holding the only Tuple turn (Number creates take 100 ms, and its creates go out in rounds
/// of the slow start), and a Tuple `name` of `numbers` whose reconcile waits at the Tuple gate
/// behind it.
async fn waiting_behind_a_busy_tuple(busy: i64, name: &str, numbers: Vec<i64>) -> Harness {
    let mut h = Harness::without_manager().await;
    h.server
        .set_latency(number_creates(), Duration::from_millis(100));
    let metrics = h.start_manager_observed(Options {
        concurrency: 1,
        ..Options::default()
    });
    h.create_tuple("busy", (1..=busy).collect()).await;
    eventually(
        "the busy Tuple's reconcile has begun",
        || async { Some(h.server.count(&number_creates())) },
        |n| *n >= 1,
    )
    .await;
    h.create_tuple(name, numbers).await;
    let queued = "math_controller_fair_queue_depth{queue=\"tuple\"}";
    eventually(
        &format!("{name}'s reconcile waits at the Tuple gate"),
        || async { sample(&metrics.encode(), queued) },
        |n| *n >= 1.0,
    )
    .await;
    h
}

fn number_creates() -> RequestFilter {
    RequestFilter::new().verb(Verb::Create).resource("numbers")
}

/// A reconcile that waits at the gate acts on the object as it is when its turn comes, not as
/// it was when its news came: a Tuple whose spec changed while it waited gets the Number of
/// its new spec, created once, never the old one's. Before, the waiting reconcile carried the
/// first version (kube-runtime hands a reconcile the object of its trigger) and created the
/// old Number; the change, held by the `Controller` until then, ran a second reconcile that
/// corrected it: a create, a PATCH of the spec, two statuses.
#[tokio::test]
async fn a_reconcile_waiting_at_the_gate_acts_on_the_newest_spec() {
    let h = waiting_behind_a_busy_tuple(30, "t", vec![1]).await;
    h.tuples()
        .patch(
            "t",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"numbers": [4]}})),
        )
        .await
        .expect("the Tuple's spec changes");
    assert!(
        h.server.count(&number_creates()) < 30,
        "the test changed the spec while the busy Tuple still held the gate"
    );
    let t = wait_for(&h.tuples(), "t", common::tuple_ready).await;
    assert_eq!(t.spec.numbers, vec![4]);
    // A create carries no name in its path: the Number's generation tells whether its spec
    // was ever corrected, and the request log whether it was patched.
    let number = h.numbers().get("t-0").await.expect("t-0");
    let corrections = h.server.count(
        &RequestFilter::new()
            .verb(Verb::Patch)
            .resource("numbers")
            .name("t-0")
            .main_resource(),
    );
    assert_eq!(
        (number.spec.value, number.metadata.generation, corrections),
        (4, Some(1), 0),
        "t-0 (value, generation, spec patches): created for the old spec and corrected"
    );
    assert_eq!(
        h.server.count(&number_creates()),
        31,
        "30 Numbers of busy, one of t"
    );
}

/// An object deleted while it waits at the gate does not keep the turn it was given: with one
/// Tuple reconcile at a time, a Tuple deleted while it waited behind a busy one, then another
/// Tuple, which is reconciled as soon as the busy one is done.
#[tokio::test]
async fn an_object_deleted_while_it_waits_gives_its_turn_back() {
    let h = waiting_behind_a_busy_tuple(20, "gone", vec![1]).await;
    h.tuples()
        .delete("gone", &Default::default())
        .await
        .expect("the waiting Tuple is deleted");
    h.create_tuple("next", vec![9]).await;
    wait_for(&h.tuples(), "next", common::tuple_ready).await;
    wait_for(&h.tuples(), "busy", common::tuple_ready).await;
    assert_eq!(
        h.server.count(&number_creates()),
        21,
        "busy's 20 Numbers and next's one; none for the deleted Tuple"
    );
}
