//! What a session printed, made comparable with what the guide shows: the namespace written
//! as the participant's, and what varies from run to run (times, UIDs, ages, resourceVersions,
//! column widths) made alike.

use super::PARTICIPANT_NAMESPACE;

/// The output as the guide writes it: the namespace is the participant's.
pub(crate) fn as_written(output: &str) -> Vec<String> {
    let mut lines: Vec<String> = output
        .lines()
        .map(|l| {
            guides_port(&kubectl_deletion(l.trim_end()))
                .replace(PARTICIPANT_NAMESPACE, "<your namespace>")
        })
        .collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// The test API server's address as the guide starts it (port 8010), whatever port the
/// session's server took: the first line of install and run names the cluster.
pub(crate) fn guides_port(line: &str) -> String {
    let at = "//127.0.0.1:";
    let mut out = String::new();
    let mut rest = line;
    while let Some(found) = rest.find(at) {
        let (before, after) = rest.split_at(found + at.len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        out.push_str(if digits > 0 { "8010" } else { "" });
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[test]
fn the_sessions_port_reads_as_the_guides() {
    assert_eq!(
        guides_port("on context test-apiserver (http://127.0.0.1:41233/)"),
        "on context test-apiserver (http://127.0.0.1:8010/)"
    );
    assert_eq!(guides_port("no address here"), "no address here");
}

/// A deletion as kubectl 1.32 and 1.33 print it: 1.34 and later add the namespace
/// (`number.math.example.com "number-sample" deleted from default namespace`), the guide shows
/// the shorter line that every kubectl of the tested range (1.32-1.36) prints a prefix of.
pub(crate) fn kubectl_deletion(line: &str) -> String {
    if let Some((before, after)) = line.rsplit_once("\" deleted from ")
        && let Some(namespace) = after.strip_suffix(" namespace")
        && !namespace.is_empty()
        && !namespace.contains(' ')
    {
        return format!("{before}\" deleted");
    }
    line.to_string()
}

#[test]
fn a_deletion_reads_alike_from_kubectl_1_32_to_1_36() {
    let newer = "number.math.example.com \"number-sample\" deleted from default namespace";
    let older = "number.math.example.com \"number-sample\" deleted";
    assert_eq!(kubectl_deletion(newer), older);
    assert_eq!(kubectl_deletion(older), older);
    let other = "fermat.math.example.com/fermat-13 deleted from nowhere";
    assert_eq!(kubectl_deletion(other), other);
    let spaced = "tuple.math.example.com \"t\" deleted from math-workshop-alice namespace";
    assert_eq!(
        kubectl_deletion(spaced),
        "tuple.math.example.com \"t\" deleted"
    );
}

/// A line with what varies from run to run made alike: times, UIDs, ages, resourceVersions,
/// and the width of columns.
fn normal(line: &str) -> String {
    let words: Vec<String> = line
        .split_whitespace()
        .map(|word| {
            let bare = word.trim_matches(|c: char| matches!(c, '"' | ',' | '[' | ']' | '{' | '}'));
            let age = bare.len() > 1
                && bare.ends_with(['s', 'm', 'h', 'd'])
                && bare[..bare.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == 'm');
            if age {
                "[AGE]".to_string()
            } else {
                masked(word)
            }
        })
        .collect();
    words.join(" ")
}

/// Times (2026-11-24T01:30:38.239200Z), UIDs and quoted numbers after resourceVersion masked.
fn masked(word: &str) -> String {
    let chars: Vec<char> = word.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().collect();
        if let Some(len) = time_len(&rest) {
            out.push_str("[TIME]");
            i += len;
        } else if uid_len(&rest) {
            out.push_str("[UID]");
            i += 36;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn time_len(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    let shape = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && b.get(10) == Some(&b'T')
        && digits(11..13)
        && digits(14..16)
        && digits(17..19);
    if !shape {
        return None;
    }
    let mut end = 19;
    if b.get(end) == Some(&b'.') {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    (b.get(end) == Some(&b'Z')).then_some(end + 1)
}

fn uid_len(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 36
        && (0..36).all(|i| match i {
            8 | 13 | 18 | 23 => b[i] == b'-',
            _ => b[i].is_ascii_hexdigit(),
        })
}

pub(crate) fn alike(guide: &[String], now: &[String]) -> bool {
    guide.len() == now.len()
        && guide.iter().zip(now).all(|(g, n)| {
            let (g, n) = (normal(g), normal(n));
            g == n || (g.contains("resourceVersion") && n.contains("resourceVersion"))
        })
}
