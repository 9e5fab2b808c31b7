//! The real `kubectl`, as a learner types it: the checker drives every stage with it.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// `kubectl` with a kubeconfig (or the ambient one), a namespace, and a discovery cache of
/// its own (a test API server's port is reused between runs; a stale cache would describe
/// another server's resources).
pub struct Kubectl {
    kubeconfig: Option<PathBuf>,
    namespace: String,
    cache: tempfile::TempDir,
    /// `kubectl apply` without its client-side schema validation ([`validates_by_download`]).
    apply_unvalidated: bool,
}

/// Whether kubectl validates what it applies by downloading the server's whole OpenAPI schema:
/// on a server older than 1.25, which cannot validate fields itself (server-side field
/// validation is beta, on by default, from Kubernetes 1.25), every `kubectl apply` GETs
/// `/openapi/v2` first, 3.5 MB on kube-apiserver v1.24 with this project's CRDs. Thirty checks
/// that start at once on such a room's cluster asked for it thirty times at once, and every one
/// timed out (`error validating data: Get ".../openapi/v2?timeout=32s": context deadline
/// exceeded`): measured on kube-apiserver v1.24 (the organiser's plan). From 1.25 on, kubectl
/// asks the server to validate, with a small per-group document it caches, so it keeps doing
/// that. `major`/`minor` as `/version` says them (`"1"`, `"24"` or `"24+"`); a version that
/// does not parse keeps the validation.
pub fn validates_by_download(major: &str, minor: &str) -> bool {
    let number = |text: &str| text.trim_end_matches('+').parse::<u32>().ok();
    matches!((number(major), number(minor)), (Some(1), Some(minor)) if minor < 25)
}

/// What one kubectl run printed, and whether it succeeded.
#[derive(Debug)]
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    fn from(output: Output) -> Ran {
        Ran {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// stderr (or stdout) on one line, for a hint.
    pub fn said(&self) -> String {
        let text = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl Kubectl {
    pub fn new(kubeconfig: Option<&Path>, namespace: &str) -> anyhow::Result<Kubectl> {
        Ok(Kubectl {
            kubeconfig: kubeconfig.map(Path::to_path_buf),
            namespace: namespace.to_string(),
            cache: tempfile::Builder::new()
                .prefix("math-workshop-kubectl-")
                .tempdir()?,
            apply_unvalidated: false,
        })
    }

    /// `kubectl apply` without client-side validation from now on (see
    /// [`validates_by_download`]): the API server still validates against the CRD's schema.
    pub fn apply_unvalidated(&mut self) {
        self.apply_unvalidated = true;
    }

    /// The program: `$KUBECTL` or `kubectl`.
    fn program() -> String {
        std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string())
    }

    /// `kubectl -n <namespace> ARGS`, with `stdin` fed to it; gives up after 60 s.
    pub async fn run_with(&self, args: &[&str], stdin: Option<&str>) -> Ran {
        let mut cmd = Command::new(Self::program());
        if let Some(kubeconfig) = &self.kubeconfig {
            cmd.env("KUBECONFIG", kubeconfig);
        }
        cmd.current_dir(super::repository());
        cmd.arg(format!("--cache-dir={}", self.cache.path().display()))
            .args(["-n", &self.namespace])
            .args(args)
            .args(
                (self.apply_unvalidated && args.first() == Some(&"apply"))
                    .then_some("--validate=false"),
            )
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                return Ran {
                    ok: false,
                    stdout: String::new(),
                    stderr: crate::t!(
                        crate::messages::COULD_NOT_RUN,
                        program = Self::program(),
                        error = e
                    ),
                };
            }
        };
        if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
            let _ = input.write_all(text.as_bytes()).await;
        }
        match tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await {
            Ok(Ok(output)) => Ran::from(output),
            Ok(Err(e)) => Ran {
                ok: false,
                stdout: String::new(),
                stderr: e.to_string(),
            },
            Err(_) => Ran {
                ok: false,
                stdout: String::new(),
                stderr: crate::messages::KUBECTL_TIMEOUT.text(),
            },
        }
    }

    /// `kubectl -n <namespace> ARGS`.
    pub async fn run(&self, args: &[&str]) -> Ran {
        self.run_with(args, None).await
    }

    /// A directory of its own, for files written on the spot.
    pub fn dir(&self) -> &Path {
        self.cache.path()
    }

    /// The command line as the learner would type it (for the report).
    /// Files written on the spot are shown by their name alone.
    pub fn shown(&self, args: &[&str]) -> String {
        let dir = format!("{}/", self.cache.path().display());
        format!("kubectl {}", args.join(" ").replace(&dir, ""))
    }

    /// What a run said ([`Ran::said`]), files written on the spot named alone, as in
    /// [`Kubectl::shown`].
    pub fn said(&self, ran: &Ran) -> String {
        let dir = format!("{}/", self.cache.path().display());
        ran.said().replace(&dir, "")
    }
}

#[cfg(test)]
mod tests {
    use super::validates_by_download;

    #[test]
    fn only_servers_before_1_25_make_kubectl_download_the_schema_to_validate() {
        assert!(validates_by_download("1", "24"));
        assert!(validates_by_download("1", "22+"));
        assert!(!validates_by_download("1", "25"));
        assert!(!validates_by_download("1", "33"));
        assert!(!validates_by_download("2", "0"));
        assert!(!validates_by_download("1", "unknown"));
    }
}
