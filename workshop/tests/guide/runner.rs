//! The participant's runner in the guide's sessions: `make workshop-run`, started and stopped
//! where the guide says.

use std::path::Path;
use std::process::Command;

use super::trial;

/// The controllers of stages 1..=N started as the guide tells the participant to:
/// `make workshop-run STAGE=N`, in the participant's `copy` (whose exercises are the reference
/// solutions after `make workshop-skip`), with the test's cargo profile (built already). In a process group of its
/// own, so that [`stop`] ends make, cargo and the runner at once, as Ctrl-C does. Returns once
/// the runner says its controllers run (its log line), not after a guessed pause.
pub(crate) fn controllers(stage: u8, kubeconfig: &Path, copy: &Path) -> std::process::Child {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut command = trial::as_participant(Command::new("sh"), copy);
    command
        .args([
            "-c",
            "exec make --no-print-directory workshop-run \"$@\" 2>&1",
            "make",
        ])
        .arg(format!("STAGE={stage}"))
        .env("KUBECONFIG", kubeconfig)
        .stdout(std::process::Stdio::piped())
        .process_group(0);
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
