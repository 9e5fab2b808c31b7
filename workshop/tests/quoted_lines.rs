//! The places the guides quote in the exercise files (`workshop/src/exercises/number.rs:96`, in
//! a runner's log or a compile error) are where that thing is in the files as they are now, so
//! that a change to an exercise's comments cannot leave the guide pointing a few lines off.
//! Each quote is checked by what it says: a `todo!()` reached (the line holds the `todo!` of the
//! exercise the message names), or a compile error in code the participant wrote (the starter
//! filled in with the guide's own stage-0 blocks, with the guide's typo). A quote of another
//! kind fails the test until it is taught how to check it: none is left unchecked by accident.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../tools/src/snippets.rs"]
mod snippets;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const EXERCISES: &str = "workshop/src/exercises/";

/// A place quoted in a guide: the exercise file, line and column, and the rest of the line.
#[derive(Debug, PartialEq)]
struct Quote {
    file: String,
    line: usize,
    column: Option<usize>,
    said: String,
}

/// Every `workshop/src/exercises/F.rs:LINE[:COLUMN]` of `text`.
fn quotes(text: &str) -> Vec<Quote> {
    let mut found = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(EXERCISES) {
            let after = &rest[at + EXERCISES.len()..];
            rest = after;
            let Some((file, numbers)) = after.split_once(".rs:") else {
                continue;
            };
            if !file.chars().all(|c| c.is_ascii_lowercase()) {
                continue;
            }
            let mut parts = numbers.split(':').map(|p| {
                p.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            });
            let Some(Ok(number)) = parts.next().map(|p| p.parse::<usize>()) else {
                continue;
            };
            let column = parts.next().and_then(|p| p.parse().ok());
            found.push(Quote {
                file: format!("{file}.rs"),
                line: number,
                column,
                said: line.to_string(),
            });
        }
    }
    found
}

/// `EXERCISE 1b` in `…: EXERCISE 1b: compute …` (or `…の演習 1b …`, as the Japanese runner
/// says it).
fn exercise_named(said: &str) -> Option<String> {
    let (_, after) = said
        .split_once("EXERCISE ")
        .or_else(|| said.split_once("演習 "))?;
    let name: String = after
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!name.is_empty()).then(|| format!("EXERCISE {name}"))
}

/// `i46` in ``… cannot find type `i46` in this scope``.
fn missing_type(said: &str) -> Option<&str> {
    let (_, after) = said.split_once("cannot find type `")?;
    after.split_once('`').map(|(name, _)| name)
}

/// The starter `source` as the participant has it after stage 0: every `pub struct X {}` that
/// a guide block of stage 0 (`items`) fills in, filled in; then `typo` for the first `i64`
/// written in code (not in a comment).
fn filled_in(source: &str, blocks: &[String], typo: &str) -> String {
    let mut text = source.to_string();
    for block in blocks {
        let Some(name) = block
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("pub struct "))
            .and_then(|l| l.strip_suffix(" {"))
        else {
            continue;
        };
        text = text.replace(&format!("pub struct {name} {{}}"), block.trim_end());
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some(line) = lines
        .iter_mut()
        .find(|l| !l.trim_start().starts_with("//") && l.contains("i64"))
    {
        *line = line.replacen("i64", typo, 1);
    }
    lines.join("\n")
}

/// What is wrong with one quote, if anything.
fn check(quote: &Quote, source: &str, blocks: &[String]) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let reached = ["todo", "not yet implemented", "まだ書かれていない"]
        .iter()
        .any(|words| quote.said.contains(words));
    if let Some(exercise) = exercise_named(&quote.said).filter(|_| reached) {
        // The `todo!(` whose message (on its line or the next two) starts with the exercise.
        let needle = format!("\"{exercise}");
        let todo_at = (0..lines.len())
            .find(|&i| {
                lines[i].contains("todo!(")
                    && lines[i..].iter().take(3).any(|l| l.contains(&needle))
            })
            .map(|i| i + 1);
        if todo_at != Some(quote.line) {
            return Some(format!(
                "quotes line {} for the todo!() of {exercise}, which is at line {}",
                quote.line,
                todo_at.map_or("none".to_string(), |n| n.to_string())
            ));
        }
        return None;
    }
    if let Some(typo) = missing_type(&quote.said) {
        let text = filled_in(source, blocks, typo);
        let line = text.lines().nth(quote.line - 1).unwrap_or_default();
        let column = quote.column.unwrap_or(1);
        let at = line.get(column - 1..).unwrap_or_default();
        if !at.starts_with(typo) {
            let real = text
                .lines()
                .enumerate()
                .find_map(|(n, l)| l.find(typo).map(|c| format!("{}:{}", n + 1, c + 1)));
            return Some(format!(
                "quotes {}:{column} for `{typo}`, which the stage-0 code with that typo has at {}",
                quote.line,
                real.unwrap_or_else(|| "no line".to_string())
            ));
        }
        return None;
    }
    Some("a quote this test does not know how to check: teach it".to_string())
}

#[test]
fn every_place_the_guides_quote_in_the_exercises_is_where_it_is_now() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in snippets::FILES {
        let markdown = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        let blocks: Vec<String> = snippets::extract(file, &markdown)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.place == "items")
            .map(|s| s.code)
            .collect();
        for quote in quotes(&markdown) {
            checked += 1;
            let source = std::fs::read_to_string(repository().join(EXERCISES).join(&quote.file))
                .unwrap_or_default();
            if let Some(problem) = check(&quote, &source, &blocks) {
                wrong.push(format!(
                    "{file}: {}{}:{}: {problem}\n    {}",
                    EXERCISES,
                    quote.file,
                    quote.line,
                    quote.said.trim()
                ));
            }
        }
    }
    assert!(checked >= 4, "only {checked} quotes: are they gone?");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn quotes_are_found_with_their_line_and_column() {
    let text = "x (at workshop/src/exercises/number.rs:96). y\n  workshop/src/exercises/tuple.rs:51:16: error";
    let found = quotes(text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        (found[0].file.as_str(), found[0].line, found[0].column),
        ("number.rs", 96, None)
    );
    assert_eq!(
        (found[1].file.as_str(), found[1].line, found[1].column),
        ("tuple.rs", 51, Some(16))
    );
}

#[test]
fn a_quote_a_line_off_is_caught() {
    let source =
        "fn a() {}\npub fn reconcile() {\n    todo!(\n        \"EXERCISE 1b: compute\"\n    )\n}\n";
    let said = "panicked: not yet implemented: EXERCISE 1b: compute (at workshop/src/exercises/number.rs:3)";
    let right = Quote {
        file: "number.rs".into(),
        line: 3,
        column: None,
        said: said.into(),
    };
    assert_eq!(check(&right, source, &[]), None);
    let off = Quote { line: 4, ..right };
    assert!(check(&off, source, &[]).is_some_and(|p| p.contains("at line 3")));
    let stage0 = "// pub value: i64,\npub struct NumberSpec {}\n";
    let block = "pub struct NumberSpec {\n    pub value: i64,\n}\n".to_string();
    let said = "number.rs:3:16: error[E0425]: cannot find type `i46` in this scope";
    let typo = Quote {
        file: "number.rs".into(),
        line: 3,
        column: Some(16),
        said: said.into(),
    };
    assert_eq!(check(&typo, stage0, std::slice::from_ref(&block)), None);
    let off = Quote {
        column: Some(15),
        ..typo
    };
    assert!(check(&off, stage0, &[block]).is_some());
}
