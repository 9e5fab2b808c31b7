//! The repository's files as a reader sees them: every file below a folder but what a build or
//! a tool leaves (`target/`, dot-folders such as `.git`). Shared by the tests that read the
//! whole tree (links in the Markdown, paths no reader can have) so that both skip the same.

use std::path::{Path, PathBuf};

/// Every file below `root` whose name `keep` accepts, sorted, `target/` and dot-folders left out.
pub fn files_below(root: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    dirs.push(path);
                }
            } else if keep(&name) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
