//! The real manager binary against a test API server, its stderr collected line by line: for
//! tests of what a person reading the log sees.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use super::Harness;

/// The manager binary, its stderr lines collected as they come.
pub struct Manager {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Manager {
    pub fn start(h: &Harness) -> Manager {
        Manager::start_with(h, &[])
    }

    /// With more command-line flags.
    pub fn start_with(h: &Harness, flags: &[&str]) -> Manager {
        // Known to the manager's own tests; a workspace member that includes this harness
        // (the plugin's) runs the manager in-process instead.
        let Some(binary) = option_env!("CARGO_BIN_EXE_math-controller") else {
            panic!("the manager binary is built for math-controller's tests only");
        };
        let mut child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(h.server.kubeconfig_path())
            .args(["--metrics-bind-address=0", "--health-probe-bind-address=0"])
            .args(flags)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the manager binary starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        Manager { child, lines }
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    pub async fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.lines()
    }
}

/// The log lines a person would read as warnings or errors.
pub fn loud(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.starts_with("error"))
        .collect()
}
