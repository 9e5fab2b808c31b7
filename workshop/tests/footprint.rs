//! The day's footprint: everything the workshop builds shares one cargo profile (`workshop`,
//! no debug information in the dependencies), so that a laptop holds one build of kube,
//! k8s-openapi and the rest, not two. A `make workshop-…` target or a command of the guides that
//! built with another profile (cargo's default `dev`, or `--release`) would compile every
//! dependency again, minutes and gigabytes on a participant's laptop, in the room. (What the
//! profile saves is measured, not tested: the guide's "Get it and build it at home".)

use std::path::{Path, PathBuf};
use std::process::Command;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The cargo commands that build something (`cargo run`, `build`, `install`) in `text`.
fn builds(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        for (at, _) in line.match_indices("cargo ") {
            let rest = &line[at..];
            let command: String = rest
                .split(['`', '|', ';', ')'])
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            let verb = command.split_whitespace().nth(1).unwrap_or_default();
            if matches!(verb, "run" | "build" | "install") {
                found.push(command);
            }
        }
    }
    found
}

fn outside_the_profile(commands: Vec<String>) -> Vec<String> {
    commands
        .into_iter()
        .filter(|c| !c.contains("--profile workshop"))
        .collect()
}

#[test]
fn every_workshop_make_target_builds_with_the_workshop_profile() {
    let mut wrong = Vec::new();
    for target in [
        "workshop-prepare",
        "workshop-crds",
        "workshop-install",
        "workshop-run",
        "workshop-check",
        "workshop-watch",
        "workshop-skip",
        "workshop-verify",
    ] {
        let output = Command::new("make")
            .args(["-n", "--no-print-directory", target])
            .current_dir(repository())
            .env_remove("MAKEFLAGS")
            .output()
            .expect("make runs");
        let said = String::from_utf8_lossy(&output.stdout);
        let commands = builds(&said);
        assert!(
            !commands.is_empty(),
            "make -n {target} runs no cargo:\n{said}"
        );
        for command in outside_the_profile(commands) {
            wrong.push(format!("{target}: {command}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "built with another profile than the workshop's:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_guides_and_the_tools_tell_the_participant_the_workshop_profile() {
    let mut wrong = Vec::new();
    for file in [
        "workshop/README.md",
        "workshop/README.ja.md",
        "workshop/CHEATSHEET.md",
        "workshop/CHEATSHEET.ja.md",
        "workshop/kit/src/messages/check.rs",
        "workshop/kit/src/messages/run.rs",
        "workshop/kit/src/messages/room.rs",
        "workshop/kit/src/messages/cluster.rs",
        "workshop/kit/src/messages/tools.rs",
        "workshop/kit/src/messages/cli.rs",
        "workshop/kit/src/messages/doctor.rs",
        "workshop/kit/src/cluster.rs",
    ] {
        let text = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        // A command broken across two lines of Markdown is one command.
        let joined = text.replace(" -p\n", " -p ");
        for command in outside_the_profile(builds(&joined)) {
            wrong.push(format!("{file}: {command}"));
        }
        if text.contains("target/debug/") {
            wrong.push(format!("{file}: target/debug/"));
        }
    }
    assert!(
        wrong.is_empty(),
        "commands a participant copies that would build everything again:\n{}",
        wrong.join("\n")
    );
}

/// What the learner's crate (`math-workshop`, rebuilt on every save) compiles besides the
/// exercises and its two entry points (`lib.rs`, `main.rs`): its other source files, and the
/// modules `lib.rs` declares other than `exercises`. (`src/solutions/` lies beside the exercises
/// for the guides and `make workshop-skip`, but is math-workshop-kit's module.)
fn compiled_with_the_exercises(workshop: &Path) -> Vec<String> {
    let src = workshop.join("src");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&src).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !matches!(
            name.as_str(),
            "lib.rs" | "main.rs" | "exercises" | "solutions"
        ) {
            found.push(format!("workshop/src/{name}"));
        }
    }
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    for line in lib.lines().map(str::trim) {
        let declared = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "));
        if let Some(module) = declared.map(|m| m.trim_end_matches(';'))
            && module != "exercises"
        {
            found.push(format!("lib.rs: mod {module}"));
        }
    }
    found
}

/// A save in `make workshop-watch` recompiles the crate that holds the exercises, and links
/// it. With the checker, the runner, the messages and the solutions in that crate too, each
/// save recompiled all of them (about 5 000 lines): they are math-workshop-kit, built once by
/// `make workshop-prepare`, and the exercises' crate re-exports it. (What that saves is measured
/// in the guide's "The edit and check loop", not here.)
#[test]
fn a_save_recompiles_the_exercises_alone() {
    let found = compiled_with_the_exercises(&repository().join("workshop"));
    assert!(
        found.is_empty(),
        "the crate rebuilt on every save compiles more than the exercises: {}",
        found.join(", ")
    );
}
