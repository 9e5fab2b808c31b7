//! What runs in the participant's terminal 2 during the guide's sessions: `make workshop-run`,
//! and in the last chapter the finished manager (`cargo run`), started and stopped where the
//! guide says.

use std::path::Path;
use std::process::{Child, Command};

use super::trial;

/// The controllers of stages 1..=N started as the guide tells the participant to:
/// `make workshop-run STAGE=N`, in the participant's `copy` (whose exercises are the reference
/// solutions after `make workshop-skip`), with the test's cargo profile (built already).
/// Returns once the runner says its controllers run (its log line), not after a guessed pause.
pub(crate) fn controllers(stage: u8, kubeconfig: &Path, copy: &Path) -> Child {
    let script = "exec make --no-print-directory workshop-run \"$@\" 2>&1";
    let what = format!("make workshop-run STAGE={stage}");
    start(
        script,
        &[&format!("STAGE={stage}")],
        (kubeconfig, copy),
        ("controllers running in", &what),
    )
}

/// The finished manager as the last chapter starts it, `cargo run --profile workshop`, with the
/// test's profile instead (its dependencies are built already). Returns once its controllers
/// start (its log line).
pub(crate) fn manager(kubeconfig: &Path, copy: &Path) -> Child {
    let script = "exec cargo run --locked --profile \"$WORKSHOP_PROFILE\" 2>&1";
    start(
        script,
        &[],
        (kubeconfig, copy),
        (
            "starting the Number, Tuple and Fermat controllers",
            "cargo run",
        ),
    )
}

/// `sh -c script args` in the participant's terminal, in a process group of its own, so that
/// [`stop`] ends make, cargo and what they run at once, as Ctrl-C does; once it printed a line
/// with `up`.
fn start(
    script: &str,
    args: &[&str],
    (kubeconfig, copy): (&Path, &Path),
    (up, what): (&str, &str),
) -> Child {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut command = trial::as_participant(Command::new("sh"), copy);
    command
        .args(["-c", script, "sh"])
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .stdout(std::process::Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().expect("it starts");
    let output = child.stdout.take().expect("its output is piped");
    let (tell, started) = std::sync::mpsc::channel();
    let up = up.to_string();
    std::thread::spawn(move || {
        let mut said = Vec::new();
        for line in std::io::BufReader::new(output)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains(&up) {
                let _ = tell.send(Ok(()));
            }
            said.push(line);
        }
        let _ = tell.send(Err(said.join("\n")));
    });
    match started.recv_timeout(std::time::Duration::from_secs(600)) {
        Ok(Ok(())) => child,
        Ok(Err(said)) => panic!("{what} ended before it ran:\n{said}"),
        Err(_) => panic!("{what}: not running after 600 s"),
    }
}

/// Ctrl-C in the terminal: its process group ended (SIGTERM: a test started in the background
/// inherits an ignored SIGINT), then waited for.
pub(crate) fn stop(mut child: Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
    let _ = child.wait();
    // make may be gone before what it ran (the runner releases its heartbeat as it stops):
    // the terminal's prompt is back once the whole group is.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline
        && Command::new("kill")
            .args(["-0", "--", &group])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
