//! The README is a map, and docs/ holds the topics: every relative link in the project's
//! Markdown must lead to a file that exists and, with `#anchor`, to a heading in it (anchors as
//! GitHub makes them). A link broken by moving a section fails here, not in a reader's browser.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

#[path = "common/tree.rs"]
mod tree;

/// The Markdown files a reader follows links through.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    tree::files_below(root, |name| name.ends_with(".md"))
}

/// The lines outside fenced code blocks; inline code kept (headings) or removed (links).
fn prose(text: &str, keep_code: bool) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut out = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                out.push('`');
            } else if keep_code || !in_code {
                out.push(c);
            }
        }
        lines.push(out);
    }
    lines
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes; a repeated
/// heading gets `-1`, `-2`, ….
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for line in prose(text, true) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// Every `](target)` in the prose of `text`.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose(text, false) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else {
                break;
            };
            found.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    found
}

/// The broken links of the file at `path` (text `text`), as `target: why`.
fn broken(path: &Path, text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for link in links(text) {
        if link.contains("://") || link.starts_with("mailto:") || link.is_empty() {
            continue;
        }
        let (file, anchor) = match link.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (link.as_str(), None),
        };
        let target = if file.is_empty() {
            path.to_path_buf()
        } else {
            path.parent().unwrap_or(Path::new(".")).join(file)
        };
        if !target.exists() {
            bad.push(format!("{link}: no such file"));
            continue;
        }
        if let Some(anchor) = anchor
            && target.extension().is_some_and(|e| e == "md")
        {
            let body = if file.is_empty() {
                text.to_string()
            } else {
                std::fs::read_to_string(&target).unwrap_or_default()
            };
            if !anchors(&body).contains(anchor) {
                bad.push(format!("{link}: no heading with that anchor"));
            }
        }
    }
    bad
}

#[test]
fn every_relative_link_in_the_docs_leads_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown_files(root);
    assert!(files.iter().any(|f| f.ends_with("docs/architecture.md")));
    let mut bad = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a Markdown file of the repository");
        for why in broken(file, &text) {
            bad.push(format!(
                "{}: {why}",
                file.strip_prefix(root).unwrap_or(file).display()
            ));
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_readme_is_a_map_of_at_most_300_lines_that_links_every_topic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(
        readme.lines().count() <= 300,
        "README.md has {} lines; topics belong in docs/",
        readme.lines().count()
    );
    let linked: HashSet<String> = links(&readme).into_iter().collect();
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .collect();
    docs.sort();
    for doc in docs {
        assert!(linked.contains(&doc), "README.md does not link {doc}");
    }
}

#[test]
fn the_checker_finds_a_missing_file_and_a_missing_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = "# Title\n\nSee [a](docs/nowhere.md), [b](#title), [c](#no-such), \
                [d](README.md#the-two-commands), `[e](not/a/link.md)`.\n\
                ```\n[f](inside/code.md)\n```\n";
    let found = broken(&root.join("README.md"), text);
    assert_eq!(
        found,
        vec![
            "docs/nowhere.md: no such file".to_string(),
            "#no-such: no heading with that anchor".to_string()
        ]
    );
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let a = anchors(
        "# See the tree: `kubectl math`\n## Stage 1 (v0.1): Number\n## A\n## A\n## ステージ 1\n",
    );
    for expected in [
        "see-the-tree-kubectl-math",
        "stage-1-v01-number",
        "a",
        "a-1",
        "ステージ-1",
    ] {
        assert!(a.contains(expected), "{expected} not in {a:?}");
    }
}

#[test]
fn the_docs_start_the_test_server_on_the_guides_port_not_kubectl_proxys() {
    // 8001 is `kubectl proxy`'s default; the workshop guide moved to 8010, and a participant
    // who followed the README and then the guide would otherwise start two servers.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let clashing: Vec<String> = markdown_files(root)
        .into_iter()
        .filter(|path| std::fs::read_to_string(path).is_ok_and(|text| text.contains("--port 8001")))
        .map(|path| path.display().to_string())
        .collect();
    assert!(clashing.is_empty(), "--port 8001 in {clashing:?}");
}
