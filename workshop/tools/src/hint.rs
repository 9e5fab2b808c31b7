//! `make workshop-hint STAGE=N`: try first, then the code, a step at a time (Rustlings' `hint`).
//! Each call shows the next hint of the first exercise of stage N still unfinished in the
//! learner's file (its `todo!()` still there, its struct still empty, its `.owns` still a
//! comment): first the way (which calls, in which order), then the complete code, as the
//! reference solution has it, with that file's imports. Each says how to see the next one and
//! how to see them all (`ALL=1`). What was shown is remembered in `workshop/.hints-shown`.
//!
//! The code comes from `workshop/src/solutions/`, so it is the code the checks pass, never a
//! copy that could drift from it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::messages::{self as m, Msg};
use crate::t;

/// Where what was shown is remembered, relative to the repository.
pub const SHOWN: &str = "workshop/.hints-shown";

/// What an exercise asks for, as the solution file holds it.
#[derive(Debug, Clone, Copy)]
enum Item {
    /// These structs (their fields).
    Structs(&'static [&'static str]),
    /// This function.
    Function(&'static str),
}

/// How the starter marks an exercise that is not written yet.
#[derive(Debug, Clone, Copy)]
enum Unfinished {
    /// One of these lines is still in the file (an empty struct).
    Line(&'static [&'static str]),
    /// Its `todo!("EXERCISE <name>…")` is still in the file.
    Todo,
    /// No line of code starts with `.owns(` (the given line is still a comment).
    NoOwns,
}

/// One exercise: its name, its file, what it asks for, the way to it, and how its starter looks.
#[derive(Debug, Clone, Copy)]
struct Exercise {
    name: &'static str,
    file: &'static str,
    item: Item,
    way: Msg,
    unfinished: Unfinished,
}

const fn exercise(
    name: &'static str,
    file: &'static str,
    item: Item,
    way: Msg,
    unfinished: Unfinished,
) -> Exercise {
    Exercise {
        name,
        file,
        item,
        way,
        unfinished,
    }
}

/// Every exercise, in the order of the stages.
const EXERCISES: [Exercise; 10] = [
    exercise(
        "1a",
        "number.rs",
        Item::Structs(&["NumberSpec", "NumberStatus"]),
        m::HINT_1A,
        Unfinished::Line(&["pub struct NumberSpec {}", "pub struct NumberStatus {}"]),
    ),
    exercise(
        "1b",
        "number.rs",
        Item::Function("reconcile"),
        m::HINT_1B,
        Unfinished::Todo,
    ),
    exercise(
        "2a",
        "tuple.rs",
        Item::Function("apply_children"),
        m::HINT_2A,
        Unfinished::Todo,
    ),
    exercise(
        "2b",
        "tuple.rs",
        Item::Function("delete_extras"),
        m::HINT_2B,
        Unfinished::Todo,
    ),
    exercise(
        "2c",
        "tuple.rs",
        Item::Function("write_status"),
        m::HINT_2C,
        Unfinished::Todo,
    ),
    exercise(
        "2d",
        "tuple.rs",
        Item::Function("run"),
        m::HINT_2D,
        Unfinished::NoOwns,
    ),
    exercise(
        "3a",
        "fermat.rs",
        Item::Function("apply_children"),
        m::HINT_3A,
        Unfinished::Todo,
    ),
    exercise(
        "3b",
        "fermat.rs",
        Item::Function("delete_extras"),
        m::HINT_3B,
        Unfinished::Todo,
    ),
    exercise(
        "3c",
        "fermat.rs",
        Item::Function("write_status"),
        m::HINT_3C,
        Unfinished::Todo,
    ),
    exercise(
        "3d",
        "fermat.rs",
        Item::Function("run"),
        m::HINT_3D,
        Unfinished::NoOwns,
    ),
];

/// The hints of each exercise: the way, then the code.
const STEPS: usize = 2;

/// The exercises of a stage: stage 0 (define the API) is exercise 1a, stage 1 is 1a and 1b.
fn of_stage(stage: u8) -> Vec<Exercise> {
    EXERCISES
        .into_iter()
        .filter(|e| match stage {
            0 => e.name == "1a",
            _ => e.name.starts_with(char::from(b'0' + stage)),
        })
        .collect()
}

/// Whether the learner's file still has the exercise's starter.
fn unfinished(exercise: &Exercise, yours: &str) -> bool {
    match exercise.unfinished {
        Unfinished::Line(lines) => yours.lines().any(|l| lines.contains(&l.trim())),
        Unfinished::Todo => {
            let wanted = format!("\"EXERCISE {}", exercise.name);
            yours
                .split("todo!(")
                .skip(1)
                .any(|after| after.trim_start().starts_with(&wanted))
        }
        Unfinished::NoOwns => !yours.lines().any(|l| l.trim_start().starts_with(".owns(")),
    }
}

/// The lines of `item` in a solution file: each struct, or the function, from its first line
/// (its doc comment left out) to the `}` that closes it.
fn code(solution: &str, item: Item) -> String {
    let starts: Vec<String> = match item {
        Item::Structs(names) => names.iter().map(|n| format!("pub struct {n} ")).collect(),
        Item::Function(name) => vec![format!("fn {name}(")],
    };
    let lines: Vec<&str> = solution.lines().collect();
    let mut pieces = Vec::new();
    for start in starts {
        let Some(first) = lines.iter().position(|l| l.contains(&start)) else {
            continue;
        };
        let last = (first..lines.len())
            .find(|&i| lines[i] == "}")
            .unwrap_or(lines.len() - 1);
        pieces.push(lines[first..=last].join("\n"));
    }
    pieces.join("\n\n")
}

/// The paths a file's `use` lines import, one each (`use kube::{Resource, ResourceExt};` is
/// `kube::Resource` and `kube::ResourceExt`; a list rustfmt split over lines too).
fn imported(source: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut statement = String::new();
    for line in source.lines() {
        if statement.is_empty() && !line.starts_with("use ") {
            continue;
        }
        statement.push_str(line.trim());
        if line.trim_end().ends_with(';') {
            statements.push(std::mem::take(&mut statement));
        }
    }
    let mut paths = Vec::new();
    for statement in statements {
        let body = statement.trim_start_matches("use ").trim_end_matches(';');
        match body.split_once('{') {
            Some((prefix, list)) => paths.extend(
                (list.trim_end_matches('}').split(','))
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(|name| format!("{prefix}{name}")),
            ),
            None => paths.push(body.to_string()),
        }
    }
    paths
}

/// The `use` lines the learner's file still lacks for the solution's code, grouped by their
/// module as rustfmt would: pasted beside their own, they compile (a path imported twice
/// would not).
fn missing_imports(solution: &str, yours: &str) -> String {
    let have = imported(yours);
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in imported(solution).into_iter().filter(|p| !have.contains(p)) {
        let (module, name) = path.rsplit_once("::").unwrap_or(("", &path));
        groups
            .entry(module.to_string())
            .or_default()
            .push(name.to_string());
    }
    let lines: Vec<String> = groups
        .into_iter()
        .map(|(module, names)| match names.as_slice() {
            [one] => format!("use {module}::{one};"),
            _ => format!("use {module}::{{{}}};", names.join(", ")),
        })
        .collect();
    lines.join("\n")
}

/// What was shown so far, per exercise (`2a 1` per line).
fn read_shown(text: &str) -> BTreeMap<String, usize> {
    text.lines()
        .filter_map(|l| {
            let (name, count) = l.split_once(' ')?;
            Some((name.to_string(), count.trim().parse().ok()?))
        })
        .collect()
}

fn write_shown(shown: &BTreeMap<String, usize>) -> String {
    shown
        .iter()
        .map(|(name, n)| format!("{name} {n}\n"))
        .collect()
}

/// Step `step` (1-based) of an exercise, with its heading: the way, or the code (with the `use`
/// lines `yours` lacks for it).
fn step(exercise: &Exercise, step: usize, solution: &str, yours: &str) -> String {
    let file = format!("workshop/src/exercises/{}", exercise.file);
    let item = match exercise.item {
        Item::Structs(names) => names.join(", "),
        Item::Function(name) => name.to_string(),
    };
    let heading = |msg: Msg| {
        t!(
            msg,
            exercise = exercise.name,
            file = file,
            item = item,
            n = step,
            count = STEPS,
            solution = format!("workshop/src/solutions/{}", exercise.file)
        )
    };
    if step < STEPS {
        format!("{}\n  {}\n", heading(m::HINT_HEADING), exercise.way.text())
    } else {
        let imports = missing_imports(solution, yours);
        let code = code(solution, exercise.item);
        let body = match imports.is_empty() {
            true => code,
            false => format!("{imports}\n\n{code}"),
        };
        let indented: Vec<String> = body
            .lines()
            .map(|l| format!("    {l}").trim_end().to_string())
            .collect();
        format!(
            "{}\n{}\n",
            heading(m::HINT_CODE_HEADING),
            indented.join("\n")
        )
    }
}

/// `make workshop-hint STAGE=stage [ALL=1]`: what to print, and what to remember.
pub fn hint(repository: &Path, stage: u8, all: bool) -> anyhow::Result<String> {
    anyhow::ensure!(stage <= 3, "{}", t!(m::SKIP_NO_STAGE, stage = stage));
    let read = |path: &str| {
        std::fs::read_to_string(repository.join(path))
            .map_err(|e| anyhow::anyhow!("{}", t!(m::SKIP_CANNOT_READ, path = path, error = e)))
    };
    let exercises = of_stage(stage);
    let solution = |e: &Exercise| read(&format!("workshop/src/solutions/{}", e.file));
    let yours = |e: &Exercise| read(&format!("workshop/src/exercises/{}", e.file));
    if all {
        let mut said = String::new();
        for e in &exercises {
            for n in 1..=STEPS {
                said.push_str(&step(e, n, &solution(e)?, &yours(e)?));
            }
        }
        return Ok(said);
    }
    let mut unwritten = None;
    for e in &exercises {
        if unfinished(e, &yours(e)?) {
            unwritten = Some(*e);
            break;
        }
    }
    let Some(e) = unwritten else {
        return Ok(t!(m::HINT_ALL_WRITTEN, stage = stage) + "\n");
    };
    let mut shown =
        read_shown(&std::fs::read_to_string(repository.join(SHOWN)).unwrap_or_default());
    let n = (shown.get(e.name).copied().unwrap_or(0) + 1).min(STEPS);
    shown.insert(e.name.to_string(), n);
    // Remembering is a convenience: a read-only checkout still gets its hint.
    let _ = std::fs::write(repository.join(SHOWN), write_shown(&shown));
    let next = if n < STEPS {
        t!(m::HINT_NEXT, stage = stage, next = n + 1, count = STEPS)
    } else {
        t!(m::HINT_LAST, exercise = e.name, stage = stage)
    };
    Ok(format!(
        "{}{next}\n",
        step(&e, n, &solution(&e)?, &yours(&e)?)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOLUTION: &str = "use std::sync::Arc;\nuse kube::api::{\n    Api, Patch,\n};\n\n/// Doc.\npub async fn run(ctx: Arc<Context>) {\n    Controller::new()\n        .owns(x)\n        .run();\n}\n\npub struct NumberSpec {\n    pub value: i64,\n}\n";

    #[test]
    fn the_code_is_the_solutions_item_with_its_files_imports() {
        assert_eq!(
            code(SOLUTION, Item::Function("run")),
            "pub async fn run(ctx: Arc<Context>) {\n    Controller::new()\n        .owns(x)\n        .run();\n}"
        );
        assert_eq!(
            code(SOLUTION, Item::Structs(&["NumberSpec"])),
            "pub struct NumberSpec {\n    pub value: i64,\n}"
        );
        // What the learner's file lacks, grouped by module: not what it has already.
        let yours = "use std::sync::Arc;\nuse kube::api::Api;\n";
        assert_eq!(missing_imports(SOLUTION, yours), "use kube::api::Patch;");
        let more = "use kube::{CustomResource, Resource, ResourceExt};\nuse crate::math;\n";
        assert_eq!(
            missing_imports(more, "use kube::CustomResource;\n"),
            "use crate::math;\nuse kube::{Resource, ResourceExt};"
        );
    }

    #[test]
    fn an_exercise_is_unfinished_while_its_starter_is_there() {
        let [e1a, e1b, .., e2d, _, _, _, _] = EXERCISES;
        assert!(unfinished(&e1a, "pub struct NumberSpec {}\n"));
        assert!(!unfinished(
            &e1a,
            "pub struct NumberSpec {\n    pub value: i64,\n}\n"
        ));
        let todo = "    todo!(\n        \"EXERCISE 1b: compute\"\n    )";
        assert!(unfinished(&e1b, todo));
        assert!(!unfinished(&e1b, "/// EXERCISE 1b: build a NumberStatus\n"));
        assert!(unfinished(
            &e2d,
            "        //     .owns(ctx.watched::<Number>(), …)\n"
        ));
        assert!(!unfinished(
            &e2d,
            "        .owns(ctx.watched::<Number>(), …)\n"
        ));
    }

    #[test]
    fn stage_zero_is_exercise_1a_and_each_stage_has_its_own() {
        let names = |stage| -> Vec<&str> { of_stage(stage).iter().map(|e| e.name).collect() };
        assert_eq!(names(0), ["1a"]);
        assert_eq!(names(1), ["1a", "1b"]);
        assert_eq!(names(3), ["3a", "3b", "3c", "3d"]);
    }

    /// A repository with the starter's and the solutions' tuple.rs.
    fn repository() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (path, text) in [
            (
                "workshop/src/exercises/tuple.rs",
                include_str!("../../src/exercises/tuple.rs"),
            ),
            (
                "workshop/src/solutions/tuple.rs",
                include_str!("../../src/solutions/tuple.rs"),
            ),
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    #[test]
    fn each_call_shows_the_next_hint_and_how_to_see_the_rest() {
        let dir = repository();
        let first = hint(dir.path(), 2, false).unwrap_or_default();
        assert!(
            first.starts_with(
                "Exercise 2a (workshop/src/exercises/tuple.rs, apply_children), hint 1 of 2:"
            ),
            "{first}"
        );
        assert!(
            first.contains("make workshop-hint STAGE=2 again shows hint 2 of 2"),
            "{first}"
        );
        let second = hint(dir.path(), 2, false).unwrap_or_default();
        assert!(
            second.contains("hint 2 of 2: the complete code"),
            "{second}"
        );
        assert!(
            second.contains("    pub async fn apply_children(tuple: &Tuple, ctx: &Context)"),
            "{second}"
        );
        assert!(
            second.contains("    use kube::api::{DeleteParams, ListParams, Patch, PatchParams};"),
            "{second}"
        );
        assert!(
            second.contains("That was the last hint of exercise 2a."),
            "{second}"
        );
        // 2a written: the next call goes on with 2b.
        let tuple = dir.path().join("workshop/src/exercises/tuple.rs");
        let text = std::fs::read_to_string(&tuple).unwrap_or_default();
        let written = text.replace("todo!(\"EXERCISE 2a", "unimplemented!(\"written");
        std::fs::write(&tuple, written).expect("write");
        let third = hint(dir.path(), 2, false).unwrap_or_default();
        assert!(
            third.starts_with(
                "Exercise 2b (workshop/src/exercises/tuple.rs, delete_extras), hint 1 of 2:"
            ),
            "{third}"
        );
        let all = hint(dir.path(), 2, true).unwrap_or_default();
        assert_eq!(all.matches("the complete code").count(), 4, "{all}");
    }

    #[test]
    fn what_was_shown_is_remembered_per_exercise() {
        let shown = read_shown("2a 1\n1b 2\nnonsense\n");
        assert_eq!(shown.get("2a"), Some(&1));
        assert_eq!(write_shown(&shown), "1b 2\n2a 1\n");
    }
}
