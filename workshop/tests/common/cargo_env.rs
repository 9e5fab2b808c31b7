//! A cargo (or make) started from a test must not see what cargo set for the test itself: a
//! build that sees `CARGO_PKG_*` or `CARGO_MANIFEST_DIR` reruns ring's build script (it names
//! them) and rebuilds everything above it, here and, the target directory being shared, for
//! this repository's next build too.

use std::process::Command;

/// Removes from `cmd`'s environment every variable cargo set for the running test.
pub fn forget_the_tests_cargo(cmd: &mut Command) {
    for (name, _) in std::env::vars() {
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name.as_str(),
                "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
            )
        {
            cmd.env_remove(name);
        }
    }
}
