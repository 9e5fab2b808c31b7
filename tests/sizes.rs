//! What a reader takes in: no source file over [`FILE_LINES`] lines, no function over a screen
//! ([`SCREEN`] lines from its signature to its closing brace, its doc comment not counted). A
//! longer one is split where its steps are (a function per step, a file per question), not
//! squeezed.
//!
//! Held to it: the manager's `src/`, the test API server's `test-apiserver/src/` (every test
//! runs against it, so it is read as often as the manager), and every crate of the folders that
//! hold crates ([`CRATE_FOLDERS`]): `crates/*/src/`, and the learner track's `workshop/src/` and
//! `workshop/*/src/` (the kit, the tools); of each of these crates its `examples/` too ([`HELD`]:
//! the benchmarks, whose printed lines the docs quote). The learner track's code is read by
//! beginners, so it is held to the same rule as the manager's, not a looser one. That includes
//! `workshop/src/exercises/`, the starter files a learner edits: what a learner is handed should
//! look like what they are taught to write (they pass as they are). What a learner writes into
//! them in the room is theirs; this test reads the repository as committed.

use std::path::{Path, PathBuf};

#[path = "common/tree.rs"]
mod tree;

/// The longest source file.
const FILE_LINES: usize = 650;
/// A screen: the longest function.
const SCREEN: usize = 60;

/// Every Rust file below `dir`, sorted (the walk the docs tests share).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    tree::files_below(dir, |name| name.ends_with(".rs"))
}

/// Whether `line` starts a function (at any indentation): `fn`, with `pub`, `pub(crate)`,
/// `const`, `async` or `unsafe` before it.
fn starts_function(line: &str) -> bool {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.next() {
        match word {
            "fn" => return words.peek().is_some(),
            w if w == "pub" || w.starts_with("pub(") => {}
            "const" | "async" | "unsafe" => {}
            _ => return false,
        }
    }
    false
}

/// The functions of `text` longer than `limit` lines: (first line, lines). A function ends
/// at the first line that is its signature's indentation and `}`; a declaration without a
/// body (a trait's) is none.
fn long_functions(text: &str, limit: usize) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (first, line) in lines.iter().enumerate() {
        if !starts_function(line) {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let Some(open) = (first..lines.len()).find(|&i| {
            let l = lines[i].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let end = format!("{indent}}}");
        let Some(last) = (open..lines.len()).find(|&i| lines[i] == end) else {
            continue;
        };
        let span = last - first + 1;
        if span > limit {
            long.push((first + 1, span));
        }
    }
    long
}

/// The folders whose every child with a `src/` is a crate held to the sizes, as is a `src/` of
/// the folder itself (the learner track's `workshop/` is a crate that holds two more).
const CRATE_FOLDERS: [&str; 2] = ["crates", "workshop"];

/// A crate's folders held to the sizes: its sources and its examples. An example is code a
/// reader opens as often as the crate's own (the benchmark, whose output the docs quote), so a
/// new one is held without this test naming it.
const HELD: [&str; 2] = ["src", "examples"];

/// Every Rust file of the [`HELD`] folders of the crate at `krate`.
fn crate_files(krate: &Path) -> Vec<PathBuf> {
    HELD.iter()
        .flat_map(|held| rust_files(&krate.join(held)))
        .collect()
}

/// Every Rust file of `folder`'s and of each `folder/*`'s [`HELD`] folders, so that a crate that
/// moves into such a folder, or a new one, is held to the sizes without this test naming it.
fn crate_sources(folder: &Path) -> Vec<PathBuf> {
    let mut files = crate_files(folder);
    if let Ok(crates) = std::fs::read_dir(folder) {
        for krate in crates.flatten() {
            files.extend(crate_files(&krate.path()));
        }
    }
    files
}

/// The sources held to the sizes: the manager's and the test API server's [`HELD`] folders
/// and the crates of [`CRATE_FOLDERS`]. Returns the repository root (to name files by) and the
/// files.
fn sources() -> (PathBuf, Vec<PathBuf>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = crate_files(&root);
    // The test API server: every test runs against it, so it is read as often as the manager.
    files.extend(crate_files(&root.join("test-apiserver")));
    for folder in CRATE_FOLDERS {
        files.extend(crate_sources(&root.join(folder)));
    }
    files.sort();
    (root, files)
}

#[test]
fn no_source_file_is_longer_than_a_reader_takes_in() {
    let (src, files) = sources();
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            let relative = f.strip_prefix(&src).unwrap_or(f).display().to_string();
            (lines > FILE_LINES).then(|| format!("{relative}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "over {FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let (src, files) = sources();
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let relative = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, span) in long_functions(&text, SCREEN) {
            long.push(format!("{relative}:{line}: {span} lines"));
        }
    }
    assert!(long.is_empty(), "over {SCREEN} lines:\n{}", long.join("\n"));
}

#[test]
fn a_long_function_is_found_and_a_declaration_is_not_one() {
    let body = "    let x = 1;\n".repeat(SCREEN);
    let text = format!(
        "trait T {{\n    fn declared(&self);\n}}\n\
         impl S {{\n    pub(crate) async fn long(&self) {{\n{body}    }}\n\n    fn short() {{}}\n}}\n"
    );
    assert_eq!(long_functions(&text, SCREEN), [(5, SCREEN + 2)]);
    assert!(starts_function("pub const fn f() {"));
    assert!(!starts_function("let fn_name = 1;"));
}

#[test]
fn the_learner_tracks_crates_and_exercises_are_held_too() {
    let (root, files) = sources();
    for held in [
        "src/main.rs",
        "crates/kubectl-math/src/main.rs",
        "workshop/src/lib.rs",
        "workshop/src/exercises/number.rs",
        "workshop/kit/src/app.rs",
        "workshop/tools/src/watch.rs",
        "examples/bench/main.rs",
        "crates/kubectl-math/examples/tree_bench.rs",
        "test-apiserver/src/lib.rs",
        "test-apiserver/src/server/routing.rs",
        "test-apiserver/src/bin/diff-servers.rs",
    ] {
        assert!(files.contains(&root.join(held)), "{held} is not walked");
    }
}
