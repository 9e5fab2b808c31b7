//! Catching up and watching, the way a participant does it, on a copy of the repository (so
//! that this repository's own exercises stay as they are): `make workshop-skip STAGE=1` and
//! `STAGE=2`, then stage 3 written by hand (the reference solution typed in), and
//! `make workshop-check STAGE=3` passes; `make workshop-watch STAGE=3` checks, and after a
//! save of an exercise file builds and checks again.
//!
//! The organiser's drills run here too, as the organiser's page writes them (`<!-- drill: … -->`
//! blocks of `ORGANISER.md`, the same in both languages), as a room's participant who exported `PARTICIPANT` runs
//! them: the two skips and the watch of "two stages behind"; the watch while the shared
//! cluster (the room's file) is dead; and, after a participant's cluster died, the test
//! API server started in its place, the CRDs and samples put back and the controllers run again,
//! until the Fermat has its two squares. Only the port, the kubeconfig's path and the cargo
//! profile (this test's, whose dependencies are built) differ from the guide's commands.
//!
//! The copy is `common/trial.rs`'s, shared with the guide's sessions (`guide.rs`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "common/trial.rs"]
mod trial;

use trial::{as_participant, copy, git, make, repository};

/// The room's participant of the drills, who exported `PARTICIPANT` as the guide says.
const PARTICIPANT: &str = "alice";

/// A drill's script, run by bash in the copy as the participant types it (with `PARTICIPANT`
/// exported), with this test's kubeconfig path and port instead of the guide's.
fn shell(copy: &Path, script: &str, kubeconfig: &Path, port: u16) -> Command {
    let script = script
        .replace("--profile workshop", "--profile dev")
        .replace("/tmp/math.kubeconfig", &kubeconfig.display().to_string())
        .replace("8010", &port.to_string());
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(format!("set -e\n{script}"));
    let mut cmd = as_participant(cmd, copy);
    cmd.env("PARTICIPANT", PARTICIPANT);
    cmd
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn skip_two_stages_write_the_third_check_it_and_watch_it_then_the_drills() {
    let Some(copy) = copy() else {
        eprintln!("not a git checkout: the catch-up test needs `git ls-files`");
        return;
    };
    let exercises = copy.join("workshop/src/exercises");
    let starter = |file: &str| {
        git(&["show", &format!("HEAD:workshop/src/exercises/{file}")]).expect("git show")
    };
    let solution = |file: &str| {
        std::fs::read(copy.join("workshop/src/solutions").join(file)).expect("a solution")
    };

    // The drill "two stages behind": two skips, then the watch of the third stage (below).
    let behind = drill("behind");
    let behind: Vec<&str> = behind.lines().collect();
    assert_eq!(behind.len(), 3, "{behind:?}");
    let skips = behind[..2].iter().map(|line| make_args(line));
    for ((stage, file, next), skip) in [(1, "number.rs", "tuple.rs"), (2, "tuple.rs", "fermat.rs")]
        .into_iter()
        .zip(skips)
    {
        assert_eq!(skip, ["workshop-skip", &format!("STAGE={stage}")]);
        let skipped = make(&copy, &skip).output().expect("make runs");
        let said = text(&skipped);
        assert!(skipped.status.success(), "{said}");
        assert!(
            said.contains(&format!(
                "workshop/src/exercises/{file} is now the reference solution.\nYours is kept beside it as \
                 workshop/src/exercises/{file}.mine"
            )) && said.contains(&format!("Go on with stage {} in workshop/src/exercises/{next}", stage + 1)),
            "{said}"
        );
        assert_eq!(
            std::fs::read(exercises.join(file)).expect("read"),
            solution(file)
        );
        assert_eq!(
            std::fs::read(exercises.join(format!("{file}.mine"))).expect("kept"),
            starter(file)
        );
    }

    // Stage 3 in the participant's own hand: the reference solution, typed in.
    std::fs::write(exercises.join("fermat.rs"), solution("fermat.rs")).expect("write");
    let checked = make(&copy, &["workshop-check", "STAGE=3"])
        .output()
        .expect("make runs");
    let said = text(&checked);
    assert!(checked.status.success(), "{said}");
    assert!(
        said.contains("Stage 3: Fermat — your exercises, workshop/src/exercises/fermat.rs")
            && said.contains(" passed, 0 failed"),
        "{said}"
    );

    // The drill "the shared cluster dies", as the room runs it: the participant exported
    // PARTICIPANT (the guide tells everyone to), and the organiser's file for them names the
    // dead cluster. The room's CLUSTER=1 check (make finds the file from PARTICIPANT alone)
    // says so; the watch (the third line of "two stages behind" too) goes on without it.
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let shared = copy.join(format!("workshop/room/{PARTICIPANT}.kubeconfig"));
    std::fs::create_dir_all(copy.join("workshop/room")).expect("the room's folder");
    dead_cluster(&runtime, &shared);
    let refused = make(&copy, &["workshop-check", "STAGE=3", "CLUSTER=1"])
        .env("PARTICIPANT", PARTICIPANT)
        .output()
        .expect("make runs");
    let said = text(&refused);
    assert!(
        !refused.status.success() && said.contains("does not answer"),
        "{said}"
    );
    let watch_line = drill("shared-cluster");
    assert_eq!(watch_line, behind[2]);
    let watch_args = make_args(&watch_line);
    assert_eq!(watch_args, ["workshop-watch", "STAGE=3"]);

    // The watch: a first round, then a save, then a second round that builds and checks.
    use std::os::unix::process::CommandExt;
    let mut watch = make(&copy, &watch_args)
        .env("PARTICIPANT", PARTICIPANT)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("make runs");
    let (tx, lines) = mpsc::channel();
    let stdout = watch.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let wait_for = |what: &str, seen: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(600);
        while Instant::now() < deadline {
            match lines.recv_timeout(Duration::from_secs(1)) {
                Ok(line) => {
                    let found = line.starts_with(what);
                    seen.push(line);
                    if found {
                        return true;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            }
        }
        false
    };
    let first = wait_for("✓ passed stage 3", &mut seen);
    let rounds_before = seen.iter().filter(|l| l.starts_with("built in")).count();
    let mut fermat = std::fs::read(exercises.join("fermat.rs")).expect("read");
    fermat.extend_from_slice(b"\n// saved again\n");
    std::fs::write(exercises.join("fermat.rs"), fermat).expect("write");
    let second = first && wait_for("✓ passed stage 3", &mut seen);
    let rounds = seen.iter().filter(|l| l.starts_with("built in")).count();
    // The whole group: make, cargo, the watch and its check.
    let _ = Command::new("kill")
        .args(["-TERM", "--", &format!("-{}", watch.id())])
        .status();
    let _ = watch.wait();
    // Every stage written: the drill "a participant's cluster dies", with PARTICIPANT still
    // exported and the room's file still there: the KUBECONFIG the drill exports wins.
    let drilled = std::panic::catch_unwind(|| own_cluster_dies(&copy));
    let _ = std::fs::remove_dir_all(copy.join("workshop/room"));
    // Back to the committed fermat.rs for the next run's incremental build.
    std::fs::write(exercises.join("fermat.rs"), starter("fermat.rs")).expect("write");
    let shown = seen.join("\n");
    assert!(first, "the watch's first round passes:\n{shown}");
    assert!(second, "a save starts a second round that passes:\n{shown}");
    assert_eq!(
        (rounds_before, rounds),
        (1, 2),
        "one build per round:\n{shown}"
    );
    // `make workshop-check` built everything above: the watch's first build finds nothing to
    // do, and a save recompiles the workshop crate alone (not ring and all above it, as when
    // the build inherited cargo run's environment).
    let builds: Vec<&String> = seen.iter().filter(|l| l.starts_with("built in")).collect();
    assert!(
        builds[0].ends_with("(nothing to recompile)")
            && builds[1].ends_with("(recompiled: math-workshop)"),
        "{builds:?}"
    );
    assert!(
        shown.contains("Stage 3: Fermat — your exercises")
            && shown.contains("That was the last stage."),
        "{shown}"
    );
    // "after the save" only when a save started the round: not the watch's first one.
    let verdicts: Vec<&String> = seen
        .iter()
        .filter(|l| l.starts_with("✓ passed stage 3"))
        .collect();
    assert!(
        verdicts.len() == 2
            && !verdicts[0].contains("after the save")
            && verdicts[1].contains("after the save"),
        "{verdicts:?}"
    );
    if let Err(panic) = drilled {
        std::panic::resume_unwind(panic);
    }
}

/// The commands of the drill `name` in the organiser's plan: the same in both languages.
fn drill(name: &str) -> String {
    let marker = format!("<!-- drill: {name} -->");
    let mut found = Vec::new();
    for file in ["workshop/ORGANISER.md", "workshop/ORGANISER.ja.md"] {
        let text = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| l.trim() != marker)
            .skip(2)
            .take_while(|l| !l.starts_with("```"))
            .collect();
        assert!(!block.is_empty(), "{file} has no drill `{name}`");
        found.push(block.join("\n"));
    }
    assert_eq!(
        found[0], found[1],
        "the drill `{name}` differs between the organiser's pages"
    );
    found.swap_remove(0)
}

/// `make workshop-skip STAGE=1` → `["workshop-skip", "STAGE=1"]`.
fn make_args(line: &str) -> Vec<&str> {
    let args = line
        .strip_prefix("make ")
        .unwrap_or_else(|| panic!("not make: {line}"));
    args.split_whitespace().collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The kubeconfig of a cluster that died: a test API server, stopped.
fn dead_cluster(runtime: &tokio::runtime::Runtime, at: &Path) {
    let server = runtime
        .block_on(test_apiserver::TestServer::start())
        .expect("the test API server starts");
    std::fs::copy(server.kubeconfig_path(), at).expect("copy the kubeconfig");
    runtime.block_on(server.shutdown());
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("kubectl runs")
}

/// Repeats `read` every half second until it says `wanted`, for up to `seconds`.
fn until(seconds: u64, wanted: &str, read: impl Fn() -> String) -> String {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        let now = read();
        if now.trim() == wanted || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn stop(mut group: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", "--", &format!("-{}", group.id())])
        .status();
    let _ = group.wait();
}

/// The drill "a participant's cluster dies", at stage 3 (every stage written): the cluster
/// held the CRDs and the samples; it dies; the drill's three terminals bring it all back.
fn own_cluster_dies(copy: &Path) {
    use std::os::unix::process::CommandExt;
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = scratch.path().join("math.kubeconfig");
    let (start, put_back, controllers) = (
        drill("own-cluster 1"),
        drill("own-cluster 3"),
        drill("own-cluster 2"),
    );

    dead_cluster(&runtime, &kubeconfig);
    // What the participant sees: their controllers cannot reach it, in one line.
    let refused = shell(copy, &controllers, &kubeconfig, 0)
        .output()
        .expect("bash runs");
    let said = text(&refused);
    assert!(
        !refused.status.success() && said.contains("does not answer"),
        "{said}"
    );

    let port = free_port();
    let server = shell(copy, &start, &kubeconfig, port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("bash runs");
    // cargo may build the test API server's binary first.
    let answered = until(600, "ok", || {
        let ok = kubectl(&kubeconfig, &["get", "namespace", "default"])
            .status
            .success();
        if ok { "ok" } else { "" }.to_string()
    });
    let installed = shell(copy, &put_back, &kubeconfig, port)
        .output()
        .expect("bash runs");
    let running = shell(copy, &controllers, &kubeconfig, port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let found = until(300, "true", || {
        let read = kubectl(
            &kubeconfig,
            &[
                "get",
                "fermat",
                "fermat-13",
                "-o",
                "jsonpath={.status.twoSquaresFound}",
            ],
        );
        String::from_utf8_lossy(&read.stdout).into_owned()
    });
    let tuples = kubectl(&kubeconfig, &["get", "tuples", "-o", "name"]);
    stop(running);
    stop(server);
    assert_eq!(answered, "ok", "the test API server of the drill answers");
    assert!(installed.status.success(), "{}", text(&installed));
    assert_eq!(
        found.trim(),
        "true",
        "fermat-13 finds its two squares again"
    );
    assert!(
        String::from_utf8_lossy(&tuples.stdout)
            .contains("tuple.math.example.com/fermat-13-4-and-9"),
        "{}",
        text(&tuples)
    );
}
