//! One term per concept for a Japanese reader: the guide (README.ja.md), the cheat sheet
//! (CHEATSHEET.ja.md), the organiser's page, the Japanese half of the exercises' comments (what
//! a learner reads while coding) and what the tools say (workshop/kit/src/messages/, its
//! Japanese texts) use the words the Japanese Kubernetes community uses, and the same word each
//! time. A reader who meets 署名 in one place and フィールドマネージャー in another wonders
//! whether they are two things; kubectl itself says 現在のコンテキスト. And every page the
//! Japanese guide links to is Japanese, or marked (英語) so that the reader knows before
//! following it.

use std::path::{Path, PathBuf};

use math_workshop::messages::ALL;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A concept, the word used for it, and the words that must not stand for it. An avoided word
/// that ends in `[^ー]` is that word without its long vowel (コントローラ for コントローラー).
struct Term {
    concept: &'static str,
    word: &'static str,
    avoid: &'static [&'static str],
}

const GLOSSARY: &[Term] = &[
    Term {
        concept: "desired state (idea 1 and 2 of the workshop)",
        word: "望ましい状態",
        avoid: &["あるべき状態"],
    },
    Term {
        concept: "field manager",
        word: "フィールドマネージャー",
        avoid: &["署名"],
    },
    Term {
        concept: "an item of a check",
        word: "項目",
        avoid: &["期待ごとに", "期待一つ"],
    },
    Term {
        concept: "deletable (a finalizer's release)",
        word: "削除できる",
        avoid: &["消えられる"],
    },
    Term {
        concept: "current context (kubectl's word)",
        word: "現在のコンテキスト",
        avoid: &["今のコンテキスト"],
    },
    Term {
        concept: "the current cluster, kubeconfig (as kubectl's current context)",
        word: "現在の",
        avoid: &["今のクラスター", "今の kubeconfig"],
    },
    Term {
        concept: "in-memory",
        word: "インメモリ",
        avoid: &["インメモリー"],
    },
    Term {
        concept: "directory",
        word: "ディレクトリ",
        avoid: &["ディレクトリー", "フォルダ"],
    },
    Term {
        concept: "memory",
        word: "メモリ",
        avoid: &["メモリー"],
    },
    Term {
        concept: "the test API server",
        word: "テスト用 API サーバー",
        avoid: &[
            "テスト API サーバー",
            "テスト用サーバー",
            "テストサーバー",
            "テスト用APIサーバー",
        ],
    },
    Term {
        concept: "laptop",
        word: "ノート PC",
        avoid: &["ノートパソコン", "ノートPC", "ラップトップ"],
    },
    Term {
        concept: "panic (Rust)",
        word: "パニック",
        avoid: &["panic し", "panic が", "panic の", "panic で"],
    },
    Term {
        concept: "Namespace (the Kind's name)",
        word: "Namespace",
        avoid: &["ネームスペース", "名前空間"],
    },
    Term {
        concept: "controller",
        word: "コントローラー",
        avoid: &["コントローラ[^ー]"],
    },
    Term {
        concept: "server",
        word: "サーバー",
        avoid: &["サーバ[^ー]"],
    },
    Term {
        concept: "cluster",
        word: "クラスター",
        avoid: &["クラスタ[^ー]"],
    },
    Term {
        concept: "editor (-er words keep their long vowel, as コンパイラー)",
        word: "エディター",
        avoid: &["エディタ[^ー]"],
    },
    Term {
        concept: "category (-ry words drop it, as メモリ, ディレクトリ)",
        word: "カテゴリ",
        avoid: &["カテゴリー"],
    },
    Term {
        concept: "container",
        word: "コンテナー",
        avoid: &["コンテナ[^ー]"],
    },
    Term {
        concept: "vendored crates (cargo vendor)",
        word: "vendor した",
        avoid: &["ベンダリング"],
    },
    Term {
        concept: "the organiser's invitation",
        word: "案内",
        avoid: &["招待状"],
    },
    Term {
        concept: "reconcile",
        word: "リコンサイル",
        avoid: &["調整ループ", "リコンシル"],
    },
    Term {
        concept: "a workshop assistant",
        word: "チューター",
        avoid: &["アシスタント"],
    },
    Term {
        concept: "owner reference (`ownerReferences` stays the field's name, in code)",
        word: "オーナーリファレンス",
        avoid: &["ownerReference"],
    },
    Term {
        concept: "the current spec (what a status answers for)",
        word: "今の spec",
        avoid: &["現在の spec"],
    },
    Term {
        concept: "the status subresource",
        word: "ステータスサブリソース",
        avoid: &["status サブリソース"],
    },
    Term {
        concept: "a Rust import",
        word: "`use`",
        avoid: &["import"],
    },
    Term {
        concept: "to tell, to see (分かる, as the tools' messages write it)",
        word: "分かる",
        avoid: &["わかる", "わかり", "わから", "わかっ"],
    },
    Term {
        concept: "generation (metadata.generation: kept as Kubernetes' word)",
        word: "generation",
        avoid: &["世代"],
    },
    Term {
        concept: "to be all there (そろう, as the doctor says it)",
        word: "そろう",
        avoid: &["揃"],
    },
];

/// Whether `text` has `avoid` (with `[^ー]`: the word not followed by a long vowel).
fn has(text: &str, avoid: &str) -> bool {
    match avoid.strip_suffix("[^ー]") {
        Some(stem) => text
            .match_indices(stem)
            .any(|(at, _)| !text[at + stem.len()..].starts_with('ー')),
        None => text.contains(avoid),
    }
}

/// The prose of a Markdown page: fenced blocks and inline code removed (Rust's `panic!`, a
/// file's name).
fn prose(markdown: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                out.push_str(part);
            }
        }
        out.push('\n');
    }
    out
}

/// `text` as a reader sees it: a line break between two Japanese characters joins them (the
/// guides wrap Japanese mid-word, フィールド / マネージャー), and any other one is a space.
fn as_read(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line.trim());
        let Some(next) = lines.peek() else { break };
        let next = next.trim_start();
        let japanese = |c: Option<char>| c.is_some_and(|c| !c.is_ascii());
        if !(japanese(out.chars().last()) && japanese(next.chars().next())) {
            out.push(' ');
        }
    }
    out
}

/// Every avoided word found in `text`, as `where: avoided (use word for concept)`.
fn misworded(place: &str, text: &str) -> Vec<String> {
    let text = &as_read(text);
    GLOSSARY
        .iter()
        .flat_map(|term| term.avoid.iter().map(move |avoid| (term, *avoid)))
        .filter(|(_, avoid)| has(text, avoid))
        .map(|(term, avoid)| format!("{place}: {avoid} (use {} for {})", term.word, term.concept))
        .collect()
}

fn read(file: &str) -> String {
    std::fs::read_to_string(repository().join(file)).unwrap_or_default()
}

#[test]
fn the_guide_the_cheat_sheet_and_the_tools_use_one_word_per_concept() {
    let mut wrong = Vec::new();
    for file in [
        "workshop/README.ja.md",
        "workshop/CHEATSHEET.ja.md",
        "workshop/ORGANISER.ja.md",
    ] {
        let text = read(file);
        assert!(!text.is_empty(), "{file} is readable");
        wrong.extend(misworded(file, &prose(&text)));
    }
    for (file, japanese) in exercises_in_japanese() {
        wrong.extend(misworded(&file, &prose(&japanese)));
    }
    for msg in ALL {
        wrong.extend(misworded(&format!("messages.rs {}", msg.key), msg.ja));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The Japanese half of every EXERCISE comment (from its `演習` line to the block's end), by
/// file: the instructions a Japanese learner reads at the desk.
fn exercises_in_japanese() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for file in ["number.rs", "tuple.rs", "fermat.rs"] {
        let path = format!("workshop/src/exercises/{file}");
        let source = read(&path);
        assert!(!source.is_empty(), "{path} is readable");
        for block in comment_blocks(&source) {
            if let Some(at) = block.iter().position(|line| line.starts_with("演習 ")) {
                found.push((path.clone(), block[at..].join("\n")));
            }
        }
    }
    found
}

#[test]
fn the_glossary_catches_what_it_names() {
    assert!(has("コントローラが", "コントローラ[^ー]"));
    assert!(!has("コントローラーが", "コントローラ[^ー]"));
    assert!(has("末尾のコントローラ", "コントローラ[^ー]"));
    assert_eq!(
        misworded("x", &prose("`panic しない` は除く。")),
        Vec::<String>::new()
    );
    assert_eq!(misworded("x", "今のコンテキスト").len(), 1);
    // Wrapped where the guides wrap Japanese: mid-word, or before an English word.
    assert_eq!(misworded("x", "ここは今の\n  コンテキストです").len(), 1);
    assert_eq!(misworded("x", "ここは今の\nkubeconfig です").len(), 1);
    assert_eq!(misworded("x", "コンテナ\nーです"), Vec::<String>::new());
}

/// A relative link to a Markdown page from a Japanese page: Japanese (`.ja.md`), or marked.
#[test]
fn pages_the_japanese_guide_links_to_are_japanese_or_marked_english() {
    let mut wrong = Vec::new();
    for file in [
        "workshop/README.ja.md",
        "workshop/CHEATSHEET.ja.md",
        "workshop/ORGANISER.ja.md",
    ] {
        let text = prose_keeping_code(&read(file));
        for (at, _) in text.match_indices("](") {
            let target: String = text[at + 2..].chars().take_while(|c| *c != ')').collect();
            let page = target.split('#').next().unwrap_or_default();
            if !page.ends_with(".md") || page.ends_with(".ja.md") || page.contains("://") {
                continue;
            }
            let label_start = text[..at].rfind('[').unwrap_or(at);
            let label = &text[label_start..at];
            let after: String = text[at + 2 + target.len()..].chars().take(8).collect();
            if !(label.contains("English") || label.contains("英語") || after.contains("(英語)"))
            {
                wrong.push(format!(
                    "{file}: {label}]({target}) is English and not marked (英語)"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The page without its fenced blocks (links there are not links), inline code kept.
fn prose_keeping_code(markdown: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The comment blocks of a Rust file: runs of lines that start with `//` (after indentation).
fn comment_blocks(source: &str) -> Vec<Vec<String>> {
    let mut blocks = vec![Vec::new()];
    for line in source.lines() {
        match line.trim_start().strip_prefix("//") {
            Some(comment) => {
                let text = comment.trim_start_matches(['/', '!']).trim();
                if let Some(block) = blocks.last_mut() {
                    block.push(text.to_string());
                }
            }
            None if blocks.last().is_some_and(|b| !b.is_empty()) => blocks.push(Vec::new()),
            None => {}
        }
    }
    blocks
}

/// `EXERCISE 2a`'s and `演習 2a`'s ids in a comment block, in order.
fn exercise_ids(block: &[String], tag: &str) -> Vec<String> {
    block
        .iter()
        .filter_map(|line| line.strip_prefix(tag))
        .filter_map(|rest| rest.split([':', ' ']).next().map(str::to_string))
        .collect()
}

/// What a learner reads while coding is the exercise files: every EXERCISE block there has its
/// Japanese beside it (`演習 <id>` in the same comment), for a Japanese reader at the desk.
#[test]
fn every_exercise_has_its_instructions_in_japanese_beside_the_english() {
    let dir = repository().join("workshop/src/exercises");
    let mut seen = 0;
    let mut wrong = Vec::new();
    for file in ["number.rs", "tuple.rs", "fermat.rs"] {
        let source = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        for block in comment_blocks(&source) {
            let english = exercise_ids(&block, "EXERCISE ");
            let japanese = exercise_ids(&block, "演習 ");
            seen += english.len();
            if english != japanese {
                wrong.push(format!(
                    "{file}: EXERCISE {english:?} but 演習 {japanese:?} in the block starting {:?}",
                    block.first()
                ));
            }
        }
    }
    assert_eq!(
        seen, 11,
        "the exercises' blocks (1a twice, 1b, 2a-2d, 3a-3d)"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
