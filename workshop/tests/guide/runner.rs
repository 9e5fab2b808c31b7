//! The participant's runner in the guide's sessions: `make workshop-run`, started and stopped
//! where the guide says.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::repository;

/// The target directory this test was built in.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repository().join("target"))
}

/// The controllers of stages 1..=N started as the guide tells the participant to:
/// `make workshop-run STAGE=N`, here with `ARGS=--solution` (the reference solutions in place
/// of the exercises) and the test's cargo profile (built already). In a process group of its
/// own, so that [`stop`] ends make, cargo and the runner at once, as Ctrl-C does. Returns once
/// the runner says its controllers run (its log line), not after a guessed pause.
pub(crate) fn controllers(stage: u8, kubeconfig: &Path) -> std::process::Child {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut command = Command::new("sh");
    command
        .args([
            "-c",
            "exec make --no-print-directory workshop-run \"$@\" 2>&1",
            "make",
        ])
        .args([format!("STAGE={stage}"), "ARGS=--solution".to_string()])
        .current_dir(repository())
        .env("KUBECONFIG", kubeconfig)
        .env("LC_ALL", "C.UTF-8")
        .env("WORKSHOP_PROFILE", "dev")
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("MAKEFLAGS")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .process_group(0);
    // What cargo set for this test would make the inner cargo rebuild ring (catch_up.rs).
    for (name, _) in std::env::vars() {
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name.as_str(),
                "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
            )
        {
            command.env_remove(name);
        }
    }
    let mut child = command.spawn().expect("make workshop-run starts");
    let output = child.stdout.take().expect("its output is piped");
    let (up, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = Vec::new();
        for line in std::io::BufReader::new(output)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("controllers running in") {
                let _ = up.send(Ok(()));
            }
            said.push(line);
        }
        let _ = up.send(Err(said.join("\n")));
    });
    match started.recv_timeout(std::time::Duration::from_secs(600)) {
        Ok(Ok(())) => child,
        Ok(Err(said)) => {
            panic!("make workshop-run STAGE={stage} ended before its controllers ran:\n{said}")
        }
        Err(_) => panic!("make workshop-run STAGE={stage}: no controllers after 600 s"),
    }
}

/// Ctrl-C in the runner's terminal: its process group ended (SIGTERM: a test started in the
/// background inherits an ignored SIGINT), then waited for.
pub(crate) fn stop(mut child: std::process::Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
    let _ = child.wait();
}
