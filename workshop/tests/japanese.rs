//! A participant whose locale is Japanese reads the tools in Japanese: the real binary runs
//! with `LANG=ja_JP.UTF-8`, as a learner's terminal would start it, and no English sentence may
//! appear in what it prints. What stays in Latin letters is what the Japanese community writes
//! so too: commands, identifiers, Kubernetes and Rust terms, and the words of kubectl and the
//! API server (quoted 「…」).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[path = "common/cargo_env.rs"]
mod cargo_env;

/// What `math-workshop ARGS` printed (stdout and stderr) in the locale `lang`.
fn run(lang: &str, args: &[&str], kubeconfig: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.args(args)
        .env("LANG", lang)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES");
    if let Some(path) = kubeconfig {
        cmd.env("KUBECONFIG", path);
    }
    let output = cmd.output().expect("math-workshop runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Removes the spans that are not the tools' own words: `code`, 「quotes」 (kubectl's and the
/// API server's words) and commands (`kubectl …`, `cargo …`, `make …`) up to the next Japanese
/// character.
fn own_words(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                for d in chars.by_ref() {
                    if d == '`' {
                        break;
                    }
                }
            }
            '「' => {
                for d in chars.by_ref() {
                    if d == '」' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    for command in ["kubectl ", "cargo ", "make ", "export "] {
        while let Some(at) = out.find(command) {
            let end = out[at..]
                .char_indices()
                .find(|(_, c)| japanese(*c) || matches!(c, '(' | ')'))
                .map_or(out.len(), |(i, _)| at + i);
            out.replace_range(at..end, " ");
        }
    }
    out
}

fn japanese(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

/// Three or more plain English words in a row: a sentence the tools should have translated.
fn english_sentences(output: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in output.lines() {
        let text = own_words(line);
        let mut run: Vec<&str> = Vec::new();
        for token in text.split(|c: char| c.is_whitespace() || japanese(c)) {
            let word = token.trim_matches(|c: char| matches!(c, ',' | '.' | ':' | ';' | '?' | '!'));
            // A word, not an identifier: letters only, no capital after the first (fizzBuzz,
            // isSquare are field names).
            let plain = !word.is_empty()
                && word.chars().all(|c| c.is_ascii_alphabetic() || c == '\'')
                && !word.chars().skip(1).any(|c| c.is_ascii_uppercase());
            if plain {
                run.push(word);
                continue;
            }
            if run.len() >= 3 {
                found.push(format!("{:?} in {line:?}", run.join(" ")));
            }
            run.clear();
        }
        if run.len() >= 3 {
            found.push(format!("{:?} in {line:?}", run.join(" ")));
        }
    }
    found
}

#[test]
fn the_detector_finds_the_english_that_lang_c_prints() {
    let english = run("C", &["check", "1", "--timeout", "1"], None);
    assert!(
        english_sentences(&english).len() >= 5,
        "the same check in English should count as English:\n{english}"
    );
}

#[test]
fn a_japanese_locale_gets_the_checks_in_japanese() {
    // The starter: every ✗ and its hint, stage 1's and (with a todo!() that panics) stage 2's.
    for args in [
        &["check", "1", "--timeout", "2"][..],
        &["check", "2", "--timeout", "2"],
        &["check", "2", "--solution"],
    ] {
        let output = run("ja_JP.UTF-8", args, None);
        let english = english_sentences(&output);
        assert!(
            english.is_empty(),
            "math-workshop {} printed English:\n{}\n\nall of it:\n{output}",
            args.join(" "),
            english.join("\n")
        );
        assert!(output.contains("合格"), "no summary in Japanese:\n{output}");
    }
}

#[test]
fn a_japanese_locale_gets_the_runners_one_line_errors_in_japanese() {
    let output = run(
        "ja_JP.UTF-8",
        &["run", "--stage", "1"],
        Some("/nonexistent/kubeconfig"),
    );
    assert!(output.starts_with("エラー: "), "{output}");
    let english = english_sentences(&output);
    assert!(english.is_empty(), "{}\n\n{output}", english.join("\n"));
}

#[test]
fn lang_en_wins_over_a_japanese_locale() {
    let output = run(
        "ja_JP.UTF-8",
        &["run", "--stage", "1", "--lang", "en"],
        Some("/nonexistent/kubeconfig"),
    );
    assert!(
        output.starts_with("error: no usable kubeconfig"),
        "{output}"
    );
}

/// The exit code and all that `binary ARGS` printed in the locale `lang`.
fn run_binary(binary: &Path, lang: &str, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(binary)
        .args(args)
        .env("LANG", lang)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .output()
        .expect("the binary runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), printed)
}

fn workshop() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_math-workshop"))
}

/// `math-workshop-tools`, a crate of its own (cargo gives this test no path to its binary):
/// built once into this test's target directory.
fn tools() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("CARGO_TARGET_TMPDIR is inside the target directory")
                .to_path_buf();
            let mut cargo = Command::new(env!("CARGO"));
            cargo
                .args(["build", "--locked", "-q", "-p", "math-workshop-tools"])
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            cargo_env::forget_the_tests_cargo(&mut cargo);
            let status = cargo.status().expect("cargo runs");
            assert!(
                status.success(),
                "cargo build -p math-workshop-tools failed"
            );
            target.join("debug/math-workshop-tools")
        })
        .clone()
}

/// Every help a participant can ask for, of both binaries (`help` takes no `--help`).
fn every_help() -> Vec<(PathBuf, &'static [&'static str])> {
    let workshop: [&'static [&'static str]; 7] = [
        &["--help"],
        &["crds", "--help"],
        &["install", "--help"],
        &["run", "--help"],
        &["check", "-h"],
        &["help", "check"],
        &["help", "help"],
    ];
    let tools: [&'static [&'static str]; 6] = [
        &["--help"],
        &["watch", "--help"],
        &["hint", "--help"],
        &["skip", "--help"],
        &["snippets", "--help"],
        &["help"],
    ];
    let mut all: Vec<_> = workshop
        .into_iter()
        .map(|args| (self::workshop(), args))
        .collect();
    all.extend(tools.into_iter().map(|args| (self::tools(), args)));
    all
}

#[test]
fn a_japanese_locale_gets_help_in_japanese_and_lang_c_in_english() {
    for (binary, args) in every_help() {
        let shown = format!("{} {}", binary.display(), args.join(" "));
        let (code, japanese) = run_binary(&binary, "ja_JP.UTF-8", args);
        assert_eq!(code, Some(0), "{shown}:\n{japanese}");
        let english = english_sentences(&japanese);
        assert!(
            english.is_empty(),
            "{shown} printed English:\n{}\n\nall of it:\n{japanese}",
            english.join("\n")
        );
        assert!(japanese.contains("使い方:"), "{shown}:\n{japanese}");
        let (code, english) = run_binary(&binary, "C", args);
        assert_eq!(code, Some(0), "{shown}:\n{english}");
        assert!(english.contains("Usage:"), "{shown}:\n{english}");
        assert!(
            !english_sentences(&english).is_empty(),
            "{shown} under LANG=C:\n{english}"
        );
    }
}

/// An unknown flag, a missing value, a stage out of 0..=3: one Japanese line naming what was
/// wrong, with clap's exit code 2; the same in English under LANG=C.
#[test]
fn a_japanese_locale_gets_usage_errors_in_japanese() {
    let cases: [(PathBuf, &[&str], &str); 4] = [
        (workshop(), &["check", "1", "--colour"], "--colour"),
        (workshop(), &["run", "--stage"], "--stage"),
        (workshop(), &["check", "4"], "4"),
        (tools(), &["skip", "4"], "4"),
    ];
    for (binary, args, named) in cases {
        let shown = format!("{} {}", binary.display(), args.join(" "));
        let (code, japanese) = run_binary(&binary, "ja_JP.UTF-8", args);
        assert_eq!(code, Some(2), "{shown}:\n{japanese}");
        assert_eq!(
            japanese.lines().count(),
            1,
            "{shown}: not one line:\n{japanese}"
        );
        assert!(
            japanese.starts_with("エラー: ") && japanese.contains(named),
            "{shown}:\n{japanese}"
        );
        let english = english_sentences(&japanese);
        assert!(
            english.is_empty(),
            "{shown} printed English:\n{}\n\n{japanese}",
            english.join("\n")
        );
        let (code, english) = run_binary(&binary, "C", args);
        assert_eq!(code, Some(2), "{shown}:\n{english}");
        assert!(
            english.starts_with("error: ") && english.contains("--help"),
            "{shown}:\n{english}"
        );
    }
}

#[test]
fn lang_ja_before_the_subcommand_gets_help_in_japanese_under_lang_c() {
    let (code, output) = run_binary(&workshop(), "C", &["--lang", "ja", "run", "--help"]);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("使い方:"), "{output}");
    let (_, output) = run_binary(&tools(), "C", &["skip", "--help", "--lang=ja"]);
    assert!(output.contains("使い方:"), "{output}");
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What `make -n TARGET VARS…` would run, from the repository's root.
fn make_would_run(target: &str, vars: &[&str]) -> String {
    let output = Command::new("make")
        .args(["-n", "-s", target, "STAGE=1", "PARTICIPANTS=alice"])
        .args(vars)
        .current_dir(repository())
        .env_remove("WORKSHOP_LANG")
        .output()
        .expect("make runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The lines of a recipe that start a workshop tool: the runner and checker, watch and skip,
/// the doctor.
fn tool_lines(recipe: &str) -> Vec<&str> {
    recipe
        .lines()
        .filter(|l| {
            let tool = l.contains("-p math-workshop ")
                || l.contains("-p math-workshop-tools ")
                || l.contains("doctor.sh");
            tool && !l.contains(" test ")
        })
        .collect()
}

/// WSL and the devcontainer start with `LANG=C.UTF-8`: `WORKSHOP_LANG=ja` (on make's line, or
/// exported once) gives every workshop tool that a make target starts `--lang ja`, and without
/// it none is given a language (the locale decides).
#[test]
fn workshop_lang_ja_reaches_every_workshop_tool_make_starts() {
    let makefile = std::fs::read_to_string(repository().join("Makefile")).unwrap_or_default();
    let mut targets: Vec<&str> = makefile
        .lines()
        .filter_map(|l| l.split_once(':').map(|(name, _)| name))
        .filter(|name| name.starts_with("workshop-") && !name.contains(' '))
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let mut started = 0;
    let mut wrong = Vec::new();
    for target in targets {
        for line in tool_lines(&make_would_run(target, &["WORKSHOP_LANG=ja"])) {
            started += 1;
            if !line.contains("--lang ja") {
                wrong.push(format!("make {target} WORKSHOP_LANG=ja: {line}"));
            }
        }
        for line in tool_lines(&make_would_run(target, &[])) {
            if line.contains("--lang") {
                wrong.push(format!("make {target}: {line}"));
            }
        }
    }
    assert!(
        started >= 10,
        "only {started} tools started: are the targets gone?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The doctor is a shell script (it must answer before anything is built): `--lang ja` makes
/// it Japanese under `LANG=C.UTF-8` too, as `WORKSHOP_LANG=ja` passes it.
#[test]
fn the_doctor_answers_in_japanese_with_lang_ja_under_lang_c() {
    let doctor = |args: &[&str]| {
        let output = Command::new("sh")
            .arg("workshop/doctor.sh")
            .args(args)
            .current_dir(repository())
            .env("LANG", "C.UTF-8")
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES")
            .output()
            .expect("sh runs");
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    };
    let japanese_words = |text: &str| text.chars().filter(|c| japanese(*c)).count();
    let asked = doctor(&["--lang", "ja"]);
    assert!(japanese_words(&asked) >= 10, "{asked}");
    let english = doctor(&[]);
    assert_eq!(japanese_words(&english), 0, "{english}");
}

/// A devcontainer starts with the image's locale (`C.UTF-8`, English): it is given the host's
/// `LANG` (and `WORKSHOP_LANG`), so that a Japanese laptop gets Japanese tools inside it too.
#[test]
fn the_devcontainer_passes_the_hosts_lang() {
    let config = std::fs::read_to_string(repository().join(".devcontainer/devcontainer.json"))
        .unwrap_or_default();
    for variable in ["LANG", "WORKSHOP_LANG"] {
        let passed = format!("\"{variable}\": \"${{localEnv:{variable}");
        assert!(
            config.contains(&passed),
            "{variable} is not passed: {config}"
        );
    }
}
