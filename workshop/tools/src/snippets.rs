//! The guides' and cheat sheets' Rust snippets, as a Rust file that compiles each one in the
//! exercise's context (`make workshop-snippets` writes it; `workshop/tests/snippets.rs` compiles
//! it and checks that it is current). A snippet a participant copies must compile where it goes.
//!
//! Every ```` ```rust ```` block is preceded by a marker that names its context, e.g.
//! `<!-- rust: number-status -->`: the function the snippet is the body of, and what is in scope
//! there (the variables the exercise has, the imports its comment asks for). A block without a
//! marker, or with an unknown context, is an error: nothing is left unchecked by accident.
//!
//! Pure functions only (no file system): the test includes this file by path.

/// The Markdown files whose Rust blocks are compiled, relative to the repository.
pub const FILES: [&str; 4] = [
    "workshop/README.md",
    "workshop/README.ja.md",
    "workshop/CHEATSHEET.md",
    "workshop/CHEATSHEET.ja.md",
];

/// Where the exercise files are, relative to the repository: `number` is `number.rs` there.
pub const EXERCISES: &str = "workshop/src/exercises";

/// Where the generated file goes, relative to the repository.
pub const GENERATED: &str = "workshop/tests/snippets/generated.rs";

/// A place a snippet goes: the exercise file it is pasted into (`None`: a file's top, where the
/// types are defined), the lines before it and the lines after it.
struct Place {
    name: &'static str,
    exercise: Option<&'static str>,
    head: &'static str,
    tail: &'static str,
}

/// Every context a marker may name.
const PLACES: [Place; 10] = [
    // Type definitions, at the top of an exercise file (nothing imported: they define the names).
    Place {
        name: "items",
        exercise: None,
        head: "",
        tail: "",
    },
    // The body of number.rs's `run`.
    Place {
        name: "number-run",
        exercise: Some("number"),
        head: "    pub async fn snippet(ctx: Arc<Context>) {\n",
        tail: "    }\n",
    },
    // Inside number.rs's `reconcile`, once the status is computed.
    Place {
        name: "number-status",
        exercise: Some("number"),
        head: "    pub async fn snippet(number: Arc<Number>, ctx: Arc<Context>, status: NumberStatus) -> Result<Action> {\n",
        tail: "    }\n",
    },
    // The beginning of tuple.rs's `reconcile` (its last line, `Ok(…)`, follows).
    Place {
        name: "tuple-reconcile",
        exercise: Some("tuple"),
        head: "    pub async fn snippet(tuple: Arc<Tuple>, ctx: Arc<Context>) -> Result<Action> {\n",
        tail: "        Ok(Action::await_change())\n    }\n",
    },
    // Inside tuple.rs's functions: one child (`index`, `value`), the names still wanted.
    Place {
        name: "tuple-child",
        exercise: Some("tuple"),
        head: "    pub async fn snippet(tuple: &Tuple, ctx: &Context, index: usize, value: i64, wanted: &[String]) -> Result<()> {\n",
        tail: "        Ok(())\n    }\n",
    },
    // The body of tuple.rs's `run`.
    Place {
        name: "tuple-run",
        exercise: Some("tuple"),
        head: "    pub async fn snippet(ctx: Arc<Context>) {\n",
        tail: "    }\n",
    },
    // The guides' folds of complete code (`make workshop-hint`'s last step): whole functions,
    // with the `use` lines they add to the exercise file's.
    Place {
        name: "number-items",
        exercise: Some("number"),
        head: "",
        tail: "",
    },
    Place {
        name: "tuple-items",
        exercise: Some("tuple"),
        head: "",
        tail: "",
    },
    Place {
        name: "fermat-items",
        exercise: Some("fermat"),
        head: "",
        tail: "",
    },
    // Inside fermat.rs's status: the Fermat's number `n`, a child Tuple's `[a, b]`, in a
    // function that returns an `Option` (where `?` on `exact_sqrt` belongs).
    Place {
        name: "fermat-decomposition",
        exercise: Some("fermat"),
        head: "    pub fn snippet(n: i64, a: i64, b: i64) -> Option<String> {\n",
        tail: "    }\n",
    },
];

/// What is in scope where a snippet is pasted into the exercise file `exercise` (`number`,
/// `tuple`, `fermat`) whose text is `source`: the file's own `use` lines as the participant has
/// them (no more: a snippet that needs another import says so in its own `use` lines), and the
/// items the file defines, taken from the reference solution of the same shape (the starter's
/// types are empty on purpose). `super::` (a sibling exercise) becomes the sibling solution;
/// `crate::` stays, the test crate that compiles the snippets names `context` and `math` at its
/// root as the workshop crate does.
pub fn in_scope(exercise: &str, source: &str) -> String {
    let mut out = String::new();
    let mut statement = String::new();
    for line in source.lines() {
        if statement.is_empty() && !line.starts_with("use ") {
            continue;
        }
        statement.push_str(line);
        statement.push('\n');
        if line.trim_end().ends_with(';') {
            out.push_str("    ");
            out.push_str(&statement.replacen("use super::", "use math_workshop::solutions::", 1));
            statement.clear();
        }
    }
    out.push_str(&format!(
        "    use math_workshop::solutions::{exercise}::*;\n"
    ));
    out
}

/// One ```` ```rust ```` block of a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// The Markdown file, relative to the repository.
    pub file: String,
    /// The heading the block is under, to find it again.
    pub heading: String,
    /// The context its marker names.
    pub place: String,
    /// Its lines, without the block's indentation.
    pub code: String,
}

/// The Rust blocks of one Markdown file, or what is wrong with its markers (file:line).
pub fn extract(file: &str, markdown: &str) -> Result<Vec<Snippet>, Vec<String>> {
    let mut snippets = Vec::new();
    let mut errors = Vec::new();
    let mut heading = String::new();
    let mut previous = "";
    let mut lines = markdown.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let trimmed = line.trim_start();
        if let Some(title) = trimmed.strip_prefix("## ") {
            heading = title.trim().to_string();
        }
        if !trimmed.starts_with("```") {
            if !trimmed.is_empty() {
                previous = trimmed;
            }
            continue;
        }
        let info = trimmed.trim_start_matches('`').trim();
        let indent = line.len() - trimmed.len();
        let mut code = String::new();
        for (_, inner) in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                break;
            }
            code.push_str(inner.get(indent..).unwrap_or(inner.trim_start()));
            code.push('\n');
        }
        if info != "rust" && !info.starts_with("rust,") {
            previous = "";
            continue;
        }
        let place = marker(previous);
        previous = "";
        match place {
            Some(place) if PLACES.iter().any(|p| p.name == place) => snippets.push(Snippet {
                file: file.to_string(),
                heading: heading.clone(),
                place: place.to_string(),
                code,
            }),
            Some(place) => errors.push(format!(
                "{file}:{}: unknown context `{place}` (known: {})",
                number + 1,
                known()
            )),
            None => errors.push(format!(
                "{file}:{}: a ```rust block without a marker: put `<!-- rust: CONTEXT -->` before it (contexts: {})",
                number + 1,
                known()
            )),
        }
    }
    if errors.is_empty() {
        Ok(snippets)
    } else {
        Err(errors)
    }
}

/// The context named by a `<!-- rust: CONTEXT -->` line.
fn marker(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    Some(inner.strip_prefix("rust:")?.trim())
}

fn known() -> String {
    PLACES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

/// The Rust file that compiles every snippet: one module each, named after its file and its
/// position there, so that a compile error points at the snippet.
/// `exercise` gives the text of an exercise file (`number` → `workshop/src/exercises/number.rs`).
pub fn render(snippets: &[Snippet], exercise: &dyn Fn(&str) -> String) -> String {
    let mut out = String::from(
        "// @generated by `make workshop-snippets` from the ```rust blocks of the workshop's guides and\n\
         // cheat sheets (workshop/tools/src/snippets.rs): each compiles in the context its marker\n\
         // names. Do not edit; a compile error here is a snippet that would not compile for a participant.\n",
    );
    let mut counts: Vec<(String, usize)> = Vec::new();
    for snippet in snippets {
        let Some(place) = PLACES.iter().find(|p| p.name == snippet.place) else {
            continue;
        };
        let stem = module_stem(&snippet.file);
        let index = match counts.iter_mut().find(|(s, _)| *s == stem) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                counts.push((stem.clone(), 1));
                1
            }
        };
        out.push_str(&format!(
            "\n/// {}, under \"{}\": rust block {index} (context `{}`).\nmod {stem}_{index} {{\n    #![allow(unused, clippy::all)]\n",
            snippet.file, snippet.heading, place.name
        ));
        if let Some(file) = place.exercise {
            out.push_str(&in_scope(file, &exercise(file)));
        }
        out.push('\n');
        out.push_str(place.head);
        let depth = if place.head.is_empty() { 4 } else { 8 };
        for line in snippet.code.lines() {
            // A sibling exercise, as the participant's file names it, is the sibling solution.
            let line = line.replacen("use super::", "use math_workshop::solutions::", 1);
            if line.is_empty() {
                out.push('\n');
            } else {
                out.push_str(&" ".repeat(depth));
                out.push_str(&line);
                out.push('\n');
            }
        }
        out.push_str(place.tail);
        out.push_str("}\n");
    }
    out
}

/// `workshop/README.ja.md` → `readme_ja`.
fn module_stem(file: &str) -> String {
    let name = file.rsplit('/').next().unwrap_or(file);
    let name = name.strip_suffix(".md").unwrap_or(name);
    name.to_lowercase().replace(['.', '-'], "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_block_is_extracted_with_its_heading_and_context() {
        let md = "## Stage 1\n\n<!-- rust: number-run -->\n```rust\nlet x = 1;\n```\n";
        let snippets = extract("g.md", md).unwrap_or_default();
        assert_eq!(
            snippets,
            vec![Snippet {
                file: "g.md".into(),
                heading: "Stage 1".into(),
                place: "number-run".into(),
                code: "let x = 1;\n".into(),
            }]
        );
    }

    #[test]
    fn an_unmarked_or_unknown_block_is_an_error_other_blocks_are_not() {
        let md = "```sh\nls\n```\n```rust\nlet x = 1;\n```\n<!-- rust: nowhere -->\n```rust\n```\n";
        let errors = extract("g.md", md).err().unwrap_or_default();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("g.md:4: a ```rust block without a marker"));
        assert!(errors[1].starts_with("g.md:8: unknown context `nowhere`"));
    }

    #[test]
    fn an_indented_block_loses_its_indentation_and_gets_the_place_around_it() {
        let md = "- a list item:\n\n  <!-- rust: tuple-run -->\n  ```rust\n  foo();\n  ```\n";
        let snippets = extract("CHEATSHEET.md", md).unwrap_or_default();
        let rendered = render(&snippets, &|_| "use std::sync::Arc;\n".to_string());
        assert!(rendered.contains("mod cheatsheet_1 {"), "{rendered}");
        assert!(
            rendered.contains("pub async fn snippet(ctx: Arc<Context>) {\n        foo();\n    }\n")
        );
    }

    #[test]
    fn a_snippet_has_in_scope_what_its_exercise_file_imports_and_defines_and_no_more() {
        let source = "//! Stage 2.\n\nuse std::sync::Arc;\n\nuse kube::{\n    Api,\n    ResourceExt,\n};\n\nuse super::number::Number;\nuse crate::context::{Context, Result};\n\n// use serde_json::json;\npub struct TupleSpec {}\n";
        assert_eq!(
            in_scope("tuple", source),
            "    use std::sync::Arc;\n    use kube::{\n    Api,\n    ResourceExt,\n};\n    use math_workshop::solutions::number::Number;\n    use crate::context::{Context, Result};\n    use math_workshop::solutions::tuple::*;\n"
        );
    }
}
