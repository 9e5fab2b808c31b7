//! Japanese Markdown renders without stray spaces. Markdown joins the lines of a paragraph (and
//! of a list item, a block quote) with a soft break, and a browser shows a soft break as a space:
//! 「フィールド」 at the end of one line and 「マネージャー」 at the start of the next reads
//! 「フィールド マネージャー」. So no `*.ja.md` of the repository may break a paragraph's line
//! between two Japanese characters; a break after the end of a sentence (。！？) is fine, so
//! one sentence per line is the way to write it.
//!
//! What is a paragraph is left to a CommonMark parser (pulldown-cmark, with GitHub's tables,
//! strikethrough and task lists), not to a guess from the lines: code fences, indented code,
//! tables, headings, HTML blocks and comments, list items' starts and a code span that spans two
//! lines are not soft breaks, and emphasis or a link between two Japanese characters is.

use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser};

#[path = "../../tests/common/tree.rs"]
mod tree;

/// A character a Japanese reader reads as Japanese text: kana, kanji, the CJK symbols and
/// punctuation (、。「」〜) and the full-width forms (（）：！).
fn japanese(c: char) -> bool {
    matches!(c,
        '\u{3000}'..='\u{30ff}'
        | '\u{3400}'..='\u{4dbf}'
        | '\u{4e00}'..='\u{9fff}'
        | '\u{ff00}'..='\u{ffef}')
}

/// Whether `text` ends a sentence: 。！？, then any closing brackets.
fn ends_sentence(text: &str) -> bool {
    text.trim_end_matches(['」', '』', '）', '】'])
        .ends_with(['。', '！', '？'])
}

/// A soft break between two Japanese characters: its line (1-based) and what stands either
/// side of it.
#[derive(Debug, PartialEq)]
struct Break {
    line: usize,
    before: String,
    after: String,
}

/// The soft breaks of `markdown` that a browser shows as a space between two Japanese
/// characters of the rendered text. A code span counts as no Japanese text (a space beside it
/// is usual); anything but inline text ends the paragraph's run.
fn stray_breaks(markdown: &str) -> Vec<Break> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut found = Vec::new();
    // The rendered text since the last block boundary, and a soft break waiting for what comes
    // after it: (its byte offset, the text before it).
    let mut before = String::new();
    let mut pending: Option<(usize, String)> = None;
    for (event, range) in Parser::new_ext(markdown, options).into_offset_iter() {
        match event {
            Event::Text(text) => {
                if let Some((at, text_before)) = pending.take()
                    && let Some(first) = text.chars().next()
                    && japanese(first)
                    && text_before.chars().last().is_some_and(japanese)
                    && !ends_sentence(&text_before)
                {
                    found.push(Break {
                        line: markdown[..at].lines().count(),
                        before: text_before
                            .chars()
                            .rev()
                            .take(12)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev()
                            .collect(),
                        after: text.chars().take(12).collect(),
                    });
                }
                before.push_str(&text);
            }
            Event::Code(_) => {
                pending = None;
                before.push('`');
            }
            Event::SoftBreak => pending = Some((range.start, std::mem::take(&mut before))),
            // Emphasis, links and images open and close inside the paragraph's text.
            Event::Start(
                pulldown_cmark::Tag::Emphasis
                | pulldown_cmark::Tag::Strong
                | pulldown_cmark::Tag::Strikethrough
                | pulldown_cmark::Tag::Link { .. }
                | pulldown_cmark::Tag::Image { .. },
            )
            | Event::End(
                pulldown_cmark::TagEnd::Emphasis
                | pulldown_cmark::TagEnd::Strong
                | pulldown_cmark::TagEnd::Strikethrough
                | pulldown_cmark::TagEnd::Link
                | pulldown_cmark::TagEnd::Image,
            ) => {}
            _ => {
                pending = None;
                before.clear();
            }
        }
    }
    found
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn no_japanese_markdown_breaks_a_line_between_two_japanese_characters() {
    let pages = tree::files_below(&repository(), |name| name.ends_with(".ja.md"));
    assert!(
        pages.len() >= 3,
        "the guide, the cheat sheet and the organiser's page at least: {pages:?}"
    );
    let mut stray = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a page of the repository reads");
        let shown = page
            .strip_prefix(repository())
            .unwrap_or(page)
            .display()
            .to_string();
        for at in stray_breaks(&text) {
            stray.push(format!("{shown}:{}: …{}⏎{}…", at.line, at.before, at.after));
        }
    }
    assert!(
        stray.is_empty(),
        "{} line breaks between two Japanese characters inside a paragraph (a browser shows \
         each as a space; join the lines, or break after 。):\n{}",
        stray.len(),
        stray.join("\n")
    );
}

/// Where Markdown joins two lines and where it does not, as GitHub renders it.
#[test]
fn the_check_finds_the_breaks_markdown_joins_and_no_others() {
    let joined = [
        ("段落の途中で\n改行する\n", "で", "改"),
        ("- 項目の続きを\n  次の行に書く\n", "を", "次"),
        ("> 引用の途中で\n> 改行する\n", "で", "改"),
        ("**強調**\nのあとで改行\n", "調", "の"),
        ("[リンク](x)\nのあとで改行\n", "ク", "の"),
        ("読点のあと、\n改行する\n", "、", "改"),
    ];
    for (markdown, before, after) in joined {
        let found = stray_breaks(markdown);
        assert_eq!(found.len(), 1, "{markdown:?}: {found:?}");
        assert!(
            found[0].before.ends_with(before) && found[0].after.starts_with(after),
            "{markdown:?}: {found:?}"
        );
    }
    assert_eq!(stray_breaks("一行目\n二行目\n")[0].line, 1);
    assert_eq!(stray_breaks("見出し\n\n一行目\n二行目\n")[0].line, 3);
    let apart = [
        "文が終わる。\n次の文\n",
        "問いかける？\n次の文\n",
        "括弧で終わる。」\n次の文\n",
        "段落\n\n次の段落\n",
        "- 項目\n- 次の項目\n",
        "1. 項目\n2. 次の項目\n",
        "```\nコードの\n中\n```\n",
        "    字下げの\n    コード\n",
        "| 表の | 行 |\n|---|---|\n| 次の | 行 |\n",
        "# 見出し\n本文\n",
        "<!-- コメントの\n中 -->\n",
        "<details>\n<summary>要約</summary>\n</details>\n",
        "改行の前に `コード`\n次の行\n",
        "行末を空白二つで  \n改行する\n",
        "英語の words\nand words\n",
        "日本語の後に\nLatin の行\n",
    ];
    for markdown in apart {
        assert_eq!(stray_breaks(markdown), [], "{markdown:?}");
    }
}
