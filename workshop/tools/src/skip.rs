//! `make workshop-skip STAGE=N`: catching up. A participant who is stuck, or late, takes the
//! reference solution of stage N in place of their own file and goes on with stage N+1 in their
//! own code (all three stages' files stay theirs to edit). Their file is kept beside it, so
//! nothing they wrote is lost.

use std::path::{Path, PathBuf};

use crate::STAGES;
use crate::messages as m;
use crate::t;

/// Puts `workshop/src/solutions/<kind>.rs` of `stage` in place of
/// `workshop/src/exercises/<kind>.rs` under `repository`, keeping the learner's file as
/// `<kind>.rs.mine` (or `.mine.2`, … when that exists). Returns what to tell the learner.
pub fn skip(repository: &Path, stage: u8) -> anyhow::Result<String> {
    anyhow::ensure!(
        (1..=3).contains(&stage),
        "{}",
        t!(m::NO_SUCH_STAGE, stage = stage)
    );
    let (kind, file) = STAGES[usize::from(stage - 1)];
    let exercises = repository.join("workshop/src/exercises");
    let relative = |path: &Path| relative_to(repository, path);
    let mine = exercises.join(file);
    let solution = repository.join("workshop/src/solutions").join(file);
    let reference = read(&solution, &relative)?;
    let yours = read(&mine, &relative)?;
    let mut said = if yours == reference {
        t!(
            m::SKIP_ALREADY,
            stage = stage,
            kind = kind,
            path = relative(&mine)
        )
    } else {
        let kept = take(&mine, &yours, &reference, &relative)?;
        t!(
            m::SKIP_DONE,
            stage = stage,
            kind = kind,
            path = relative(&mine),
            kept = relative(&kept)
        )
    };
    said.push_str(&earlier_unfinished(&exercises, stage, &relative));
    said.push_str(&next_step(&exercises, stage, &relative));
    Ok(said)
}

/// `path` as the learner names it: below `repository`.
fn relative_to(repository: &Path, path: &Path) -> String {
    path.strip_prefix(repository)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The text of `path`, or what to tell the learner when it cannot be read.
fn read(path: &Path, relative: &impl Fn(&Path) -> String) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        anyhow::anyhow!(
            "{}",
            t!(m::SKIP_CANNOT_READ, path = relative(path), error = e)
        )
    })
}

/// Keeps `yours` beside `mine` (the first free `.mine` name), then writes `reference` in its
/// place. Returns where the learner's file is kept.
fn take(
    mine: &Path,
    yours: &str,
    reference: &str,
    relative: &impl Fn(&Path) -> String,
) -> anyhow::Result<PathBuf> {
    let kept = free_name(mine);
    std::fs::write(&kept, yours).map_err(|e| {
        anyhow::anyhow!(
            "{}",
            t!(m::SKIP_CANNOT_KEEP, path = relative(&kept), error = e)
        )
    })?;
    std::fs::write(mine, reference).map_err(|e| {
        anyhow::anyhow!(
            "{}",
            t!(m::SKIP_CANNOT_WRITE, path = relative(mine), error = e)
        )
    })?;
    Ok(kept)
}

/// A line for each stage before `stage` whose exercise file is not done: the next stage builds
/// on it.
fn earlier_unfinished(exercises: &Path, stage: u8, relative: &impl Fn(&Path) -> String) -> String {
    let mut said = String::new();
    for (earlier, (kind, file)) in (1..stage).zip(STAGES) {
        let path = exercises.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !done(earlier, &text) {
            said.push_str(&t!(
                m::SKIP_EARLIER,
                path = relative(&path),
                stage = stage,
                kind = kind,
                earlier = earlier
            ));
        }
    }
    said
}

/// What to do next: the next stage's file, or the end of the track.
fn next_step(exercises: &Path, stage: u8, relative: &impl Fn(&Path) -> String) -> String {
    match STAGES.get(usize::from(stage)) {
        Some((_, next)) => t!(
            m::SKIP_NEXT,
            next = stage + 1,
            path = relative(&exercises.join(next))
        ),
        None => m::SKIP_LAST.text(),
    }
}

/// Whether an exercise file has no exercise left to fill in (the starter's markers are gone).
fn done(stage: u8, text: &str) -> bool {
    let starter_api = stage == 1 && text.contains("pub struct NumberSpec {}");
    !text.contains("todo!(") && !starter_api
}

/// `number.rs.mine`, or `number.rs.mine.2`, … : the first that does not exist.
fn free_name(file: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut candidate = file.with_file_name(format!("{name}.mine"));
    let mut n = 2;
    while candidate.exists() {
        candidate = file.with_file_name(format!("{name}.mine.{n}"));
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with the starter and the solutions of the real workshop.
    fn copy() -> tempfile::TempDir {
        let root = tempfile::tempdir().expect("a temporary directory");
        let workshop = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for dir in ["exercises", "solutions"] {
            let to = root.path().join("workshop/src").join(dir);
            std::fs::create_dir_all(&to).expect("mkdir");
            for (_, file) in STAGES {
                let from = workshop.join("src").join(dir).join(file);
                // The starter, as committed: the learner may have edited their copy.
                let text = if dir == "exercises" {
                    starter(&from)
                } else {
                    std::fs::read_to_string(&from).expect("read")
                };
                std::fs::write(to.join(file), text).expect("write");
            }
        }
        root
    }

    /// The committed version of a file (`git show HEAD:…`), or the file when git cannot say.
    fn starter(path: &Path) -> String {
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let relative = path
            .canonicalize()
            .ok()
            .and_then(|p| {
                let root = repository.canonicalize().ok()?;
                p.strip_prefix(root).ok().map(Path::to_path_buf)
            })
            .unwrap_or_default();
        std::process::Command::new("git")
            .arg("-C")
            .arg(&repository)
            .arg("show")
            .arg(format!("HEAD:{}", relative.display()))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|| std::fs::read_to_string(path).expect("read"))
    }

    #[test]
    fn skipping_keeps_the_learners_file_and_names_the_next_stage() {
        let repo = copy();
        let exercises = repo.path().join("workshop/src/exercises");
        std::fs::write(exercises.join("tuple.rs"), "// my attempt\n").expect("write");
        let said = skip(repo.path(), 2).expect("skip");
        let solution = std::fs::read_to_string(repo.path().join("workshop/src/solutions/tuple.rs"))
            .expect("read");
        assert_eq!(
            std::fs::read_to_string(exercises.join("tuple.rs")).expect("read"),
            solution
        );
        assert_eq!(
            std::fs::read_to_string(exercises.join("tuple.rs.mine")).expect("read"),
            "// my attempt\n"
        );
        assert!(
            said.contains("workshop/src/exercises/tuple.rs.mine"),
            "{said}"
        );
        assert!(said.contains("make workshop-check STAGE=3"), "{said}");
        // Stage 1 is still the starter's (in this copy): the learner is told.
        assert!(said.contains("make workshop-skip STAGE=1"), "{said}");

        // Again: nothing to do, and the kept file is not overwritten.
        let again = skip(repo.path(), 2).expect("skip");
        assert!(
            again.contains("is the reference solution already"),
            "{again}"
        );
        assert!(!exercises.join("tuple.rs.mine.2").exists());

        // A second skip after a new attempt keeps both attempts.
        std::fs::write(exercises.join("tuple.rs"), "// attempt 2\n").expect("write");
        skip(repo.path(), 2).expect("skip");
        assert_eq!(
            std::fs::read_to_string(exercises.join("tuple.rs.mine.2")).expect("read"),
            "// attempt 2\n"
        );
    }
}
