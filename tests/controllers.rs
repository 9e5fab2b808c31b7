//! The controllers against the test API server, in-process, through `kube::Client`:
//! what a user sees in statuses, children, Events and request counts.

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use math_controller::api::Tuple;
use math_controller::math;
use serde_json::json;
use test_apiserver::{RequestFilter, Verb};

fn controlled_by(owner: &OwnerReference, uid: &str) -> bool {
    owner.uid == uid && owner.controller == Some(true) && owner.block_owner_deletion == Some(true)
}

async fn events_for(h: &Harness, name: &str) -> Vec<Event> {
    let api: Api<Event> = Api::default_namespaced(h.client.clone());
    api.list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
}

#[tokio::test]
async fn numbers_get_fizzbuzz_squareness_and_primality() {
    let h = Harness::start().await;
    let values = [
        0,
        1,
        3,
        5,
        15,
        16,
        -9,
        1 << 62,
        i64::MAX,
        9_223_372_036_854_775_783,
    ];
    for (i, v) in values.iter().enumerate() {
        h.create_number(&format!("n{i}"), *v).await;
    }
    for (i, &v) in values.iter().enumerate() {
        let n = wait_for(&h.numbers(), &format!("n{i}"), number_ready).await;
        let s = n.status.expect("status");
        assert_eq!(s.fizz_buzz, Some(math::fizzbuzz(v)), "{v}");
        assert_eq!(s.is_square, Some(math::is_square(v)), "{v}");
        assert_eq!(s.is_prime, Some(math::is_prime(v)), "{v}");
    }
    let n = h.numbers().get("n4").await.expect("n4");
    assert_eq!(
        n.status.and_then(|s| s.fizz_buzz).as_deref(),
        Some("FizzBuzz")
    );
    let n = h.numbers().get("n8").await.expect("i64::MAX");
    assert_eq!(
        n.spec.value,
        i64::MAX,
        "the value survives the round trip exactly"
    );
    // One status write per Number, no more.
    assert_eq!(h.writes(Verb::Patch, "numbers"), values.len());
}

#[tokio::test]
async fn a_tuple_owns_heals_and_shrinks_its_numbers() {
    let mut h = Harness::start().await;
    let t = h.create_tuple("t", vec![0, 1, 1]).await;
    let uid = t.uid().expect("uid");
    let t = wait_for(&h.tuples(), "t", tuple_ready).await;
    assert_eq!(t.status.as_ref().and_then(|s| s.all_squares), Some(true));
    for (i, v) in [0, 1, 1].iter().enumerate() {
        let n = h
            .numbers()
            .get(&format!("t-{i}"))
            .await
            .expect("child exists");
        assert_eq!(n.spec.value, *v);
        assert!(
            controlled_by(&n.owner_references()[0], &uid),
            "{:?}",
            n.owner_references()
        );
    }
    let events = events_for(&h, "t").await;
    assert!(
        events.iter().any(|e| e.reason.as_deref() == Some("Created")
            && e.note
                .as_deref()
                .is_some_and(|n| n.contains("t-0, t-1, t-2"))),
        "{events:#?}"
    );

    // Edit the spec: allSquares flips to false.
    h.tuples()
        .patch(
            "t",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"numbers": [0, 1, 2]}})),
        )
        .await
        .expect("edit tuple");
    let t = wait_for(&h.tuples(), "t", |t| {
        tuple_ready(t) && t.metadata.generation == Some(2)
    })
    .await;
    assert_eq!(t.status.as_ref().and_then(|s| s.all_squares), Some(false));
    assert_eq!(h.numbers().get("t-2").await.expect("t-2").spec.value, 2);

    // Shrink: the extra Number is deleted.
    h.tuples()
        .patch(
            "t",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"numbers": [0, 1]}})),
        )
        .await
        .expect("shrink tuple");
    wait_gone(&h.numbers(), "t-2").await;
    let t = wait_for(&h.tuples(), "t", |t| {
        tuple_ready(t) && t.metadata.generation == Some(3)
    })
    .await;
    assert_eq!(
        t.status
            .as_ref()
            .map(|s| (s.ready_numbers, s.desired_numbers)),
        Some((Some(2), Some(2)))
    );
    assert_eq!(t.status.as_ref().and_then(|s| s.all_squares), Some(true));

    // Delete a child: it comes back, with a new uid.
    let old = h.numbers().get("t-1").await.expect("t-1");
    h.numbers()
        .delete("t-1", &DeleteParams::default())
        .await
        .expect("delete t-1");
    let back = wait_for(&h.numbers(), "t-1", |n| {
        n.uid() != old.uid() && number_ready(n)
    })
    .await;
    assert_eq!(back.spec.value, 1);

    // Edit a child by hand: the Tuple puts the desired value back.
    h.numbers()
        .patch(
            "t-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 7}})),
        )
        .await
        .expect("edit child");
    let n = wait_for(&h.numbers(), "t-0", |n| {
        n.spec.value == 0 && n.metadata.generation == Some(3) && number_ready(n)
    })
    .await;
    assert_eq!(n.status.and_then(|s| s.is_square), Some(true));
    let t = wait_for(&h.tuples(), "t", tuple_ready).await;
    assert_eq!(t.status.as_ref().and_then(|s| s.all_squares), Some(true));
    let events = events_for(&h, "t").await;
    for reason in ["Created", "Deleted", "Corrected"] {
        assert!(
            events.iter().any(|e| e.reason.as_deref() == Some(reason)),
            "no {reason} Event: {events:#?}"
        );
    }
    // After all that work, a graceful stop still completes.
    h.stop_manager().await;
}

#[tokio::test]
async fn a_waiting_tuple_never_gives_a_wrong_answer() {
    let h = Harness::start().await;
    // The Number controller cannot write statuses for now.
    let status_writes = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("numbers")
        .subresource("status");
    h.server.fail_next(status_writes, 1_000_000, 500);
    h.create_tuple("w", vec![2, 3]).await;
    // After the grace period the Tuple says what it is waiting for, and claims nothing.
    let t = wait_for(&h.tuples(), "w", |t| t.status.is_some()).await;
    let s = t.status.expect("status");
    assert_eq!(s.all_squares, None);
    assert_eq!(s.conditions[0].status, "False");
    assert_eq!(s.conditions[0].reason, "WaitingForNumbers");
    assert!(
        s.conditions[0].message.starts_with("0/2 Numbers ready"),
        "{}",
        s.conditions[0].message
    );
    h.server.clear_faults();
    let t = wait_for(&h.tuples(), "w", tuple_ready).await;
    assert_eq!(
        t.status.and_then(|s| s.all_squares),
        Some(false),
        "false is an answer too, and it is written"
    );
}

#[tokio::test]
async fn fermats_find_sums_of_two_squares() {
    let h = Harness::start().await;
    for n in [0, 1, 2, 5, 13, 19, 25, 50] {
        h.create_fermat(&format!("f{n}"), n).await;
    }
    for n in [0i64, 1, 2, 5, 13, 19, 25, 50] {
        let f = wait_for(&h.fermats(), &format!("f{n}"), fermat_ready).await;
        let s = f.status.expect("status");
        let expected: Vec<String> = math::two_square_decompositions(n)
            .into_iter()
            .map(|(x, y)| math::format_decomposition(x, y))
            .collect();
        assert_eq!(s.two_squares_found, Some(!expected.is_empty()), "{n}");
        assert_eq!(s.decompositions, Some(expected), "{n}");
        assert_eq!(s.is_prime, Some(math::is_prime(n)), "{n}");
        assert_eq!(s.one_mod_four, Some(math::is_one_mod_four(n)), "{n}");
        assert_eq!(s.desired_tuples, Some(n / 2));
    }
    // Changing n deletes the Tuples no longer wanted and creates the new ones.
    h.fermats()
        .patch(
            "f50",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"number": 10}})),
        )
        .await
        .expect("change n");
    let f = wait_for(&h.fermats(), "f50", |f| {
        fermat_ready(f) && f.metadata.generation == Some(2)
    })
    .await;
    assert_eq!(
        f.status.and_then(|s| s.decompositions),
        Some(vec!["1²+3²".to_string()])
    );
    let tuples = h
        .tuples()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    let of_f50: Vec<_> = tuples
        .iter()
        .filter(|t| t.name_any().starts_with("f50-"))
        .map(|t| t.name_any())
        .collect();
    assert_eq!(of_f50.len(), 5, "{of_f50:?}");
    assert!(of_f50.contains(&"f50-1-and-9".to_string()));
}

/// The Fermat says it created its Tuples; each Tuple's first Numbers are not announced again
/// (a Fermat 1000 published 500 "created 2 Numbers" Events, as many writes as a sixth of the
/// objects, and on a real kube-apiserver v1.24 they took ~12 % of its CPU in the run). A repair
/// is: a deleted Number re-created is an Event on its Tuple.
#[tokio::test]
async fn a_fermats_tuples_announce_repairs_not_their_first_numbers() {
    let h = Harness::start().await;
    h.create_fermat("f", 10).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    let created = |events: &[Event]| -> Vec<String> {
        events
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Created"))
            .filter_map(|e| e.note.clone())
            .collect()
    };
    let fermat_events = events_for(&h, "f").await;
    assert_eq!(
        created(&fermat_events).len(),
        1,
        "the Fermat's one Created Event: {fermat_events:#?}"
    );
    let tuples: Vec<String> = h
        .tuples()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|t| t.name_any())
        .collect();
    assert_eq!(tuples.len(), 5, "{tuples:?}");
    for tuple in &tuples {
        let events = events_for(&h, tuple).await;
        assert!(
            created(&events).is_empty(),
            "{tuple} announced its first Numbers: {events:#?}"
        );
    }
    // A repair is news.
    let tuple = &tuples[0];
    let number = format!("{tuple}-0");
    let before = h.numbers().get(&number).await.expect("the Number");
    h.numbers()
        .delete(&number, &DeleteParams::default())
        .await
        .expect("delete a Number");
    wait_for(&h.numbers(), &number, |n| {
        n.metadata.uid != before.metadata.uid && number_ready(n)
    })
    .await;
    let notes = eventually(
        "the Tuple's Created Event for the re-created Number",
        || async { Some(created(&events_for(&h, tuple).await)) },
        |notes: &Vec<String>| !notes.is_empty(),
    )
    .await;
    assert_eq!(notes, vec![format!("created 1 Number: {number}")]);
}

#[tokio::test]
async fn deleting_a_fermat_cascades_and_nothing_is_recreated() {
    let h = Harness::start().await;
    h.create_fermat("gone", 6).await;
    wait_for(&h.fermats(), "gone", fermat_ready).await;
    assert_eq!(
        h.numbers()
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        6
    );
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    h.fermats().delete("gone", &params).await.expect("delete");
    wait_gone(&h.fermats(), "gone").await;
    eventually(
        "children to be collected",
        || async {
            let t = h
                .tuples()
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .len();
            let n = h
                .numbers()
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .len();
            Some((t, n))
        },
        |c| *c == (0, 0),
    )
    .await;
    // Nothing comes back after the parents are gone.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        h.tuples()
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    assert!(
        h.numbers()
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_restarted_manager_on_a_converged_cluster_writes_nothing() {
    let mut h = Harness::start().await;
    h.create_fermat("f", 20).await;
    h.create_tuple("t", vec![1, 2, 3]).await;
    h.create_number("n", 42).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    // 10 Tuples + 20 Numbers under f, 3 Numbers under t, 1 Number: one create and one status each.
    let creates = h.writes(Verb::Create, "tuples") + h.writes(Verb::Create, "numbers");
    assert_eq!(
        creates,
        10 + 20 + 3 + 2,
        "the test's own Tuple and Number, plus one create per child"
    );
    assert_eq!(
        h.writes(Verb::Patch, "numbers"),
        20 + 3 + 1,
        "one status write per Number"
    );
    h.stop_manager().await;
    h.server.reset_requests();
    h.start_manager();
    // Give it time to list, watch and reconcile everything.
    eventually(
        "the restarted manager to watch all three kinds",
        || async { Some(h.server.count(&RequestFilter::new().verb(Verb::Watch))) },
        |w| *w >= 3,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        h.server.write_count(),
        0,
        "writes after a restart: {:#?}",
        h.server
            .requests()
            .iter()
            .filter(|r| r.verb.is_write())
            .collect::<Vec<_>>()
    );
    h.stop_manager().await;
}

#[tokio::test]
async fn a_child_controlled_by_someone_else_is_left_alone_and_reported() {
    let h = Harness::start().await;
    h.create_foreign_number("c-1", 99).await;
    // An unowned Number of a desired name is adopted instead.
    h.create_number("c-2", 5).await;
    let t = h.create_tuple("c", vec![4, 9, 16]).await;

    let t2 = wait_for(&h.tuples(), "c", |t| {
        t.status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.reason == "ChildConflict"))
    })
    .await;
    let condition = &t2.status.expect("status").conditions[0];
    assert_eq!(condition.status, "False");
    assert!(
        condition.message.contains("c-1") && condition.message.contains("ConfigMap someone"),
        "{}",
        condition.message
    );
    // The rest still reconciles: c-0 created, c-2 adopted and corrected.
    let c0 = wait_for(&h.numbers(), "c-0", number_ready).await;
    assert_eq!(c0.spec.value, 4);
    let c2 = wait_for(&h.numbers(), "c-2", |n| {
        n.spec.value == 16 && number_ready(n)
    })
    .await;
    assert!(controlled_by(
        &c2.owner_references()[0],
        &t.uid().expect("uid")
    ));
    // The foreign one is untouched.
    let c1 = h.numbers().get("c-1").await.expect("c-1");
    assert_eq!(c1.spec.value, 99);
    assert_eq!(c1.owner_references()[0].kind, "ConfigMap");
    let events = eventually(
        "the conflict Event",
        || async { Some(events_for(&h, "c").await) },
        |e| {
            e.iter()
                .any(|e| e.reason.as_deref() == Some("ChildConflict"))
                && e.iter().any(|e| e.reason.as_deref() == Some("Adopted"))
        },
    )
    .await;
    let warning = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("ChildConflict"))
        .expect("warning");
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
}

#[tokio::test]
async fn a_name_too_long_for_a_child_is_a_condition_not_a_crash() {
    let h = Harness::start().await;
    let long = "l".repeat(251); // "-0".."-9" fit in 253 characters; "-10" does not
    h.create_tuple(&long, (0..11).collect()).await;
    h.create_tuple("fine", vec![9]).await;
    let t = wait_for(&h.tuples(), &long, |t| {
        t.status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.reason == "ChildNameTooLong"))
    })
    .await;
    assert!(
        t.status.expect("status").conditions[0]
            .message
            .contains("253")
    );
    wait_for(&h.numbers(), &format!("{long}-9"), number_ready).await;
    // Another Tuple is not held up.
    let fine = wait_for(&h.tuples(), "fine", tuple_ready).await;
    assert_eq!(fine.status.and_then(|s| s.all_squares), Some(true));
}

#[tokio::test]
async fn namesakes_in_two_namespaces_do_not_fight() {
    let h = Harness::without_manager().await;
    let mut h = h;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(h.client.clone());
    for ns in ["team-a", "team-b"] {
        let namespace =
            serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
    }
    h.start_manager();
    let fermat = |ns: &str| Api::<math_controller::api::Fermat>::namespaced(h.client.clone(), ns);
    for (ns, number) in [("team-a", 10), ("team-b", 13)] {
        let f = math_controller::api::Fermat::new("f", math_controller::api::FermatSpec { number });
        fermat(ns)
            .create(&PostParams::default(), &f)
            .await
            .expect("create Fermat");
    }
    let a = wait_for(&fermat("team-a"), "f", fermat_ready).await;
    let b = wait_for(&fermat("team-b"), "f", fermat_ready).await;
    assert_eq!(
        a.status.and_then(|s| s.decompositions),
        Some(vec!["1²+3²".to_string()])
    );
    assert_eq!(
        b.status.and_then(|s| s.decompositions),
        Some(vec!["2²+3²".to_string()])
    );
    let writes = h.server.write_count();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(h.server.write_count(), writes, "converged: no more writes");
    let tuples_b = Api::<Tuple>::namespaced(h.client.clone(), "team-b")
        .list(&ListParams::default())
        .await
        .expect("list");
    assert_eq!(tuples_b.items.len(), 6);
    assert!(
        tuples_b
            .items
            .iter()
            .all(|t| t.owner_references()[0].uid == b.metadata.uid.clone().unwrap_or_default())
    );
}

#[tokio::test]
async fn faults_do_not_lose_or_duplicate_anything() {
    let h = Harness::start().await;
    h.server.fail_next(
        RequestFilter::new().verb(Verb::Create).resource("numbers"),
        5,
        500,
    );
    h.server.fail_next(
        RequestFilter::new().verb(Verb::Patch).resource("tuples"),
        3,
        409,
    );
    h.server.fail_next(
        RequestFilter::new().verb(Verb::Patch).resource("numbers"),
        5,
        500,
    );
    h.create_fermat("f", 30).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.server.close_watches();
    h.server.compact();
    h.create_tuple("t", vec![1, 4]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.server.close_watches();
    let f = wait_for(&h.fermats(), "f", fermat_ready).await;
    let decompositions = f.status.and_then(|s| s.decompositions);
    assert_eq!(decompositions, Some(vec![])); // 30 is not a sum of two positive squares
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let numbers = h
        .numbers()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    assert_eq!(numbers.len(), 30 + 2, "nothing duplicated, nothing lost");
    let tuples = h
        .tuples()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    assert_eq!(tuples.len(), 15 + 1);
    assert!(numbers.iter().all(number_ready));
}
