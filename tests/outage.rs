//! API server outages (issue 8): the real binary against the test API server, which refuses
//! connections for a while and then comes back with every object. The manager's stderr is
//! captured, so that what a person reading its log sees during an outage is under test too.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::binary::{Manager, loud};
use common::*;
use kube::ResourceExt;
use math_controller::api::Fermat;
use math_controller::controller::{fermat, tuple};
use test_apiserver::{RequestFilter, Verb};

/// The names of the Tuples and Numbers a Fermat wants.
fn desired_children(f: &Fermat) -> (BTreeSet<String>, BTreeSet<String>) {
    let tuples: Vec<_> = fermat::desired_tuples(f);
    let mut numbers = BTreeSet::new();
    for t in &tuples {
        let tuple = math_controller::api::Tuple::new(&t.name, t.spec.clone());
        numbers.extend(tuple::desired_numbers(&tuple).into_iter().map(|d| d.name));
    }
    (tuples.into_iter().map(|d| d.name).collect(), numbers)
}

fn stored_names(h: &Harness, resource: &str) -> BTreeSet<String> {
    h.server
        .objects("math.example.com", resource, Some("default"))
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// Successful creates of a resource: with the stored names exactly the desired ones, one
/// per name means no child was created twice (a create repeated after its response was
/// lost would need a delete in between, or answer 409).
fn successful_creates(h: &Harness, resource: &str) -> usize {
    h.server
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::Create && r.resource == resource && r.status == 201)
        .count()
}

/// An outage 1.5 s into a Fermat 200, lasting 4 s: the manager converges once the server
/// is back, with exactly the desired children, each created once, and says what happened
/// in a few lines (the real apiserver case logged 8 700 lines for an 8 s outage).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_mid_fermat_ends_converged_with_each_child_created_once() {
    let h = Harness::without_manager().await;
    let manager = Manager::start(&h);
    // Slow enough that the Fermat is still being built when the server goes away.
    h.server.set_latency(
        RequestFilter::new().verb(Verb::Create),
        Duration::from_millis(50),
    );
    let f = h.create_fermat("f", 200).await;
    // The outage begins mid-build, however fast this machine is: once a few Numbers exist.
    let building = tokio::time::Instant::now();
    while stored_names(&h, "numbers").len() < 10 {
        assert!(
            building.elapsed() < Duration::from_secs(30),
            "the Fermat never started building"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = manager.lines().len();
    h.server.outage(Duration::from_secs(4));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = manager.lines().len();
    tokio::time::sleep(Duration::from_millis(3400)).await;
    // What the manager said while the server was away: its first reaction, and then (once
    // the reconciles that were running have ended) next to nothing.
    let lines_now = manager.lines();
    let during: Vec<String> = lines_now[before..].to_vec();
    let later: Vec<String> = lines_now[settled..].to_vec();
    wait_for(&h.fermats(), "f", fermat_ready).await;
    // The return is announced (the probe knocks at most a second apart).
    let back = tokio::time::Instant::now();
    while !manager
        .lines()
        .iter()
        .any(|l| l.contains("API server reachable again"))
        && back.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (tuples, numbers) = desired_children(&f);
    assert_eq!(stored_names(&h, "tuples"), tuples);
    assert_eq!(stored_names(&h, "numbers"), numbers);
    for (resource, names) in [("tuples", &tuples), ("numbers", &numbers)] {
        assert_eq!(successful_creates(&h, resource), names.len(), "{resource}");
    }
    let fermat = h.fermats().get("f").await.unwrap();
    assert!(fermat_ready(&fermat), "{}", fermat.name_any());

    let lines = manager.stop().await;
    assert!(
        during
            .iter()
            .any(|l| l.contains("API server unreachable since")),
        "{during:#?}"
    );
    assert!(loud(&during).len() <= 3, "{during:#?}");
    assert!(later.len() <= 3, "{later:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("API server reachable again")),
        "{:#?}",
        loud(&lines)
    );
    assert!(loud(&lines).len() <= 3, "{:#?}", loud(&lines));
}

/// A manager started while the API server is down (a pod restarted during a control-plane
/// upgrade) waits for it, saying so, and then does its job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_started_during_an_outage_runs_once_the_server_is_back() {
    let h = Harness::without_manager().await;
    h.create_tuple("t", vec![4, 9]).await;
    h.server.stop();
    let manager = Manager::start(&h);
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Still running, still waiting.
    let waiting = manager.lines();
    h.server.resume();
    wait_for(&h.tuples(), "t", tuple_ready).await;
    assert_eq!(
        stored_names(&h, "numbers"),
        ["t-0", "t-1"].map(String::from).into()
    );
    let lines = manager.stop().await;
    assert!(
        waiting
            .iter()
            .any(|l| l.contains("waiting for the API server")),
        "{waiting:#?}"
    );
    assert!(loud(&lines).len() <= 3, "{lines:#?}");
}

/// Retries during an outage are not failures of the object: the first ordinary error after
/// the server is back is retried after the first step of the backoff (50–100 ms, attempt 1),
/// not after a backoff grown by every second of the outage (issue 17's review).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_outage_an_error_backs_off_from_the_first_step() {
    let h = Harness::without_manager().await;
    let manager = Manager::start(&h);
    // The Number's status write is on its way when the server goes away: its reconcile fails
    // as unreachable and waits for the server, retrying about every second.
    let status_writes = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("numbers")
        .subresource("status");
    h.server
        .set_latency(status_writes.clone(), Duration::from_secs(3));
    h.create_number("n", 7).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    h.server.stop();
    tokio::time::sleep(Duration::from_secs(5)).await;
    h.server.set_latency(status_writes.clone(), Duration::ZERO);
    // Back, and the next status write fails once with an ordinary error.
    h.server.fail_next(status_writes, 1, 500);
    h.server.resume();
    wait_for(&h.numbers(), "n", number_ready).await;
    let lines = manager.stop().await;
    let failed: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("Number/default/n: reconcile failed"))
        .collect();
    assert_eq!(failed.len(), 1, "{lines:#?}");
    // The first step: 100 ms, drawn between 50 and 100 ms (jittered).
    let delay = (failed[0].split("retrying in ").nth(1))
        .and_then(|rest| rest.split("ms ").next())
        .and_then(|ms| ms.parse::<f64>().ok());
    assert!(
        failed[0].contains("attempt=1") && delay.is_some_and(|ms| (50.0..=100.0).contains(&ms)),
        "{failed:#?}"
    );
}

/// Successful status writes to a resource.
/// A failure that lasts is told once, not once per retry (the standard the watches and the
/// panics already kept): five failed status writes of a Number in a row are one WARN line,
/// with the first step of the backoff. Before: a WARN line per attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_lasts_is_told_once() {
    let h = Harness::without_manager().await;
    let manager = Manager::start(&h);
    let status_writes = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("numbers")
        .subresource("status");
    h.server.fail_next(status_writes, 5, 500);
    h.create_number("n", 7).await;
    wait_for(&h.numbers(), "n", number_ready).await;
    // The status is Ready once the server holds it, a moment before the manager has read the
    // answer and logged through its writer thread: `stop` kills the process, and a line not
    // yet written is lost with it (how one CI run from a fresh clone came to miss the line
    // below). So wait for the line, as a person watching the log would.
    let recovered = "Number/default/n: reconciled again after 5 failures in a row";
    let waiting = tokio::time::Instant::now();
    while !manager.lines().iter().any(|l| l.contains(recovered))
        && waiting.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lines = manager.stop().await;
    let failed: Vec<&String> = (loud(&lines).into_iter())
        .filter(|l| l.contains("Number/default/n: reconcile failed"))
        .collect();
    assert_eq!(failed.len(), 1, "told once: {lines:#?}");
    assert!(failed[0].contains("attempt=1"), "{failed:#?}");
    let told: Vec<&String> = (lines.iter())
        .filter(|l| l.contains("Number/default/n: reconciled again"))
        .collect();
    assert_eq!(told.len(), 1, "its recovery told once: {lines:#?}");
    assert!(
        told[0].contains(recovered) && told[0].contains(" INFO "),
        "{told:#?}"
    );
}

fn successful_status_writes(h: &Harness, resource: &str) -> usize {
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

/// A kube-apiserver restart in the middle of a Fermat 1000 (issue 17): the server is away
/// 3 s and comes back without its watch history, as a real one does (every watch resuming
/// from an old resourceVersion is answered 410 Expired), answering custom resources 503
/// with `Retry-After: 5` for a moment. The manager relists, converges with each child created
/// once and one status per Number and per Tuple (no "waiting" status because a watch was
/// catching up), and says what happened in a few lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_mid_fermat_relists_and_converges_with_the_minimum_writes() {
    let h = Harness::without_manager().await;
    let manager = Manager::start(&h);
    h.server.set_latency(
        RequestFilter::new().verb(Verb::Create),
        Duration::from_millis(5),
    );
    let f = h.create_fermat("f", 1000).await;
    let building = tokio::time::Instant::now();
    while stored_names(&h, "numbers").len() < 100 {
        assert!(
            building.elapsed() < Duration::from_secs(60),
            "the Fermat never started building"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = manager.lines().len();
    h.server.restart_with(test_apiserver::Restart {
        downtime: Duration::from_secs(3),
        custom_resources_unavailable: Duration::from_millis(300),
    });
    wait_for(&h.fermats(), "f", fermat_ready).await;

    let (tuples, numbers) = desired_children(&f);
    assert_eq!(stored_names(&h, "tuples"), tuples);
    assert_eq!(stored_names(&h, "numbers"), numbers);
    for (resource, names) in [("tuples", &tuples), ("numbers", &numbers)] {
        assert_eq!(successful_creates(&h, resource), names.len(), "{resource}");
    }
    assert_eq!(successful_status_writes(&h, "numbers"), 1000);
    // One status per Tuple, exactly: before issue 17 every Tuple caught by the relist wrote a
    // waiting status; after issue 39's new runner, a Tuple whose run was let in before its own
    // status echo came and started after it (a loaded machine) wrote its answer a second time
    // (3 of 5 runs: 501-502), until runs read the cache when they start.
    let tuple_statuses = successful_status_writes(&h, "tuples");
    assert_eq!(
        tuple_statuses, 500,
        "{tuple_statuses} Tuple status writes for 500 Tuples: a Tuple wrote a second status (a waiting one, or its answer again)"
    );
    let lines = manager.stop().await;
    let during = &lines[before..];
    let about_the_outage: Vec<&String> = during
        .iter()
        .filter(|l| {
            ["unreachable", "reachable again", "watching", "listing"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    assert!(
        about_the_outage.len() <= 10,
        "{} lines about the outage: {about_the_outage:#?}",
        about_the_outage.len()
    );
    assert!(
        during.iter().any(|l| l.contains("reachable again")),
        "{about_the_outage:#?}"
    );
    assert!(loud(during).len() <= 3, "{:#?}", loud(during));
}

/// One request that times out is not an outage (issue 48, N5): the API server answers every
/// other request. A status write of one Number is held longer than `--api-read-timeout`; the
/// other Number converges, the log says no outage began (which put every reconcile off until
/// `GET /version` answered), and the slow one converges once its writes are answered in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_read_timeout_is_not_an_outage() {
    let h = Harness::without_manager().await;
    let manager = Manager::start_with(&h, &["--api-read-timeout=2s"]);
    let slow_status = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("numbers")
        .subresource("status")
        .name("slow");
    h.server
        .set_latency(slow_status.clone(), Duration::from_secs(4));
    h.create_number("slow", 4).await;
    h.create_number("fast", 9).await;
    wait_for(&h.numbers(), "fast", number_ready).await;
    // The slow one's write has timed out at least once by now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    h.server.set_latency(slow_status, Duration::ZERO);
    wait_for(&h.numbers(), "slow", number_ready).await;
    let lines = manager.stop().await;
    let outage: Vec<&String> = (lines.iter())
        .filter(|l| l.contains("unreachable"))
        .collect();
    assert!(outage.is_empty(), "no outage: {outage:#?}");
    let timed_out: Vec<&String> = (lines.iter())
        .filter(|l| l.contains("Number default/slow") && l.contains("reconcile failed"))
        .collect();
    assert!(
        !timed_out.is_empty(),
        "the slow write's failure is the object's: {lines:#?}"
    );
}
