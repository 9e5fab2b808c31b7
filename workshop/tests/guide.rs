//! The guide's outputs are what the tools print: every output block marked
//! `<!-- output: ARGS [| lines=A-B,C,…] [| as-yours] -->` in `workshop/README.md` (English) and
//! `workshop/README.ja.md` (Japanese: the tools run with `LANG=ja_JP.UTF-8`) is compared with
//! what `math-workshop ARGS` prints now. `lines=` keeps those lines of the output (1-based; `…`
//! stands for the lines left out), as the guide quotes an excerpt; `as-yours` runs the
//! reference solutions where the guide shows the participant's finished exercises, and shows
//! their name as the participant's. `make workshop-guide-outputs` writes the current outputs
//! into both guides (`GUIDE_OUTPUTS=write`).
//!
//! The kubectl sessions run too (`the_guides_sessions_print_what_the_guide_shows`), with the
//! learner's own commands on a copy of the repository that caught up (`make workshop-skip
//! STAGE=1`, `2`, `3`: the exercises are the reference solutions; the copy is
//! `common/trial.rs`'s): per guide, a fresh test API server, the CRDs installed with
//! `make workshop-install` (its lines but cargo's compared with the guide's block), the controllers started with `make workshop-run STAGE=N` and stopped
//! (its process group) where the guide tells the participant to (`<!-- guide: controllers N -->`,
//! `<!-- guide: controllers off -->`); every ```` ```sh ```` block marked `<!-- run -->` runs in
//! order (bash, in the copy, kubectl-math on the PATH), and the block marked
//! `<!-- output: run -->` after it is compared with what it printed (`<!-- output: rerun -->`:
//! its `kubectl get`/`explain`/`math tree` lines once more). The last chapter's `<!-- guide:
//! manager -->` starts the finished manager where the participant does (`cargo run`, with the
//! test's profile), and `controllers off` stops it too. The session works in a participant's
//! namespace ([`PARTICIPANT_NAMESPACE`], named by the kubeconfig's context), never `default`. A read is compared as it comes,
//! the first time: what the learner sees right after the command. Only a block marked
//! `| settles` (`<!-- output: run | settles -->`) is read again, for up to 30 s, until it
//! matches, and the commands before it must tell the reader so, in a comment with the guide's
//! words for "give it a second" ([`SETTLES`]; the comment goes on with why: observedGeneration,
//! or the garbage collector): an answer that takes time is never hidden by a silent retry. Ages, times,
//! UIDs and resourceVersions match any value; the namespace is written `<your namespace>`.
//!
//! A small matcher of our own rather than trycmd/snapbox: the blocks are excerpts of a few
//! commands the test runs itself, their only variable part is the excerpt (`…`), and the guide's
//! readers see the same `…` they already know; a dependency would add nothing here.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "guide/caught_up.rs"]
mod caught_up;
#[path = "guide/matching.rs"]
mod matching;
#[path = "guide/runner.rs"]
mod runner;
#[path = "common/trial.rs"]
mod trial;

use caught_up::{caught_up, install};
use matching::{alike, as_written};
use runner::{controllers, manager, stop};

/// One marked output block of a guide.
#[derive(Debug, Clone)]
struct Block {
    /// The marker's recipe: `math-workshop` arguments and options.
    recipe: Recipe,
    /// The block's lines (between the fences), and where they are in the file.
    lines: Vec<String>,
    first_line: usize,
}

#[derive(Debug, Clone, PartialEq)]
struct Recipe {
    args: Vec<String>,
    keep: Option<Vec<(usize, Option<usize>)>>,
    as_yours: bool,
    /// `no-kubeconfig`: KUBECONFIG unset and no ~/.kube/config; `dead-server`: the kubeconfig
    /// of a test API server that has stopped (port 8010, at /tmp/math.kubeconfig as the guide
    /// starts it).
    env: Option<String>,
}

/// `check 1 --solution | lines=1-5,9,13- | as-yours`.
fn recipe(marker: &str) -> Result<Recipe, String> {
    let mut parts = marker.split('|').map(str::trim);
    let args: Vec<String> = parts
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if args.is_empty() {
        return Err(format!("no command in `{marker}`"));
    }
    let mut keep = None;
    let mut as_yours = false;
    let mut env = None;
    for part in parts {
        if part == "as-yours" {
            as_yours = true;
        } else if part == "no-kubeconfig" || part == "dead-server" {
            env = Some(part.to_string());
        } else if let Some(ranges) = part.strip_prefix("lines=") {
            let mut kept = Vec::new();
            for range in ranges.split(',') {
                let (from, to) = match range.split_once('-') {
                    Some((from, "")) => (from, None),
                    Some((from, to)) => (from, Some(to)),
                    None => (range, Some(range)),
                };
                let from: usize = from.parse().map_err(|_| format!("bad range `{range}`"))?;
                let to = match to {
                    Some(to) => Some(to.parse().map_err(|_| format!("bad range `{range}`"))?),
                    None => None,
                };
                kept.push((from, to));
            }
            keep = Some(kept);
        } else {
            return Err(format!("unknown option `{part}` in `{marker}`"));
        }
    }
    Ok(Recipe {
        args,
        keep,
        as_yours,
        env,
    })
}

/// The marked output blocks of a guide.
fn blocks(markdown: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(marker) = lines[i]
            .trim()
            .strip_prefix("<!-- output:")
            .and_then(|rest| rest.strip_suffix("-->"))
        else {
            i += 1;
            continue;
        };
        // `run` and `rerun` (perhaps `| settles`) are the sessions' (below), not a command of
        // their own.
        if output_marker(lines[i].trim()).is_some() {
            i += 1;
            continue;
        }
        let recipe = recipe(marker.trim()).map_err(|e| format!("line {}: {e}", i + 1))?;
        if !lines
            .get(i + 1)
            .is_some_and(|l| l.trim_start().starts_with("```"))
        {
            return Err(format!(
                "line {}: an output marker not followed by a block",
                i + 1
            ));
        }
        let first_line = i + 2;
        let mut end = first_line;
        while end < lines.len() && !lines[end].trim_start().starts_with("```") {
            end += 1;
        }
        found.push(Block {
            recipe,
            lines: lines[first_line..end]
                .iter()
                .map(|l| l.to_string())
                .collect(),
            first_line,
        });
        i = end + 1;
    }
    Ok(found)
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What the recipe's command prints now, as the guide would quote it.
fn produce(recipe: &Recipe, japanese: bool) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.args(&recipe.args)
        .current_dir(repository())
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("RUST_LOG")
        .env("LANG", if japanese { "ja_JP.UTF-8" } else { "C.UTF-8" });
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = scratch.path().join("math.kubeconfig");
    let mut dead_port = None;
    match recipe.env.as_deref() {
        Some("no-kubeconfig") => {
            cmd.env_remove("KUBECONFIG").env("HOME", scratch.path());
        }
        Some(_) => {
            // A port nothing listens on any more: the server "stopped".
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            dead_port = Some(port);
            let dead = DEAD_KUBECONFIG.replace("PORT", &port.to_string());
            std::fs::write(&kubeconfig, dead).expect("a kubeconfig is written");
            cmd.env("KUBECONFIG", &kubeconfig);
        }
        None => {}
    }
    let output = cmd.output().expect("math-workshop runs");
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text = text.replace(&kubeconfig.display().to_string(), "/tmp/math.kubeconfig");
    if let Some(port) = dead_port {
        text = text
            .replace(&format!(":{port}"), ":8010")
            .replace(&format!("--port {port}"), "--port 8010");
    }
    if recipe.as_yours {
        text = text
            .replace("workshop/src/solutions/", "workshop/src/exercises/")
            .replace("the reference solutions", "your exercises")
            .replace("模範解答", "自分の演習");
    }
    let all: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    excerpt(&all, recipe.keep.as_deref())
}

/// The kubeconfig `cargo run -p test-apiserver -- --port 8010` writes, once that server is gone.
const DEAD_KUBECONFIG: &str = "apiVersion: v1
kind: Config
clusters:
- name: test-apiserver
  cluster:
    server: http://127.0.0.1:PORT
contexts:
- name: test-apiserver
  context:
    cluster: test-apiserver
    user: test-user
    namespace: default
current-context: test-apiserver
users:
- name: test-user
  user: {}
";

/// The kept lines, with `…` where lines were left out.
fn excerpt(all: &[String], keep: Option<&[(usize, Option<usize>)]>) -> Vec<String> {
    let Some(keep) = keep else {
        return all.to_vec();
    };
    let mut out = Vec::new();
    let mut next = 1;
    for &(from, to) in keep {
        let to = to.unwrap_or(all.len()).min(all.len());
        if from > next {
            out.push("…".to_string());
        }
        for line in all.iter().take(to).skip(from.saturating_sub(1)) {
            out.push(line.clone());
        }
        next = to + 1;
    }
    if next <= all.len() {
        out.push("…".to_string());
    }
    out
}

const GUIDES: [(&str, bool); 2] = [
    ("workshop/README.md", false),
    ("workshop/README.ja.md", true),
];

#[test]
fn the_guides_outputs_are_what_the_tools_print() {
    let write = std::env::var("GUIDE_OUTPUTS").is_ok_and(|v| v == "write");
    let mut wrong = Vec::new();
    let mut compared = 0;
    for (file, japanese) in GUIDES {
        let path = repository().join(file);
        let markdown = std::fs::read_to_string(&path).unwrap_or_default();
        let found = match blocks(&markdown) {
            Ok(found) => found,
            Err(e) => {
                wrong.push(format!("{file}: {e}"));
                continue;
            }
        };
        let mut lines: Vec<String> = markdown.lines().map(str::to_string).collect();
        // From the last block up, so that a rewrite keeps the earlier blocks' line numbers.
        for block in found.iter().rev() {
            compared += 1;
            let now = produce(&block.recipe, japanese);
            if now == block.lines {
                continue;
            }
            if write {
                let range = block.first_line..block.first_line + block.lines.len();
                lines.splice(range, now);
            } else {
                wrong.push(format!(
                    "{file}:{}: `math-workshop {}` prints something else now:\n--- the guide\n{}\n--- the tool\n{}",
                    block.first_line + 1,
                    block.recipe.args.join(" "),
                    block.lines.join("\n"),
                    now.join("\n")
                ));
            }
        }
        if write {
            let mut text = lines.join("\n");
            text.push('\n');
            std::fs::write(&path, text).expect("the guide is writable");
        }
    }
    assert!(
        compared >= 6,
        "only {compared} marked outputs: are the markers gone?"
    );
    assert!(
        wrong.is_empty(),
        "{}\n\n(make workshop-guide-outputs writes the tools' outputs into the guides)",
        wrong.join("\n\n")
    );
}

#[test]
fn an_excerpt_keeps_the_lines_asked_for_and_marks_the_rest() {
    let all: Vec<String> = (1..=6).map(|n| n.to_string()).collect();
    let keep = recipe("check 1 | lines=1-2,4").map(|r| r.keep);
    assert_eq!(keep, Ok(Some(vec![(1, Some(2)), (4, Some(4))])));
    assert_eq!(
        excerpt(&all, Some(&[(1, Some(2)), (4, Some(4))])),
        ["1", "2", "…", "4", "…"]
    );
    assert_eq!(
        excerpt(&all, Some(&[(2, None)])),
        ["…", "2", "3", "4", "5", "6"]
    );
    assert!(recipe("check 1 | nonsense").is_err());
}

/// What a block that `settles` tells the reader in its commands, per guide (followed by why it
/// takes time: "observedGeneration tells you when it is the new answer", or the garbage collector).
const SETTLES: [(&str, &str); 2] = [
    ("workshop/README.md", "give it a second"),
    ("workshop/README.ja.md", "少し待ってください。"),
];

/// The namespace the sessions run in, as a participant's does: not `default`, named by the
/// kubeconfig's context (as after `kubectl config set-context --current --namespace=…`, or a
/// room's per-participant kubeconfig), where kubectl and the runner both work.
const PARTICIPANT_NAMESPACE: &str = "math-workshop-alice";

/// Makes the kubeconfig's context name the participant's namespace, and creates it.
fn into_participant_namespace(kubeconfig: &Path) {
    let kubectl = |args: &[&str]| {
        let output = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .expect("kubectl runs");
        assert!(
            output.status.success(),
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    };
    kubectl(&["create", "namespace", PARTICIPANT_NAMESPACE]);
    let namespace = format!("--namespace={PARTICIPANT_NAMESPACE}");
    kubectl(&["config", "set-context", "--current", &namespace]);
}

/// One step of a guide's session.
#[derive(Debug)]
enum Step {
    Controllers(Option<u8>),
    /// The finished manager, started where the last chapter says (`<!-- guide: manager -->`);
    /// `controllers off` stops it too.
    Manager,
    Run {
        script: String,
    },
    Output {
        rerun: bool,
        settles: bool,
        lines: Vec<String>,
        first_line: usize,
    },
}

/// The session steps of a guide, in order.
fn steps(markdown: &str) -> Vec<Step> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        let fenced = |from: usize| {
            let mut end = from;
            while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                end += 1;
            }
            let indent = lines[from - 1].len() - lines[from - 1].trim_start().len();
            let body: Vec<String> = lines[from..end]
                .iter()
                .map(|l| l.get(indent..).unwrap_or(l.trim_start()).to_string())
                .collect();
            (body, end)
        };
        if let Some(n) = line
            .strip_prefix("<!-- guide: controllers ")
            .and_then(|r| r.strip_suffix(" -->"))
        {
            found.push(Step::Controllers(n.parse().ok()));
        } else if line == "<!-- guide: manager -->" {
            found.push(Step::Manager);
        } else if line == "<!-- run -->" {
            let (body, end) = fenced(i + 2);
            found.push(Step::Run {
                script: body.join("\n"),
            });
            i = end;
        } else if let Some((what, settles)) = output_marker(line) {
            let (body, end) = fenced(i + 2);
            found.push(Step::Output {
                rerun: what == "rerun",
                settles,
                lines: body,
                first_line: i + 2,
            });
            i = end;
        }
        i += 1;
    }
    found
}

/// `<!-- output: run -->`, `<!-- output: rerun | settles -->`: (`run` or `rerun`, settles).
fn output_marker(line: &str) -> Option<(&str, bool)> {
    let inner = line.strip_prefix("<!-- output: ")?.strip_suffix(" -->")?;
    let mut parts = inner.split('|').map(str::trim);
    let what = parts.next().filter(|w| *w == "run" || *w == "rerun")?;
    let flags: Vec<&str> = parts.collect();
    Some((what, flags == ["settles"]))
}

/// The script's reading commands at its end (`kubectl get`, `explain`, `math tree`): what is
/// repeated until the controllers have converged.
fn split_reads(script: &str) -> (String, String) {
    let lines: Vec<&str> = script.lines().collect();
    let read = |l: &str| {
        let l = l.trim_start();
        l.starts_with("kubectl get ")
            || l.starts_with("kubectl explain ")
            || l.starts_with("kubectl math tree ")
    };
    let mut at = lines.len();
    while at > 0 && read(lines[at - 1]) {
        at -= 1;
    }
    (lines[..at].join("\n"), lines[at..].join("\n"))
}

/// Runs a script with bash in `dir` (the participant's copy), stdout and stderr together.
fn bash(script: &str, kubeconfig: &Path, dir: &Path) -> String {
    if script.trim().is_empty() {
        return String::new();
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_math-workshop"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 2>&1\n{script}"))
        .current_dir(dir)
        .env("KUBECONFIG", kubeconfig)
        .env("PATH", path)
        // A terminal of its own, as the participant has: under `make workshop-guide-outputs`
        // the guide's `make install` would say which directory it enters.
        .env_remove("MAKELEVEL")
        .env_remove("MAKEFLAGS")
        .output()
        .expect("bash runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_guides_sessions_print_what_the_guide_shows() {
    let write = std::env::var("GUIDE_OUTPUTS").is_ok_and(|v| v == "write");
    let Some((_one_at_a_time, copy)) = caught_up() else {
        eprintln!("not a git checkout: the sessions run in a copy made with `git ls-files`");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut wrong = Vec::new();
    let mut compared = 0;
    for (file, japanese) in GUIDES {
        let server = runtime
            .block_on(test_apiserver::TestServer::start())
            .expect("the test API server starts");
        let kubeconfig = server.kubeconfig_path();
        into_participant_namespace(&kubeconfig);
        let path = repository().join(file);
        let markdown = std::fs::read_to_string(&path).unwrap_or_default();
        if let Err(differs) = install(&copy, &kubeconfig, &markdown, japanese) {
            wrong.push(format!("{file}: {differs}"));
        }
        let mut lines: Vec<String> = markdown.lines().map(str::to_string).collect();
        let mut rewrites: Vec<(usize, usize, Vec<String>)> = Vec::new();
        let mut running: Option<std::process::Child> = None;
        let mut last = (String::new(), String::new());
        let mut mutated = String::new();
        let mut printed = String::new();
        for step in steps(&markdown) {
            match step {
                Step::Manager => {
                    if let Some(child) = running.take() {
                        stop(child);
                    }
                    running = Some(manager(&kubeconfig, &copy));
                }
                Step::Controllers(stage) => {
                    if let Some(child) = running.take() {
                        stop(child);
                    }
                    running = stage.map(|n| controllers(n, &kubeconfig, &copy));
                }
                Step::Run { script } => {
                    last = split_reads(&script);
                    mutated = bash(&last.0, &kubeconfig, &copy);
                    printed = format!("{mutated}{}", bash(&last.1, &kubeconfig, &copy));
                }
                Step::Output {
                    rerun,
                    settles,
                    lines: guide,
                    first_line,
                } => {
                    compared += 1;
                    if settles && !says_it_settles(file, &last.0, &last.1) {
                        wrong.push(format!(
                            "{file}:{}: the block settles, but its commands do not say so",
                            first_line + 1
                        ));
                    }
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                    let mut now = if rerun {
                        as_written(&bash(&last.1, &kubeconfig, &copy))
                    } else {
                        as_written(&printed)
                    };
                    while settles
                        && !alike(&guide, &now)
                        && std::time::Instant::now() < deadline
                        && !last.1.is_empty()
                    {
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        let reads = bash(&last.1, &kubeconfig, &copy);
                        now = if rerun {
                            as_written(&reads)
                        } else {
                            as_written(&format!("{mutated}{reads}"))
                        };
                    }
                    if !alike(&guide, &now) {
                        if write {
                            rewrites.push((first_line, guide.len(), now));
                        } else {
                            wrong.push(format!(
                                "{file}:{}: the guide shows\n{}\n--- the session printed\n{}",
                                first_line + 1,
                                guide.join("\n"),
                                now.join("\n")
                            ));
                        }
                    }
                }
            }
        }
        if let Some(child) = running.take() {
            stop(child);
        }
        runtime.block_on(server.shutdown());
        if write && !rewrites.is_empty() {
            for (first, len, now) in rewrites.into_iter().rev() {
                lines.splice(first..first + len, now);
            }
            let mut text = lines.join("\n");
            text.push('\n');
            std::fs::write(&path, text).expect("the guide is writable");
        }
    }
    assert!(
        compared >= 10,
        "only {compared} session outputs: are the markers gone?"
    );
    assert!(
        wrong.is_empty(),
        "{}\n\n(make workshop-guide-outputs writes the sessions' outputs into the guides)",
        wrong.join("\n\n")
    );
}

/// Whether a block's commands tell the reader, in a comment, that the answer takes time.
fn says_it_settles(file: &str, mutations: &str, reads: &str) -> bool {
    let words = SETTLES
        .iter()
        .find(|(guide, _)| *guide == file)
        .map(|(_, words)| *words)
        .unwrap_or(SETTLES[0].1);
    mutations
        .lines()
        .chain(reads.lines())
        .any(|line| line.split_once('#').is_some_and(|(_, c)| c.contains(words)))
}

/// Every block that shows output (a fence without a language, or `yaml`) is either run by
/// these tests (`<!-- output: … -->`) or says why not (`<!-- not run: … -->`): a guide output no
/// command produced cannot slip in unnoticed.
#[test]
fn every_output_block_is_run_or_says_why_not() {
    let mut unmarked = Vec::new();
    for (file, _) in GUIDES {
        let markdown = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        let lines: Vec<&str> = markdown.lines().collect();
        let mut i = 0;
        let mut previous = "";
        while i < lines.len() {
            let line = lines[i].trim();
            if let Some(info) = line.strip_prefix("```") {
                let shows_output = info.is_empty() || info == "yaml";
                let marked =
                    previous.starts_with("<!-- output:") || previous.starts_with("<!-- not run:");
                if shows_output && !marked {
                    unmarked.push(format!("{file}:{}", i + 1));
                }
                i += 1;
                while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                    i += 1;
                }
                previous = "";
            } else if !line.is_empty() {
                previous = line;
            }
            i += 1;
        }
    }
    assert!(
        unmarked.is_empty(),
        "output blocks that no test runs and that do not say why: {}",
        unmarked.join(", ")
    );
}

/// A block that is read again until it matches is marked so, and its commands tell the reader
/// in the guide's own language; any other block is compared as first read.
#[test]
fn a_block_that_settles_says_so_to_the_reader() {
    assert_eq!(
        output_marker("<!-- output: run | settles -->"),
        Some(("run", true))
    );
    assert_eq!(
        output_marker("<!-- output: rerun -->"),
        Some(("rerun", false))
    );
    assert_eq!(output_marker("<!-- output: check 1 --solution -->"), None);
    let said = format!("kubectl get numbers   # {}", SETTLES[0].1);
    assert!(says_it_settles(
        "workshop/README.md",
        "kubectl apply -f x",
        &said
    ));
    assert!(!says_it_settles(
        "workshop/README.md",
        "",
        "kubectl get numbers"
    ));
    assert!(!says_it_settles("workshop/README.ja.md", "", &said));
}
