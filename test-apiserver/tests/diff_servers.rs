//! The diff tool (`hack/diff-servers`, the `diff-servers` binary): replayed against two test
//! servers it finds no difference when they behave alike, and reports the status code and
//! reason where one of them was made to answer differently, exiting 1.

use test_apiserver::diff::{self, StepReport};
use test_apiserver::{RequestFilter, TestServer, Verb};

const RECORDING: &str = include_str!("../diff/recording.yaml");

fn differing(reports: &[StepReport]) -> Vec<(&str, &[String])> {
    reports
        .iter()
        .filter(|r| !r.differences.is_empty())
        .map(|r| (r.name.as_str(), r.differences.as_slice()))
        .collect()
}

#[tokio::test]
async fn two_alike_servers_answer_alike() {
    let (a, b) = (
        TestServer::start().await.unwrap(),
        TestServer::start().await.unwrap(),
    );
    let steps = diff::parse_recording(RECORDING).unwrap();
    let reports = diff::replay(&a.client(), &b.client(), &steps, "t1")
        .await
        .unwrap();
    assert_eq!(reports.len(), steps.len());
    assert_eq!(differing(&reports), vec![]);
}

#[tokio::test]
async fn a_server_that_answers_differently_is_found() {
    let (a, b) = (
        TestServer::start().await.unwrap(),
        TestServer::start().await.unwrap(),
    );
    // The right server refuses the first ConfigMap create with a 500, as a failing
    // apiserver would; everything after it then differs where the ConfigMap is missing.
    b.fail_next(
        RequestFilter::new()
            .verb(Verb::Create)
            .resource("configmaps"),
        1,
        500,
    );
    let steps = diff::parse_recording(RECORDING).unwrap();
    let reports = diff::replay(&a.client(), &b.client(), &steps, "t2")
        .await
        .unwrap();
    let found = differing(&reports);
    let (name, first) = found.first().expect("a difference");
    assert_eq!(*name, "create a ConfigMap");
    assert_eq!(first[0], "status code: 201 vs 500");
    assert_eq!(first[1], "reason: - vs InternalError");
}

/// The binary, as `hack/diff-servers` runs it: exit status 1 and the differing step printed.
#[tokio::test]
async fn the_binary_prints_differences_and_exits_1() {
    let (a, b) = (
        TestServer::start().await.unwrap(),
        TestServer::start().await.unwrap(),
    );
    // A 500, not a 503: kube's client retries a 503 (as client-go does), so one 503 would
    // never reach the tool.
    b.fail_next(
        RequestFilter::new().verb(Verb::Get).resource("configmaps"),
        1,
        500,
    );
    let recording = concat!(env!("CARGO_MANIFEST_DIR"), "/diff/recording.yaml");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_diff-servers"))
        .args(["--recording", recording, "--left"])
        .arg(a.kubeconfig_path())
        .arg("--right")
        .arg(b.kubeconfig_path())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("✗ get one that does not exist (NotFound)")
            && stdout.contains("    status code: 404 vs 500"),
        "{stdout}"
    );
    let steps = diff::parse_recording(RECORDING).unwrap().len();
    assert!(
        stdout.contains(&format!("diff-servers: {steps} steps, 1 differ")),
        "{stdout}"
    );
}
