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
/// each ([`one_line`], from `--message-format=json`) and the binary's path from its artifact
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
            "--message-format=json",
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
                let diagnostic = &message["message"];
                let text = one_line(diagnostic);
                match diagnostic["level"].as_str() {
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

/// Where the learner's code is: a diagnostic is shown at a line of it when it names one.
const EXERCISES: &str = "workshop/src/exercises/";

/// One of rustc's diagnostics in one line, as `--message-format=json-diagnostic-short` would
/// put it, `file:line:col: level[code]: message`, but with what the short form leaves out: its
/// help with the suggested code (`a function with a similar name exists: `fizzbuzz``), and the
/// learner's own line when the error's primary place is inside a dependency (a bound that
/// `kube-core` states, a macro it expands): the first place of the diagnostic, its children or
/// their macro expansions that is in `workshop/src/exercises/`.
pub(super) fn one_line(diagnostic: &Value) -> String {
    let level = diagnostic["level"].as_str().unwrap_or("error");
    let code = match diagnostic["code"]["code"].as_str() {
        Some(code) => format!("{level}[{code}]"),
        None => level.to_string(),
    };
    let message = diagnostic["message"].as_str().unwrap_or_default();
    let mut line = match place(diagnostic) {
        Some(place) => format!("{place}: {code}: {message}"),
        None => format!("{code}: {message}"),
    };
    let helps = helps(diagnostic);
    if !helps.is_empty() {
        line.push_str(&format!(" ({})", helps.join("; ")));
    }
    line
}

/// `file:line:col` of the diagnostic: its primary span, unless that is outside the learner's
/// crate and a span in the exercises is named (then that one).
fn place(diagnostic: &Value) -> Option<String> {
    let mut spans = Vec::new();
    collect_spans(diagnostic, &mut spans);
    let at = |span: &Value| {
        Some(format!(
            "{}:{}:{}",
            span["file_name"].as_str()?,
            span["line_start"],
            span["column_start"]
        ))
    };
    let primary = diagnostic["spans"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["is_primary"] == true));
    let in_workspace = |span: &Value| {
        span["file_name"]
            .as_str()
            .is_some_and(|f| !f.starts_with('/') && !f.starts_with('<'))
    };
    match primary {
        Some(primary) if in_workspace(primary) => at(primary),
        _ => spans
            .iter()
            .copied()
            .find(|s| {
                s["file_name"]
                    .as_str()
                    .is_some_and(|f| f.starts_with(EXERCISES))
            })
            .or(primary)
            .and_then(at),
    }
}

/// Every span of a diagnostic, its children's and their macro expansions' call sites, in order.
fn collect_spans<'a>(diagnostic: &'a Value, spans: &mut Vec<&'a Value>) {
    for span in diagnostic["spans"].as_array().into_iter().flatten() {
        let mut next = Some(span);
        while let Some(span) = next {
            spans.push(span);
            next = span["expansion"]["span"]
                .as_object()
                .map(|_| &span["expansion"]["span"]);
        }
    }
    for child in diagnostic["children"].as_array().into_iter().flatten() {
        collect_spans(child, spans);
    }
}

/// The diagnostic's help lines, each with the code it suggests: `a function with a similar name
/// exists: `fizzbuzz``.
fn helps(diagnostic: &Value) -> Vec<String> {
    let children = diagnostic["children"].as_array().into_iter().flatten();
    children
        .filter(|child| child["level"] == "help")
        .map(|child| {
            let message = child["message"].as_str().unwrap_or_default();
            let suggested: Vec<&str> = (child["spans"].as_array().into_iter().flatten())
                .filter_map(|span| span["suggested_replacement"].as_str())
                .filter(|s| !s.trim().is_empty() && !s.contains('\n'))
                .collect();
            match suggested.first() {
                Some(code) => format!("help: {message}: `{code}`"),
                None => format!("help: {message}"),
            }
        })
        .collect()
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

    /// A compiler message of `level` at `file:3:1` (`file` empty: no place), saying `text`.
    fn message(package: &str, level: &str, file: &str, text: &str) -> Value {
        let spans = if file.is_empty() {
            serde_json::json!([])
        } else {
            serde_json::json!([{ "file_name": file, "line_start": 3, "column_start": 1, "is_primary": true }])
        };
        serde_json::json!({
            "reason": "compiler-message",
            "package_id": package,
            "message": { "level": level, "message": text, "spans": spans, "children": [] },
        })
    }

    #[test]
    fn the_workshop_crates_errors_and_the_exercises_warnings_are_kept() {
        let ours = "path+file:///r/workshop#math-workshop@0.1.0";
        let built = output(
            false,
            &[
                message(ours, "error", "workshop/src/exercises/number.rs", "x"),
                message(ours, "error", "", "aborting due to 1 previous error"),
                message(ours, "warning", "workshop/src/exercises/tuple.rs", "y"),
                message(ours, "warning", "workshop/src/main.rs", "z"),
                message("registry+…#kube@5.0.0", "error", "x.rs", "not ours"),
            ],
        );
        assert_eq!(
            built.errors,
            ["workshop/src/exercises/number.rs:3:1: error: x"]
        );
        assert_eq!(
            built.warnings,
            ["workshop/src/exercises/tuple.rs:3:1: warning: y"]
        );
        assert!(built.executable.is_none());
        assert!(built.cargo_said.contains("Compiling"));
    }

    #[test]
    fn a_compile_error_keeps_rustcs_help_and_its_suggestion() {
        let diagnostic = serde_json::json!({
            "message": "cannot find function `fizbuzz` in module `math`",
            "code": { "code": "E0425" },
            "level": "error",
            "spans": [{ "file_name": "workshop/src/exercises/number.rs", "line_start": 96,
                        "column_start": 25, "is_primary": true }],
            "children": [{
                "message": "a function with a similar name exists", "level": "help",
                "spans": [{ "file_name": "workshop/src/exercises/number.rs", "line_start": 96,
                            "column_start": 25, "is_primary": true,
                            "suggested_replacement": "fizzbuzz" }],
                "children": [],
            }],
        });
        assert_eq!(
            one_line(&diagnostic),
            "workshop/src/exercises/number.rs:96:25: error[E0425]: cannot find function \
             `fizbuzz` in module `math` (help: a function with a similar name exists: `fizzbuzz`)"
        );
    }

    #[test]
    fn an_error_placed_in_a_dependency_is_shown_at_the_learners_line() {
        let registry =
            "/home/u/.cargo/registry/src/index.crates.io-x/kube-core-5.0.0/src/resource.rs";
        let diagnostic = serde_json::json!({
            "message": "the trait bound `Tuple: Resource` is not satisfied",
            "code": { "code": "E0277" },
            "level": "error",
            "spans": [{ "file_name": registry, "line_start": 40, "column_start": 5,
                        "is_primary": true,
                        "expansion": { "span": { "file_name": "workshop/src/exercises/tuple.rs",
                                                 "line_start": 77, "column_start": 9 } } }],
            "children": [],
        });
        assert!(
            one_line(&diagnostic).starts_with("workshop/src/exercises/tuple.rs:77:9: error[E0277]"),
            "{}",
            one_line(&diagnostic)
        );
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
