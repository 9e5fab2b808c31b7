//! A room that shares one cluster (the test API server, started on its own as an organiser
//! would start it with `cargo run --profile workshop -p test-apiserver -- --crds crds/`, stands in for it):
//! participants' `--cluster` checks run side by side, each in a namespace of its own, and
//! neither touches what is not theirs; CRDs that others use are not replaced unless forced;
//! a namespace that is not a participant's is left alone; and a cluster that is not there is
//! said in one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use math_workshop::crds;
use math_workshop::solutions;
use serde_json::Value;
use test_apiserver::{RequestFilter, TestServer, Verb};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The test API server with the finished manager's CRDs installed (`--crds crds/`).
async fn cluster_with_the_managers_crds() -> TestServer {
    let server = TestServer::start()
        .await
        .expect("the test API server starts");
    let dir = repository().join("crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("crds/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let yaml = std::fs::read_to_string(&file).expect("a CRD file");
        server
            .apply_crd_yaml(&yaml)
            .expect("the manager's CRD installs");
    }
    server
}

/// `kubectl ARGS` against the server, from the repository (for `samples/`).
fn kubectl(server: &TestServer, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", server.kubeconfig_path())
        .current_dir(repository())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        input
            .write_all(text.as_bytes())
            .expect("kubectl reads stdin");
    }
    child.wait_with_output().expect("kubectl ends")
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A bystander, carol, with objects of her own in her namespace: a Tuple and its Numbers
/// (written here by kubectl, as if her controllers had done it).
fn carols_objects(server: &TestServer) {
    ok(kubectl(server, &["create", "namespace", "carol"], None));
    ok(kubectl(
        server,
        &["apply", "-n", "carol", "-f", "samples/tuple.yaml"],
        None,
    ));
    ok(kubectl(
        server,
        &["apply", "-n", "carol", "-f", "samples/number.yaml"],
        None,
    ));
}

/// Every object in carol's namespace: (kind, name) → (uid, resourceVersion).
fn carols_state(server: &TestServer) -> Vec<(String, String, String)> {
    let json = ok(kubectl(
        server,
        &["get", "numbers,tuples", "-n", "carol", "-o", "json"],
        None,
    ));
    let list: Value = serde_json::from_str(&json).expect("kubectl prints JSON");
    let mut state: Vec<(String, String, String)> = list["items"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|o| {
            (
                format!("{}/{}", o["kind"], o["metadata"]["name"]),
                o["metadata"]["uid"].to_string(),
                o["metadata"]["resourceVersion"].to_string(),
            )
        })
        .collect();
    state.sort();
    state
}

/// `math-workshop check N --cluster --solution --participant P [more]` against the server.
fn check(
    server: &TestServer,
    stage: u8,
    participant: &str,
    more: &[&str],
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.env("LC_ALL", "C.UTF-8")
        .args([
            "check",
            &stage.to_string(),
            "--cluster",
            "--solution",
            "--participant",
            participant,
        ])
        .args(more)
        .env("KUBECONFIG", server.kubeconfig_path())
        .env_remove("RUST_LOG");
    cmd
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn two_participants_check_at_once_on_one_cluster_and_touch_nothing_else() {
    let server = cluster_with_the_managers_crds().await;
    // The organiser installed the workshop's CRDs once; carol works with them.
    server
        .apply_crd_yaml(&crds::yaml(&solutions::track()).expect("the CRDs generate"))
        .expect("the workshop's CRDs install");
    carols_objects(&server);
    let before = carols_state(&server);
    server.reset_requests();

    // At once: both run while the other's objects come and go.
    let (alice, bob) = tokio::join!(
        check(&server, 3, "alice", &[]).output(),
        check(&server, 3, "bob", &[]).output()
    );
    let (alice, bob) = (
        alice.expect("alice's check runs"),
        bob.expect("bob's check runs"),
    );
    for (who, output) in [("alice", &alice), ("bob", &bob)] {
        let text = said(output);
        assert_eq!(output.status.code(), Some(0), "{who}'s check:\n{text}");
        assert!(
            text.contains(&format!(
                "namespace math-workshop-check-{who} (participant {who})"
            )),
            "{text}"
        );
        assert!(!text.contains('✗'), "{text}");
    }

    // Carol's objects are as she left them, and nobody wrote outside the two check
    // namespaces (the CRDs were the same: nothing to write there either).
    assert_eq!(carols_state(&server), before);
    let ours = ["math-workshop-check-alice", "math-workshop-check-bob"];
    let strays: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_write() && r.status < 400)
        .filter(|r| {
            let ns = r.namespace.as_deref().or(match r.resource.as_str() {
                // A namespace's delete names it as the object; its create (a POST to the
                // collection) names it in the body: counted below.
                "namespaces" if r.verb == Verb::Create => Some(ours[0]),
                "namespaces" => r.name.as_deref(),
                _ => None,
            });
            !ns.is_some_and(|ns| ours.contains(&ns))
        })
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        strays.is_empty(),
        "writes outside the check namespaces: {strays:?}"
    );
    assert_eq!(
        server.count(
            &RequestFilter::new()
                .verb(Verb::Create)
                .resource("namespaces")
        ),
        2,
        "each check created its namespace"
    );
    for who in ["alice", "bob"] {
        let name = format!("math-workshop-check-{who}");
        let args = [
            "get",
            "namespace",
            &name,
            "-o",
            "json",
            "--ignore-not-found",
        ];
        let json = ok(kubectl(&server, &args, None));
        // Gone already, or going, and marked as the participant's.
        if !json.trim().is_empty() {
            let ns: Value = serde_json::from_str(&json).expect("JSON");
            let owner = &ns["metadata"]["annotations"]["math.example.com/workshop-participant"];
            assert_eq!(owner, who, "{ns}");
            assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
        }
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crds_that_others_use_are_not_replaced_unless_forced() {
    let server = cluster_with_the_managers_crds().await;
    // Carol's Numbers use the finished manager's CRDs.
    carols_objects(&server);
    let crd = |server: &TestServer| {
        let json = ok(kubectl(
            server,
            &["get", "crd", "numbers.math.example.com", "-o", "json"],
            None,
        ));
        serde_json::from_str::<Value>(&json).expect("JSON")
    };
    let managers = crd(&server);

    let refused = check(&server, 1, "dave", &[])
        .output()
        .await
        .expect("the check runs");
    let text = said(&refused);
    assert_eq!(refused.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "refusing to install your CRDs: the CRD numbers.math.example.com in the cluster differs from yours \
             (it was not installed by math-workshop: the finished manager's, from `make install`?), and 1 Number \
             in 1 other namespace uses it (carol: 1)"
        ) && text.contains("On a cluster of your own, add FORCE=1 (make) or --force"),
        "{text}"
    );
    assert_eq!(
        crd(&server)["metadata"]["resourceVersion"],
        managers["metadata"]["resourceVersion"],
        "the manager's CRD is untouched"
    );

    // Forced (a cluster of one's own): installed, and the check passes.
    let forced = check(&server, 1, "dave", &["--force"])
        .output()
        .await
        .expect("the check runs");
    let text = said(&forced);
    assert_eq!(forced.status.code(), Some(0), "{text}");
    assert!(
        text.contains("replacing it anyway (forced)"),
        "the check says what it replaced:\n{text}"
    );
    assert!(
        crd(&server)["metadata"]["annotations"]["math.example.com/workshop-crd-digest"].is_string(),
        "the workshop's CRD is installed"
    );

    // A namespace of that name that no check created is not taken over, nor deleted.
    ok(kubectl(
        &server,
        &["create", "namespace", "math-workshop-check-erin"],
        None,
    ));
    let taken = check(&server, 1, "erin", &[])
        .output()
        .await
        .expect("the check runs");
    let text = said(&taken);
    assert_eq!(taken.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "namespace math-workshop-check-erin exists and was not created by a check: it is left alone"
        ),
        "{text}"
    );
    ok(kubectl(
        &server,
        &["get", "namespace", "math-workshop-check-erin"],
        None,
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn no_cluster_and_a_cluster_that_is_gone_are_said_in_one_line() {
    let home = tempfile::tempdir().expect("a temporary directory");
    let none = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .args(["check", "1", "--cluster"])
        .env_remove("KUBECONFIG")
        .env("HOME", home.path())
        .output()
        .expect("math-workshop runs");
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "error: no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist): with the guide's test \
         API server, export KUBECONFIG=/tmp/math.kubeconfig in this terminal (the server writes it when it \
         starts: cargo run --profile workshop -p test-apiserver -- --port 8010 --kubeconfig \
         /tmp/math.kubeconfig, in a terminal of its own); with minikube or kind, start it (they write one); \
         or leave out CLUSTER=1 (the check then brings a test API server of its own)"
    );

    // A test API server that was stopped: its kubeconfig names a port nobody listens on.
    let server = TestServer::start()
        .await
        .expect("the test API server starts");
    let kubeconfig = home.path().join("kubeconfig");
    std::fs::copy(server.kubeconfig_path(), &kubeconfig).expect("copy the kubeconfig");
    let port = server
        .url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    server.shutdown().await;
    let gone = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .args(["run", "--stage", "1"])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("RUST_LOG")
        .output()
        .expect("math-workshop runs");
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert_eq!(gone.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "does not answer: connection refused. Is the test API server still running? Start it again \
             (cargo run --profile workshop -p test-apiserver -- --port {port} --kubeconfig {})",
            kubeconfig.display()
        )) && stderr.contains("(ARGS=--test-server)"),
        "{stderr}"
    );
}

/// The server's kubeconfig as a room's shared one usually is: its context names no namespace.
fn kubeconfig_without_namespace(server: &TestServer, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(server.kubeconfig_path()).expect("the kubeconfig");
    let path = dir.join("shared.kubeconfig");
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| line.trim() != "namespace: default")
        .collect();
    std::fs::write(&path, kept.join("\n")).expect("write the kubeconfig");
    path
}

/// `math-workshop ARGS` against a kubeconfig, stdout and stderr piped.
fn workshop(kubeconfig: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.env("LC_ALL", "C.UTF-8")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The first line a running tool prints on stdout.
async fn first_line(child: &mut tokio::process::Child) -> String {
    use tokio::io::AsyncBufReadExt;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
        .await
        .expect("a first line within a minute")
        .expect("stdout is readable");
    line.unwrap_or_default()
}

/// Polls `kubectl ARGS` until its output contains `wanted` (30 s at most); the last output.
async fn until(server: &TestServer, kubeconfig: &Path, args: &[&str], wanted: &str) -> String {
    let mut last = String::new();
    for _ in 0..150 {
        let output = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .expect("kubectl runs");
        last = said(&output);
        if last.contains(wanted) {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let _ = server;
    last
}

/// kind's kubeconfig as it comes: its context names no namespace.
fn kinds_kubeconfig(server: &TestServer, dir: &Path) -> PathBuf {
    kubeconfig_without_namespace(server, dir)
}

/// minikube's kubeconfig as it comes: its context names `default` (as the test server's does).
fn minikubes_kubeconfig(server: &TestServer, _dir: &Path) -> PathBuf {
    server.kubeconfig_path().to_path_buf()
}

/// One rule for the namespace, the same for kubectl and the tools: the context's, else
/// `default` as kubectl. The runner says so first, and a plain `kubectl apply -f samples/…`
/// (no `-n`) lands where it looks; its writes are signed with the participant's name.
async fn the_runner_and_kubectl_agree_on(kubeconfig: fn(&TestServer, &Path) -> PathBuf) {
    // The organiser installed the workshop's CRDs once.
    let server = crds::on_a_test_server(&solutions::track())
        .await
        .expect("a test API server with the workshop's CRDs");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = kubeconfig(&server, dir.path());
    let args = [
        "run",
        "--stage",
        "1",
        "--solution",
        "--participant",
        "alice",
    ];
    let mut runner = workshop(&config, &args).spawn().expect("the runner starts");
    // Who, where, and on which cluster, before anything is written.
    assert_eq!(
        first_line(&mut runner).await,
        format!(
            "participant alice, namespace default, on context test-apiserver ({}/)",
            server.url()
        )
    );
    let applied = Command::new("kubectl")
        .args(["apply", "-f", "samples/number.yaml"])
        .current_dir(repository())
        .env("KUBECONFIG", &config)
        .output()
        .expect("kubectl runs");
    assert!(applied.status.success(), "{}", said(&applied));
    let jsonpath = "jsonpath={.status.fizzBuzz}";
    let get = ["get", "number", "number-sample", "-o", jsonpath];
    let seen = until(&server, &config, &get, "FizzBuzz").await;
    assert!(
        seen.contains("FizzBuzz"),
        "alice's runner computed it: {seen}"
    );
    let status_writes: Vec<(String, String)> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_write() && r.resource == "numbers")
        .filter(|r| r.subresource.as_deref() == Some("status"))
        .map(|r| (r.field_manager, r.user_agent))
        .collect();
    assert!(!status_writes.is_empty());
    for (manager, agent) in &status_writes {
        assert_eq!(manager, "math-workshop-alice", "{status_writes:?}");
        assert!(
            agent.starts_with("math-workshop-alice/"),
            "{status_writes:?}"
        );
    }
    runner.kill().await.expect("the runner stops");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_kinds_kubeconfig_the_runner_and_kubectl_agree_on_default() {
    the_runner_and_kubectl_agree_on(kinds_kubeconfig).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_minikubes_kubeconfig_the_runner_and_kubectl_agree_on_default() {
    the_runner_and_kubectl_agree_on(minikubes_kubeconfig).await;
}

/// bob's Number in `default`, its status written by bob's runner (as `kubectl` signs it here).
fn bobs_number_in_default(server: &TestServer) {
    ok(kubectl(
        server,
        &["apply", "-n", "default", "-f", "samples/number.yaml"],
        None,
    ));
    ok(kubectl(
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
            "--field-manager=math-workshop-bob",
        ],
        None,
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_leaves_alone_what_another_participants_runner_looks_after() {
    // The organiser installed the workshop's CRDs once.
    let server = crds::on_a_test_server(&solutions::track())
        .await
        .expect("a test API server with the workshop's CRDs");
    bobs_number_in_default(&server);
    let before = ok(kubectl(
        &server,
        &[
            "get",
            "number",
            "number-sample",
            "-n",
            "default",
            "-o",
            "json",
        ],
        None,
    ));
    server.reset_requests();

    // alice in `default` too, as the test API server's kubeconfig says.
    let runner = workshop(
        &server.kubeconfig_path(),
        &[
            "run",
            "--stage",
            "1",
            "--solution",
            "--namespace",
            "default",
        ],
    )
    .spawn()
    .expect("the runner starts");
    let ended = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        runner.wait_with_output(),
    )
    .await;
    let writes: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_write())
        .map(|r| format!("{} {} by {}", r.method, r.path, r.field_manager))
        .collect();
    let output = ended
        .unwrap_or_else(|_| panic!("the runner is still running, and wrote {writes:?}"))
        .expect("the runner ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    assert_eq!(stderr.lines().count(), 1, "one line:\n{stderr}");
    assert!(
        stderr.contains(
            "namespace default: another controller (math-workshop-bob) looks after 1 of its \
             objects: Number/number-sample. Your controllers leave them alone and do not start"
        ),
        "{stderr}"
    );
    assert!(writes.is_empty(), "nothing written: {writes:?}");
    let after = ok(kubectl(
        &server,
        &[
            "get",
            "number",
            "number-sample",
            "-n",
            "default",
            "-o",
            "json",
        ],
        None,
    ));
    assert_eq!(before, after, "bob's Number is as it was");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_participants_in_default_do_not_replace_each_others_crds() {
    // bob works in `default` with the finished manager's CRDs (different from alice's types).
    let server = cluster_with_the_managers_crds().await;
    bobs_number_in_default(&server);
    let crd_version = |server: &TestServer| {
        ok(kubectl(
            server,
            &[
                "get",
                "crd",
                "numbers.math.example.com",
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ],
            None,
        ))
    };
    let before = crd_version(&server);

    let refused = workshop(&server.kubeconfig_path(), &["install", "--solution"])
        .output()
        .await
        .expect("install runs");
    let text = said(&refused);
    assert_eq!(refused.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "refusing to install your CRDs: the CRD numbers.math.example.com in the cluster differs from yours \
             (it was not installed by math-workshop: the finished manager's, from `make install`?), and in your \
             namespace default, another controller (math-workshop-bob) looks after 1 of its objects: \
             Number/number-sample"
        ),
        "{text}"
    );
    assert_eq!(crd_version(&server), before, "bob's CRD is untouched");
    server.shutdown().await;
}

/// `check 3 --cluster` of `participant`, with waits of `timeout` seconds, on a fresh test API
/// server with the workshop's CRDs whose garbage collector deletes at most `per_second` objects
/// a second, as kube-controller-manager's does under its client limit when a room deletes at
/// once; the check's output and all it said.
async fn check_beside_a_slow_garbage_collector(
    per_second: u32,
    participant: &str,
    timeout: &str,
) -> (Output, String) {
    let server = crds::on_a_test_server(&solutions::track())
        .await
        .expect("a test API server with the workshop's CRDs");
    server.set_gc_rate(per_second);
    let checked = check(&server, 3, participant, &["--timeout", timeout])
        .output()
        .await
        .expect("the check runs");
    let text = said(&checked);
    (checked, text)
}

/// On a busy shared cluster the garbage collector is slow (kube-controller-manager's client
/// sends about 20 requests a second, for the whole room): a room of thirty on a real v1.24 saw
/// every check fail with "Fermat fermat-sample still exists after 30 s" in the foreground
/// deletion, whose hint blamed the participant's code. The check waits as long as the
/// collector makes progress: here it deletes five objects a second, a check's waits are 3 s,
/// and a Fermat 19's 27 children take the collector over 5 s.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_garbage_collector_is_waited_for_while_it_deletes() {
    let (checked, text) = check_beside_a_slow_garbage_collector(5, "dana", "3").await;
    assert!(
        checked.status.success() && text.contains("25 passed, 0 failed"),
        "{text}"
    );
}

/// When the collector is slower than even that patience, the ✗ says so, instead of naming an
/// exercise the participant got right: one object a second, waits of 1 s (4 s in all while
/// it deletes), a Fermat 19's 27 children.
#[tokio::test(flavor = "multi_thread")]
async fn a_garbage_collector_too_slow_for_the_check_is_named_not_the_exercise() {
    let (checked, text) = check_beside_a_slow_garbage_collector(1, "erin", "1").await;
    let fermat_19 = text
        .lines()
        .find(|l| l.contains("after deleting Fermat fermat-19") && l.contains("✗"))
        .unwrap_or_else(|| panic!("no ✗ for the Fermat 19's children:\n{text}"));
    assert!(
        !checked.status.success()
            && fermat_19.contains("the cluster's garbage collector is deleting them, slowly")
            && fermat_19.contains("your controller is not the cause")
            && !fermat_19.contains("EXERCISE"),
        "{text}"
    );
}

/// `count` objects of the rest of the room for the garbage collector to delete, ahead of any
/// participant's (ConfigMaps in a namespace `aaa-room`, owned by an object that is gone).
async fn the_rooms_deletions(server: &TestServer, count: usize) {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, PostParams};

    let client = server.client();
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "aaa-room"}}))
            .expect("a Namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the room's namespace is created");
    let config_maps = Api::<ConfigMap>::namespaced(client, "aaa-room");
    for i in 0..count {
        let orphan: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": format!("left-behind-{i}"),
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "name": "gone",
                    "uid": "00000000-0000-0000-0000-000000000000",
                }],
            },
        }))
        .expect("a ConfigMap");
        config_maps
            .create(&PostParams::default(), &orphan)
            .await
            .expect("the room's object is created");
    }
}

/// In a room the collector is busy with everybody's deletions when a participant's Fermat
/// starts waiting for its Tuples (foreground), and the first of them goes only after a while:
/// thirty checks on a real v1.24 (kube-controller-manager's client at its default 20 requests
/// a second) saw none of their six Tuples go within 30 s, and all of them later. The check
/// waits its whole patience for the collector to come to its children. Here the collector
/// deletes ten objects a second and has sixty of the room's ahead of the Fermat's eighteen
/// children (some 6 s) when the check holds one of its Tuples; a check's waits are 3 s.
#[tokio::test(flavor = "multi_thread")]
async fn a_garbage_collector_busy_with_the_room_is_waited_for_until_it_comes_to_ours() {
    use std::process::Stdio;
    use tokio::io::AsyncBufReadExt;

    let server = crds::on_a_test_server(&solutions::track())
        .await
        .expect("a test API server with the workshop's CRDs");
    server.set_gc_rate(10);
    let mut checking = check(&server, 3, "gina", &["--timeout", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the check starts");
    let stdout = checking.stdout.take().expect("the check's output");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let (mut text, mut busy) = (String::new(), false);
    while let Some(line) = lines.next_line().await.expect("the check's output reads") {
        // The Tuple held just before its Fermat is deleted in the foreground.
        if !busy && line.contains("math.example.com/check-hold") {
            the_rooms_deletions(&server, 60).await;
            busy = true;
        }
        text.push_str(&line);
        text.push('\n');
    }
    let status = checking.wait().await.expect("the check ends");
    assert!(busy, "the check never held a Tuple:\n{text}");
    assert!(
        status.success() && text.contains("25 passed, 0 failed"),
        "{text}"
    );
}
