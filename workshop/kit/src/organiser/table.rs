//! What `make workshop-room` ends with: one row per participant (name, file, namespace, until
//! when the token lasts), and the two lines each participant types in every terminal, so that
//! the organiser can read them out or put them on the projector.

use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;

use crate::messages as m;
use crate::t;

/// What one participant was handed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handed {
    pub participant: String,
    /// Their kubeconfig.
    pub file: PathBuf,
    /// Their namespace, which the file's context names.
    pub namespace: String,
    /// When their token ends, as the API server said.
    pub expires: Option<Timestamp>,
}

/// When a token ends, with the hours left from `now`: `2026-11-29T06:00:00Z (in 36 h)`.
pub fn expiry(expires: Option<Timestamp>, now: Timestamp) -> String {
    match expires {
        Some(at) => {
            // To the nearest hour: a token asked for 36 h a second ago has 36 h left.
            let hours = (at.as_second() - now.as_second() + 1800).div_euclid(3600);
            t!(m::EXPIRES_IN, at = at, hours = hours)
        }
        None => "?".to_string(),
    }
}

/// The closing table (the files shown relative to `base`, the repository), then what each
/// participant types.
pub fn closing(handed: &[Handed], base: &Path, now: Timestamp) -> Vec<String> {
    let header = [
        m::TABLE_NAME.text(),
        m::TABLE_FILE.text(),
        m::TABLE_NAMESPACE.text(),
        m::TABLE_EXPIRES.text(),
    ];
    let mut rows = vec![header.to_vec()];
    for one in handed {
        let file = one.file.strip_prefix(base).unwrap_or(&one.file);
        rows.push(vec![
            one.participant.clone(),
            file.display().to_string(),
            one.namespace.clone(),
            expiry(one.expires, now),
        ]);
    }
    let mut lines = aligned(&rows);
    lines.push(m::ROOM_HAND_OUT.text());
    lines.push("  export PARTICIPANT=<name>".to_string());
    lines.push("  export KUBECONFIG=$PWD/workshop/room/$PARTICIPANT.kubeconfig".to_string());
    lines
}

/// Rows as columns two spaces apart, each as wide on screen as its widest cell ([`width`]: the
/// Japanese headings take two columns a character).
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| width(&r[c])).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, wide)| format!("{cell}{}", " ".repeat(wide - width(cell))))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}

/// How many columns of a terminal `text` takes: two for the wide characters of East Asian
/// scripts (kana, kanji, hangul, full-width forms), one for the others.
fn width(text: &str) -> usize {
    text.chars()
        .map(|c| match u32::from(c) {
            0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF => 2,
            0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 => 2,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_participant_and_the_two_lines_they_type() {
        let now: Timestamp = "2026-11-28T18:00:00Z".parse().expect("a time");
        let later: Timestamp = "2026-11-30T06:00:00Z".parse().expect("a time");
        let repository = Path::new("/clone");
        let handed = |name: &str| Handed {
            participant: name.to_string(),
            file: repository.join(format!("workshop/room/{name}.kubeconfig")),
            namespace: format!("math-workshop-{name}"),
            expires: Some(later),
        };
        assert_eq!(
            closing(&[handed("alice"), handed("bo")], repository, now),
            [
                "NAME   FILE                            NAMESPACE            TOKEN VALID UNTIL",
                "alice  workshop/room/alice.kubeconfig  math-workshop-alice  2026-11-30T06:00:00Z (in 36 h)",
                "bo     workshop/room/bo.kubeconfig     math-workshop-bo     2026-11-30T06:00:00Z (in 36 h)",
                "Give each participant their file (a shared folder, a USB stick): it goes to \
                 workshop/room/<name>.kubeconfig in their clone. Then they type, in every terminal:",
                "  export PARTICIPANT=<name>",
                "  export KUBECONFIG=$PWD/workshop/room/$PARTICIPANT.kubeconfig",
            ]
        );
        // Read a few seconds after the server counted from its own clock: still 36 h.
        let moments_later: Timestamp = "2026-11-28T18:00:05Z".parse().expect("a time");
        assert_eq!(
            expiry(Some(later), moments_later),
            "2026-11-30T06:00:00Z (in 36 h)"
        );
        assert_eq!(width("名前"), 4);
        assert_eq!(width("NAME"), 4);
        assert_eq!(
            aligned(&[
                vec!["名前".into(), "x".into()],
                vec!["alice".into(), "y".into()]
            ]),
            ["名前   x", "alice  y"]
        );
    }
}
