//! `make workshop-verify` as a cargo test, so that `make test` (what CI runs) covers it: every
//! stage's check passes on the reference solutions, and reports failures on the untouched
//! starter code, with the hint a newcomer needs first, without crashing (exit code 1, not a
//! panic's 101). The real binary runs, as a learner runs it.

use std::process::Command;

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn check(stage: u8, solution: bool) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.args(["check", &stage.to_string()]);
    if solution {
        // Generous: only a failing expectation waits this long.
        cmd.args(["--solution", "--timeout", "60"]);
    } else {
        // Every expectation of the starter fails; keep the waits short.
        cmd.args(["--timeout", "3"]);
    }
    let output = cmd.output().expect("math-workshop runs");
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The `N passed, M failed` line.
fn summary(ran: &Ran) -> (usize, usize) {
    let last = ran.stdout.lines().last().unwrap_or_default();
    let numbers: Vec<usize> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        last.ends_with(" failed") && numbers.len() == 2,
        "the last line is `N passed, M failed`, not {last:?}:\n{}{}",
        ran.stdout,
        ran.stderr
    );
    (numbers[0], numbers[1])
}

fn solution_passes(stage: u8) {
    let ran = check(stage, true);
    let (passed, failed) = summary(&ran);
    assert_eq!(
        (ran.code, failed),
        (Some(0), 0),
        "stage {stage}'s reference solution fails its check:\n{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(
        passed >= 10,
        "stage {stage}'s check has {passed} expectations only"
    );
    assert!(!ran.stdout.contains('✗'), "{}", ran.stdout);
}

/// Whether the learner has edited `workshop/src/exercises/`: then the starter is no longer the
/// starter, and "it fails" says nothing (CI runs on a clean clone, where it is untouched).
fn exercises_edited() -> bool {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    Command::new("git")
        .args([
            "-C",
            repo,
            "diff",
            "--quiet",
            "HEAD",
            "--",
            "workshop/src/exercises",
        ])
        .status()
        .is_ok_and(|status| status.code() == Some(1))
}

fn starter_fails(stage: u8, first_hint: &str) {
    if exercises_edited() {
        eprintln!(
            "not checking that the starter of stage {stage} fails: you have edited workshop/src/exercises/ \
             (`make workshop-check STAGE={stage}` checks your work)"
        );
        return;
    }
    let ran = check(stage, false);
    let (_, failed) = summary(&ran);
    assert_eq!(
        ran.code,
        Some(1),
        "the starter's check of stage {stage} ends with exit code 1:\n{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(failed > 0);
    assert!(
        ran.stdout.contains(first_hint),
        "the starter's check of stage {stage} says {first_hint:?}:\n{}",
        ran.stdout
    );
    assert!(
        !ran.stderr.contains("panicked at"),
        "the checker reports a todo!() as a hint, not as a panic on stderr:\n{}",
        ran.stderr
    );
}

#[test]
fn stage_1_solution_passes() {
    solution_passes(1);
}

#[test]
fn stage_2_solution_passes() {
    solution_passes(2);
}

#[test]
fn stage_3_solution_passes() {
    solution_passes(3);
}

#[test]
fn stage_1_starter_fails_at_the_api_definition() {
    starter_fails(
        1,
        "✗ the Number CRD generated from NumberSpec has spec.value, an integer — add `pub value: i64` to NumberSpec (EXERCISE 1a in workshop/src/exercises/number.rs)",
    );
}

#[test]
fn stage_2_starter_fails_at_its_todo() {
    starter_fails(
        2,
        "the Tuple controller panicked: not yet implemented: EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs (at workshop/src/exercises/tuple.rs:",
    );
}

#[test]
fn stage_3_starter_fails_at_its_todo() {
    starter_fails(
        3,
        "the Fermat controller panicked: not yet implemented: EXERCISE 3a: create or update the child Tuples, in workshop/src/exercises/fermat.rs (at workshop/src/exercises/fermat.rs:",
    );
}
