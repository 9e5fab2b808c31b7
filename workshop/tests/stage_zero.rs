//! `STAGE=0` answers what Stage 0 is (the guide's "define the API", exercise 1a), in one line
//! that says which command checks or runs it, instead of clap's "0 is not in 1..=3".

use std::process::Command;

/// `math-workshop ARGS` in English: its exit code and what it printed.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .args(args)
        .env("LANG", "C.UTF-8")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("KUBECONFIG")
        .output()
        .expect("math-workshop runs");
    let mut said = String::from_utf8_lossy(&output.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code(), said)
}

#[test]
fn stage_zero_is_the_first_half_of_stage_one() {
    let (code, said) = run(&["check", "0"]);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said.trim_end(),
        "error: Stage 0 (define the API: exercise 1a in workshop/src/exercises/number.rs) has no \
         check of its own: make workshop-check STAGE=1 checks it with its first two lines, then \
         the Number controller of exercise 1b"
    );
    let (code, said) = run(&["run", "--stage", "0"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.starts_with(
            "error: stage 0 defines the API and has no controller: make workshop-run STAGE=1"
        ),
        "{said}"
    );
}
