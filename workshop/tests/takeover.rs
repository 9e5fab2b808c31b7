//! The finished manager after the workshop (the guide's last chapter), on the learner's own
//! cluster: their objects in `default`, made by their own controllers (`make workshop-run`,
//! here the reference solutions). While the runner runs, `cargo run` stops at once with one
//! line that names it and says how to stop it; after Ctrl-C in the runner's terminal and `make
//! install`, the manager starts, and every object becomes Ready with the manager's status,
//! without a child created again (the children are their parents' already).
//!
//! The runner is the `math-workshop` binary, as `make workshop-run` starts it; the manager runs
//! in this process, as its `main` does (the preflight, then `manager::run`), and kubectl is the
//! real one.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use math_controller::metrics::Metrics;
use math_controller::ops::manager::{self, Options};
use math_controller::ops::startup;
use math_workshop::{crds, solutions};
use serde_json::Value;
use test_apiserver::{TestServer, Verb};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `kubectl ARGS` against the server, from the repository (where `samples/` and `crds/` are).
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .current_dir(repository())
        .output()
        .context("kubectl runs")?;
    ensure!(
        output.status.success(),
        "kubectl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `make workshop-run STAGE=3` with the reference solutions, once its controllers run.
fn runner(kubeconfig: &Path) -> Result<Child> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .args(["run", "--stage", "3", "--solution"])
        .env("KUBECONFIG", kubeconfig)
        .env("LC_ALL", "C.UTF-8")
        .env_remove("RUST_LOG")
        .current_dir(repository())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().context("stderr is piped")?;
    let (up, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("controllers running in") {
                let _ = up.send(());
            }
        }
    });
    started
        .recv_timeout(Duration::from_secs(60))
        .context("the runner's controllers run")?;
    Ok(child)
}

/// Ctrl-C in the runner's terminal, and its end.
fn interrupt(mut runner: Child) -> Result<()> {
    let pid = runner.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status()?;
    let status = runner.wait()?;
    ensure!(status.success(), "the runner ends well at Ctrl-C: {status}");
    Ok(())
}

/// The stored objects of a kind in `default`.
fn objects(server: &TestServer, plural: &str) -> Vec<Value> {
    server.objects("math.example.com", plural, Some("default"))
}

/// Waits (60 s at most) until `done` holds for the stored objects of every kind.
async fn until(server: &TestServer, what: &str, done: impl Fn(&Value) -> bool) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all: Vec<Value> = ["numbers", "tuples", "fermats"]
            .iter()
            .flat_map(|plural| objects(server, plural))
            .collect();
        let waiting: Vec<&str> = all
            .iter()
            .filter(|o| !done(o))
            .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        if waiting.is_empty() && !all.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{what}: still waiting for {waiting:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The learner's controllers answered: a status for the current generation.
fn answered(object: &Value) -> bool {
    let observed = object.pointer("/status/observedGeneration");
    observed.is_some() && observed == object.pointer("/metadata/generation")
}

/// The manager's answer: Ready for the current generation, in the manager's whole status.
fn ready(object: &Value) -> bool {
    let conditions = object
        .pointer("/status/conditions")
        .and_then(Value::as_array);
    let ready = conditions.is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    let whole = match object["kind"].as_str() {
        Some("Tuple") => object["status"]["readyNumbers"] == object["status"]["desiredNumbers"],
        Some("Fermat") => object["status"]["readyTuples"] == object["status"]["desiredTuples"],
        _ => true,
    };
    ready && whole && answered(object)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finished_manager_takes_over_from_the_learners_controllers() -> Result<()> {
    let server = TestServer::start().await?;
    let kubeconfig = server.kubeconfig_path();
    // make workshop-install; make workshop-run STAGE=3; the samples.
    server.apply_crd_yaml(&crds::yaml(&solutions::track())?)?;
    let running = runner(&kubeconfig)?;
    for sample in ["number.yaml", "tuple.yaml", "fermat.yaml"] {
        kubectl(&kubeconfig, &["apply", "-f", &format!("samples/{sample}")])?;
    }
    until(&server, "the learner's controllers answer", answered).await?;

    // `cargo run` while the runner runs: one line, naming it and how to stop it.
    let client = server.client();
    let refused = startup::preflight(&client, &None).await;
    let said = refused.err().map(|e| e.to_string()).unwrap_or_default();
    ensure!(
        said.starts_with("a workshop controller is running: math-workshop-")
            && said.contains("'s runner in namespace default")
            && said.contains("Stop it (Ctrl-C in the terminal of `make workshop-run`)")
            && !said.contains("room"),
        "{said}"
    );

    // Ctrl-C in the runner's terminal, `make install`, `cargo run`.
    interrupt(running)?;
    kubectl(&kubeconfig, &["apply", "-f", "crds/"])?;
    server.reset_requests();
    startup::preflight(&client, &None).await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(manager::run(
        client,
        Options::default(),
        Metrics::new(),
        async {
            let _ = stopped.await;
        },
    ));
    let taken = until(
        &server,
        "every object Ready with the manager's status",
        ready,
    )
    .await;
    let _ = stop.send(());
    task.await??;
    taken?;
    // The children were their parents' already: none was created again.
    let creates: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::Create && r.group == "math.example.com")
        .map(|r| r.path)
        .collect();
    ensure!(creates.is_empty(), "the manager created {creates:?}");
    Ok(())
}

/// The manager reads what the learner track writes by the same names.
#[test]
fn the_manager_and_the_kit_name_the_heartbeat_and_the_rooms_mark_alike() {
    use math_controller::ops::workshop;
    assert_eq!(
        workshop::RUNNER_HEARTBEAT,
        math_workshop::room_status::HEARTBEAT
    );
    assert_eq!(workshop::ROOM_MARK, math_workshop::organiser::ROOM_CRD);
}
