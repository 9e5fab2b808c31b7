//! The participant who caught up: the sessions' copy of the repository, and what must hold of
//! it (its exercises generate the reference solution's CRDs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::matching::as_written;
use super::{repository, trial};

/// The tests below catch up in the one copy, one at a time.
static COPY: Mutex<()> = Mutex::new(());
static CAUGHT_UP: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The repository as a participant who caught up has it: a copy ([`trial::copy`], the
/// exercises as committed), then `make workshop-skip STAGE=1`, `2` and `3` in it, the learner's
/// catch-up path, so that the exercises are the reference solutions. `None` outside a git
/// checkout.
///
/// Once per run: a second catch-up would put the starter back and the solutions again, and
/// the learner's crate would be built twice.
pub(crate) fn caught_up() -> Option<(MutexGuard<'static, ()>, PathBuf)> {
    let guard = COPY.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let copy = CAUGHT_UP.get_or_init(catch_up).clone()?;
    Some((guard, copy))
}

/// A fresh copy, caught up.
fn catch_up() -> Option<PathBuf> {
    let copy = trial::copy()?;
    for stage in 1..=3 {
        let skipped = trial::make(&copy, &["workshop-skip", &format!("STAGE={stage}")])
            .output()
            .expect("make runs");
        assert!(
            skipped.status.success(),
            "make workshop-skip STAGE={stage}:\n{}{}",
            String::from_utf8_lossy(&skipped.stdout),
            String::from_utf8_lossy(&skipped.stderr)
        );
    }
    Some(copy)
}

/// After the three skips, `make workshop-crds` writes exactly the reference solution's CRDs,
/// so that `make workshop-install` of a participant who caught up installs what the organiser
/// installed, and is never refused as another participant's CRD.
#[test]
fn the_exercises_caught_up_generate_the_solutions_crds() {
    let Some((_one_at_a_time, copy)) = caught_up() else {
        eprintln!("not a git checkout: the copy is made with `git ls-files`");
        return;
    };
    let made = trial::make(&copy, &["workshop-crds"])
        .output()
        .expect("make runs");
    assert!(
        made.status.success(),
        "make workshop-crds:\n{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let solution = Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .args(["crds", "--solution", "--dir"])
        .arg(scratch.path())
        .current_dir(repository())
        .output()
        .expect("math-workshop crds runs");
    assert!(solution.status.success());
    for kind in ["numbers", "tuples", "fermats"] {
        let name = format!("{kind}.math.example.com.yaml");
        let read = |dir: &Path| std::fs::read_to_string(dir.join(&name)).unwrap_or_default();
        let (yours, reference) = (read(&copy.join("workshop/crds")), read(scratch.path()));
        assert!(!reference.is_empty(), "no {name} from the solution");
        assert_eq!(
            yours, reference,
            "{name}: the caught-up exercises' CRD differs"
        );
    }
}

/// `make workshop-install` in the copy, as the guide has the participant install their CRDs
/// before its first session block, in the guide's language. Compared with the guide's block
/// after that command, but for cargo's lines (which vary from machine to machine, as the
/// block's `not run` marker says) and the participant's name (`<you>`): `Err` says how they
/// differ.
pub(crate) fn install(
    copy: &Path,
    kubeconfig: &Path,
    markdown: &str,
    japanese: bool,
) -> Result<(), String> {
    let install = trial::make(copy, &["workshop-install"])
        .env("KUBECONFIG", kubeconfig)
        .env("LC_ALL", if japanese { "ja_JP.UTF-8" } else { "C.UTF-8" })
        .output()
        .expect("make workshop-install runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&install.stderr),
        String::from_utf8_lossy(&install.stdout)
    );
    assert!(
        install.status.success() && said.matches(" created").count() == 3,
        "make workshop-install:\n{said}"
    );
    let shown = guide_install(markdown).ok_or("no `make workshop-install` block in the guide")?;
    let printed: Vec<String> = as_written(&said)
        .into_iter()
        .filter(|line| !cargo_line(line))
        // LC_ALL=ja_JP.UTF-8, which a Japanese learner's machine has and a CI machine may not:
        // there each bash that make starts for a recipe (the Makefile's SHELL) warns that it
        // cannot set the locale, a line no learner sees.
        .filter(|line| !line.starts_with("bash: warning: setlocale: "))
        .map(|line| as_you(&line))
        .collect();
    if printed == shown {
        Ok(())
    } else {
        Err(format!(
            "make workshop-install: the guide shows\n{}\n--- it printed\n{}",
            shown.join("\n"),
            printed.join("\n")
        ))
    }
}

/// The guide's output block after its ```` ```sh ```` block `make workshop-install`, without
/// cargo's lines.
fn guide_install(markdown: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = markdown.lines().map(str::trim).collect();
    let at = lines.windows(5).position(|w| {
        w[..3] == ["```sh", "make workshop-install", "```"]
            && w[3].starts_with("<!-- not run: cargo's build lines vary")
            && w[4] == "```"
    })?;
    let block = lines[at + 5..]
        .iter()
        .take_while(|line| !line.starts_with("```"))
        .filter(|line| !cargo_line(line))
        .map(|line| line.to_string())
        .collect();
    Some(block)
}

/// A line of cargo's own: its command line as make echoes it (`cargo run …`, or its full path
/// when cargo runs the test), and its progress.
fn cargo_line(line: &str) -> bool {
    let command = line.split_whitespace().next().unwrap_or_default();
    command.rsplit('/').next() == Some("cargo")
        || ["Compiling ", "Finished ", "Running ", "Blocking "]
            .iter()
            .any(|word| line.trim_start().starts_with(word))
}

/// The first line's participant written as the guide writes it, `<you>` (English and Japanese).
fn as_you(line: &str) -> String {
    for (before, after) in [
        ("participant ", ", namespace "),
        ("参加者 ", "、Namespace "),
    ] {
        if let Some(rest) = line.strip_prefix(before)
            && let Some((_, namespace)) = rest.split_once(after)
        {
            return format!("{before}<you>{after}{namespace}");
        }
    }
    line.to_string()
}
