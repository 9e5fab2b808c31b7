//! `math-workshop`: generate your CRDs, run your controllers, check a stage
//! ([`math_workshop::app`]), with your exercises as the track it runs.

use std::process::ExitCode;

fn main() -> ExitCode {
    math_workshop::app::command(math_workshop::exercises::track)
}
