//! A room whose participant wrote the exercises, not `--solution`. On a copy of the repository
//! (`common/trial.rs`), the exercises are filled in as a participant fills them: Stage 0's types
//! typed from the guide's snippets (which, like the exercise's hint, carry no doc comment on
//! `observed_generation`, where the reference solution has one), the rest as the reference
//! solutions. The organiser sets a room up on the test API server in HTTPS mode; with their
//! file alone, the participant's stages 1–3 pass with `CLUSTER=1`, `make workshop-install`
//! says the room's CRDs are the same schema as theirs, and their runner does not tell them to
//! install again: one story, not a contradiction (the digests leave descriptions out).

use std::path::Path;
use std::process::{Command, Output, Stdio};

// The room's test uses the copy, not the make targets of the copy.
#[allow(dead_code)]
#[path = "common/trial.rs"]
mod trial;

use test_apiserver::{ServerOptions, TestServer};
use trial::{as_participant, copy, repository, target_dir};

/// The guide's Stage 0 snippets (```rust blocks under "Stage 0"): the two types as the
/// participant types them.
fn guides_stage_0_types() -> Vec<String> {
    let guide = std::fs::read_to_string(repository().join("workshop/README.md")).expect("guide");
    let stage_0 = guide
        .split("\n## Stage 0")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a Stage 0 chapter");
    let blocks: Vec<String> = stage_0
        .split("```rust\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next().map(str::to_string))
        .filter(|block| block.starts_with("pub struct Number"))
        .collect();
    assert_eq!(blocks.len(), 2, "the guide's two Stage 0 types: {blocks:?}");
    blocks
}

/// `solution` (a Rust file) with the struct each of `types` defines replaced by it.
fn with_types(solution: &str, types: &[String]) -> String {
    let mut text = solution.to_string();
    for typed in types {
        let head = typed
            .lines()
            .next()
            .unwrap_or_default()
            .trim_end_matches(" {");
        let at = text
            .find(&format!("{head} {{"))
            .expect("the type in the solution");
        let end = at + text[at..].find("\n}\n").expect("the type's end") + 3;
        text.replace_range(at..end, typed);
    }
    // The solution's doc comments on the types' fields go with them: the snippets carry none.
    text
}

/// Fills in the copy's exercises as a participant would, and builds its `math-workshop`.
fn exercise_shaped(copy: &Path) -> std::path::PathBuf {
    let solutions = repository().join("workshop/src/solutions");
    let exercises = copy.join("workshop/src/exercises");
    let read = |file: &str| std::fs::read_to_string(solutions.join(file)).expect("a solution");
    let number = with_types(&read("number.rs"), &guides_stage_0_types());
    assert!(
        !number.contains("spec version) this status describes"),
        "{number}"
    );
    std::fs::write(exercises.join("number.rs"), number).expect("number.rs");
    for file in ["tuple.rs", "fermat.rs"] {
        std::fs::write(exercises.join(file), read(file)).expect("a stage's file");
    }
    let mut build = Command::new("cargo");
    build.args([
        "build",
        "--locked",
        "--profile",
        "dev",
        "-p",
        "math-workshop",
    ]);
    let built = as_participant(build, copy).output().expect("cargo runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    target_dir().join("debug/math-workshop-trial")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `binary ARGS` with `kubeconfig`, from a fresh HOME.
fn run(binary: &Path, kubeconfig: &Path, args: &[&str]) -> Command {
    let home = tempfile::tempdir().expect("a fresh HOME");
    let mut cmd = Command::new(binary);
    cmd.env("LC_ALL", "C.UTF-8")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home.keep())
        .env_remove("RUST_LOG")
        .current_dir(repository())
        .args(args);
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exercise_shaped_track_passes_in_a_room_without_a_contradiction() {
    let Some(copy) = copy() else {
        eprintln!("not a git checkout: the exercise-shaped room needs `git ls-files`");
        return;
    };
    let trial = exercise_shaped(&copy);
    let server = TestServer::start_with(ServerOptions {
        https: true,
        ..Default::default()
    })
    .await
    .expect("the HTTPS test API server");
    server.enforce_rbac();
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    let organiser = Path::new(env!("CARGO_BIN_EXE_math-workshop"));
    let set_up = run(
        organiser,
        &server.kubeconfig_path(),
        &[
            "room",
            "--dir",
            &room.display().to_string(),
            "--server",
            &server.url(),
            "alice",
        ],
    )
    .output()
    .expect("the organiser's command runs");
    assert!(set_up.status.success(), "{}", said(&set_up));
    let alice = room.join("alice.kubeconfig");

    for stage in ["1", "2", "3"] {
        let check = run(
            &trial,
            &alice,
            &["check", stage, "--cluster", "--participant", "alice"],
        )
        .output()
        .expect("the check runs");
        let text = said(&check);
        assert_eq!(check.status.code(), Some(0), "stage {stage}:\n{text}");
        assert!(
            text.contains("Stage ") && text.contains(" — your exercises, "),
            "{text}"
        );
    }
    let install = run(&trial, &alice, &["install", "--participant", "alice"])
        .output()
        .expect("install runs");
    assert_eq!(
        String::from_utf8_lossy(&install.stdout).lines().last(),
        Some(
            "nothing installed: this is a room's shared cluster, and the organiser installed the \
             CRDs (the reference solution's, the same schema as yours)"
        ),
        "{}",
        said(&install)
    );
    // The runner's first lines: who and where, running, and no word about installing again.
    let mut runner = run(
        &trial,
        &alice,
        &["run", "--stage", "3", "--participant", "alice"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("the runner starts");
    std::thread::sleep(std::time::Duration::from_secs(5));
    let _ = runner.kill();
    let output = runner.wait_with_output().expect("the runner's output");
    let text = said(&output);
    assert!(
        text.contains("controllers running in namespace math-workshop-alice"),
        "{text}"
    );
    assert!(!text.contains("workshop-install"), "{text}");
    assert!(!text.contains("is not the one"), "{text}");
    server.shutdown().await;
}
