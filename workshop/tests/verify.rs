//! `make workshop-verify` as a cargo test, so that `make test` (what CI runs) covers it: every
//! stage's check passes on the reference solutions, and reports failures on the untouched
//! starter code, with the hint a newcomer needs first, without crashing (exit code 1, not a
//! panic's 101). The real binary runs, as a learner runs it.

use std::process::Command;

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn check(stage: u8, solution: bool) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.args(["check", &stage.to_string()])
        .env("LC_ALL", "C.UTF-8");
    if solution {
        // Generous: only a failing expectation waits this long.
        cmd.args(["--solution", "--timeout", "60"]);
    } else {
        // Every expectation of the starter fails; keep the waits short.
        cmd.args(["--timeout", "3"]);
    }
    let output = cmd.output().expect("math-workshop runs");
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The `N passed, M failed` line.
fn summary(ran: &Ran) -> (usize, usize) {
    let last = ran.stdout.lines().last().unwrap_or_default();
    let numbers: Vec<usize> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        last.ends_with(" failed") && numbers.len() == 2,
        "the last line is `N passed, M failed`, not {last:?}:\n{}{}",
        ran.stdout,
        ran.stderr
    );
    (numbers[0], numbers[1])
}

fn solution_passes(stage: u8) {
    let ran = check(stage, true);
    let (passed, failed) = summary(&ran);
    assert_eq!(
        (ran.code, failed),
        (Some(0), 0),
        "stage {stage}'s reference solution fails its check:\n{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(
        passed >= 10,
        "stage {stage}'s check has {passed} expectations only"
    );
    assert!(!ran.stdout.contains('✗'), "{}", ran.stdout);
}

/// Whether the learner has edited `workshop/src/exercises/`: then the starter is no longer the
/// starter, and "it fails" says nothing (CI runs on a clean clone, where it is untouched).
fn exercises_edited() -> bool {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    Command::new("git")
        .args([
            "-C",
            repo,
            "diff",
            "--quiet",
            "HEAD",
            "--",
            "workshop/src/exercises",
        ])
        .status()
        .is_ok_and(|status| status.code() == Some(1))
}

fn starter_fails(stage: u8, first_hint: &str) {
    if exercises_edited() {
        eprintln!(
            "not checking that the starter of stage {stage} fails: you have edited workshop/src/exercises/ \
             (`make workshop-check STAGE={stage}` checks your work)"
        );
        return;
    }
    let ran = check(stage, false);
    let (_, failed) = summary(&ran);
    assert_eq!(
        ran.code,
        Some(1),
        "the starter's check of stage {stage} ends with exit code 1:\n{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(failed > 0);
    assert!(
        ran.stdout.contains(first_hint),
        "the starter's check of stage {stage} says {first_hint:?}:\n{}",
        ran.stdout
    );
    assert!(
        !ran.stderr.contains("panicked at"),
        "the checker reports a todo!() as a hint, not as a panic on stderr:\n{}",
        ran.stderr
    );
}

#[test]
fn stage_1_solution_passes() {
    solution_passes(1);
}

#[test]
fn stage_2_solution_passes() {
    solution_passes(2);
}

#[test]
fn stage_3_solution_passes() {
    solution_passes(3);
}

#[test]
fn stage_1_starter_fails_at_the_api_definition() {
    starter_fails(
        1,
        "✗ the Number CRD generated from NumberSpec has spec.value, an integer — add `pub value: i64` to NumberSpec (EXERCISE 1a in workshop/src/exercises/number.rs)",
    );
}

#[test]
fn stage_2_starter_fails_at_its_todo() {
    starter_fails(
        2,
        "the Tuple controller panicked: not yet implemented: EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs (at workshop/src/exercises/tuple.rs:",
    );
}

#[test]
fn stage_3_starter_fails_at_its_todo() {
    starter_fails(
        3,
        "the Fermat controller panicked: not yet implemented: EXERCISE 3a: create or update the child Tuples, in workshop/src/exercises/fermat.rs (at workshop/src/exercises/fermat.rs:",
    );
}

/// When the CRDs cannot be installed, the hint's "is the cluster reachable?" command works on
/// the test API server too (`kubectl get nodes` does not: it has no nodes).
#[test]
fn the_install_hint_names_a_command_that_works_on_the_test_server() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fake = dir.path().join("kubectl");
    std::fs::write(
        &fake,
        "#!/bin/sh\ncase \" $* \" in *\" apply -f - \"*) echo 'Unable to connect to the server' >&2; exit 1;; esac\nexec kubectl \"$@\"\n",
    )
    .expect("the fake kubectl is written");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let output = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .args(["check", "1", "--solution", "--timeout", "3"])
        .env("KUBECTL", &fake)
        .output()
        .expect("math-workshop runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.contains("kubectl apply of the CRDs generated from your types failed"))
        .unwrap_or_else(|| panic!("no ✗ for the failed install:\n{stdout}"));
    let command = line
        .split("is the cluster reachable (")
        .nth(1)
        .and_then(|rest| rest.split(")?").next())
        .unwrap_or_else(|| panic!("the hint names no command: {line}"));
    let args: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(args.first(), Some(&"kubectl"), "{line}");

    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let server = runtime
        .block_on(test_apiserver::TestServer::start())
        .expect("the test API server starts");
    let ran = Command::new("kubectl")
        .args(&args[1..])
        .env("KUBECONFIG", server.kubeconfig_path())
        .output()
        .expect("kubectl runs");
    assert!(
        ran.status.success(),
        "`{command}` fails on the test API server: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    runtime.block_on(server.shutdown());
}

/// `make workshop-run` with a `todo!()` reached: the panic is reported once, with the exercise
/// and where it is (no second `JoinError` panic from kube-runtime, no "panicked at" noise), and
/// the other controllers keep running.
#[test]
fn run_reports_a_todo_once_and_keeps_the_others_running() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    if exercises_edited() {
        eprintln!("not checking the starter's run: you have edited workshop/src/exercises/");
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .args(["run", "--stage", "2", "--test-server"])
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("math-workshop runs");
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stderr.take().expect("stderr is piped");
    let collected = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            collected.lock().expect("not poisoned").push_str(&text);
        }
    });
    let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let kubeconfig = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.trim()
                .strip_prefix("export KUBECONFIG=")
                .map(String::from)
        })
        .expect("the runner prints the test API server's KUBECONFIG");
    // The starter's Tuple controller reaches its todo!() (EXERCISE 2a) on this Tuple; the
    // Number controller has nothing to do and keeps running.
    let applied = Command::new("kubectl")
        .args(["apply", "-f", "samples/tuple.yaml"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .expect("kubectl runs");
    assert!(applied.status.success(), "{applied:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !stderr
        .lock()
        .expect("not poisoned")
        .contains("controller stopped")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Time for a second report, if there were one.
    std::thread::sleep(Duration::from_secs(2));
    let still_running = child.try_wait().expect("try_wait").is_none();
    let _ = child.kill();
    let _ = child.wait();
    let said = stderr.lock().expect("not poisoned").clone();
    assert_eq!(
        said.matches("EXERCISE 2a").count(),
        1,
        "the todo!() is reported once:\n{said}"
    );
    assert!(
        said.contains("the Tuple controller stopped: not yet implemented: EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs (at workshop/src/exercises/tuple.rs:"),
        "the report names the exercise and where it is:\n{said}"
    );
    assert!(
        !said.contains("JoinError") && !said.contains("panicked at"),
        "no panic noise:\n{said}"
    );
    assert!(
        said.contains("the other controllers keep running") && still_running,
        "the Number controller keeps running:\n{said}"
    );
}

/// Every kubectl a check starts is a step the learner sees (a `kubectl …` line), but for the
/// CRDs' install (`apply -f -`, said as "installed the CRDs … (kubectl apply)"): anything else
/// is a process (0.2–0.5 s on a 2-core laptop) that a save in `make workshop-watch` waits for
/// without learning anything. `kubectl wait --for=condition=Established` was one: the check
/// reads that condition through the client it already holds.
#[test]
fn a_check_starts_no_kubectl_that_it_does_not_show() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("kubectl.log");
    let wrapper = dir.path().join("kubectl");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$KUBECTL_LOG\"\nexec kubectl \"$@\"\n",
    )
    .expect("write the wrapper");
    Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .expect("chmod runs");
    let output = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .args(["check", "3", "--solution", "--timeout", "60"])
        .env("LC_ALL", "C.UTF-8")
        .env("KUBECTL", &wrapper)
        .env("KUBECTL_LOG", &log)
        .output()
        .expect("math-workshop runs");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    let started = std::fs::read_to_string(&log).expect("kubectl ran");
    let hidden: Vec<&str> = started
        .lines()
        .map(|line| {
            // `--cache-dir=<dir> -n <namespace> ARGS`: the ARGS, as the learner types them.
            let rest = line.split_once(" -n ").map_or(line, |(_, rest)| rest);
            rest.split_once(' ').map_or("", |(_, args)| args)
        })
        .filter(|args| *args != "apply -f -")
        .filter(|args| {
            // Files written on the spot are shown by their name alone.
            let as_shown: Vec<&str> = args
                .split(' ')
                .map(|arg| match arg.strip_prefix('/') {
                    Some(path) => path.rsplit('/').next().unwrap_or(path),
                    None => arg,
                })
                .collect();
            !shown.contains(&format!("kubectl {}", as_shown.join(" ")))
        })
        .collect();
    assert!(
        hidden.is_empty(),
        "the check started kubectl for steps it does not show: {hidden:?}\n{shown}"
    );
}
