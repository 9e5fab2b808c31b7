//! `make workshop-watch STAGE=N`: Rustlings-style. Builds the learner track, checks stage N,
//! and does both again every time a file in `workshop/src/exercises/` is saved (or Enter is
//! pressed), with compile errors shown one line each; once a stage passes, it goes on to the
//! next one. Each round says how long the edit took to become a ✓ or ✗.
//!
//! The checks are run by the binary that each build produces (`math-workshop check N`): this
//! one keeps running, and says what is wrong, while the exercises do not compile.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::STAGES;
use crate::messages as m;
use crate::t;

/// How to watch.
#[derive(Debug, Clone)]
pub struct Options {
    /// The stage to check first; the next one once it passes.
    pub stage: u8,
    /// Check on the cluster of the current kubeconfig.
    pub cluster: bool,
    /// With `cluster`: who checks.
    pub participant: Option<String>,
    /// Seconds each expectation of a check may take.
    pub timeout: Option<u64>,
    /// `--lang`, passed on to the check.
    pub lang: Option<String>,
}

/// Compile errors shown per round; the rest are counted.
const SHOWN: usize = 8;

/// Watches until Ctrl-C.
pub fn watch(opts: &Options, repository: &Path) -> ExitCode {
    let exercises = repository.join("workshop/src/exercises");
    if !exercises.is_dir() {
        let message = t!(m::NOT_THERE, path = exercises.display());
        eprintln!("{}", t!(m::ERROR, message = message));
        return ExitCode::FAILURE;
    }
    // Enter asks for a round without a save (the cluster changed, a flaky moment).
    let (enter_tx, enter) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if line.is_err() || enter_tx.send(()).is_err() {
                break;
            }
        }
    });
    let mut stage = opts.stage;
    let mut seen = snapshot(&exercises);
    let mut since = Instant::now();
    loop {
        let passed = round(opts, repository, stage, since);
        if passed && stage < 3 {
            stage += 1;
            let (kind, file) = STAGES[usize::from(stage - 1)];
            println!(
                "{}",
                t!(m::WATCH_NEXT, stage = stage, kind = kind, file = file)
            );
        } else if passed {
            println!("{}", m::WATCH_LAST.text());
        } else {
            println!("{}", m::WATCH_WAITING.text());
        }
        let _ = std::io::stdout().flush();
        // Wait for a save (or Enter); then for the editor to finish writing.
        loop {
            if enter.recv_timeout(Duration::from_millis(250)).is_ok() {
                since = Instant::now();
                break;
            }
            let now = snapshot(&exercises);
            if now != seen {
                since = Instant::now();
                seen = settle(&exercises, now);
                break;
            }
        }
    }
}

/// One round: build, and when that works, check `stage`. Whether the check passed.
fn round(cli: &Options, repository: &Path, stage: u8, since: Instant) -> bool {
    if std::io::stdout().is_terminal() {
        // Rustlings clears the screen too: each round replaces the last.
        print!("\x1b[2J\x1b[H");
    }
    let (kind, file) = STAGES[usize::from(stage - 1)];
    println!(
        "{}",
        t!(m::WATCH_HEADER, stage = stage, kind = kind, file = file)
    );
    println!("{}", m::WATCH_BUILDING.text());
    let _ = std::io::stdout().flush();
    let build_started = Instant::now();
    let built = match build(repository) {
        Ok(built) => built,
        Err(e) => {
            println!("{}", t!(m::WATCH_NO_CARGO, error = e));
            return false;
        }
    };
    let build_time = build_started.elapsed();
    let Some(executable) = built.executable.filter(|_| built.errors.is_empty()) else {
        let count = built.errors.len();
        let seconds = format!("{:.1}", build_time.as_secs_f64());
        if count == 1 {
            println!("{}", t!(m::WATCH_NO_COMPILE_ONE, seconds = seconds));
        } else {
            println!(
                "{}",
                t!(m::WATCH_NO_COMPILE, count = count, seconds = seconds)
            );
        }
        for error in built.errors.iter().take(SHOWN) {
            println!("  {error}");
        }
        if count > SHOWN {
            println!("{}", t!(m::WATCH_MORE_ERRORS, count = count - SHOWN));
        }
        if count == 0 {
            // No diagnostic: cargo itself failed (a lock file, the network, …).
            for line in built
                .cargo_said
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(SHOWN)
            {
                println!("  {line}");
            }
        }
        println!("{}", m::WATCH_FIX_IT.text());
        return false;
    };
    // What a save costs is what it recompiles: normally the workshop crate alone.
    let compiled: Vec<&str> = built
        .cargo_said
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("Compiling "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    let recompiled = if compiled.is_empty() {
        m::WATCH_NOTHING_RECOMPILED.text()
    } else {
        t!(m::WATCH_RECOMPILED, crates = compiled.join(", "))
    };
    println!(
        "{}",
        t!(
            m::WATCH_BUILT,
            seconds = format!("{:.1}", build_time.as_secs_f64()),
            recompiled = recompiled
        )
    );
    for warning in built.warnings.iter().take(3) {
        println!("  {warning}");
    }
    let _ = std::io::stdout().flush();
    let check_started = Instant::now();
    let mut check = Command::new(&executable);
    check
        .arg("check")
        .arg(stage.to_string())
        .current_dir(repository);
    if let Some(lang) = &cli.lang {
        check.args(["--lang", lang]);
    }
    if cli.cluster {
        check.arg("--cluster");
    }
    if let Some(participant) = &cli.participant {
        check.args(["--participant", participant]);
    }
    if let Some(timeout) = cli.timeout {
        check.args(["--timeout", &timeout.to_string()]);
    }
    let passed = match check.status() {
        Ok(status) => status.success(),
        Err(e) => {
            println!(
                "{}",
                t!(
                    m::WATCH_CANNOT_RUN,
                    program = executable.display(),
                    error = e
                )
            );
            false
        }
    };
    let verdict = if passed {
        m::WATCH_PASSED
    } else {
        m::WATCH_NOT_YET
    };
    println!(
        "{}",
        t!(
            verdict,
            stage = stage,
            total = format!("{:.1}", since.elapsed().as_secs_f64()),
            build = format!("{:.1}", build_time.as_secs_f64()),
            check = format!("{:.1}", check_started.elapsed().as_secs_f64())
        )
    );
    passed
}

/// What one `cargo build` produced.
struct Built {
    /// The `math-workshop` binary, when it was built.
    executable: Option<PathBuf>,
    /// The compile errors of the workshop crate, one line each (`file:line:col: error…`).
    errors: Vec<String>,
    /// Its warnings about the exercises, one line each.
    warnings: Vec<String>,
    /// cargo's own stderr (progress, or why it could not build at all).
    cargo_said: String,
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
fn build(repository: &Path) -> std::io::Result<Built> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        if set_by_cargo_run(&name.to_string_lossy()) {
            command.env_remove(name);
        }
    }
    let output = command
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
        .output()?;
    let mut built = Built {
        executable: None,
        errors: Vec::new(),
        warnings: Vec::new(),
        cargo_said: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let ours = message["package_id"]
            .as_str()
            .is_some_and(|id| id.contains("math-workshop@") || id.ends_with("#math-workshop"));
        match message["reason"].as_str() {
            // The package's one binary (whatever its name).
            Some("compiler-artifact") if ours && !message["executable"].is_null() => {
                built.executable = message["executable"].as_str().map(PathBuf::from);
            }
            Some("compiler-message") if ours => {
                let rendered = message["message"]["rendered"].as_str().unwrap_or_default();
                let text = rendered.trim().to_string();
                match message["message"]["level"].as_str() {
                    Some("error") if !text.starts_with("error: aborting") => {
                        built.errors.push(text)
                    }
                    Some("warning") if text.contains("workshop/src/exercises/") => {
                        built.warnings.push(text)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !output.status.success() && built.errors.is_empty() && built.executable.is_some() {
        // Built, yet cargo failed: say why rather than run a stale binary.
        built.executable = None;
    }
    Ok(built)
}

/// The variables `cargo run` sets for the program it runs (this watch) that a build must not
/// inherit: cargo compares build scripts' `rerun-if-env-changed` variables with its own
/// environment, and ring's build script names `CARGO_PKG_NAME` and `CARGO_MANIFEST_DIR`. With
/// this watch's values, the build rebuilt ring and everything above it (11–36 s), and the next
/// `make workshop-check` rebuilt them back.
pub fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || matches!(
            name,
            "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE" | "LD_LIBRARY_PATH"
        )
}

/// Each exercise file's modification time and size.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (SystemTime, u64)> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
                .filter_map(|e| {
                    let meta = e.metadata().ok()?;
                    Some((e.path(), (meta.modified().ok()?, meta.len())))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the files stop changing (an editor may write a file in several steps, or save
/// several at once), then returns how they are.
fn settle(
    dir: &Path,
    mut last: BTreeMap<PathBuf, (SystemTime, u64)>,
) -> BTreeMap<PathBuf, (SystemTime, u64)> {
    loop {
        std::thread::sleep(Duration::from_millis(150));
        let now = snapshot(dir);
        if now == last {
            return now;
        }
        last = now;
    }
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
}
