//! The project speaks of itself only: a reader of the repository has the repository, not the
//! machine it was developed on. No file that git tracks (README, docs/, the workshop's guides,
//! hack/, sources and their test comments) may name a folder outside the repository
//! (a sibling folder), a development machine's absolute paths (its work folder, root's home) or the
//! hand-built control plane's folder and lock file. A number measured on a real control plane
//! says which server and version instead, and how to reproduce it against any cluster
//! (`KUBECONFIG=… make bench CLUSTER=1`).

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/tree.rs"]
mod tree;

/// The words that name what a reader cannot have. Assembled from pieces so that this file,
/// which git tracks too, does not contain them.
fn forbidden() -> Vec<String> {
    vec![
        ["..", "/shared"].concat(),
        ["/wo", "rk/"].concat(),
        ["/ro", "ot/"].concat(),
        ["real", "k8s"].concat(),
    ]
}

/// Every file git tracks (or, outside a git checkout, every file but `target/` and dot-folders).
fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output();
    match listed {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => out
            .stdout
            .split(|b| *b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| root.join(String::from_utf8_lossy(name).as_ref()))
            .collect(),
        _ => tree::files_below(root, |_| true),
    }
}

/// `file:line: text` for every line that names a forbidden path.
fn offending_lines(root: &Path, path: &Path, words: &[String]) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new(); // binary or vanished (a deleted but still listed file)
    };
    let shown = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    text.lines()
        .enumerate()
        .filter(|(_, line)| words.iter().any(|w| line.contains(w.as_str())))
        .map(|(n, line)| format!("{shown}:{}: {}", n + 1, line.trim()))
        .collect()
}

#[test]
fn no_file_names_a_development_machine_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let words = forbidden();
    let files = tracked_files(root);
    assert!(
        files.len() > 50,
        "found only {} files under {}",
        files.len(),
        root.display()
    );
    let found: Vec<String> = files
        .iter()
        .flat_map(|path| offending_lines(root, path, &words))
        .collect();
    assert!(
        found.is_empty(),
        "{} line(s) name a path a reader of the repository cannot have ({}); say which server \
         and version a number came from and how to reproduce it with any cluster instead:\n{}",
        found.len(),
        words.join(", "),
        found.join("\n")
    );
}

#[test]
fn the_words_are_caught() {
    let words = forbidden();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let sample = dir.path().join("sample.md");
    let line = format!("run {}/up.sh", words[0]);
    std::fs::write(&sample, format!("fine\n{line}\n")).expect("write the sample");
    let found = offending_lines(dir.path(), &sample, &words);
    assert_eq!(found, vec![format!("sample.md:2: {line}")]);
}
