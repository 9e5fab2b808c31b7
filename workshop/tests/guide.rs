//! The guide's outputs are what the tools print: every output block marked
//! `<!-- output: ARGS [| lines=A-B,C,…] [| as-yours] -->` in `workshop/README.md` (English) and
//! `workshop/README.ja.md` (Japanese: the tools run with `LANG=ja_JP.UTF-8`) is compared with
//! what `math-workshop ARGS` prints now. `lines=` keeps those lines of the output (1-based; `…`
//! stands for the lines left out), as the guide quotes an excerpt; `as-yours` runs the
//! reference solutions where the guide shows the participant's finished exercises, and shows
//! their name as the participant's. `make workshop-guide-outputs` writes the current outputs
//! into both guides (`GUIDE_OUTPUTS=write`).
//!
//! A small matcher of our own rather than trycmd/snapbox: the blocks are excerpts of a few
//! commands the test runs itself, their only variable part is the excerpt (`…`), and the guide's
//! readers see the same `…` they already know; a dependency would add nothing here.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    for part in parts {
        if part == "as-yours" {
            as_yours = true;
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
    let output = cmd.output().expect("math-workshop runs");
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if recipe.as_yours {
        text = text
            .replace("workshop/src/solutions/", "workshop/src/exercises/")
            .replace("the reference solutions", "your exercises")
            .replace("模範解答", "自分の演習");
    }
    let all: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    excerpt(&all, recipe.keep.as_deref())
}

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
