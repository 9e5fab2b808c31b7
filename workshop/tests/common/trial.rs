//! A copy of the repository as a participant has it, shared by the tests that run the
//! learner's `make` commands (`catch_up.rs`, `guide.rs`): so that this repository's own
//! exercises stay as they are while a test catches up with `make workshop-skip`.
//!
//! The copy lives at a fixed place in this repository's target directory and builds into it:
//! the dependencies are compiled already, and a file is only rewritten when it changed, so
//! that the next run rebuilds little. Its binaries get names of their own
//! (`math-workshop-trial`, `math-workshop-tools-trial`, `test-apiserver-trial`,
//! `math-controller-trial`) so that they never replace this repository's, which the other tests
//! run. The tests that use it run in
//! separate test binaries, one after another, and each starts from [`copy`], which puts the
//! committed exercises back.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "cargo_env.rs"]
mod cargo_env;

pub(crate) fn repository() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    dir.canonicalize().unwrap_or(dir)
}

/// The target directory this test was built in.
pub(crate) fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

pub(crate) fn git(args: &[&str]) -> Option<Vec<u8>> {
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
pub(crate) fn copy() -> Option<PathBuf> {
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
            "test-apiserver/Cargo.toml" => renamed(&content, "test-apiserver-trial"),
            // The finished manager, as the guide's last chapter runs it (`cargo run`).
            "Cargo.toml" => renamed(&apart(&content), "math-controller-trial"),
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

/// The workspace manifest with the copy's crates built apart from this repository's: cargo
/// names a path package's build after its path inside the workspace, so without a profile of
/// their own the copy's workspace crates and this repository's would be one build in the shared
/// target directory, and each would link the other's sources: the copy's `math-workshop`
/// (whose exercises are other files) made this repository's binary pass the starter's check;
/// and after a guide test had built the copy's kit, an edit of this repository's kit was not
/// rebuilt at all (its fingerprint named the copy's files). One codegen unit fewer than dev's
/// 256 changes nothing else; each crate is built once more, for the copy, and then only when
/// it changes.
fn apart(manifest: &[u8]) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(manifest).into_owned();
    for crate_name in [
        "math-workshop",
        "math-workshop-kit",
        "math-controller",
        "test-apiserver",
        "serving",
        "kubectl-math",
    ] {
        let section = format!("[profile.dev.package.{crate_name}]\n");
        if text.contains(&section) {
            text = text.replacen(&section, &format!("{section}codegen-units = 255\n"), 1);
        } else {
            text.push_str(&format!("\n{section}codegen-units = 255\n"));
        }
    }
    text.into_bytes()
}

/// A package manifest whose binary (`src/main.rs`) is called `name`.
fn renamed(manifest: &[u8], name: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(manifest);
    // The one binary left is the renamed one: a `default-run` naming another would not load.
    let text: String = text
        .lines()
        .filter(|line| !line.starts_with("default-run"))
        .map(|line| format!("{line}\n"))
        .collect();
    let text = text.replacen("[package]\n", "[package]\nautobins = false\n", 1);
    format!("{text}\n[[bin]]\nname = \"{name}\"\npath = \"src/main.rs\"\n").into_bytes()
}

/// `make ARGS` in the copy, building into this repository's target directory.
pub(crate) fn make(copy: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("make");
    cmd.args(args);
    as_participant(cmd, copy)
}

/// The environment of a participant's terminal in the copy.
pub(crate) fn as_participant(mut cmd: Command, copy: &Path) -> Command {
    // The test's own profile (its dependencies are built already), not the workshop's: a
    // second build of everything would cost minutes and gigabytes per test run.
    cmd.env("WORKSHOP_PROFILE", "dev")
        .env("LC_ALL", "C.UTF-8")
        .current_dir(copy)
        .env("CARGO_TARGET_DIR", target_dir())
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env_remove("MAKEFLAGS")
        // Under make (make workshop-guide-outputs) the inner make would say which directory it
        // enters: a terminal of its own, as the participant has.
        .env_remove("MAKELEVEL");
    cargo_env::forget_the_tests_cargo(&mut cmd);
    cmd
}
