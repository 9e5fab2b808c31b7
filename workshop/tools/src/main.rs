//! `math-workshop-tools`: what the learner track needs while the exercises may not compile.
//! `watch` (make workshop-watch) rebuilds and checks on every save; `hint` (make workshop-hint)
//! shows the next hint of an exercise, up to its complete code; `skip` (make workshop-skip)
//! puts a stage's reference solution in place to catch up. Both live outside the
//! `math-workshop` crate on purpose: a participant who is stuck often has code that does not
//! build, and these are the tools they need then.

// The learner track's one message catalogue, shared with the math-workshop-kit crate (the
// tools print some of its tables only).
#[allow(dead_code, unused_imports)]
#[path = "../../kit/src/messages/mod.rs"]
mod messages;
// clap in the participant's language, shared with the math-workshop-kit crate.
#[path = "../../kit/src/cli.rs"]
mod cli;
mod hint;
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

// The help texts are in the catalogue (both languages), set by HELP below.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[arg(long, global = true, value_parser = ["en", "ja"])]
    lang: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    Watch {
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=3))]
        stage: u8,
        #[arg(long)]
        cluster: bool,
        #[arg(long)]
        participant: Option<String>,
        #[arg(long)]
        timeout: Option<u64>,
    },
    Skip {
        #[arg(value_parser = clap::value_parser!(u8).range(0..=3))]
        stage: u8,
    },
    Hint {
        #[arg(value_parser = clap::value_parser!(u8).range(0..=3))]
        stage: u8,
        #[arg(long)]
        all: bool,
    },
    Snippets,
}

/// Every about and argument help of `math-workshop-tools`, from the catalogue (see
/// [`cli::Help`]).
const HELP: &cli::Help = &[
    ("", "", messages::CLI_TOOLS),
    ("*", "lang", messages::CLI_LANG),
    ("*", "help", messages::CLI_HELP),
    ("*", "version", messages::CLI_VERSION),
    ("help", "", messages::CLI_HELP_COMMAND),
    ("watch", "", messages::CLI_WATCH),
    ("watch", "stage", messages::CLI_WATCH_STAGE),
    ("watch", "cluster", messages::CLI_WATCH_CLUSTER),
    ("watch", "participant", messages::CLI_WATCH_PARTICIPANT),
    ("watch", "timeout", messages::CLI_WATCH_TIMEOUT),
    ("skip", "", messages::CLI_SKIP),
    ("skip", "stage", messages::CLI_SKIP_STAGE),
    ("hint", "", messages::CLI_HINT),
    ("hint", "stage", messages::CLI_HINT_STAGE),
    ("hint", "all", messages::CLI_HINT_ALL),
    ("snippets", "", messages::CLI_SNIPPETS),
];

fn main() -> ExitCode {
    let repository = repository();
    let cli: Cli = cli::parse(HELP);
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
        Command::Skip { stage: 0 } => {
            let message = messages::STAGE_ZERO_SKIP.text();
            eprintln!("{}", t!(messages::ERROR, message = message));
            ExitCode::FAILURE
        }
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
        Command::Hint { stage, all } => match hint::hint(&repository, stage, all) {
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
    let exercise = |name: &str| {
        let file = repository
            .join(snippets::EXERCISES)
            .join(format!("{name}.rs"));
        std::fs::read_to_string(file).unwrap_or_default()
    };
    std::fs::write(&path, snippets::render(&all, &exercise))
        .map_err(|e| vec![format!("{}: {e}", snippets::GENERATED)])?;
    Ok(snippets::GENERATED)
}

/// The repository these tools were built from (they live in `workshop/tools/`).
fn repository() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}
