//! `make workshop-room-status` as the organiser sees it: the live table in a terminal (tmux),
//! on a room set up by `make workshop-room`, where alice runs her controllers and applies the
//! sample, bob's namespace has a Warning Event, and carol has not started; the table follows
//! when carol's namespace changes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use math_workshop::{crds, organiser, solutions};
use serde_json::json;
use test_apiserver::TestServer;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A tmux server of the test's own, on a socket in a temporary directory.
struct Tmux {
    dir: tempfile::TempDir,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(self.dir.path().join("tmux.sock"))
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .unwrap_or_else(|e| {
                panic!("tmux could not be run ({e}): install it (apt-get install tmux)")
            });
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// What the screen shows once `done` holds (60 s at most).
    fn until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.run(&["capture-pane", "-p", "-t", "room"]);
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "never {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(self.dir.path().join("tmux.sock"))
            .arg("kill-server")
            .status();
    }
}

/// The line of the screen that starts with `participant`, spaces collapsed.
fn row(screen: &str, participant: &str) -> String {
    screen
        .lines()
        .find(|l| l.starts_with(&format!("{participant} ")))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_organiser_sees_each_participants_stage_runner_and_last_warning_live() {
    let server = TestServer::start()
        .await
        .expect("the test API server starts");
    let dir = tempfile::tempdir().expect("a directory");
    let names: Vec<String> = ["alice", "bob", "carol"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let crds = crds::generate(&solutions::track());
    let room = organiser::Room {
        crds: &crds,
        cluster: &json!({"server": server.url()}),
        participants: &names,
        dir: dir.path(),
        token_hours: organiser::TOKEN_HOURS,
    };
    organiser::set_up(&server.client(), &room)
        .await
        .expect("the room is set up");
    server.enforce_rbac();

    // alice: her runner, with her kubeconfig alone, and the sample applied as the guide says.
    let alices = organiser::kubeconfig_path(dir.path(), "alice");
    let mut runner = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .args([
            "run",
            "--stage",
            "1",
            "--solution",
            "--participant",
            "alice",
        ])
        .env("KUBECONFIG", &alices)
        .env("LC_ALL", "C.UTF-8")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("alice's runner starts");
    let applied = Command::new("kubectl")
        .args(["apply", "-f", "samples/number.yaml"])
        .current_dir(repository())
        .env("KUBECONFIG", &alices)
        .output()
        .expect("kubectl runs");
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    // bob: a Warning Event in his namespace.
    let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "boom"},
        "involvedObject": {"kind": "Number", "name": "n", "namespace": "math-workshop-bob"},
        "type": "Warning", "reason": "ReconcileFailed", "message": "the API server said: no",
    }))
    .expect("an Event");
    kube::Api::<k8s_openapi::api::core::v1::Event>::namespaced(
        server.client(),
        "math-workshop-bob",
    )
    .create(&Default::default(), &event)
    .await
    .expect("the Event is created");

    let tmux = Tmux {
        dir: tempfile::tempdir().expect("a directory"),
    };
    let script = format!(
        "LC_ALL=C.UTF-8 KUBECONFIG='{}' '{}' room-status; exec sleep 600",
        server.kubeconfig_path().display(),
        env!("CARGO_BIN_EXE_math-workshop")
    );
    tmux.run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "room",
        "-x",
        "160",
        "-y",
        "20",
        &script,
    ]);
    let screen = tmux.until("alice at stage 1 with her runner up", |s| {
        row(s, "alice").starts_with("alice 1 up (")
    });
    assert!(
        screen.lines().any(|l| l.starts_with("PARTICIPANT")),
        "{screen}"
    );
    assert_eq!(
        row(&screen, "bob"),
        "bob 0 never started ReconcileFailed: the API server said: no"
    );
    assert_eq!(row(&screen, "carol"), "carol 0 never started -");

    // carol catches up to stage 2: the table follows without being asked.
    let gvk = kube::api::GroupVersionKind::gvk("math.example.com", "v1beta1", "Tuple");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "tuples");
    let tuples = kube::Api::<kube::api::DynamicObject>::namespaced_with(
        server.client(),
        "math-workshop-carol",
        &resource,
    );
    let tuple = serde_json::from_value(json!({
        "apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
        "metadata": {"name": "t"}, "spec": {"numbers": []},
    }))
    .expect("a Tuple");
    tuples
        .create(&Default::default(), &tuple)
        .await
        .expect("carol's Tuple");
    let status = json!({"status": {"observedGeneration": 1, "allSquares": true}});
    tuples
        .patch_status("t", &Default::default(), &kube::api::Patch::Merge(&status))
        .await
        .expect("its status");
    tmux.until("carol at stage 2", |s| {
        row(s, "carol").starts_with("carol 2 ")
    });
    runner.kill().await.expect("alice's runner stops");
    server.shutdown().await;
}
