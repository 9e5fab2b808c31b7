//! Whose controller writes a status, as a participant's runner tells it when it finds another
//! controller at work in its namespace: the one whose write is the newest by the managedFields'
//! times. Not the last entry of the list: kube-apiserver (and the test API server) list the
//! `Apply` entries before the `Update` ones whatever their times, so a controller that applies
//! its status (as the reference solutions do, kube-rs's `Patch::Apply` on `/status`) sits
//! before one that merge-patched it earlier and still owns a field of it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use math_workshop::solutions::number::Number;
use math_workshop::{crds, solutions};
use serde_json::{Value, json};
use test_apiserver::TestServer;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `kubectl ARGS` against the server, from the repository (for `samples/`); its stdout, after
/// asserting that it succeeded.
fn kubectl(server: &TestServer, args: &[&str]) -> String {
    let output = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", server.kubeconfig_path())
        .current_dir(repository())
        .output()
        .expect("kubectl runs");
    assert!(output.status.success(), "{}", said(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `number-sample` (value 15) in `default`, its status merge-patched by `manager`'s controller
/// (an `Update` entry of the status), as a controller that writes it with `Patch::Merge` does.
fn number_merge_patched_by(server: &TestServer, manager: &str) {
    kubectl(
        server,
        &["apply", "-n", "default", "-f", "samples/number.yaml"],
    );
    kubectl(
        server,
        &[
            "patch",
            "-n",
            "default",
            "number",
            "number-sample",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1,"fizzBuzz":"FizzBuzz","isSquare":false,"isPrime":false}}"#,
            &format!("--field-manager={manager}"),
        ],
    );
}

/// The learner changes the value to 9; a second later (managedFields' times are to the second)
/// `manager`'s controller applies the new status as the reference solution does (server-side
/// apply, forced). `isPrime` keeps its value, so the earlier writer still co-owns it and its
/// `Update` entry stays, listed after this `Apply` one.
async fn value_changed_and_status_applied_by(server: &TestServer, manager: &str) {
    kubectl(
        server,
        &[
            "patch",
            "-n",
            "default",
            "number",
            "number-sample",
            "--type=merge",
            "-p",
            r#"{"spec":{"value":9}}"#,
        ],
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let numbers = Api::<Number>::namespaced(server.client(), "default");
    let status = json!({
        "apiVersion": "math.example.com/v1beta1",
        "kind": "Number",
        "status": {"observedGeneration": 2, "fizzBuzz": "Fizz", "isSquare": true, "isPrime": false}
    });
    numbers
        .patch_status(
            "number-sample",
            &PatchParams::apply(manager).force(),
            &Patch::Apply(status),
        )
        .await
        .expect("the status applies");
}

/// The status entries of `number-sample`'s managedFields, in the server's order:
/// `(manager, operation)`.
fn status_entries(server: &TestServer) -> Vec<(String, String)> {
    let json = kubectl(
        server,
        &[
            "get",
            "number",
            "number-sample",
            "-n",
            "default",
            "--show-managed-fields",
            "-o",
            "json",
        ],
    );
    let object: Value = serde_json::from_str(&json).expect("kubectl prints JSON");
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["subresource"] == "status")
        .map(|e| {
            let text = |key: &str| e[key].as_str().unwrap_or_default().to_string();
            (text("manager"), text("operation"))
        })
        .collect()
}

/// alice's runner (stage 1, reference solution) in `default`: what it prints on stderr when it
/// ends within 20 s, with its exit code; a runner still running after that is a failure.
async fn alices_runner(server: &TestServer) -> (Option<i32>, String) {
    let runner = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .args([
            "run",
            "--stage",
            "1",
            "--solution",
            "--participant",
            "alice",
        ])
        .args(["--namespace", "default"])
        .env("KUBECONFIG", server.kubeconfig_path())
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the runner starts");
    let output = tokio::time::timeout(Duration::from_secs(20), runner.wait_with_output())
        .await
        .expect("the runner leaves the Number alone and ends, rather than running beside it")
        .expect("the runner ends");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// bob's controller merge-patched the status, then carol's applied a newer one: carol's is the
/// controller at work, and the one alice is told to go and see.
#[tokio::test(flavor = "multi_thread")]
async fn the_runner_names_the_controller_that_wrote_the_status_last() {
    let server = crds::on_a_test_server(&solutions::track())
        .await
        .expect("a test API server with the workshop's CRDs");
    number_merge_patched_by(&server, "math-workshop-bob");
    value_changed_and_status_applied_by(&server, "math-workshop-carol").await;
    assert_eq!(
        status_entries(&server),
        [
            ("math-workshop-carol".to_string(), "Apply".to_string()),
            ("math-workshop-bob".to_string(), "Update".to_string()),
        ],
        "the newest writer is listed first"
    );
    let (code, stderr) = alices_runner(&server).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(
        stderr.contains(
            "namespace default: another controller (math-workshop-carol) looks after 1 of its \
             objects: Number/number-sample. Your controllers leave them alone and do not start"
        ),
        "{stderr}"
    );
    server.shutdown().await;
}

/// alice's own controller merge-patched the status once (an older exercise of hers), then bob's
/// applied a newer one: bob's controller is at work in alice's namespace, and alice's runner
/// does not start beside it to fight over the status.
#[tokio::test(flavor = "multi_thread")]
async fn the_runner_does_not_start_beside_a_controller_that_wrote_after_its_own() {
    let server = crds::on_a_test_server(&solutions::track())
        .await
        .expect("a test API server with the workshop's CRDs");
    number_merge_patched_by(&server, "math-workshop-alice");
    value_changed_and_status_applied_by(&server, "math-workshop-bob").await;
    assert_eq!(
        status_entries(&server),
        [
            ("math-workshop-bob".to_string(), "Apply".to_string()),
            ("math-workshop-alice".to_string(), "Update".to_string()),
        ],
        "alice's older write is listed last"
    );
    server.reset_requests();
    let (code, stderr) = alices_runner(&server).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "namespace default: another controller (math-workshop-bob) looks after 1 of its \
             objects: Number/number-sample. Your controllers leave them alone and do not start"
        ),
        "{stderr}"
    );
    let writes: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_write())
        .map(|r| format!("{} {} by {}", r.method, r.path, r.field_manager))
        .collect();
    assert!(writes.is_empty(), "nothing written: {writes:?}");
    server.shutdown().await;
}
