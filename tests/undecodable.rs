//! One object the manager's types cannot decode (issue 48, item 1): a Number stored while its
//! CRD said `value: {type: number}` (`spec.value: 1.5`), then the strict CRD installed again,
//! as `make install` after an older checkout or `make workshop-install` leaves a cluster. The
//! API server keeps serving it as it was stored; the manager's `i64` cannot hold it. Before,
//! the whole list of Numbers failed to decode, no controller ever started, and the log said so
//! about twelve times a second without naming the object. Now every other object converges,
//! and the bad one is named once: in the log, in a Warning Event on it, in
//! `math_controller_undecodable_objects{kind}`, and in its parent's Ready condition.

mod common;

use std::time::Duration;

use common::binary::{Manager, loud};
use common::*;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use math_controller::api::Number;
use serde_json::json;
use test_apiserver::Verb;

const GAUGE: &str = r#"math_controller_undecodable_objects{kind="Number"}"#;

/// The Number CRD of `crds/` with `spec.value` loosened to any JSON number.
fn loose_number_crd() -> String {
    let file = crd_files()
        .into_iter()
        .find(|f| f.to_string_lossy().contains("numbers"))
        .expect("crds/ has the Number CRD");
    let strict = std::fs::read_to_string(file).expect("the Number CRD is readable");
    let loose = strict.replace(
        "                format: int64\n                type: integer",
        "                type: number",
    );
    assert_ne!(loose, strict, "the Number CRD's spec.value is an int64");
    loose
}

fn dynamic_numbers(h: &Harness) -> Api<DynamicObject> {
    Api::default_namespaced_with(h.client.clone(), &ApiResource::erase::<Number>(&()))
}

/// Store the Numbers `names` with `spec.value: 1.5` under the loose CRD, then install the
/// strict CRDs of `crds/` again.
async fn store_undecodable(h: &Harness, names: &[&str]) {
    h.server
        .apply_crd_yaml(&loose_number_crd())
        .expect("the loose CRD installs");
    for name in names {
        let mut number = DynamicObject::new(name, &ApiResource::erase::<Number>(&()));
        number.data = json!({ "spec": { "value": 1.5 } });
        dynamic_numbers(h)
            .create(&PostParams::default(), &number)
            .await
            .expect("a Number of 1.5 under the loose CRD");
    }
    for file in crd_files() {
        let yaml = std::fs::read_to_string(&file).expect("crds/ is readable");
        h.server
            .apply_crd_yaml(&yaml)
            .expect("the strict CRDs install");
    }
}

/// The Warning Events stored about object `name` with `reason`.
fn warnings(h: &Harness, name: &str, reason: &str) -> Vec<serde_json::Value> {
    h.server
        .objects("events.k8s.io", "events", Some("default"))
        .into_iter()
        .filter(|e| {
            e.pointer("/regarding/name").and_then(|n| n.as_str()) == Some(name)
                && e.get("reason").and_then(|r| r.as_str()) == Some(reason)
                && e.get("type").and_then(|r| r.as_str()) == Some("Warning")
        })
        .collect()
}

/// The real binary beside an undecodable Number: a Fermat 13 becomes Ready, and the log names
/// the bad object once (kind, namespace, name, the field and serde's words), however long it
/// runs. Before: the Fermat was never Ready, and the log held a line per failed list, about
/// twelve a second, none naming the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fermat_converges_beside_an_undecodable_number_named_once() {
    let h = Harness::without_manager().await;
    store_undecodable(&h, &["loose"]).await;
    let manager = Manager::start(&h);
    h.create_fermat("f", 13).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    // Long enough for a retrying watch to have said it again several times.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let lines = manager.stop().await;
    let naming: Vec<&String> = lines.iter().filter(|l| l.contains("loose")).collect();
    assert_eq!(naming.len(), 1, "named once: {naming:#?}");
    for words in ["Number", "default/loose", "spec.value", "1.5", "i64"] {
        assert!(naming[0].contains(words), "{words:?} in {:?}", naming[0]);
    }
    let loud = loud(&lines);
    assert!(loud.len() <= 2, "a few warnings at most: {loud:#?}");
}

/// In the manager: the undecodable Number is counted by the gauge and warned about once in an
/// Event on it, while another Number converges; once fixed (a patch the strict CRD takes) it
/// is read again and reconciled, and the gauge falls; one deleted leaves the gauge too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_number_is_counted_warned_once_and_read_again_when_it_changes() {
    let mut h = Harness::without_manager().await;
    store_undecodable(&h, &["loose", "doomed"]).await;
    let metrics = h.start_manager_observed(Default::default());
    h.create_number("fine", 4).await;
    wait_for(&h.numbers(), "fine", number_ready).await;
    let counted = eventually_within(CONVERGE, "the gauge counts two", || {
        (sample(&metrics.encode(), GAUGE) == Some(2.0)).then_some(())
    })
    .await;
    assert!(counted.is_ok(), "{}", metrics.encode());
    let warned = eventually_within(CONVERGE, "a Warning Event on loose", || {
        let said = warnings(&h, "loose", "Undecodable");
        (!said.is_empty()).then_some(said)
    })
    .await
    .expect("a Warning Event on the undecodable Number");
    let note = warned[0]["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("spec.value") && note.contains("1.5"),
        "{note}"
    );

    // Fixed: a merge patch with an integer, which the strict CRD accepts.
    dynamic_numbers(&h)
        .patch(
            "loose",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "value": 9 } })),
        )
        .await
        .expect("the fix is accepted");
    let fixed = wait_for(&h.numbers(), "loose", number_ready).await;
    assert_eq!(fixed.status.as_ref().and_then(|s| s.is_square), Some(true));
    // Deleted: nothing is left to count.
    dynamic_numbers(&h)
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("the other one is deleted");
    let forgotten = eventually_within(CONVERGE, "the gauge falls to 0", || {
        (sample(&metrics.encode(), GAUGE) == Some(0.0)).then_some(())
    })
    .await;
    assert!(forgotten.is_ok(), "{}", metrics.encode());
    assert_eq!(warnings(&h, "loose", "Undecodable").len(), 1, "warned once");
    h.stop_manager().await;
}

/// A Tuple whose child cannot be read says so in its Ready condition, naming the child and
/// the field, and does not try to create it again (the name is taken: every create would
/// answer 409); its other child converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_whose_child_cannot_be_read_says_so_instead_of_recreating_it() {
    let mut h = Harness::without_manager().await;
    store_undecodable(&h, &["t-1"]).await;
    h.start_manager();
    h.create_tuple("t", vec![4, 9]).await;
    let t = wait_for(&h.tuples(), "t", |t| {
        t.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.reason == "ChildUndecodable")
        })
    })
    .await;
    let ready = t
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .expect("a Ready condition");
    assert_eq!(ready.status, "False");
    for words in ["Number t-1", "spec.value", "1.5"] {
        assert!(
            ready.message.contains(words),
            "{words:?} in {:?}",
            ready.message
        );
    }
    wait_for(&h.numbers(), "t-0", number_ready).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A create of the taken name would be answered 409 AlreadyExists.
    let refused_creates = (h.server.requests().iter())
        .filter(|r| r.verb == Verb::Create && r.resource == "numbers" && r.status == 409)
        .count();
    assert_eq!(
        refused_creates, 0,
        "the undecodable child is not created again"
    );
    h.stop_manager().await;
}
