//! Every Rust snippet of the guides and cheat sheets compiles where a participant would paste
//! it: `snippets/generated.rs` holds each one in its exercise's context (its marker names it),
//! with what that exercise file has in scope as the participant got it (its own `use` lines,
//! its items) and nothing more, so a snippet that needs an import carries its `use` line; it is
//! compiled with this test; a snippet that does not compile fails the build of this
//! test. The test below fails when that file is not the guides' current snippets (regenerate:
//! `make workshop-snippets`).

use std::path::Path;

#[allow(dead_code)]
#[path = "../tools/src/snippets.rs"]
mod extract;

// The workshop crate's modules that an exercise file names as `crate::…`, where the snippets
// are compiled as if pasted into it.
#[allow(unused_imports)]
use math_workshop::{context, math};

#[rustfmt::skip]
#[path = "snippets/generated.rs"]
mod generated;

#[test]
fn the_compiled_snippets_are_the_guides_current_ones() {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut snippets = Vec::new();
    let mut errors = Vec::new();
    for file in extract::FILES {
        let markdown = std::fs::read_to_string(repository.join(file)).unwrap_or_default();
        assert!(!markdown.is_empty(), "{file} is missing or empty");
        match extract::extract(file, &markdown) {
            Ok(found) => snippets.extend(found),
            Err(wrong) => errors.extend(wrong),
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(
        snippets.len() >= 8,
        "only {} snippets found: are the markers gone?",
        snippets.len()
    );
    let exercise = |name: &str| {
        let file = repository
            .join(extract::EXERCISES)
            .join(format!("{name}.rs"));
        std::fs::read_to_string(file).unwrap_or_default()
    };
    let compiled = std::fs::read_to_string(repository.join(extract::GENERATED)).unwrap_or_default();
    assert!(
        compiled == extract::render(&snippets, &exercise),
        "{} is not the guides' current snippets: run `make workshop-snippets`",
        extract::GENERATED
    );
}
