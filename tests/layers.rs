//! The imports run one way: ops → controller → reconcile → cluster → the facts below them
//! (src/lib.rs draws the map). A module that reaches back up (cluster/ using a type of
//! reconcile/, say) makes a reader walk up and down to follow one reconcile; this test names
//! the line that does it. Comments are not imports: a doc link may point anywhere. The
//! generic rooms (the scheduler, the kube glue, the reconcile) name no kind, and no source
//! file or function is longer than a reader takes in (`tests/sizes.rs`).

use std::path::{Path, PathBuf};

#[path = "common/tree.rs"]
mod tree;

/// Each top-level module of the library and its layer: a module may use its own layer's
/// files and any lower layer's, never a higher one, nor a different module of its own layer.
const LAYERS: &[(&str, u8)] = &[
    ("cli", 6),
    ("ops", 5),
    ("controller", 4),
    ("reconcile", 3),
    ("cluster", 2),
    ("kind", 1),
    ("scheduler", 1),
    ("api", 0),
    ("math", 0),
    ("metrics", 0),
    ("error", 0),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every Rust file below `dir`, sorted (the walk the docs tests share).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    tree::files_below(dir, |name| name.ends_with(".rs"))
}

/// The top-level module a file of `src/` belongs to (`src/cluster/cache.rs` → `cluster`).
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// Every `crate::<module>` a line of code names, comments left out.
fn uses(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // `math_controller::` or `$crate::` are other paths.
            !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
        })
        .map(|(at, _)| {
            code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// The lines of `files` (paths under `src`) whose imports run against the layers.
fn upward(src: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut bad = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(file);
        let Some(from) = module_of(relative) else {
            continue;
        };
        let Some(from_layer) = layer(&from) else {
            continue; // lib.rs, main.rs, bin/: the crate roots, above everything
        };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            for to in uses(line) {
                if to == from {
                    continue;
                }
                let Some(to_layer) = layer(&to) else {
                    bad.push(format!(
                        "{}:{}: uses crate::{to}, a module with no layer in LAYERS",
                        relative.display(),
                        n + 1
                    ));
                    continue;
                };
                if to_layer >= from_layer {
                    bad.push(format!(
                        "{}:{}: {from} (layer {from_layer}) uses crate::{to} (layer {to_layer}): {}",
                        relative.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    bad
}

#[test]
fn no_module_imports_one_above_it_or_beside_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = rust_files(&src);
    let bad = upward(&src, &files);
    assert!(
        bad.is_empty(),
        "imports that run back up (move what both need to the lower layer):\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_use_that_runs_back_up_is_found() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cluster = dir.path().join("cluster");
    std::fs::create_dir(&cluster).expect("cluster/");
    let file = cluster.join("watches.rs");
    std::fs::write(
        &file,
        "//! See [`crate::reconcile::plan`].\n\
         use crate::kind::Child;\n\
         use crate::reconcile::plan::Step; // back up\n\
         use math_controller::reconcile::x;\n",
    )
    .expect("write");
    let bad = upward(dir.path(), &[file]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("cluster/watches.rs:3: cluster (layer 2) uses crate::reconcile"));
}

/// What the manager never runs, each used by a workspace crate of its own (the terminal of
/// `kubectl math`, crates/kubectl-math): named nowhere in `src/` nor among the manager's
/// dependencies, so the manager's binary and library do not carry it.
const NOT_THE_MANAGERS: &[&str] = &["crossterm"];

/// What the probe and metrics servers are built on (crates/serving): the manager reaches them
/// through that crate only, so that serving HTTP stays in one place.
const THE_SERVERS: &[&str] = &[
    "axum",
    "hyper-util",
    "hyper_util",
    "tokio-rustls",
    "rcgen",
    "lru",
];

/// The lines of the manager's `Cargo.toml` `[dependencies]` and of `files` (under `src`) that
/// name one of `names`, comments left out.
fn naming(manifest: &str, src: &Path, files: &[PathBuf], names: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            in_dependencies = line.trim() == "[dependencies]";
        } else if in_dependencies && names.iter().any(|n| line.trim_start().starts_with(n)) {
            found.push(format!("Cargo.toml [dependencies]: {}", line.trim()));
        }
    }
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if names.iter().any(|name| code.contains(name)) {
                let relative = file.strip_prefix(src).unwrap_or(file);
                found.push(format!("{}:{}: {}", relative.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_manager_does_not_carry_what_only_the_plugin_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml reads");
    let src = root.join("src");
    let files = rust_files(&src);
    let found = naming(&manifest, &src, &files, NOT_THE_MANAGERS);
    assert!(
        found.is_empty(),
        "the manager names what only another workspace crate runs (move it there):\n{}",
        found.join("\n")
    );
    let found = naming(&manifest, &src, &files, THE_SERVERS);
    assert!(
        found.is_empty(),
        "the manager serves HTTP itself (use crates/serving):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_dependency_or_a_use_of_what_the_manager_does_not_run_is_found() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("watch.rs");
    std::fs::write(
        &file,
        "//! Drawn with crossterm.\nuse crossterm::terminal;\n",
    )
    .expect("write");
    let manifest =
        "[dependencies]\ncrossterm = \"0.29\"\n[dev-dependencies]\ncrossterm = \"0.29\"\n";
    let found = naming(manifest, dir.path(), &[file], &["crossterm"]);
    assert_eq!(
        found,
        [
            "Cargo.toml [dependencies]: crossterm = \"0.29\"",
            "watch.rs:2: use crossterm::terminal;"
        ]
    );
}

/// How many lines the top-level function that starts with `start` spans in `text`, from
/// its first line to its closing brace (doc comment not counted).
fn function_lines(text: &str, start: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| l.starts_with(start))?;
    let last = (first..lines.len()).find(|&i| lines[i] == "}")?;
    Some(last - first + 1)
}

/// A screen: what a reader takes in without scrolling.
const SCREEN: usize = 60;

/// The reconcile reads as its steps: `parent` (look, plan, apply, write the status) and
/// `apply` (create, correct, adopt, delete, tell) each fit one screen, and each step is a
/// function of its own.
#[test]
fn the_reconcile_and_its_writes_each_fit_one_screen() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/reconcile");
    for (file, start) in [
        ("mod.rs", "pub async fn parent<"),
        ("writes.rs", "pub async fn apply<"),
    ] {
        let text = std::fs::read_to_string(src.join(file)).expect("the file reads");
        let lines = function_lines(&text, start).expect("the function is there");
        assert!(
            lines <= SCREEN,
            "reconcile/{file}: `{start}` spans {lines} lines, more than a screen ({SCREEN}); \
             make its steps functions of their own"
        );
    }
}

/// `Context` is a thin struct of named parts: what the manager remembers lives in those
/// parts (each in its own file under reconcile/memory/, with its own tests), not in context.rs.
#[test]
fn the_context_holds_parts_not_memories() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/reconcile/context.rs");
    let text = std::fs::read_to_string(file).expect("context.rs reads");
    let code: Vec<&str> = (text.lines())
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    for memory in ["Expiring<", "Mutex<", "HashMap<", "HashSet<"] {
        let at: Vec<usize> = (code.iter().enumerate())
            .filter(|(_, l)| l.contains(memory))
            .map(|(n, _)| n + 1)
            .collect();
        assert!(
            at.is_empty(),
            "reconcile/context.rs keeps a memory of its own ({memory} on lines {at:?}); \
             give it a part of its own under reconcile/memory/"
        );
    }
}

/// The rooms that work for any kind: the scheduler, the kube glue and the reconcile (with its
/// context, gate and memories). The three kinds appear only in api.rs, kind.rs's
/// documentation, controller/ and ops/ (the wiring).
const GENERIC: &[&str] = &["scheduler", "cluster", "reconcile"];

/// The kinds the manager reconciles, and the module of their decisions.
const KINDS: &[&str] = &["Fermat", "Tuple", "Number"];

/// The kind `word` names: a kind, or one of its types (`TupleStatus`, `NumberSpec`).
fn kind_in(word: &str) -> Option<&'static str> {
    KINDS.iter().copied().find(|kind| {
        word.strip_prefix(kind)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_uppercase))
    })
}

/// The lines of the generic rooms' code (comments and unit tests left out) that name a kind
/// or use `crate::controller`, under `src`.
fn kinds_named(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for room in GENERIC {
        files.extend(rust_files(&src.join(room)));
    }
    files.retain(|f| !f.ends_with("tests.rs") && !f.components().any(|c| c.as_os_str() == "tests"));
    files.sort();
    let mut named = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or("");
            let mut words = line.split(|c: char| !c.is_alphanumeric() && c != '_');
            let hit = (words.find_map(kind_in)).or_else(|| {
                line.contains("crate::controller")
                    .then_some("crate::controller")
            });
            if let Some(word) = hit {
                named.push(format!(
                    "{}:{}: {word}: {}",
                    relative.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    named
}

#[test]
fn the_scheduler_the_glue_and_the_reconcile_name_no_kind() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let named = kinds_named(&src);
    assert!(
        named.is_empty(),
        "the generic rooms name a kind (reach it through kind.rs's traits, or by type):\n{}",
        named.join("\n")
    );
}

#[test]
fn a_kind_named_in_the_glue_is_found() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cluster = dir.path().join("cluster");
    std::fs::create_dir(&cluster).expect("cluster/");
    std::fs::write(
        cluster.join("context.rs"),
        "//! The Tuple's cache.\n\
         use crate::api::{Fermat, Number};\n\
         pub struct C { pub numbers: Cache<Number> }\n\
         #[cfg(test)]\nmod tests { use crate::api::Tuple; }\n",
    )
    .expect("write");
    let named = kinds_named(dir.path());
    assert_eq!(named.len(), 2, "{named:?}");
    assert!(
        named[0].starts_with("cluster/context.rs:2: Fermat"),
        "{named:?}"
    );
    assert!(
        named[1].starts_with("cluster/context.rs:3: Number"),
        "{named:?}"
    );
}
