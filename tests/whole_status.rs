//! The manager's status writes (issue 39). A whole status every time (F1): a status write
//! decided on a status older than the server's (an answer on its way back while the spec
//! changed) must not leave an answer of the old spec under the new `observedGeneration`.
//! Whatever anyone watching a Tuple sees, its `allSquares` belongs to the spec of the
//! generation it names. And no reconcile for the manager's own echo: a status the manager
//! wrote, coming back through the watch, does not reconcile its object again.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use math_controller::api::Tuple;
use math_controller::metrics::Metrics;
use math_controller::ops::manager::Options;
use serde_json::json;
use test_apiserver::{RequestFilter, Verb};

const TUPLES: u64 = 30;

/// The spec of each generation of every Tuple in the test, and so its answer.
const SPECS: [(i64, [i64; 2], bool); 3] =
    [(1, [4, 9], true), (2, [4, 16], true), (3, [4, 5], false)];

/// The `allSquares` that generation `generation` produces.
fn answer_of(generation: i64) -> Option<bool> {
    SPECS
        .iter()
        .find(|(g, _, _)| *g == generation)
        .map(|(_, _, answer)| *answer)
}

/// What a watcher of the Tuples saw that no spec of its `observedGeneration` produced.
fn wrong_answers(seen: &[Tuple]) -> Vec<String> {
    seen.iter()
        .filter_map(|t| {
            let status = t.status.as_ref()?;
            let (generation, shown) = (status.observed_generation?, status.all_squares?);
            (answer_of(generation) != Some(shown)).then(|| {
                format!(
                    "{} at generation {:?}: observedGeneration {generation} with allSquares {shown}, ready {:?}",
                    t.metadata.name.as_deref().unwrap_or_default(),
                    t.metadata.generation,
                    status.conditions.first().map(|c| (&c.status, &c.reason)),
                )
            })
        })
        .collect()
}

/// Every Tuple answers generation 1, then its spec changes twice, the second time while the
/// answer for the first change is on its way (status writes take 500 ms, the changes come at
/// staggered moments). Every status a watcher sees carries the answer of its own generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_status_shows_an_answer_of_another_spec() {
    let h = Harness::start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watching = tokio::spawn({
        let (tuples, seen) = (h.tuples(), seen.clone());
        async move {
            let mut events = watcher::watcher(tuples, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                if let Ok(Event::Apply(t) | Event::InitApply(t)) = event
                    && let Ok(mut seen) = seen.lock()
                {
                    seen.push(t);
                }
            }
        }
    });
    let names: Vec<String> = (0..TUPLES).map(|i| format!("t{i}")).collect();
    for name in &names {
        h.create_tuple(name, SPECS[0].1.to_vec()).await;
    }
    for name in &names {
        wait_for(&h.tuples(), name, tuple_ready).await;
    }
    h.server.set_latency(
        RequestFilter::new()
            .verb(Verb::Patch)
            .resource("tuples")
            .subresource("status"),
        Duration::from_millis(500),
    );
    let changes = names.iter().zip(0u64..).map(|(name, i)| {
        let tuples = h.tuples();
        async move {
            let spec = |numbers: [i64; 2]| Patch::Merge(json!({ "spec": { "numbers": numbers } }));
            let params = PatchParams::default();
            tuples.patch(name, &params, &spec(SPECS[1].1)).await?;
            tokio::time::sleep(Duration::from_millis(400 + i * 700 / TUPLES)).await;
            tuples.patch(name, &params, &spec(SPECS[2].1)).await
        }
    });
    for changed in futures::future::join_all(changes).await {
        changed.expect("the spec changes");
    }
    for name in &names {
        let answered = |t: &Tuple| {
            tuple_ready(t) && t.status.as_ref().and_then(|s| s.all_squares) == Some(SPECS[2].2)
        };
        wait_for(&h.tuples(), name, answered).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    watching.abort();
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let wrong = wrong_answers(&seen);
    assert!(wrong.is_empty(), "{} wrong: {wrong:#?}", wrong.len());
}

/// The Fermat's reconciles so far, whatever their result.
fn fermat_reconciles(metrics: &Metrics) -> f64 {
    let series = r#"controller_runtime_reconcile_total{controller="fermat","#;
    metrics
        .encode()
        .lines()
        .filter(|l| l.starts_with(series))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Someone else edits a settled Fermat's status: one reconcile puts it right with one write,
/// and that write's echo reconciles nothing (before: a second reconcile for the echo, which
/// for a Fermat 10000 is a plan over 5000 Tuples after each of its status writes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_own_status_write_does_not_reconcile_its_object_again() {
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(Options::default());
    h.create_fermat("f", 5).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = fermat_reconciles(&metrics);
    h.server.reset_requests();
    let wrong = Patch::Merge(json!({ "status": { "isPrime": false } }));
    h.fermats()
        .patch_status("f", &PatchParams::default(), &wrong)
        .await
        .expect("someone edits the status");
    let right =
        |f: &math_controller::api::Fermat| f.status.as_ref().and_then(|s| s.is_prime) == Some(true);
    wait_for(&h.fermats(), "f", right).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let status_writes = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("fermats")
        .subresource("status");
    assert_eq!(h.server.count(&status_writes), 2, "the edit and the fix");
    assert_eq!(
        fermat_reconciles(&metrics) - before,
        1.0,
        "{}",
        metrics.encode()
    );
    h.stop_manager().await;
}
