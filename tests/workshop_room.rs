//! The finished manager on a room's shared cluster (issue 29): where the workshop's
//! participants run their own controllers, the manager does not watch every namespace (it
//! would adopt and rewrite their objects while their runners fight back); in a namespace of
//! its own it works, and never writes a participant's object. A room's cluster is the one whose
//! CRDs `make workshop-room` installed (marked `math.example.com/workshop-room`); on a learner's
//! own cluster the manager takes the workshop's objects over (`workshop/tests/takeover.rs`).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use math_controller::api::{Number, NumberSpec};
use math_controller::ops::workshop;
use serde_json::json;
use test_apiserver::TestServer;

const ALICE: &str = "math-workshop-alice";
const DEMO: &str = "math-demo";

/// A namespace, as kubectl would create it.
async fn namespace(server: &TestServer, name: &str) -> Result<()> {
    let api = Api::<k8s_openapi::api::core::v1::Namespace>::all(server.client());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    api.create(&PostParams::default(), &ns).await?;
    Ok(())
}

/// The room's mark that `make workshop-room` puts on the CRDs it installs.
async fn mark_a_room(server: &TestServer) -> Result<()> {
    let crds = Api::<CustomResourceDefinition>::all(server.client());
    let mark = json!({"metadata": {"annotations": {workshop::ROOM_MARK: "true"}}});
    crds.patch(
        "numbers.math.example.com",
        &PatchParams::default(),
        &Patch::Merge(&mark),
    )
    .await?;
    Ok(())
}

/// A Number in alice's namespace whose status her runner wrote (signed as hers).
async fn alices_number(server: &TestServer) -> Result<DynamicObject> {
    namespace(server, ALICE).await?;
    let numbers = Api::<Number>::namespaced(server.client(), ALICE);
    let apply = PatchParams::apply("math-workshop-alice").force();
    let number = json!({
        "apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "metadata": {"name": "number-sample"}, "spec": {"value": 15}
    });
    numbers
        .patch("number-sample", &apply, &Patch::Apply(&number))
        .await?;
    let status = json!({
        "apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "status": {"observedGeneration": 1, "fizzBuzz": "FizzBuzz", "isSquare": false, "isPrime": false}
    });
    numbers
        .patch_status("number-sample", &apply, &Patch::Apply(&status))
        .await?;
    let dynamic = Api::<DynamicObject>::namespaced_with(
        server.client(),
        ALICE,
        &kube::api::ApiResource::erase::<Number>(&()),
    );
    Ok(dynamic.get("number-sample").await?)
}

/// The manager binary against the server, probes and metrics off.
fn manager(server: &TestServer, more: &[&str]) -> Result<std::process::Child> {
    Ok(Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args(["--metrics-bind-address=0", "--health-probe-bind-address=0"])
        .args(more)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// Every successful write to alice's namespace so far.
fn writes_to_alice(server: &TestServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_write() && r.status < 400)
        .filter(|r| r.namespace.as_deref() == Some(ALICE))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_finished_manager_never_rewrites_a_participants_object() -> Result<()> {
    let server = server().await?;
    mark_a_room(&server).await?;
    let before = alices_number(&server).await?;
    server.reset_requests();

    // The organiser's `cargo run`, every namespace: refused in one line, nothing written.
    let mut all = manager(&server, &[])?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = all.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = all.kill();
            bail!(
                "the manager watches every namespace and wrote {:?}",
                writes_to_alice(&server)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(all.stderr.as_mut().context("stderr is piped")?, &mut stderr)?;
    ensure!(!status.success(), "the manager refused: {stderr}");
    ensure!(
        stderr.contains(
            "not watching every namespace: the workshop's controllers look after objects in 1 namespace \
             (math-workshop-alice: 1). This cluster is a room's (make workshop-room installed its CRDs): \
             run the manager in a namespace of its own (`--namespace <name>`)"
        ),
        "{stderr}"
    );

    // In a namespace of its own (the organiser's plan): it works there, and only there.
    namespace(&server, DEMO).await?;
    let mut demo = manager(&server, &["--namespace", DEMO])?;
    let numbers = Api::<Number>::namespaced(server.client(), DEMO);
    numbers
        .create(
            &PostParams::default(),
            &Number::new("number-sample", NumberSpec { value: 9 }),
        )
        .await?;
    let deadline = Instant::now() + CONVERGE;
    let ready = loop {
        let number = numbers.get_opt("number-sample").await?;
        if number.and_then(|n| n.status).and_then(|s| s.is_square) == Some(true) {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = demo.kill();
    let _ = demo.wait();
    ensure!(ready, "the demo's Number got its status in {CONVERGE:?}");
    let writes = writes_to_alice(&server);
    ensure!(
        writes.is_empty(),
        "the manager wrote to alice's: {writes:?}"
    );
    let dynamic = Api::<DynamicObject>::namespaced_with(
        server.client(),
        ALICE,
        &kube::api::ApiResource::erase::<Number>(&()),
    );
    let after = dynamic.get("number-sample").await?;
    ensure!(
        after.metadata.resource_version == before.metadata.resource_version,
        "alice's Number is as her runner left it"
    );
    Ok(())
}
