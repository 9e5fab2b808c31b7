//! A round's build: `cargo build` of the learner's crate, and what it produced (the binary,
//! the compile errors and the exercises' warnings, one line each).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// What one `cargo build` produced.
pub(super) struct Built {
    /// The `math-workshop` binary, when it was built.
    pub(super) executable: Option<PathBuf>,
    /// The compile errors of the workshop crate, one line each (`file:line:col: error…`).
    pub(super) errors: Vec<String>,
    /// Its warnings about the exercises, one line each.
    pub(super) warnings: Vec<String>,
    /// cargo's own stderr (progress, or why it could not build at all).
    pub(super) cargo_said: String,
}

/// The cargo profile this watch was built with, from the directory it runs from
/// (`target/<profile>/`, `debug` for dev): the workshop's builds share one, and a build of the
/// exercises in another would compile every dependency a second time.
fn own_profile() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    profile_of(&exe)
}

/// `target/workshop/math-workshop-tools` → `workshop`; `target/debug/…` → `dev`.
fn profile_of(executable: &Path) -> String {
    match executable
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
    {
        Some("debug") | None => "dev".to_string(),
        Some(name) => name.to_string(),
    }
}

/// `cargo build --locked --profile <the watch's> -p math-workshop`, its diagnostics in one line
/// each (`--message-format=json-diagnostic-short`) and the binary's path from its artifact
/// message.
pub(super) fn build(repository: &Path) -> std::io::Result<Built> {
    let output = cargo_build(repository)?;
    Ok(read_output(
        &output.stdout,
        &output.stderr,
        output.status.success(),
    ))
}

/// Runs the build, in an environment of its own (see [`set_by_cargo_run`]).
fn cargo_build(repository: &Path) -> std::io::Result<Output> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        if set_by_cargo_run(&name.to_string_lossy()) {
            command.env_remove(name);
        }
    }
    command
        .args([
            "build",
            "--locked",
            "--profile",
            &own_profile(),
            "-p",
            "math-workshop",
            "--message-format=json-diagnostic-short",
        ])
        .current_dir(repository)
        // make's jobserver belongs to the make that started this watch, not to this build.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("CARGO_MAKEFLAGS")
        .stdin(Stdio::null())
        .output()
}

/// What the build's JSON messages (`stdout`) and cargo's words (`stderr`) say was produced.
fn read_output(stdout: &[u8], stderr: &[u8], succeeded: bool) -> Built {
    let mut built = Built {
        executable: None,
        errors: Vec::new(),
        warnings: Vec::new(),
        cargo_said: String::from_utf8_lossy(stderr).into_owned(),
    };
    for line in String::from_utf8_lossy(stdout).lines() {
        if let Ok(message) = serde_json::from_str::<Value>(line) {
            built.note(&message);
        }
    }
    if !succeeded && built.errors.is_empty() && built.executable.is_some() {
        // Built, yet cargo failed: say why rather than run a stale binary.
        built.executable = None;
    }
    built
}

impl Built {
    /// Keeps what one of cargo's JSON messages says about the workshop crate.
    fn note(&mut self, message: &Value) {
        let ours = message["package_id"]
            .as_str()
            .is_some_and(|id| id.contains("math-workshop@") || id.ends_with("#math-workshop"));
        match message["reason"].as_str() {
            // The package's one binary (whatever its name).
            Some("compiler-artifact") if ours && !message["executable"].is_null() => {
                self.executable = message["executable"].as_str().map(PathBuf::from);
            }
            Some("compiler-message") if ours => {
                let rendered = message["message"]["rendered"].as_str().unwrap_or_default();
                let text = rendered.trim().to_string();
                match message["message"]["level"].as_str() {
                    Some("error") if !text.starts_with("error: aborting") => self.errors.push(text),
                    Some("warning") if text.contains("workshop/src/exercises/") => {
                        self.warnings.push(text)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// The variables `cargo run` sets for the program it runs (this watch) that a build must not
/// inherit: cargo compares build scripts' `rerun-if-env-changed` variables with its own
/// environment, and ring's build script names `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`. With
/// this watch's values, the build rebuilt ring and everything above it (11–36 s), and the next
/// `make workshop-check` rebuilt them back.
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || matches!(
            name,
            "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE" | "LD_LIBRARY_PATH"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_builds_with_the_profile_it_was_built_with() {
        assert_eq!(
            profile_of(Path::new("/repo/target/workshop/math-workshop-tools")),
            "workshop"
        );
        assert_eq!(
            profile_of(Path::new("/repo/target/debug/math-workshop-tools")),
            "dev"
        );
    }

    /// What the build read from a cargo that printed `lines` and `succeeded` or not.
    fn output(succeeded: bool, lines: &[Value]) -> Built {
        let stdout: Vec<String> = lines.iter().map(Value::to_string).collect();
        let stderr = "   Compiling math-workshop v0.1.0\n";
        read_output(stdout.join("\n").as_bytes(), stderr.as_bytes(), succeeded)
    }

    fn message(package: &str, level: &str, rendered: &str) -> Value {
        serde_json::json!({
            "reason": "compiler-message",
            "package_id": package,
            "message": { "level": level, "rendered": rendered },
        })
    }

    #[test]
    fn the_workshop_crates_errors_and_the_exercises_warnings_are_kept() {
        let ours = "path+file:///r/workshop#math-workshop@0.1.0";
        let built = output(
            false,
            &[
                message(
                    ours,
                    "error",
                    "workshop/src/exercises/number.rs:3:1: error: x\n",
                ),
                message(ours, "error", "error: aborting due to 1 previous error"),
                message(
                    ours,
                    "warning",
                    "workshop/src/exercises/tuple.rs:1:1: warning: y",
                ),
                message(ours, "warning", "workshop/src/main.rs:1:1: warning: z"),
                message("registry+…#kube@5.0.0", "error", "not ours"),
            ],
        );
        assert_eq!(
            built.errors,
            ["workshop/src/exercises/number.rs:3:1: error: x"]
        );
        assert_eq!(
            built.warnings,
            ["workshop/src/exercises/tuple.rs:1:1: warning: y"]
        );
        assert!(built.executable.is_none());
        assert!(built.cargo_said.contains("Compiling"));
    }

    #[test]
    fn a_binary_is_run_only_when_cargo_succeeded() {
        let artifact = serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": "path+file:///r/workshop#math-workshop@0.1.0",
            "executable": "/r/target/debug/math-workshop",
        });
        let built = output(true, std::slice::from_ref(&artifact));
        assert_eq!(
            built.executable,
            Some(PathBuf::from("/r/target/debug/math-workshop"))
        );
        // Built, yet cargo failed without an error of ours (a lock file): no stale binary.
        assert!(output(false, &[artifact]).executable.is_none());
    }
}
