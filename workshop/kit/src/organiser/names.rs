//! The participants' names. Each names two namespaces (`math-workshop-<name>` and
//! `math-workshop-check-<name>`, DNS labels of at most 63 characters) and a file
//! (`workshop/room/<name>.kubeconfig`) that the participant finds again by typing
//! `PARTICIPANT=<name>`. So a name is used exactly as given or refused with the name that would
//! work: one changed in silence (`Taro` written as `taro.kubeconfig`, every name in Japanese
//! script as `learner`) is a file nobody finds, or two participants in one namespace.

use std::collections::BTreeMap;

use crate::messages as m;
use crate::t;

/// The longest name: `math-workshop-check-` and 40 characters stay within a DNS label's 63.
pub const LONGEST: usize = 40;

/// Whether `name` is a participant's name as it stands: lowercase ASCII letters, digits and
/// hyphens, starting and ending with a letter or digit, at most [`LONGEST`] characters.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= LONGEST
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// The name that would work for `name`, the `position`th given (from 1): its lowercase ASCII
/// letters and digits with single hyphens between the words, or, when it has none (a name in
/// Japanese script), `participant-<position>`.
pub fn suggested(name: &str, position: usize) -> String {
    let label = crate::room::dns_label(name, LONGEST);
    if label.is_empty() {
        format!("participant-{position}")
    } else {
        label
    }
}

/// One line per name that is refused, in the order given: a name that is not valid, with the
/// one that would work; a name given more than once, once. Empty: every name is fine.
pub fn refusals(names: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in names {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    let mut told = Vec::new();
    for (at, name) in names.iter().enumerate() {
        let suggested = suggested(name, at + 1);
        if !is_valid(name) {
            let refusal = if crate::room::dns_label(name, LONGEST).is_empty() {
                m::NAME_NO_ASCII
            } else {
                m::NAME_NOT_A_LABEL
            };
            lines.push(t!(refusal, name = name, suggested = suggested));
            continue;
        }
        let count = counts.get(name.as_str()).copied().unwrap_or(1);
        if count > 1 && !told.contains(name) {
            told.push(name.clone());
            let other = format!("{name}-2");
            lines.push(t!(
                m::NAME_TWICE,
                name = name,
                count = count,
                suggested = other
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn names_are_kept_as_given_or_refused_with_the_name_that_would_work() {
        assert!(refusals(&names(&["alice", "bob-2", "c3"])).is_empty());
        assert_eq!(
            refusals(&names(&[
                "Taro", "太郎", "花子", "alice", "alice", "--bob--"
            ])),
            [
                "the name Taro is refused: a participant's name is lowercase ASCII letters, \
                 digits and hyphens (it names a namespace and a file); use taro",
                "the name 太郎 is refused: a participant's name is lowercase ASCII letters, \
                 digits and hyphens (it names a namespace and a file); write it in romaji, or \
                 use participant-2",
                "the name 花子 is refused: a participant's name is lowercase ASCII letters, \
                 digits and hyphens (it names a namespace and a file); write it in romaji, or \
                 use participant-3",
                "the name alice is given 2 times: each participant needs a name of their own \
                 (e.g. alice-2)",
                "the name --bob-- is refused: a participant's name is lowercase ASCII letters, \
                 digits and hyphens (it names a namespace and a file); use bob",
            ]
        );
        let long = "a".repeat(LONGEST + 1);
        assert!(!is_valid(&long));
        assert_eq!(suggested(&long, 1).len(), LONGEST);
        assert!(is_valid(&"a".repeat(LONGEST)));
    }
}
