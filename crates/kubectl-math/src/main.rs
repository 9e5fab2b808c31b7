//! `kubectl math`: a kubectl plugin (kubectl runs `kubectl-math` from the PATH) that shows
//! the Fermat → Tuple → Number ownership trees live. The work is in this crate's library (`kubectl_math`).

use std::process::ExitCode;

use clap::Parser;
use kubectl_math::cli::{self, Cli};
use kubectl_math::render::escape_terminal;

#[tokio::main]
async fn main() -> ExitCode {
    match cli::run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // An error may quote the API server, which may quote what is in the cluster.
            eprintln!("error: {}", escape_terminal(&error.to_string()));
            ExitCode::FAILURE
        }
    }
}
