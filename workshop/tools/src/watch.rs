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
use std::process::{Command, ExitCode};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use crate::STAGES;
use crate::messages as m;
use crate::t;

mod build;

use build::Built;

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

/// What started a round: its last line says how long that took to become an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// The watch's first round.
    Start,
    /// A save of an exercise file: the time is the save's.
    Save,
    /// Enter.
    Enter,
}

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
    // Stage 0 (exercise 1a) is the first half of stage 1: its first two lines.
    let mut stage = opts.stage.max(1);
    if opts.stage == 0 {
        println!("{}", m::STAGE_ZERO_WATCH.text());
    }
    let mut seen = snapshot(&exercises);
    let mut since = (Instant::now(), Trigger::Start);
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
                since = (Instant::now(), Trigger::Enter);
                break;
            }
            let now = snapshot(&exercises);
            if now != seen {
                since = (Instant::now(), Trigger::Save);
                seen = settle(&exercises, now);
                break;
            }
        }
    }
}

/// One round: build, and when that works, check `stage`. Whether the check passed.
fn round(
    cli: &Options,
    repository: &Path,
    stage: u8,
    (since, trigger): (Instant, Trigger),
) -> bool {
    header(stage);
    let build_started = Instant::now();
    let built = match build::build(repository) {
        Ok(built) => built,
        Err(e) => {
            println!("{}", t!(m::WATCH_NO_CARGO, error = e));
            return false;
        }
    };
    let build_time = build_started.elapsed();
    let Some(executable) = built.executable.clone().filter(|_| built.errors.is_empty()) else {
        did_not_compile(&built, build_time);
        return false;
    };
    compiled(&built, build_time);
    let check_started = Instant::now();
    let passed = check(cli, repository, stage, &executable);
    // "after the save" only when a save started the round.
    let verdict = match (passed, trigger) {
        (true, Trigger::Save) => m::WATCH_PASSED,
        (true, _) => m::WATCH_PASSED_NOW,
        (false, Trigger::Save) => m::WATCH_NOT_YET,
        (false, _) => m::WATCH_NOT_YET_NOW,
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

/// A round's first lines: the stage, its file, and that the build has begun.
fn header(stage: u8) {
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
}

/// The exercises do not compile: how many errors, the first [`SHOWN`] of them one line each
/// (or cargo's own words when it failed without a diagnostic), and what to do.
fn did_not_compile(built: &Built, build_time: Duration) {
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
}

/// The build worked: how long it took, what it recompiled, and the exercises' first warnings.
fn compiled(built: &Built, build_time: Duration) {
    // What a save costs is what it recompiles: normally the workshop crate alone.
    let compiled = recompiled(&built.cargo_said);
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
}

/// The crates cargo's progress lines say it compiled (`Compiling math-workshop v0.1.0 (…)`).
fn recompiled(cargo_said: &str) -> Vec<&str> {
    cargo_said
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("Compiling "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect()
}

/// Runs the check of `stage` with the binary just built; whether it passed.
fn check(cli: &Options, repository: &Path, stage: u8, executable: &Path) -> bool {
    let status = Command::new(executable)
        .args(check_args(cli, stage))
        .current_dir(repository)
        .status();
    match status {
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
    }
}

/// `check <stage>` and the watch's own options passed on to it.
fn check_args(cli: &Options, stage: u8) -> Vec<String> {
    let mut args = vec!["check".to_string(), stage.to_string()];
    if let Some(lang) = &cli.lang {
        args.extend(["--lang".to_string(), lang.clone()]);
    }
    if cli.cluster {
        args.push("--cluster".to_string());
    }
    if let Some(participant) = &cli.participant {
        args.extend(["--participant".to_string(), participant.clone()]);
    }
    if let Some(timeout) = cli.timeout {
        args.extend(["--timeout".to_string(), timeout.to_string()]);
    }
    args
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
    fn the_check_gets_the_watchs_options() {
        let mut opts = Options {
            stage: 1,
            cluster: false,
            participant: None,
            timeout: None,
            lang: None,
        };
        assert_eq!(check_args(&opts, 2), ["check", "2"]);
        opts.cluster = true;
        opts.participant = Some("alice".into());
        opts.timeout = Some(30);
        opts.lang = Some("ja".into());
        assert_eq!(
            check_args(&opts, 3),
            [
                "check",
                "3",
                "--lang",
                "ja",
                "--cluster",
                "--participant",
                "alice",
                "--timeout",
                "30"
            ]
        );
    }

    #[test]
    fn what_a_save_recompiled_is_read_from_cargos_progress() {
        let said = "   Compiling math-workshop-kit v0.1.0 (/r/workshop/kit)\n   \
                    Compiling math-workshop v0.1.0 (/r/workshop)\n    Finished `workshop` profile\n";
        assert_eq!(recompiled(said), ["math-workshop-kit", "math-workshop"]);
        assert!(recompiled("    Finished `dev` profile\n").is_empty());
    }
}
