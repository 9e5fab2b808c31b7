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
            let hours = (at.as_second() - now.as_second()) / 3600;
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

/// Rows as columns two spaces apart, each as wide as its widest cell (in characters: the
/// Japanese headings are wider on screen, which the rows below them do not mind).
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
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
    }
}
