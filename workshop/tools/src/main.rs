//! `math-workshop-tools`: what the learner track needs while the exercises may not compile.
//! `watch` (make workshop-watch) rebuilds and checks on every save; `skip` (make
//! workshop-skip) puts a stage's reference solution in place to catch up. Both live outside the
//! `math-workshop` crate on purpose: a participant who is stuck often has code that does not
//! build, and these are the tools they need then.

// The learner track's one message catalogue, shared with the math-workshop crate.
#[allow(dead_code)]
#[path = "../../src/messages.rs"]
mod messages;
mod skip;
mod snippets;
mod watch;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The stages: the kind each introduces, and its file in `workshop/src/exercises/`.
pub const STAGES: [(&str, &str); 3] = [
    ("Number", "number.rs"),
    ("Tuple", "tuple.rs"),
    ("Fermat", "fermat.rs"),
];

/// Watch and skip, for the learner track.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The language of the messages, en or ja (default: ja when LC_ALL, LC_MESSAGES or LANG
    /// starts with ja).
    #[arg(long, global = true, value_parser = ["en", "ja"])]
    lang: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build and check a stage, and again on every save of an exercise file (Rustlings-style).
    Watch {
        /// The stage to check first (1 Number, 2 Tuple, 3 Fermat); the next one once it passes.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=3))]
        stage: u8,
        /// Check on the cluster of the current kubeconfig instead of a private test API server.
        #[arg(long)]
        cluster: bool,
        /// With --cluster: who you are (the namespace math-workshop-check-<participant>).
        #[arg(long)]
        participant: Option<String>,
        /// Seconds each expectation of a check may take.
        #[arg(long)]
        timeout: Option<u64>,
    },
    /// Catch up: put the reference solution of stage N in workshop/src/exercises/ (yours is
    /// kept beside it as <file>.rs.mine), to go on with stage N+1 in your own code.
    Skip {
        /// The stage to take the reference solution of (1 Number, 2 Tuple, 3 Fermat).
        #[arg(value_parser = clap::value_parser!(u8).range(1..=3))]
        stage: u8,
    },
    /// For the project: write workshop/tests/snippets/generated.rs from the guides' and cheat
    /// sheets' ```rust blocks (make workshop-snippets), which a test compiles.
    Snippets,
}

fn main() -> ExitCode {
    let repository = repository();
    let cli = Cli::parse();
    messages::choose(cli.lang.as_deref());
    match cli.command {
        Command::Watch {
            stage,
            cluster,
            participant,
            timeout,
        } => watch::watch(
            &watch::Options {
                stage,
                cluster,
                participant,
                timeout,
                lang: cli.lang.clone(),
            },
            &repository,
        ),
        Command::Skip { stage } => match skip::skip(&repository, stage) {
            Ok(said) => {
                print!("{said}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}", t!(messages::ERROR, message = e));
                ExitCode::FAILURE
            }
        },
        Command::Snippets => match write_snippets(&repository) {
            Ok(path) => {
                println!("wrote {path}");
                ExitCode::SUCCESS
            }
            Err(errors) => {
                for error in errors {
                    eprintln!("error: {error}");
                }
                ExitCode::FAILURE
            }
        },
    }
}

/// Extracts every marked Rust block of the guides and writes the file that compiles them.
fn write_snippets(repository: &Path) -> Result<&'static str, Vec<String>> {
    let mut all = Vec::new();
    let mut errors = Vec::new();
    for file in snippets::FILES {
        let markdown = std::fs::read_to_string(repository.join(file))
            .map_err(|e| vec![format!("{file}: {e}")])?;
        match snippets::extract(file, &markdown) {
            Ok(found) => all.extend(found),
            Err(wrong) => errors.extend(wrong),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let path = repository.join(snippets::GENERATED);
    std::fs::write(&path, snippets::render(&all))
        .map_err(|e| vec![format!("{}: {e}", snippets::GENERATED)])?;
    Ok(snippets::GENERATED)
}

/// The repository these tools were built from (they live in `workshop/tools/`).
fn repository() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}
