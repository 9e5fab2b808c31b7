//! Catching up and watching, the way a participant does it, on a copy of the repository (so
//! that this repository's own exercises stay as they are): `make workshop-skip STAGE=1` and
//! `STAGE=2`, then stage 3 written by hand (the reference solution typed in), and
//! `make workshop-check STAGE=3` passes; `make workshop-watch STAGE=3` checks, and after a
//! save of an exercise file builds and checks again.
//!
//! The copy lives at a fixed place in this repository's target directory and builds into it:
//! the dependencies are compiled already, and a file is only rewritten when it changed, so
//! that the next run rebuilds little. Its two binaries get names of their own
//! (`math-workshop-trial`, `math-workshop-tools-trial`) so that they never replace this
//! repository's, which the other tests run.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn repository() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    dir.canonicalize().unwrap_or(dir)
}

/// The target directory this test was built in.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

fn git(args: &[&str]) -> Option<Vec<u8>> {
    let output = Command::new("git")
        .arg("-C")
        .arg(repository())
        .args(args)
        .output()
        .ok()?;
    output.status.success().then_some(output.stdout)
}

/// Writes `content` unless the file has it already (an unchanged mtime keeps cargo's
/// fingerprints fresh).
fn sync(path: &Path, content: &[u8]) {
    if std::fs::read(path).is_ok_and(|old| old == content) {
        return;
    }
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

/// A copy of the repository's tracked files, with the exercises as committed (the starter),
/// and the binaries renamed. `None` outside a git checkout.
fn copy() -> Option<PathBuf> {
    let listed = git(&["ls-files", "-z"])?;
    let copy = target_dir().join("tmp/workshop-trial");
    for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        let content = if path.starts_with("workshop/src/exercises/") {
            git(&["show", &format!("HEAD:{path}")]).expect("git show")
        } else {
            match std::fs::read(repository().join(&path)) {
                Ok(content) => content,
                // Deleted in the working tree, not yet committed.
                Err(_) => continue,
            }
        };
        let content = match path.as_str() {
            "workshop/Cargo.toml" => renamed(&content, "math-workshop-trial"),
            "workshop/tools/Cargo.toml" => renamed(&content, "math-workshop-tools-trial"),
            _ => content,
        };
        sync(&copy.join(&path), &content);
    }
    // What an earlier run's skips left.
    for entry in std::fs::read_dir(copy.join("workshop/src/exercises")).expect("the exercises") {
        let path = entry.expect("an entry").path();
        if path.to_string_lossy().contains(".mine") {
            std::fs::remove_file(path).expect("remove");
        }
    }
    Some(copy)
}

/// A package manifest whose binary (`src/main.rs`) is called `name`.
fn renamed(manifest: &[u8], name: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(manifest).replacen(
        "[package]\n",
        "[package]\nautobins = false\n",
        1,
    );
    format!("{text}\n[[bin]]\nname = \"{name}\"\npath = \"src/main.rs\"\n").into_bytes()
}

/// `make ARGS` in the copy, building into this repository's target directory.
fn make(copy: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("make");
    // The test's own profile (its dependencies are built already), not the workshop's: a
    // second build of everything would cost minutes and gigabytes per test run.
    cmd.args(args)
        .arg("WORKSHOP_PROFILE=dev")
        .env("LC_ALL", "C.UTF-8")
        .current_dir(copy)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("RUST_LOG")
        .env_remove("MAKEFLAGS");
    // What cargo set for this test: a build that sees it reruns ring's build script (it names
    // CARGO_PKG_NAME and CARGO_MANIFEST_DIR) and rebuilds everything above it, here and, the
    // target directory being shared, for this repository's next build too.
    for (name, _) in std::env::vars() {
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name.as_str(),
                "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
            )
        {
            cmd.env_remove(name);
        }
    }
    cmd
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn skip_two_stages_write_the_third_check_it_and_watch_it() {
    let Some(copy) = copy() else {
        eprintln!("not a git checkout: the catch-up test needs `git ls-files`");
        return;
    };
    let exercises = copy.join("workshop/src/exercises");
    let starter = |file: &str| {
        git(&["show", &format!("HEAD:workshop/src/exercises/{file}")]).expect("git show")
    };
    let solution = |file: &str| {
        std::fs::read(copy.join("workshop/src/solutions").join(file)).expect("a solution")
    };

    for (stage, file, next) in [(1, "number.rs", "tuple.rs"), (2, "tuple.rs", "fermat.rs")] {
        let skipped = make(&copy, &["workshop-skip", &format!("STAGE={stage}")])
            .output()
            .expect("make runs");
        let said = text(&skipped);
        assert!(skipped.status.success(), "{said}");
        assert!(
            said.contains(&format!(
                "workshop/src/exercises/{file} is now the reference solution.\nYours is kept beside it as \
                 workshop/src/exercises/{file}.mine"
            )) && said.contains(&format!("Go on with stage {} in workshop/src/exercises/{next}", stage + 1)),
            "{said}"
        );
        assert_eq!(
            std::fs::read(exercises.join(file)).expect("read"),
            solution(file)
        );
        assert_eq!(
            std::fs::read(exercises.join(format!("{file}.mine"))).expect("kept"),
            starter(file)
        );
    }

    // Stage 3 in the participant's own hand: the reference solution, typed in.
    std::fs::write(exercises.join("fermat.rs"), solution("fermat.rs")).expect("write");
    let checked = make(&copy, &["workshop-check", "STAGE=3"])
        .output()
        .expect("make runs");
    let said = text(&checked);
    assert!(checked.status.success(), "{said}");
    assert!(
        said.contains("Stage 3: Fermat — your exercises, workshop/src/exercises/fermat.rs")
            && said.contains(" passed, 0 failed"),
        "{said}"
    );

    // The watch: a first round, then a save, then a second round that builds and checks.
    use std::os::unix::process::CommandExt;
    let mut watch = make(&copy, &["workshop-watch", "STAGE=3"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("make runs");
    let (tx, lines) = mpsc::channel();
    let stdout = watch.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let wait_for = |what: &str, seen: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(600);
        while Instant::now() < deadline {
            match lines.recv_timeout(Duration::from_secs(1)) {
                Ok(line) => {
                    let found = line.starts_with(what);
                    seen.push(line);
                    if found {
                        return true;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            }
        }
        false
    };
    let first = wait_for("✓ passed stage 3", &mut seen);
    let rounds_before = seen.iter().filter(|l| l.starts_with("built in")).count();
    let mut fermat = std::fs::read(exercises.join("fermat.rs")).expect("read");
    fermat.extend_from_slice(b"\n// saved again\n");
    std::fs::write(exercises.join("fermat.rs"), fermat).expect("write");
    let second = first && wait_for("✓ passed stage 3", &mut seen);
    let rounds = seen.iter().filter(|l| l.starts_with("built in")).count();
    // The whole group: make, cargo, the watch and its check.
    let _ = Command::new("kill")
        .args(["-TERM", "--", &format!("-{}", watch.id())])
        .status();
    let _ = watch.wait();
    // Back to the committed fermat.rs for the next run's incremental build.
    std::fs::write(exercises.join("fermat.rs"), starter("fermat.rs")).expect("write");
    let shown = seen.join("\n");
    assert!(first, "the watch's first round passes:\n{shown}");
    assert!(second, "a save starts a second round that passes:\n{shown}");
    assert_eq!(
        (rounds_before, rounds),
        (1, 2),
        "one build per round:\n{shown}"
    );
    // `make workshop-check` built everything above: the watch's first build finds nothing to
    // do, and a save recompiles the workshop crate alone (not ring and all above it, as when
    // the build inherited cargo run's environment).
    let builds: Vec<&String> = seen.iter().filter(|l| l.starts_with("built in")).collect();
    assert!(
        builds[0].ends_with("(nothing to recompile)")
            && builds[1].ends_with("(recompiled: math-workshop)"),
        "{builds:?}"
    );
    assert!(
        shown.contains("Stage 3: Fermat — your exercises")
            && shown.contains("That was the last stage."),
        "{shown}"
    );
}
